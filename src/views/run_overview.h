// What `sage2tp status` (and `run --json`) say about a run: each stage's state in words, the first
// reason and the log of a failed stage, who holds the run, and the one command to run next.
//
// Usage:
//   s2tp::RunOverview overview = s2tp::overview_run(run, "--run runs/tp1");
//   std::cout << "next: " << overview.next << "\n";
#pragma once

#include "pipeline/run_directory.h"
#include "pipeline/stage_pipeline.h"

#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct StageOverview {
    Stage stage;
    std::string status;        // passed | failed | skipped | untrusted | running (pid N) | -
    std::string finished_utc;  // missing_figure without a checkpoint
    std::string fresh;         // yes | no | -
    std::string summary;       // figures.summary, then why it is stale
    std::string first_reason;  // a failed or skipped stage's first reason
    std::string log;           // a failed stage's log, run-relative; empty when none is recorded
    std::string stale_reason;  // why it is not fresh; empty when fresh
    std::vector<std::string> gpus;  // its per-GPU table (gpu_table_lines) when it shows one
};

struct RunOverview {
    std::vector<StageOverview> stages;
    std::optional<long> running_pid;  // another process holds the run's lock (0: pid not recorded)
    std::optional<StageStop> stop;    // why the last attempt at the next stage stopped, when it is recorded
    std::string next;                 // the command to run next, or what to do when there is none
};

// `run_option` is what the commands in `next` need to name this run ("--run DIR", or "" for the
// default one). The first stage that is not passed (or skipped) and fresh is the one to run next; while
// another process holds the lock, it is the one that process is running.
RunOverview overview_run(const RunDirectory &run, const std::string &run_option);

// The log a failed checkpoint points to: the first recorded log of an entry with no output (a compile
// that made no cubin) or with a non-zero exit code or error count, else its first recorded log; "" when
// it records none.
std::string failure_log(const Checkpoint &checkpoint);

}  // namespace s2tp
