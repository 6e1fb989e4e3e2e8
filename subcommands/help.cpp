// sage2tp help [CMD]: the command list, or one command's own --help and its manual page.
#include "command_table.h"

#include "support/errors.h"

#include <iostream>

namespace s2tp {

int help_command(const Args &args) {
    if (args.empty()) {
        print_usage(std::cout);
        return 0;
    }
    const CommandEntry *entry = args.size() == 1 ? find_command(args[0]) : nullptr;
    if (!entry)
        fail(ExitCode::usage, "help takes one command name, got '" + args[0] + (args.size() > 1 ? " ...'" : "'") +
                                  (args.size() == 1 ? command_suggestion(args[0]) : "") + " (see 'sage2tp help')");
    if (entry->name == "help") {
        std::cout << "usage: sage2tp help [CMD]\n\n"
                     "Without CMD, the list of commands; with it, CMD's options (as 'sage2tp CMD --help') and its\n"
                     "manual page.\n\nsee sage2tp(1)\n";
        return 0;
    }
    const int status = entry->run({"--help"});
    if (!entry->internal) std::cout << "see sage2tp-" << entry->name << "(1)" << std::endl;
    return status;
}

}  // namespace s2tp
