// The baseline and candidate source trees of a run, made by prepare:
//   git source:      detached worktrees of the user's repository at the pinned commit;
//   embedded source: the kernels/ shipped with sage2tp, committed once into a fresh repository
//                    (fixed author and date, so the same sources give the same commit id) in
//                    trees/baseline, with trees/candidate a detached worktree of it.
// The candidate then gets the patch (checked first with `git apply --check`; git apply is
// all-or-nothing). git always runs with an argument vector, never through a shell.
#pragma once

#include "model/experiment_manifest.h"
#include "pipeline/run_directory.h"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace s2tp {

struct PreparedTrees {
    std::string commit;            // the commit both trees were checked out at
    std::string patch_sha256;
    std::string baseline_digest;   // XXH3-128 over the tree's files
    std::string candidate_digest;
    std::string git_version;
    bool patch_applied = false;
    std::string patch_error;       // git apply's complaint when the patch does not apply
};

std::string git_version();  // throws Error(missing_tool) when git is not installed

// The commit id `commit` names in `repository`; Error(usage) when it does not exist.
std::string resolve_commit(const std::string &repository, const std::string &commit);

// Removes trees/ (and the worktree registrations pointing into it).
void remove_trees(const RunDirectory &run, const Experiment &experiment);

// `embedded_kernels` is consulted only for an embedded source.
PreparedTrees make_trees(const RunDirectory &run, const Experiment &experiment,
                         const std::function<std::filesystem::path()> &embedded_kernels);

}  // namespace s2tp
