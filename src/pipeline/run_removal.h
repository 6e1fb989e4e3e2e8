// Removing a run (sage2tp clean): only a directory that is provably a run, entry by entry of the run
// layout, never through a link, with exactly the run's own worktree registrations. Finding those takes
// git, a tool: the caller passes tools/source_trees.h's run_worktree_registrations.
#pragma once

#include "pipeline/run_directory.h"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace s2tp {

// A worktree's registration in the repository it belongs to: <git directory>/worktrees/<id>, whose
// gitdir file names the worktree.
struct WorktreeRegistration {
    std::filesystem::path admin;     // <git directory>/worktrees/<id>
    std::filesystem::path worktree;  // the worktree it records (inside the run)
};

// Removes those of `registrations` whose worktree no longer exists: exactly the run's own, nothing a
// `git worktree prune` of the whole repository would also drop.
void remove_run_registrations(const std::vector<WorktreeRegistration> &registrations);

// The registrations outside the run `root` (canonical) of worktrees inside it.
using RegistrationFinder = std::function<std::vector<WorktreeRegistration>(const std::filesystem::path &root)>;

struct RunRemoval {
    std::filesystem::path root;                        // the run, canonical
    std::vector<std::filesystem::path> entries;        // what it holds, in the order they go (.lock last)
    std::vector<WorktreeRegistration> registrations;   // its worktrees' registrations outside it
};

// What removing the run at `run` takes, its registrations found by `registrations_of`.
// Error(precondition) naming the reason when `run` is not provably a run or is a place never to remove
// (why_not_removable_run).
RunRemoval plan_run_removal(const std::filesystem::path &run, const RegistrationFinder &registrations_of);

// Removes the run as planned, holding its lock (Error(usage) when another process holds it): each entry
// without following links, then the registrations, then the directory itself (rmdir, never a recursive
// delete of the root). Error(internal) naming what is left when the directory is not empty by then.
void remove_run(const RunRemoval &removal);

}  // namespace s2tp
