// The baseline and candidate source trees of a run, made by prepare: trees/baseline and one
// trees/<name> per candidate. Each variant names its source:
//   git source:      a detached worktree of the user's repository at the source's commit;
//   embedded source: the kernels/ shipped with sage2tp, committed once into a fresh repository
//                    (fixed author and date, so the same sources give the same commit id).
// A candidate whose source is the baseline's checkout is a detached worktree of the same repository at
// the same commit. Each candidate then gets its patch, when it has one (checked first with
// `git apply --check`; git apply is all-or-nothing). When the baseline lists no support_sources,
// trees/support is a plain copy of the embedded kernels, for the quantization kernels.
// git always runs with an argument vector, never through a shell.
#pragma once

#include "model/experiment_manifest.h"
#include "pipeline/run_directory.h"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace s2tp {

// One candidate's tree, trees/<name>.
struct PreparedCandidateTree {
    std::string name;
    std::string commit;        // before the patch (the baseline's for a baseline + patch)
    std::string patch_sha256;  // empty without a patch
    std::string digest;        // XXH3-128 over the tree's files
};

struct PreparedTrees {
    std::string commit;            // the commit the baseline tree was checked out at
    std::string baseline_digest;   // XXH3-128 over the tree's files
    std::vector<PreparedCandidateTree> candidates;  // in the experiment's order
    std::string support_digest;    // empty when there is no support tree
    std::string git_version;
    bool patch_applied = false;    // every candidate's patch applied
    std::string failed_candidate;  // the candidate whose patch does not apply
    std::string patch_error;       // git apply's complaint about it
};

std::string git_version();  // throws Error(missing_tool) when git is not installed

// The commit id `commit` names in `repository`; Error(usage) when it does not exist.
std::string resolve_commit(const std::string &repository, const std::string &commit);

// Removes a trees directory (the run's trees/, or prepare's staging copy), then runs `git worktree
// prune` in each repository its worktrees belonged to (the experiment's, and those the .git files on
// disk name, whatever the variant names), which drops their registrations, and those left by runs
// deleted by hand.
void remove_trees(const std::filesystem::path &trees, const Experiment &experiment);
void remove_trees(const RunDirectory &run, const Experiment &experiment);

// Renames the trees directory `from` to `to` (which must not exist) and re-links every worktree in it
// with `git worktree repair`, since git records worktrees by absolute path.
void move_trees(const std::filesystem::path &from, const std::filesystem::path &to);
// The re-linking step of move_trees alone, for trees that were moved from `moved_from` by a process
// killed before it re-linked them. Harmless on trees whose links are intact.
void relink_trees(const std::filesystem::path &trees, const std::filesystem::path &moved_from);

// Makes baseline/, one <name>/ per candidate and, when needed, support/ in `trees` (replacing what
// is there). A patch that does not apply leaves `trees` removed and the result names the candidate.
// `embedded_kernels` is consulted only for an embedded source.
PreparedTrees make_trees(const std::filesystem::path &trees, const Experiment &experiment,
                         const std::function<std::filesystem::path()> &embedded_kernels);

}  // namespace s2tp
