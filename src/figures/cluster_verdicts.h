// The verdicts of one Slurm job array of a run (`sage2tp slurm collect`): one row per array task, by
// arch and GPU kind, merging what Slurm says of the task with what the task's own run copy recorded.
// The rule is here once: a task passes only when Slurm completed it, it was never requeued, and every
// GPU stage and the gate passed in its copy; a pending, running, cancelled, failed, timed-out,
// requeued or lost task says so and is never a pass. Written to <run>/reports/cluster.toml, which
// `compare` and `report` read.
//
// Usage:
//   ClusterTaskVerdict row = judge_cluster_task(identity, slurm_state, task_result);
//   write_file_atomically(file, toml_text(verdicts.to_toml()));
//   ClusterVerdicts back = ClusterVerdicts::from_toml(toml::parse_file(file));
#pragma once

#include "pipeline/run_directory.h"

#include <toml++/toml.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// What the task's own process wrote (<submission>/task-N/result.toml), stage by stage.
struct ClusterStageOutcome {
    std::string stage;
    int exit_code = 0;
    std::string message;  // the stage's last line on stderr, or its summary
};
struct ClusterTaskResult {
    std::string node;
    int restart_count = 0;  // SLURM_RESTART_COUNT: times Slurm requeued the task before this start
    bool finished = false;  // false: the process was stopped (or died) before its last stage ended
    std::vector<ClusterStageOutcome> stages;
};

struct ClusterTaskVerdict {
    int task = -1;
    std::string arch;
    std::string gpu_kind;  // the --constraint feature, "any" without one
    int repeat = 1;
    std::string run;       // the task's run copy, relative to the run
    std::string node;
    std::string slurm_state;  // as Slurm reports it; "unknown" when Slurm no longer knows the task
    std::string verdict;      // PASS, FAIL, "no GPU or tool (exit 3) at sanitize", cancelled, pending (reason), ...
    std::string detail;       // the failing stage's message, Slurm's reason
    bool passed = false;
};

// The identity of a task (what the plan says), Slurm's state of it (nullopt: Slurm no longer knows it)
// and its result file (nullopt: it left none), judged by the rule above.
struct ClusterTaskIdentity {
    int task = -1;
    std::string arch, gpu_kind, run;
    int repeat = 1;
};
struct ClusterSlurmState {
    std::string state, reason, node;
};
ClusterTaskVerdict judge_cluster_task(const ClusterTaskIdentity &identity, const std::optional<ClusterSlurmState> &slurm,
                                      const std::optional<ClusterTaskResult> &result);

struct ClusterVerdicts {
    std::string job;         // the Slurm job id of the array
    std::string submission;  // its directory, relative to the run
    std::string collected_utc;
    std::vector<ClusterTaskVerdict> tasks;  // by arch, GPU kind, repeat

    bool all_passed() const;
    toml::table to_toml() const;
    // Error(usage) naming `where` and the key when a row lacks one.
    static ClusterVerdicts from_toml(const toml::table &table, const std::string &where);
};

// True for a Slurm state after which the task will not run again (COMPLETED, FAILED, CANCELLED, ...).
bool slurm_state_final(const std::string &state);

// <run>/reports/cluster.toml, and what it holds (nullopt without one; Error(usage) naming it when it
// cannot be read).
std::filesystem::path cluster_verdicts_path(const RunDirectory &run);
std::optional<ClusterVerdicts> read_cluster_verdicts(const RunDirectory &run);

toml::table cluster_task_result_to_toml(const ClusterTaskResult &result);
ClusterTaskResult cluster_task_result_from_toml(const toml::table &table);

}  // namespace s2tp
