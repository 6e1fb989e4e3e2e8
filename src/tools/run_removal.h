// Removing a run (sage2tp clean): only a directory that is provably a run, entry by entry of the run
// layout, never through a link, with exactly the run's own worktree registrations.
#pragma once

#include "pipeline/run_directory.h"
#include "tools/source_trees.h"

#include <filesystem>
#include <string>
#include <vector>

namespace s2tp {

struct RunRemoval {
    std::filesystem::path root;                        // the run, canonical
    std::vector<std::filesystem::path> entries;        // what it holds, in the order they go (.lock last)
    std::vector<WorktreeRegistration> registrations;   // its worktrees' registrations outside it
};

// What removing the run at `run` takes. Error(precondition) naming the reason when `run` is not
// provably a run or is a place never to remove (why_not_removable_run).
RunRemoval plan_run_removal(const std::filesystem::path &run);

// Removes the run as planned, holding its lock (Error(usage) when another process holds it): each entry
// without following links, then the registrations, then the directory itself (rmdir, never a recursive
// delete of the root). Error(internal) naming what is left when the directory is not empty by then.
void remove_run(const RunRemoval &removal);

}  // namespace s2tp
