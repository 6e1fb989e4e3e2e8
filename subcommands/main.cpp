// sage2tp: git-style dispatch on the first word that names a subcommand; global options may come
// before it. Every failure ends here with a message on stderr and a documented exit code.
#include "pipeline/cli.h"
#include "support/errors.h"
#include "command_table.h"
#include "support/process_runner.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace {

bool wants_json(const s2tp::Args &args) {
    for (const auto &a : args)
        if (a == "--json") return true;
    return false;
}

// Under --json, stdout carries exactly one object, failures included.
int report_error(const std::string &command, s2tp::ExitCode code, const std::string &message, bool json) {
    int status = static_cast<int>(code);
    // An interrupted command exits as a shell reports a command killed by that signal.
    if (code == s2tp::ExitCode::interrupted || s2tp::interrupt_signal()) status = 128 + s2tp::interrupt_signal();
    std::cerr << "sage2tp" << (command.empty() ? "" : " " + command) << ": error: " << message << std::endl;
    if (json) {
        toml::table result{{"command", command}, {"status", "error"}, {"exit_code", status}, {"error", message}};
        std::cout << toml::json_formatter{result} << std::endl;
    }
    return status;
}

}  // namespace

int main(int argc, char **argv) {
    s2tp::install_interrupt_handlers();
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
    const bool json = wants_json(rest);
    if (command.empty()) {
        if (rest.size() == 1 && rest[0] == "--version") {
            std::cout << "sage2tp " << s2tp::sage2tp_version() << std::endl;
            return 0;
        }
        if (std::count_if(rest.begin(), rest.end(), [](const std::string &word) { return word != "--json"; }) == 1 &&
            (std::find(rest.begin(), rest.end(), "--help") != rest.end() || std::find(rest.begin(), rest.end(), "-h") != rest.end()))
            return s2tp::find_command("help")->run(json ? s2tp::Args{"--json"} : s2tp::Args{});
        std::string unknown;
        for (const auto &word : rest)
            if (word != "--json") {
                unknown = word;
                break;
            }
        int status = report_error("", s2tp::ExitCode::usage,
                                  unknown.empty() ? "no command given"
                                                 : "unknown command or option '" + unknown + "'" + s2tp::command_suggestion(unknown),
                                  json);
        std::cerr << "\n";
        s2tp::print_usage(std::cerr);
        return status;
    }
    int status = 0;
    try {
        status = s2tp::find_command(command)->run(rest);
    } catch (const s2tp::Error &e) {
        return report_error(command, e.code(), e.what(), json);
    } catch (const std::filesystem::filesystem_error &e) {
        // A file system refusal (not a directory, permission, name too long) is the user's setup to fix.
        std::string where = e.path1().empty() ? "" : " at '" + e.path1().string() + "'";
        return report_error(command, s2tp::ExitCode::usage, "file system error" + where + ": " + e.code().message(), json);
    } catch (const std::exception &e) {
        return report_error(command, s2tp::ExitCode::internal, std::string("internal error: ") + e.what(), json);
    }
    if (int signo = s2tp::interrupt_signal()) return 128 + signo;
    // What a command prints is its result: output that a full disk or a closed pipe refused is a failed
    // command, as git treats it, not a success.
    errno = 0;
    std::cout.flush();
    if (status == 0 && !std::cout)
        return report_error(command, s2tp::ExitCode::usage,
                            std::string("could not write standard output") + (errno ? ": " + std::string(std::strerror(errno)) : ""),
                            false);
    return status;
}
