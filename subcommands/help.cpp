// sage2tp help [CMD]: the command list, or one command's own --help.
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
    if (!entry || entry->name == "help")
        fail(ExitCode::usage, "help takes one command name, got '" + args[0] + (args.size() > 1 ? " ...'" : "'") +
                                  " (see 'sage2tp help')");
    return entry->run({"--help"});
}

}  // namespace s2tp
