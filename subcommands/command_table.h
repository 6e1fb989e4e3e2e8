// The one table of sage2tp's commands, as git.c's commands[]: it drives dispatch, the usage text,
// `sage2tp help`, and the stage order `sage2tp run` follows. A stage command's name is its stage's name
// (pipeline/stage_pipeline.h), so the two can never disagree.
#pragma once

#include "subcommands.h"

#include "pipeline/stage_pipeline.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace s2tp {

struct CommandEntry {
    std::string name;
    int (*run)(const Args &args);
    std::string summary;
    std::optional<Stage> stage;  // set for the six pipeline stages
    bool internal = false;       // run by other commands, left out of the usage text
};

// Stage commands in stage order first, then the helpers.
const std::vector<CommandEntry> &command_table();
const CommandEntry *find_command(const std::string &name);
// "; did you mean 'build'?" when `word` is one typing slip from a command's name (not an internal one).
std::string command_suggestion(const std::string &word);

// "usage: sage2tp ...", every command that is not internal with its summary, the global options and
// the exit codes.
void print_usage(std::ostream &out);

}  // namespace s2tp
