// What `sage2tp prepare` does with its options once they are parsed (subcommands/prepare.cpp parses
// them): which run it prepares (a new one, or one prepared before, which keeps its manifest and
// overrides unless told otherwise), the overrides the options make, and the prepare stage in that run.
#pragma once

#include "pipeline/cli.h"
#include "pipeline/run_directory.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// prepare's options as the command line gave them; unset when not given.
struct PrepareOptions {
    RunSelection selection;
    bool new_run = false;  // --new
    bool force = false;
    bool quiet = false;
    std::optional<std::string> manifest, repository, commit, patch, name, description;
    std::optional<std::vector<std::string>> candidate_commits;  // each --candidate-commit value
    bool no_patch = false, candidate_worktree = false;
};

// Prepares the run `options` select and returns the exit status; sets `prepared_run` to the (absolute)
// run directory when it passes. Error(usage) for contradicting options, a directory that is neither
// empty nor a run, or a run prepared before whose manifest is unknown and no --manifest.
int prepare_with_options(const PrepareOptions &options, const Reporter &reporter, std::filesystem::path &prepared_run);

}  // namespace s2tp
