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
#include "pipeline/run_removal.h"

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

// The working tree of `repository` against `commit`, as `git diff <commit>` gives it: tracked files
// only (an untracked file is not in it), binary changes included, with a/ and b/ prefixes and no
// colour, external diff or textconv whatever the user's git config says, so that `git apply` takes it
// back. "" when the working tree has no change against the commit.
std::string worktree_diff(const std::string &repository, const std::string &commit);

// The registrations of worktrees inside the run `run_root` kept outside it: in the repositories of the
// experiment's git sources and those the run's trees are worktrees of. A tree's .git file is believed
// only when its registration points back into the run, so a planted one names no other repository.
std::vector<WorktreeRegistration> run_registrations(const std::filesystem::path &run_root, const Experiment &experiment);
// What removing the run `root` (canonical) unregisters (plan_run_removal's RegistrationFinder): the
// registrations of its experiment.toml's repositories, or without a readable one those its trees' .git
// files name, and those of the repositories a clean killed midway recorded in its removal marker.
std::vector<WorktreeRegistration> run_worktree_registrations(const std::filesystem::path &root);

// Removes a trees directory of the run `run_root` (its trees/, or prepare's staging copy) without
// following links, and the registrations of its worktrees (as run_registrations finds them); then, in
// the experiment's own repositories, the registrations of sage2tp's worktrees whose directories are
// gone (runs deleted by hand): those whose admin directory holds sage2tp's mark, never the user's own
// (no `git worktree prune`).
void remove_trees(const std::filesystem::path &trees, const Experiment &experiment, const std::filesystem::path &run_root);

// Renames the trees directory `from` to `to` (which must not exist) and re-links every worktree in it
// with `git worktree repair`, since git records worktrees by absolute path.
void move_trees(const std::filesystem::path &from, const std::filesystem::path &to, const std::filesystem::path &run_root);
// The re-linking step of move_trees alone, for trees that were moved from `moved_from` by a process
// killed before it re-linked them. Harmless on trees whose links are intact.
void relink_trees(const std::filesystem::path &trees, const std::filesystem::path &moved_from,
                  const std::filesystem::path &run_root);

// Makes baseline/, one <name>/ per candidate and, when needed, support/ in `trees` (replacing what
// is there). A patch that does not apply leaves `trees` removed and the result names the candidate.
// `embedded_kernels` is consulted only for an embedded source.
PreparedTrees make_trees(const std::filesystem::path &trees, const Experiment &experiment,
                         const std::function<std::filesystem::path()> &embedded_kernels);

}  // namespace s2tp
