// sage2tp: git-style dispatch on the first word that names a subcommand; global options may come
// before it. Every failure ends here with a message on stderr and a documented exit code.
#include "pipeline/cli.h"
#include "support/errors.h"
#include "command_table.h"

#include <iostream>

namespace {

bool wants_json(const s2tp::Args &args) {
    for (const auto &a : args)
        if (a == "--json") return true;
    return false;
}

}  // namespace

int main(int argc, char **argv) {
    s2tp::Args words(argv + 1, argv + argc);
    std::string command;
    s2tp::Args rest;
    for (std::size_t i = 0; i < words.size(); ++i) {
        // A global option's value is never the subcommand, even when it is spelled like one.
        bool takes_value = s2tp::is_global_option_with_value(words[i]);
        if (command.empty() && takes_value && i + 1 < words.size()) {
            rest.push_back(words[i]);
            rest.push_back(words[++i]);
            continue;
        }
        if (command.empty() && s2tp::find_command(words[i])) {
            command = words[i];
            continue;
        }
        rest.push_back(words[i]);
    }
    if (command.empty()) {
        if (rest.size() == 1 && rest[0] == "--version") {
            std::cout << "sage2tp " << s2tp::sage2tp_version() << std::endl;
            return 0;
        }
        if (rest.size() == 1 && (rest[0] == "--help" || rest[0] == "-h")) {
            s2tp::print_usage(std::cout);
            return 0;
        }
        std::cerr << "sage2tp: " << (rest.empty() ? "no command given" : "unknown command or option '" + rest[0] + "'")
                  << "\n\n";
        s2tp::print_usage(std::cerr);
        return static_cast<int>(s2tp::ExitCode::usage);
    }
    try {
        return s2tp::find_command(command)->run(rest);
    } catch (const s2tp::Error &e) {
        std::cerr << "sage2tp " << command << ": error: " << e.what() << std::endl;
        if (wants_json(rest)) {
            toml::table result{{"command", command}, {"status", "error"}, {"exit_code", static_cast<int>(e.code())},
                               {"error", e.what()}};
            std::cout << toml::json_formatter{result} << std::endl;
        }
        return static_cast<int>(e.code());
    } catch (const std::exception &e) {
        std::cerr << "sage2tp " << command << ": internal error: " << e.what() << std::endl;
        return static_cast<int>(s2tp::ExitCode::internal);
    }
}
