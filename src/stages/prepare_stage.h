// The prepare stage: resolve the experiment manifest into the run directory and make the source
// trees, trees/baseline and one trees/<name> per candidate (each with its own patch applied).
//
// prepare is transactional. It makes the new experiment.toml, the input copies (each candidate's patch
// as inputs/<name>.patch, the workload tensors) and the trees in <run>/.prepare-new and swaps them in
// only once all of them are complete; the stage framework then writes the checkpoint. Every file and
// tree is recorded in that checkpoint with its digest, and every stage checks them before trusting
// prepare, so a kill during the swap leaves a state that no checkpoint describes: untrusted, and the
// next prepare cleans it up.
#pragma once

#include "figures/prepare_figures.h"
#include "model/experiment_manifest.h"
#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct PrepareRequest {
    std::filesystem::path manifest;  // recorded in the figures (the experiment was loaded from it)
    SourceOverrides overrides;
    Experiment experiment;
    bool force = false;
    std::function<std::filesystem::path()> embedded_kernels;  // the kernels an embedded source commits
    // prepare --candidate-worktree: the working tree's diff, which prepare_in_run writes to the only
    // candidate's patch path under the run's lock and removes once the stage is over; "" otherwise.
    std::string candidate_worktree_diff;
};

// prepare --candidate-worktree: the working tree of the repository of `experiment`'s baseline against
// the baseline commit, as worktree_diff (tools/source_trees.h) gives it.
struct WorktreeChange {
    std::string repository;
    std::string commit;  // the baseline's, resolved
    std::string diff;
};
// Error(usage) when the baseline is not a git source, the manifest has more than one candidate, the
// candidate has a source of its own (its commit is not the baseline's), or the working tree has no
// change against the commit.
WorktreeChange take_worktree_change(const Experiment &experiment);
// Makes `change` the patch of request.experiment's only candidate: a file at the root of the run
// `root`, named after the diff's digest, so that an unchanged working tree is the same input and
// leaves the run up to date. Returns the line prepare prints about it.
std::string use_worktree_change(PrepareRequest &request, const std::filesystem::path &root, const WorktreeChange &change);

struct PrepareOutcome {
    ExitCode exit_code = ExitCode::ok;  // 0 passed or up to date, 1 a failed prepare (nothing changed)
    std::optional<PrepareFigures> figures;  // of the checkpoint that now stands, when it passed
    std::vector<std::string> reasons;       // why it failed
};

// Runs prepare in `context` (opened with the request's experiment): clears what a killed prepare
// left, skips an up-to-date run unless forced, stages and swaps in the new state. A failure inside
// (a patch that does not apply, git failing) changes nothing and keeps the previous checkpoint.
PrepareOutcome prepare_stage(StageContext &context, const PrepareRequest &request, const Reporter &reporter);

// prepare_stage in the run directory `root`, which it opens (and locks). A prepare that fails in a run
// directory it made (`made_here`: a new run id or --run DIR) removes it again, leaving no empty run;
// also when its lock or the run's marker cannot be written (a full disk); but never while another
// process holds the lock: a prepare that made the directory and then lost the lock to another prepare
// of it leaves it to that one.
PrepareOutcome prepare_in_run(const std::filesystem::path &root, bool made_here, const PrepareRequest &request,
                              const Reporter &reporter);

// For a run copied from another host, whose manifest or git repository (`absent`, as a person reads
// it) is not here: reports its prepare checkpoint up to date when it passed and its trees and files are
// as recorded, else Error(usage).
ExitCode keep_copied_run(const std::filesystem::path &run, const std::string &absent, const Reporter &reporter);

// A run holds one experiment: preparing another in it would make its build, times and verdict stale
// without a word. Error(usage) naming both experiments and `manifest` when the run at `run` was prepared
// from an experiment not named `experiment_name` (prepare --new or --force are the ways on).
void check_same_experiment(const std::filesystem::path &run, const std::string &experiment_name,
                           const std::filesystem::path &manifest);

// The repository of a git source of `experiment` that is not a git repository on this host, if any.
std::optional<std::string> absent_repository(const Experiment &experiment);

}  // namespace s2tp
