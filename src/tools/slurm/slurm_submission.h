// One experiment on a Slurm cluster (sage2tp-slurm(1)): the run built on the submit host once per
// arch, one job array whose tasks each run the GPU stages and the gate on a copy of the built run, and
// the collector that turns the tasks into one table of verdicts (figures/cluster_verdicts.h).
//
// A submission lives in <run>/slurm/<UTC stamp>/:
//   plan.toml         the job id and the tasks: index, arch, GPU kind, repeat, Slurm constraint, run copy
//   task.sh           the batch script: `exec <sage2tp> slurm task --plan <plan.toml>`, both paths quoted
//   arch-<arch>/      the run copied and built for that arch
//   task-<N>/run/     task N's copy of its arch's build; task-<N>/result.toml, logs/, slurm.out
// and <run>/slurm/latest names the newest. A preview (`slurm -n`) writes plan.toml, without a job id,
// and task.sh to <run>/slurm/dry-run/ instead, replacing the previous preview, and builds nothing. Nothing of the run outside slurm/ is changed by a submission,
// and a refused one leaves no trace. Every node runs what its constraint allows: the arch's feature
// (the arch-limits row, e.g. sm_90 for sm_90a) and, with --constraint, the GPU kind's feature.
#pragma once

#include "model/device_sharding.h"

#include "figures/cluster_verdicts.h"
#include "model/arch_limits.h"
#include "model/experiment_manifest.h"
#include "pipeline/cli.h"
#include "pipeline/run_directory.h"
#include "tools/slurm/slurm_jobs.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct SlurmTaskPlan {
    int task = 0;
    std::string arch;        // the build target, e.g. sm_90a
    std::string arch_feature;  // the node feature that says a node runs it, e.g. sm_90
    std::string gpu_kind;    // a node feature naming the GPU kind, "any" for none
    int repeat = 1;
    std::string constraint;  // what Slurm gets: "sm_90&h200", or "sm_90"
    std::string run;         // the task's run copy, relative to the run
};

// One task per arch x GPU kind x repeat, in that order. Error(usage) for an unknown arch, a GPU kind
// that is not a valid feature name, or repeats < 1.
std::vector<SlurmTaskPlan> plan_slurm_tasks(const std::vector<std::string> &archs,
                                            const std::vector<std::string> &gpu_kinds, int repeats,
                                            const ArchLimitsTable &limits);

// Error(usage) unless some node carries every feature of each task's constraint, naming the GPU kind no
// node has, the arch no node runs, and the nodes' features.
void check_cluster_can_run(const std::vector<SlurmTaskPlan> &tasks, const std::vector<SlurmNode> &nodes);

// `word` in single quotes for sh, each ' as '\''. Error(usage) for a word with a newline or a NUL,
// which have no business in a path a batch script names.
std::string shell_quoted(const std::string &word);
// The batch script of a submission.
std::string slurm_batch_script(const std::filesystem::path &binary, const std::filesystem::path &plan);

struct SlurmRequest {
    std::vector<std::string> archs;      // empty: the manifest's [build] arch
    std::vector<std::string> gpu_kinds;  // empty: any node that runs the arch
    int repeats = 1;
    std::string partition;  // empty: the cluster's default
    int time_limit_minutes = 0;  // 0: the partition's
    std::optional<DeviceList> devices;  // --devices for each task's GPU stages; unset: their default GPU
};

struct SlurmSubmission {
    std::filesystem::path dir;
    std::string job;
    std::vector<SlurmTaskPlan> tasks;
};

// Checks the request against the cluster, builds once per arch, copies, submits the held array, gives
// each task its constraint and releases it. On any refusal the array is cancelled and the submission
// directory removed before the Error is passed on. `run` is locked by the caller.
SlurmSubmission submit_slurm_array(const RunDirectory &run, const Experiment &experiment, const SlurmRequest &request,
                                   const Reporter &reporter);

// What `sage2tp slurm -n` shows: the plan and the batch script a submission of `request` would write,
// and the archs it would build, in order. Plans the tasks as a submission does (the same Error(usage)
// for bad input), then writes plan.toml (no job id: Slurm gives none) and task.sh to <run>/slurm/dry-run/,
// replacing the previous preview. Runs neither sinfo nor sbatch, and builds nothing; `run` is locked by
// the caller.
struct SlurmPreview {
    std::filesystem::path dir;        // <run>/slurm/dry-run, absolute
    std::vector<std::string> builds;  // the archs built once each, in the tasks' order
    std::string plan;                 // plan.toml as written
    std::string script;               // task.sh as written
};
SlurmPreview preview_slurm_array(const RunDirectory &run, const Experiment &experiment, const SlurmRequest &request);

// The submission `name` names (a directory under <run>/slurm/), or the latest; Error(precondition)
// naming 'sage2tp slurm' when there is none; Error(usage) for the preview's directory, never submitted.
std::filesystem::path slurm_submission_dir(const RunDirectory &run, const std::string &name);

// Polls Slurm every `poll_seconds` until no task of the job is pending or running. Ctrl-C stops the
// waiting (Error(interrupted)); the array keeps running.
void wait_for_slurm_array(const std::string &job, int poll_seconds, const Reporter &reporter);

// Merges Slurm's states and the tasks' results into the table and writes <run>/reports/cluster.toml.
ClusterVerdicts collect_slurm_array(const RunDirectory &run, const std::filesystem::path &submission);

// What the batch script runs: task $SLURM_ARRAY_TASK_ID of the plan, the GPU stages and the gate in its
// run copy one after another, stopping at the first that does not pass; writes task-N/result.toml after
// each. Returns the first non-zero stage's exit code, 0 when all passed.
int run_slurm_task(const std::filesystem::path &plan);

}  // namespace s2tp
