// Slurm's own commands, the way sage2tp uses them: sinfo (the nodes' features), sbatch (one held job
// array), scontrol (a constraint per array task, release), scancel, and sacct or squeue (each task's
// state). Every call is an argument vector, never a shell. A command that is not installed is
// Error(missing_tool); a command that refuses is Error(usage) carrying Slurm's own message.
//
// Usage:
//   const std::vector<SlurmNode> nodes = slurm_nodes();
//   const std::string job = submit_held_array(script, 4, {"--chdir", dir});
//   set_task_constraint(job, 0, "sm_90&h200");
//   release_job(job);
//   for (const SlurmTaskState &task : slurm_task_states(job)) ...
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace s2tp {

struct SlurmNode {
    std::string name;
    std::set<std::string> features;
    std::string state;  // sinfo's, e.g. "idle", "drained"
};

// Every node of the cluster with its features (sinfo). Error(missing_tool) when sinfo is missing or
// cannot reach the controller, with its message.
std::vector<SlurmNode> slurm_nodes();

// True when `name` may be a Slurm node feature as sage2tp passes it in a constraint: letters, digits,
// '_', '.', '-' (so that '&', '|', '[' and the like keep their meaning in the expression it builds).
bool valid_feature_name(const std::string &name);

// sbatch --parsable --hold --array=0-(tasks-1) `extra` `script`: the job id. Error(missing_tool) without
// sbatch; Error(usage) with sbatch's message when it refuses.
std::string submit_held_array(const std::string &script, int tasks, const std::vector<std::string> &extra);

// scontrol update JobId=<job>_<task> Features=<constraint>: this task alone may run only where the
// constraint holds. It also gives the task a job record of its own, so that Slurm keeps its state (a
// task cancelled while pending included) after it ends.
void set_task_constraint(const std::string &job, int task, const std::string &constraint);
void release_job(const std::string &job);  // scontrol release
void cancel_job(const std::string &job);   // scancel, every task

// One array task as Slurm reports it.
struct SlurmTaskState {
    int task = -1;
    std::string state;   // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, REQUEUED, ...
    std::string reason;  // why pending, or why it ended ("None" left out)
    std::string node;
    std::string exit_code;  // "3:0" (status:signal) where Slurm gives one
};

// The array's tasks, from sacct where the cluster keeps accounting, else from squeue --states=all
// (which holds finished tasks for MinJobAge). A task Slurm no longer knows is absent. Error(missing_tool)
// when neither answers.
std::map<int, SlurmTaskState> slurm_task_states(const std::string &job);

// The lines of sacct --parsable2 (JobID|State|ExitCode|NodeList|Reason) or of squeue
// (%K|%T|%r|%N), parsed; lines of job steps ("123_4.batch") and of other jobs are left out.
std::map<int, SlurmTaskState> parse_sacct_lines(const std::string &job, const std::string &text);
std::map<int, SlurmTaskState> parse_squeue_lines(const std::string &text);

}  // namespace s2tp
