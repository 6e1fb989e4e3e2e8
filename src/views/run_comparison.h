// `sage2tp compare`: several runs and their candidates side by side, from their time and gate
// checkpoints: one table (text, markdown or csv), a JSON object, and one SVG of every candidate's ratio
// interval against 1.
//
// Reading rules, the same as the gate's: figures come only from a checkpoint that is intact and fresh.
// A missing, untrusted (edited, truncated, another stage's) or stale checkpoint shows as such, with its
// reason, and its figures stay unset; a figure a checkpoint does not record shows as "-", never as 0.
// compare only reads: it takes no lock, so it can look at runs that other processes are working on.
//
// Usage:
//   std::vector<ComparedRun> runs;
//   std::vector<ComparedRun> runs = compare_runs(select_compared_runs({"tp-1", "runs/tp-2"}, selection));
//   std::cout << comparison_table(runs, "markdown");
//   write_file_atomically("sage2tp-compare.svg", comparison_svg(runs));
#pragma once

#include "figures/cluster_verdicts.h"
#include "pipeline/run_directory.h"
#include "support/statistics.h"

#include <toml++/toml.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// What a run's time or gate checkpoint could give: "ok", "failed", "skipped" (figures usable, as the
// stage recorded them), or "missing", "untrusted", "stale" (no figures). `note` says why: the stage's
// first reason, or why the checkpoint is not evidence.
struct CheckpointUse {
    std::string state;
    std::string note;
    bool usable() const { return state == "ok" || state == "failed" || state == "skipped"; }
};

struct ComparedCandidate {
    std::string name;
    std::optional<double> p50_ms;
    std::optional<RatioInterval> ratio;  // candidate/baseline
    std::string verdict;                    // PASS | FAIL, the gate's for this candidate; "" when it gave none
    // Over a workload set: the shape this row is of, or "geomean" for the combined row; "" for one workload.
    std::string shape;
    // On GPUs of several models (figures.gpu_results): the GPU this row is of ("GPU 1 NVIDIA H100 80GB
    // HBM3"), with that GPU's own baseline p50 and A/A control; "" for a run whose GPUs combined.
    std::string gpu;
    std::optional<double> gpu_baseline_p50_ms;
    std::optional<RatioInterval> gpu_aa;
    // In a run after the first compared: the change of its ratio against the same candidate of the first
    // run, and its class, FAST | SLOW | SAME | UNKNOWN (views/run_regression.h); unset and "" otherwise.
    std::optional<RatioInterval> change;
    std::string change_class;
};

struct ComparedRun {
    std::string id;  // the run directory's name
    std::filesystem::path root;  // absolute
    CheckpointUse time, gate;
    std::optional<std::string> workload, arch, gpu;
    std::optional<double> sm_clock_min_mhz, sm_clock_median_mhz, sm_clock_max_mhz;
    std::optional<double> baseline_p50_ms;
    std::optional<RatioInterval> aa;  // control/baseline
    double aa_tolerance = 0;          // the band 1 +- this the time stage judged the control by
    std::string gate_summary;            // the gate's one overall line ("" without a usable gate)
    // The time checkpoint's candidates in the manifest's order, then any only the gate names (by name);
    // empty when neither names one.
    std::vector<ComparedCandidate> candidates;
    // The run's Slurm verdicts (reports/cluster.toml, sage2tp-slurm(1)), shown after the table in text
    // and markdown and under "cluster" in JSON.
    std::optional<ClusterVerdicts> cluster;
    // The time stage's per-GPU table (gpu_table_lines) when it ran on several GPUs or lost its one,
    // shown after the table in text and markdown and under "gpus" in JSON.
    std::vector<std::string> gpu_lines;
    toml::array gpus;  // figures.gpus as the checkpoint holds them
};

// The run directories that the words name, in order: a word that is an existing directory is that run
// directory, any other word a run id under the selection's runs root (the rules of
// pipeline/run_directory.h); with no words, the one run that other commands pick (--run, --run-id, the
// run the working directory is in, the latest). Error(usage) for a word that is neither a directory nor
// a run id; Error(precondition) for a run id with no directory, or a directory that is not a run (no
// experiment.toml).
std::vector<std::filesystem::path> select_compared_runs(const std::vector<std::string> &words,
                                                        const RunSelection &selection);

// Reads the run's checkpoints once (inspect_run) and keeps what compare shows. A run that stopped
// before time says where: its recorded stop, else the stage before time that failed or has not run.
ComparedRun compare_run(const std::filesystem::path &root);
// compare_run of each root, in order; runs of one directory name (a run and its copy) are told apart by
// as many of their parent directories as it takes ("gpu-host/tp-1", "sage2tp-runs/tp-1").
std::vector<ComparedRun> compare_runs(const std::vector<std::filesystem::path> &roots);

// One row per candidate of each run (one row with candidate "-" for a run whose checkpoints name none;
// with several runs, a column "change" of each later run's candidates against the first run's;
// on GPUs of several models, one per candidate and GPU, the gpu column naming it),
// then in text and markdown the notes: each checkpoint's reason where it has one (failed, skipped, stale,
// untrusted), the gate's overall line where it did not pass, and each run's per-GPU table. format: text | markdown | csv, else
// Error(usage).
std::string comparison_table(const std::vector<ComparedRun> &runs, const std::string &format);

// The same rows for --json: { runs = [ { id, run_dir, time = {state, note}, gate = {...}, workload, ...,
// candidates = [ { name, p50_ms, ratio = {median, ci_low, ci_high}, verdict } ] } ] }; unset figures are left out.
toml::table comparison_json(const std::vector<ComparedRun> &runs);

// Every candidate's ratio interval against 1 (and, in words, its run's A/A control and gate verdict);
// a candidate without an interval is a row saying why.
std::string comparison_svg(const std::vector<ComparedRun> &runs);

}  // namespace s2tp
