// Several GPUs of one host (`--devices LIST|all` of sanitize, parity and time), the rules without a GPU:
// which GPUs a list names, which GPU each check runs on, and how the time stage's per-GPU measurements
// become verdicts.
//
//  * A check runs on exactly one GPU; the checks are dealt round-robin in their order, so every GPU
//    gets a share that differs by at most one and a check's GPU does not depend on timing.
//  * time runs one interleaved process per GPU (per GPU and repeat with --repeat). A ratio is only
//    ever formed within one process, so never across two GPUs. When every GPU named is the same model,
//    the runs of those that finished combine as the repeats of one measurement, each process (a GPU, or
//    one repeat on a GPU) a group of the two-level bootstrap; otherwise each GPU gets a verdict of its
//    own, its repeats the groups.
//  * A GPU lost mid-run (a device error) is reported as lost, never as a pass; the others' results stay.
//
// Usage:
//   std::vector<int> devices = visible_devices(parse_device_list("all"), visible_gpu_count);
//   std::vector<int> gpu_of_check = assign_checks(checks.size(), devices);
//   GpuTimings timings = combine_gpu_timings(per_gpu_runs, settings.bootstrap);
#pragma once

#include "model/ab_timing.h"

#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// What --devices (or --device) names, before the GPUs are counted: "all", or indices within
// CUDA_VISIBLE_DEVICES in the order given, none twice.
struct DeviceList {
    bool all = false;
    std::vector<int> indices;  // when not `all`

    static DeviceList one(int index);  // --device N
    std::string text() const;          // as --devices takes it: "all", "0,2"
    bool operator==(const DeviceList &o) const { return all == o.all && indices == o.indices; }
};

// "all" or "0,2". Error(usage) naming the word for an empty list, a word that is not an index or a
// repeated index: a mistake in what was typed, whatever GPUs the host has.
DeviceList parse_device_list(const std::string &spec);

// The GPUs `list` names among `visible`: "all" -> 0..visible-1. Error(missing_tool) naming the index
// and how many GPUs are visible for one that is not, or for "all" when none is.
std::vector<int> visible_devices(const DeviceList &list, int visible);

// The GPU of each of `checks` checks, dealt round-robin over `devices` in order.
std::vector<int> assign_checks(std::size_t checks, const std::vector<int> &devices);

// The CUDA error in a GPU process's output that means the GPU itself failed or went away (no device,
// an invalid or unavailable device, an uncorrectable ECC error, a system not ready), as named in the
// output; nullopt when there is none. A fault of the kernel (an illegal address, a launch failure) is
// not one: it is a finding of the check that ran it.
std::optional<std::string> device_error_in(const std::string &output);

// Whether a lost GPU's items may run on another: a check may (movable), a measurement of that GPU may
// not (pinned).
enum class ItemPlacement { movable, pinned };

// Each GPU's queue of work items (indices into the caller's list), dealt round-robin in order. When
// a GPU is lost its movable items move, round-robin, to the GPUs still running; pinned ones, or any
// with none left, are handed back to be reported as not run. Not thread-safe: the caller holds its lock.
class GpuQueues {
public:
    GpuQueues(std::size_t items, const std::vector<int> &devices, ItemPlacement placement = ItemPlacement::movable);

    std::optional<std::size_t> take(int device);  // the next item of `device`'s queue
    // More work for `device` (a failed batch's singles), or, `device` lost, for the next GPU still
    // running; false when none is left to take it (or the items are pinned).
    bool add(int device, std::size_t item);
    bool has_work(int device) const;
    bool empty() const;  // no GPU has work queued
    bool lost(int device) const;
    // Marks `device` lost and moves its queue to the GPUs still running; returns the items that no GPU
    // is left to run.
    std::vector<std::size_t> lose(int device);

private:
    std::vector<int> devices_;
    std::vector<std::deque<std::size_t>> queues_;  // per entry of devices_
    std::vector<bool> lost_;
    ItemPlacement placement_;
    std::size_t next_ = 0;  // where the round-robin of moved items goes on

    std::size_t slot(int device) const;
};

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

// One GPU's time processes: who it ran on and its runs (one per repeat), or why it has none.
struct GpuTimingRun {
    int device = 0;
    std::string name;  // the model, e.g. "NVIDIA H200"
    std::string uuid, pci_bus_id;
    std::vector<TimingRun> runs;  // empty when lost before any measured
    std::string lost;             // the device error that lost it, "" when it was not
};

// Whether `gpus` are of more than one model: then each gets a verdict of its own.
bool several_gpu_models(const std::vector<std::string> &models);

struct GpuTimings {
    // Set when at least two GPUs finished and every GPU named, lost ones too, is one model: the runs of
    // those that finished as the repeats of one measurement, each run one group of the two-level
    // bootstrap.
    std::optional<TimingStats> combined;
    // Every GPU that finished, its own statistics over its runs: its verdict when `combined` is unset.
    std::vector<std::pair<int, TimingStats>> per_gpu;
    std::vector<int> lost;  // devices lost (with or without runs before)
};
GpuTimings combine_gpu_timings(const std::vector<GpuTimingRun> &gpus, const BootstrapOptions &bootstrap);

}  // namespace s2tp
