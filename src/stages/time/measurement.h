// One measurement of the time stage, in one process: the baseline, its A/A control and every candidate
// (the arms) on the workload, interleaved round by round (model/ab_timing.h).
//
// measure_arms loads the modules, makes and quantizes the inputs of every input set, launches every
// arm once on each set and records its outputs (output_digests), then times the rounds, each on one
// set with every output poisoned first, re-checking a seeded share of the rounds' outputs against the
// set's records (sage2tp-time(1), Input sets and re-checked rounds). With repeats, each child process
// runs it (stages/time/repeat_protocol.h).
#pragma once

#include "gpu/attention_launch.h"
#include "gpu/gpu_runtime.h"
#include "gpu/output_checks.h"
#include "model/ab_timing.h"
#include "model/experiment_manifest.h"
#include "pipeline/cli.h"
#include "stages/parity_check.h"
#include "tools/gpu_session/gpu_session.h"

#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// "b1 h40/40 n32760/32760 d128 NHD bf16 non-causal": how progress lines and figures spell a shape.
std::string shape_text(const AttentionProblem &problem);

// The candidates' names in the build's order: with arm_names, the names of the arms.
std::vector<std::string> candidate_names(const BuiltKernels &kernels);

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

// ---- One measurement ----

// What an arm's host function launched on input set 0: its first launch, as RecordedLaunch describes
// it, and that launch's dynamic shared memory.
struct ArmLaunch {
    std::string shape;   // "grid 256x40x1, block 32x4x1, 32768 B dynamic smem, ..."
    std::string kernel;  // mangled
    std::int64_t dynamic_smem_bytes = 0;
    std::optional<double> warps_per_scheduler;
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

    // The measurement file a repeat's child writes and its parent reads (stages/time/repeat_protocol.cpp).
    toml::table to_toml() const;
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

}  // namespace s2tp
