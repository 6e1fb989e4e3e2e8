// sage2tp help [CMD]: the command list, or one command's own --help.
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
    if (!entry || entry->name == "help")
        fail(ExitCode::usage, "help takes one command name, got '" + words[0] + (words.size() > 1 ? " ...'" : "'") +
                                  " (see 'sage2tp help')");
    return entry->run(json ? Args{"--help", "--json"} : Args{"--help"});
}

}  // namespace s2tp
