// sage2tp help [CMD]: the command list, or one command's own --help and its manual page.
#include "command_table.h"

#include "support/errors.h"

#include <toml++/toml.h>

#include <iostream>

namespace s2tp {

int help_command(const Args &args) {
    // Under --json, stdout carries one object: the command list, or the command's help.
    Args words;
    bool json = false;
    for (const std::string &word : args) {
        if (word == "--json") json = true;
        else words.push_back(word);
    }
    if (words.empty()) {
        if (!json) {
            print_usage(std::cout);
            return 0;
        }
        toml::array commands;
        for (const CommandEntry &entry : command_table())
            if (!entry.internal) commands.push_back(toml::table{{"name", entry.name}, {"summary", entry.summary}});
        std::cout << toml::json_formatter{toml::table{{"command", "help"}, {"commands", commands}}} << std::endl;
        return 0;
    }
    const CommandEntry *entry = words.size() == 1 ? find_command(words[0]) : nullptr;
    if (!entry)
        fail(ExitCode::usage, "help takes one command name, got '" + words[0] + (words.size() > 1 ? " ...'" : "'") +
                                  (words.size() == 1 ? command_suggestion(words[0]) : "") + " (see 'sage2tp help')");
    if (entry->name == "help") {
        const std::string usage = "usage: sage2tp help [CMD]\n\n"
                                  "Without CMD, the list of commands; with it, CMD's options (as 'sage2tp CMD --help') and its\n"
                                  "manual page.\n\nsee sage2tp(1)\n";
        if (json) std::cout << toml::json_formatter{toml::table{{"command", "help"}, {"help", usage}}} << std::endl;
        else std::cout << usage;
        return 0;
    }
    if (json) return entry->run({"--help", "--json"});
    const int status = entry->run({"--help"});
    if (!entry->internal) std::cout << "see sage2tp-" << entry->name << "(1)" << std::endl;
    return status;
}

}  // namespace s2tp
