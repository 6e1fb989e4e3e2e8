// The time stage over a workload set (sage2tp-time(1) WORKLOAD SETS): every shape of the set timed as
// the stage times one workload (stages/time/workload.h: the same interleaved baseline, A/A control and
// candidates, the same output checks, the same figures), one shape after another, then combined per
// candidate (figures/set_time_figures.h: the weighted geometric mean with its bootstrap interval over
// every shape's rounds, and the worst shape).
//
// The rules per shape:
//  * Budget: the stage's sampling budget is split as the stage goes (next_shape_budget,
//    model/workload_cost.h): each shape still to come is owed a quarter of an even split, the rest goes
//    in proportion to its operations per launch, and what a shape leaves unspent (it stopped on
//    precision) goes to the shapes after it. The stop rule (target half-width, min_rounds) is the
//    experiment's, applied to each shape within its share.
//  * Repeats: each shape is measured in `repeats` fresh processes (its share split evenly among them);
//    the shape's interval is their two-level bootstrap, and the combined interval draws within each
//    shape at both levels.
//  * Output pins: each shape's own [workload.expected_sha256] for the arch (from its set entry); without
//    one, the candidates must reproduce the baseline's bytes on that shape. The run's pins file
//    (time --pin) holds one workload's pins and does not apply to a set's shapes.
//  * Memory: every shape's peak is checked against the GPU's free memory before anything is timed; a
//    shape that does not fit refuses the stage (exit 2) with its numbers.
//  * A shape whose outputs fail their checks is not timed; the others still are, and the stage fails.
//  * Several GPUs (--devices) of one model: every shape is timed on every GPU, as time times one
//    workload there (one process per GPU and repeat, all GPUs at once, each process a group of the
//    shape's interval), one shape after another; the budget split is the same, each GPU sampling for
//    the whole of a shape's share. GPUs of several models are refused (exit 2): the combined interval
//    would pool ratios of different GPUs; time the set once per model.
//  * Each shape's workload is written to logs/time-SHAPE-workload.toml: its --repeat children read it,
//    and `time --workload` takes it to time or profile that shape alone.
//
// Files: reports/time-SHAPE.json and time-SHAPE.svg per shape (as reports/time.json and time.svg for
// one workload), reports/time.json with the set's figures, reports/time.svg with every shape's
// interval per candidate and the combined one.
#pragma once

#include "figures/set_time_figures.h"
#include "model/workload_cost.h"
#include "pipeline/stage_pipeline.h"
#include "stages/time/inputs.h"

#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct TimeSetInputs {
    const RunDirectory &run;
    WorkloadSet set;
    BuiltKernels kernels;
    DeviceFacts device;
    TimingSettings settings;  // budget_seconds: the whole stage's, split over the shapes
    std::size_t repeats = 1;  // processes per shape
    int device_index = 0;
    TimeAccuracy accuracy;
    std::vector<DeviceFacts> gpus;  // several GPUs of one model: every shape on each; empty for one
    BetweenProcess between_process = {};  // TimeStageInputs::between_process, for every shape
};

// Several GPUs for a set: Error(usage) naming two of them when they are not all one model.
void check_set_gpus(const std::vector<DeviceFacts> &gpus, const std::string &set);

// What one shape costs and the sampling it is planned, before anything is timed: the budget each shape
// would get if every one before it spent its whole share (it gets more when one stops early).
struct ShapePlan {
    std::string name;
    WorkloadCost cost;
    double budget_seconds = 0;
};
// `kernels`: whose adapters say how each shape's inputs are quantized for its `arms` arms.
std::vector<ShapePlan> plan_shapes(const WorkloadSet &set, const BuiltKernels &kernels, std::size_t arms,
                                   double budget_seconds);
// "[2/4] hunyuan-544p: peak 5.03 GB of device memory (...), up to 14 s of sampling"
std::string shape_plan_line(const ShapePlan &plan, std::size_t index, std::size_t count);
// One refusal per shape whose peak does not fit `free_bytes` (memory_refusal's text).
std::vector<std::string> shape_memory_refusals(const std::vector<ShapePlan> &plans, std::int64_t free_bytes,
                                               std::int64_t total_bytes);

// Everything the stage consumes: the set's name, and each shape's workload (its weight too) with the
// settings, kernels and device as for one workload.
void add_time_set_inputs(Fingerprint &fingerprint, const TimeSetInputs &inputs);

// Why a passed set checkpoint no longer describes the run: a shape's pin for `key` changed in the set
// since, or a shape is missing from it; "" when it still does. (Its artifacts inspect_run has checked.)
std::string verify_time_set_outputs(const Checkpoint &checkpoint, const WorkloadSet &set, const PinKey &key);

// The stage's body over the set.
StageResult time_workload_set(const TimeSetInputs &inputs, const Reporter &reporter);

// What `sage2tp time` was asked over a set (subcommands/time.cpp): as for one workload, without --pin,
// --ncu and --workload, which a set refuses.
struct TimeSetRequest {
    WorkloadSet set;
    TimeOverrides overrides;
    std::optional<std::size_t> repeats;  // unset: the manifest's [time] repeats
    bool force = false;
    DeviceList devices = DeviceList::one(0);  // several GPUs: of one model (check_set_gpus)
};

// The time stage over the set for run_stage. Without a GPU, a passed set checkpoint made on a GPU host
// and copied here stands while its outputs verify (not under --force); otherwise the no-GPU stop.
StageWork time_set_stage_work(StageContext &context, const TimeSetRequest &request, const Reporter &reporter);

}  // namespace s2tp
