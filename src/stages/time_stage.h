// The time stage's body: the baseline, its A/A control and every candidate on the run's real workload,
// interleaved in one process per measurement (model/ab_timing.h), with the experiment's stop
// conditions as separate functions, and `time --repeat N` as N measurements in fresh sage2tp processes
// whose rounds the parent combines with a two-level bootstrap.
//
// One measurement (measure_arms) loads the modules, makes and quantizes the inputs of every input set,
// launches every arm once on each set and records its outputs (output_digests), then times the rounds,
// each on one set with every output poisoned first, re-checking a seeded share of the rounds' outputs
// against the set's records (sage2tp-time(1), Input sets and re-checked rounds). With repeats, each
// child runs measure_arms in its own process (`sage2tp time --repeat-child FILE`, no lock: the parent
// holds the run) and writes it to FILE.
//
// Usage (subcommands/time.cpp):
//   TimeRequest request{overrides, repeats, workload_file, pin, ncu, force, device_index};
//   ExitCode code = run_stage(context, time_stage_work(context, request, reporter), reporter);
#pragma once

#include "gpu/output_checks.h"
#include "stages/parity_check.h"

#include "gpu/attention_launch.h"
#include "gpu/gpu_runtime.h"
#include "model/ab_timing.h"
#include "model/experiment_manifest.h"
#include "model/timing_calibration.h"
#include "pipeline/cli.h"
#include "pipeline/run_directory.h"
#include "pipeline/stage_pipeline.h"
#include "tools/gpu_session.h"
#include "figures/time_figures.h"
#include "support/hashing.h"

#include <toml++/toml.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// The one place the time stage reads its outputs back, on the GPU (gpu/output_checks.h). The first
// record hashes each distinct output once and counts the elements that still hold the NaN poison; a
// later record compares each output with its recorded bytes on the GPU and downloads only one that
// changed (its NaN count is not taken again: a NaN-free output stays NaN-free while its bytes do not
// change).
std::vector<OutputDigest> output_digests(OutputChecks &checks, const std::vector<AttentionOutputs> &outputs,
                                         bool first_record);

// ---- Accuracy of the timed outputs (when the run checks accuracy, sage2tp-experiment(5) [parity]) ----

// What the time stage checks besides bytes: each candidate's parity mode and the limits; reference_rows
// 0 when the run does not check accuracy.
struct TimeAccuracy {
    AccuracyRules rules;
    std::int64_t reference_rows = 0;
};
TimeAccuracy time_accuracy(const Experiment &experiment);

// One arm's first output against the float64 GPU reference of the workload and against the baseline's
// output, on the reference's sampled rows, and its conditions (absolute limits; for a tolerance
// candidate also the baseline factor). The control arm's entry stays empty: its bytes are the baseline's.
struct ArmAccuracy {
    bool tolerance = false;  // a tolerance candidate: its SHA-256 need not match the baseline's
    std::optional<AccuracyFigure> reference, vs_baseline;
    std::optional<bool> passed;
    std::string conditions;
};

// ---- The stop conditions, each a pure function of the records (arms named by arm_names) ----

// One reason per arm that left elements unwritten.
std::vector<std::string> unwritten_output_reasons(const std::vector<std::string> &arms,
                                                  const std::vector<OutputDigest> &first);
// The A/A control's output differs from the baseline's: the baseline is not deterministic.
std::optional<std::string> nondeterminism_reason(const std::vector<OutputDigest> &first);
// One reason per candidate whose output differs from the baseline's, except tolerance candidates
// (`accuracy`, per arm, when the run checks accuracy).
std::vector<std::string> candidate_mismatch_reasons(const std::vector<std::string> &arms,
                                                    const std::vector<OutputDigest> &first,
                                                    const std::vector<ArmAccuracy> &accuracy = {});
// One reason per arm whose accuracy conditions failed.
std::vector<std::string> accuracy_failure_reasons(const std::vector<std::string> &arms,
                                                  const std::vector<ArmAccuracy> &accuracy);
// The baseline's digest differs from the one pinned for its kernel on its arch (`key`).
std::optional<std::string> pin_mismatch_reason(const std::string &baseline_sha256,
                                               const std::optional<std::string> &expected, const PinKey &key);
// All of the above that must hold before anything is timed (the pin is not a criterion under --pin).
std::vector<std::string> first_output_failures(const std::vector<std::string> &arms,
                                               const std::vector<OutputDigest> &first,
                                               const std::optional<std::string> &expected, bool pin,
                                               const PinKey &key, const std::vector<ArmAccuracy> &accuracy = {});
// One reason per arm whose first output in another measurement (`where` says which, e.g. "repeat 3")
// differs from the first measurement's record.
std::vector<std::string> changed_output_reasons(const std::vector<std::string> &arms,
                                                const std::vector<OutputDigest> &reference,
                                                const std::vector<OutputDigest> &other, const std::string &where);
// One reason per failed re-check of a timed round, naming the arm, the round (from 1), the input set
// and `where` ("" for a single measurement).
std::vector<std::string> recheck_failure_reasons(const std::vector<std::string> &arms, const TimingRun &run,
                                                 const std::string &where);
// "up to 12.1 s of sampling": how every progress line spells a sampling budget, and how the reason
// for too few rounds spells it too.
std::string sampling_budget_text(double seconds);
// Fewer unthrottled rounds than min_rounds: no interval to trust.
std::optional<std::string> too_few_rounds_reason(const TimingRun &run, const TimingSettings &settings,
                                                 const std::string &where);

// ---- One measurement ----

// What an arm's host function launched on input set 0: its first launch, as RecordedLaunch describes
// it, and that launch's dynamic shared memory.
struct ArmLaunch {
    std::string shape;  // "grid 256x40x1, block 32x4x1, 32768 B dynamic smem"
    std::int64_t dynamic_smem_bytes = 0;
};

struct ArmMeasurement {
    std::vector<OutputDigest> first;  // before timing, on input set 0 (the workload's own)
    // Per arm; nullopt for an arm launched from its cubin, whose launch is sage2tp's own.
    std::vector<std::optional<ArmLaunch>> launches;
    // Why the first outputs on another input set failed first_output_failures' conditions, each naming
    // the set; nothing was timed then.
    std::vector<std::string> input_set_failures;
    TimingRun timing;                 // no rounds when a first record failed; its re-checks
    std::vector<ArmAccuracy> accuracy;  // per arm, of the first outputs; empty when not checked
    std::size_t footprint_bytes = 0;
    bool l2_flushed = false;

    toml::table to_toml() const;  // the file a --repeat-child writes
    static ArmMeasurement from_toml(const toml::table &table, const std::string &where);
};

struct MeasureRequest {
    const WorkloadSpec &workload;
    const BuiltKernels &kernels;
    const DeviceFacts &device;
    TimingSettings settings;
    std::optional<std::string> expected_sha256;  // checked before timing unless `pin`
    bool pin = false;
    TimeAccuracy accuracy;
};

// Loads the modules, makes the timed_input_sets input sets and records every arm's first outputs on
// each; when they pass first_output_failures on every set, times the rounds on the sets in turn, the
// outputs poisoned before every timed launch and re-checked after a seeded share of the rounds and
// the last (model/ab_timing.h, RecheckPlan).
ArmMeasurement measure_arms(const MeasureRequest &request, const Reporter &reporter);

// ---- The stage ----

struct TimeStageInputs {
    const RunDirectory &run;
    WorkloadSpec workload;
    std::optional<std::filesystem::path> workload_file;  // time --workload FILE, passed to the children
    BuiltKernels kernels;
    DeviceFacts device;
    TimingSettings settings;     // budget_seconds is the whole stage's sampling budget
    std::size_t repeats = 1;
    std::optional<std::string> expected_sha256;
    bool pin = false;
    // No pin for the baseline's kernel on this arch, and the workload is the run's own (not a set's
    // shape, not --workload FILE): the stage records the baseline's digest in the run's pins once its
    // outputs passed their checks, and says so.
    bool record_first_pin = false;
    bool ncu = false;
    std::vector<std::string> ncu_metrics;
    std::int64_t ncu_seq_len = 0;
    int device_index = 0;
    TimeAccuracy accuracy;
    // --devices with several GPUs: each repeat is one process on each GPU, all at once, the repeats one
    // after another (sage2tp-time(1), SEVERAL GPUS). One model: every process a group of the combined
    // interval; several models: a verdict per GPU (figures.gpu_results). Empty otherwise.
    std::vector<DeviceFacts> gpus;
    // The stem of the reports under run.reports(): "time" for the run's workload, "time-SHAPE" for one
    // shape of a set (stages/time_set.h), whose own reports/time.json combines them.
    std::string report_name = "time";
    // What a single process's candidate intervals add for the variation between processes on this GPU
    // model (model/timing_calibration.h); not added when several processes measured it.
    BetweenProcess between_process = {};
};

// The between-process component for `device`'s model, from the shipped data/timing_calibration.toml.
BetweenProcess between_process_for(const DeviceFacts &device);

// One process's candidate intervals widened by inputs.between_process (model/timing_calibration.h), so
// that they cover the median a fresh process would measure; the A/A control's is left as measured, since
// its two arms share every placement a process fixes, and several processes (--repeat, several GPUs of
// one model) measure the component themselves.
TimingStats with_between_process(const TimeStageInputs &inputs, TimingStats stats);

// The manifest's [time] settings with the command line's overrides applied.
struct TimeOverrides {
    std::optional<double> target_half_width, budget_seconds;
    std::optional<std::size_t> min_rounds;
    std::optional<std::uint64_t> order_seed;
};
TimingSettings timing_settings(const Experiment &experiment, const TimeOverrides &overrides);

// What the stage and each of its --repeat children resolve alike from the run: the manifest with the
// run's pins applied, the workload (the manifest's, or the one of `workload_file`), the cubins the build
// stage made, the output digest pinned for their arch, and the timing settings with `overrides` applied.
// Error(precondition) without a usable build checkpoint.
struct ResolvedTimeInputs {
    Experiment experiment;
    WorkloadSpec workload;
    BuiltKernels kernels;
    std::optional<std::string> expected_sha256;
    TimingSettings settings;
};
ResolvedTimeInputs resolve_time_inputs(const RunDirectory &run, const std::vector<StageState> &states,
                                       Experiment experiment, const TimeOverrides &overrides,
                                       const std::optional<std::filesystem::path> &workload_file);

// The one request a `time --repeat` parent hands each child process, as the words after `sage2tp time`
// (sage2tp-time(1), Repeats): to_argv writes them, from_args reads them back. Every value in it is one
// the parent derived from settings that were checked where they were typed (a budget share of 0.6 s,
// from 60 s in 100 repeats, is below --budget's user range), so the child checks none against a range.
struct RepeatChildRequest {
    std::filesystem::path run;
    std::filesystem::path measurement_file;  // where the child writes its ArmMeasurement
    std::optional<std::filesystem::path> workload_file;
    double budget_seconds = 0;
    std::size_t min_rounds = 0;
    double target_half_width = 0;
    std::uint64_t order_seed = 0;
    int device_index = 0;
    bool pin = false;

    // The request for repeat `index` (0-based) of the stage's inputs (its settings: repeat_settings).
    static RepeatChildRequest of_repeat(const TimeStageInputs &inputs, std::size_t index,
                                        const std::filesystem::path &measurement_file);
    std::vector<std::string> to_argv() const;
    // From a `time` command line holding --repeat-child (declared by subcommands/time.cpp under the
    // names to_argv writes); the run is the one the global options select.
    static RepeatChildRequest from_args(const CommandLine &command_line, const std::filesystem::path &run);
    // The settings the child measures with: the overrides its parent resolved.
    TimeOverrides overrides() const;
};

// Everything the stage consumes, for its input fingerprint.
void add_time_inputs(Fingerprint &fingerprint, const TimeStageInputs &inputs);

// Why a passed time checkpoint no longer describes the run: the pin for its kernel and arch added,
// changed or removed by hand since (its artifacts inspect_run has checked), or "" when it still does.
std::string verify_time_outputs(const Checkpoint &checkpoint, const std::optional<std::string> &expected_sha256,
                                const PinKey &key);

// The budget and order seed of repeat `index` (0-based) of `repeats`: the stage's budget split evenly,
// and a seed of its own per repeat so the repeats do not share one sequence of orders. Several GPUs
// sample at once, so each GPU's processes share the whole budget as one GPU's repeats do; `index` is
// the process's (repeat * GPUs + the GPU's place), so every process has a seed of its own.
TimingSettings repeat_settings(const TimingSettings &settings, std::size_t repeats, std::size_t index);

// The stage's body for one workload: measurements, output checks, figures (TimeFigures),
// reports/REPORT_NAME.json and .svg, the pin, ncu; with the measurements its figures came from (empty
// when the first outputs failed their checks), which a set's combined interval resamples
// (stages/time_set.h). Writes under run.reports() and, with pin, the run's pins file.
// `child` measures process `index` (RepeatChildRequest::of_repeat's) when the measurement is not made in
// this process (repeats, several GPUs), and throws Error(missing_tool) when its GPU failed; by default
// it runs `sage2tp time --repeat-child` (tests hand it their own measurements).
struct TimedWorkload {
    StageResult result;
    std::vector<TimingRun> runs;  // one per process: repeat, or GPU and repeat
};
using ChildMeasure = std::function<ArmMeasurement(std::size_t index)>;
TimedWorkload time_workload(const TimeStageInputs &inputs, const Reporter &reporter, const ChildMeasure &child = {});

// What `sage2tp time` was asked for one workload; subcommands/time.cpp checks each value a user typed
// against its range.
struct TimeRequest {
    TimeOverrides overrides;
    std::optional<std::size_t> repeats;                  // unset: the manifest's [time] repeats
    std::optional<std::filesystem::path> workload_file;  // --workload, absolute
    bool pin = false;
    bool ncu = false;
    bool force = false;
    DeviceList devices = DeviceList::one(0);  // --devices, or --device as a list of one
};

// The GPU the time stage times on, for one workload or a set. Without a usable GPU here: with
// `may_keep` (not under --force, --pin or --ncu), nullopt, and `work` keeps a passed checkpoint made on
// a GPU host and copied here while its outputs verify, else stops for want of a GPU (stop_if_no_gpu:
// recorded in the run, the error saying how to go on); without `may_keep`, that stop at once.
// With several GPUs in `devices`, all of them, the first first.
std::optional<std::vector<DeviceFacts>> time_devices(StageWork &work, const RunDirectory &run,
                                                     const std::string &built_arch, const DeviceList &devices,
                                                     bool may_keep);

// The time stage for run_stage, on one workload.
StageWork time_stage_work(StageContext &context, const TimeRequest &request, const Reporter &reporter);

// The child side of --repeat (`time --repeat-child FILE`): reads the run its parent holds (no lock,
// no checkpoint), runs measure_arms with the parent's settings and writes it to the request's
// measurement file atomically.
void run_repeat_child(const RepeatChildRequest &request, const Reporter &reporter);

}  // namespace s2tp
