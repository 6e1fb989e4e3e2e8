// What the time stage times with: its inputs for one workload, the timing settings the manifest and
// the command line give, what the stage and each repeat's child resolve alike from the run, and the
// fingerprint of it all.
#pragma once

#include "model/timing_calibration.h"
#include "pipeline/run_directory.h"
#include "pipeline/stage_pipeline.h"
#include "stages/time/measurement.h"
#include "support/hashing.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

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
    // shape of a set (stages/time/set.h), whose own reports/time.json combines them.
    std::string report_name = "time";
    // What a single process's candidate intervals add for the variation between processes on this GPU
    // model (model/timing_calibration.h); not added when several processes measured it.
    BetweenProcess between_process = {};
};

// The between-process component for `device`'s model, from the shipped data/timing_calibration.toml.
BetweenProcess between_process_for(const DeviceFacts &device);

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

// Everything the stage consumes, for its input fingerprint.
void add_time_inputs(Fingerprint &fingerprint, const TimeStageInputs &inputs);

}  // namespace s2tp
