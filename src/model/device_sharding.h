// Several GPUs of one host (`--devices LIST|all` of sanitize, parity and time), the rules without a GPU:
// which GPUs a list names, which GPU each check runs on, and how the time stage's per-GPU measurements
// become verdicts.
//
//  * A check runs on exactly one GPU; the checks are dealt round-robin in their order, so every GPU
//    gets a share that differs by at most one and a check's GPU does not depend on timing.
//  * time runs one interleaved process per GPU. A ratio is only ever formed within one process, so
//    never across two GPUs. When every GPU that finished is the same model, their runs combine as the
//    repeats of one measurement, the GPU as the group of the two-level bootstrap; otherwise each GPU
//    gets a verdict of its own.
//  * A GPU lost mid-run (a device error) is reported as lost, never as a pass; the others' results stay.
//
// Usage:
//   std::vector<int> devices = parse_device_list("all", visible_gpu_count);
//   std::vector<int> gpu_of_check = assign_checks(checks.size(), devices);
//   GpuTimings timings = combine_gpu_timings(per_gpu_runs, settings.bootstrap);
#pragma once

#include "model/ab_timing.h"

#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// "all" -> 0..visible-1; "0,2" -> {0, 2} (indices within CUDA_VISIBLE_DEVICES). Error(usage) naming the
// word for an empty list, a word that is not an index, an index outside 0..visible-1 or a repeated
// one; Error(missing_tool) for "all" when no GPU is visible.
std::vector<int> parse_device_list(const std::string &spec, int visible);

// The GPU of each of `checks` checks, dealt round-robin over `devices` in order.
std::vector<int> assign_checks(std::size_t checks, const std::vector<int> &devices);

// What one GPU's check run ended as.
struct GpuCheckOutcome {
    int device = 0;
    std::string gpu;          // "NVIDIA H200 (GPU-..., 0000:19:00.0)"
    std::size_t checks = 0;   // assigned to it
    std::size_t passed = 0, failed = 0;
    std::optional<std::string> lost;  // the device error that ended it; its unrun checks count as not passed
};
// The stage passes only when every GPU ran all its checks and none failed; the lines name each GPU
// that failed a check or was lost.
struct ShardedVerdict {
    bool passed = false;
    std::vector<std::string> reasons;
};
ShardedVerdict judge_sharded_checks(const std::vector<GpuCheckOutcome> &gpus);

// One GPU's time process: who it ran on and its run, or why it has none.
struct GpuTimingRun {
    int device = 0;
    std::string name;  // the model, e.g. "NVIDIA H200"
    std::string uuid, pci_bus_id;
    std::optional<TimingRun> run;
    std::string lost;  // set when run is unset: the device error
};

struct GpuTimings {
    // Set when at least two GPUs finished and all that finished are one model: their runs as the
    // repeats of one measurement, each GPU one group of the two-level bootstrap.
    std::optional<TimingStats> combined;
    // Every GPU that finished, its own statistics: its verdict when `combined` is unset.
    std::vector<std::pair<int, TimingStats>> per_gpu;
    std::vector<int> lost;  // devices with no run
};
GpuTimings combine_gpu_timings(const std::vector<GpuTimingRun> &gpus, const BootstrapOptions &bootstrap);

}  // namespace s2tp
