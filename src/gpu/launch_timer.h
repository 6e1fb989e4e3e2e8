// The GPU side of the time stage's measurement: the LaunchTimer that launches the real kernels between
// CUDA events (model/ab_timing.h drives it), and what one launch moves through memory.
#pragma once

#include "gpu/attention_launch.h"
#include "gpu/gpu_runtime.h"
#include "gpu/kernel_abi.h"
#include "gpu/nvml_probe.h"
#include "model/ab_timing.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace s2tp {

// The current device's memory, as cudaMemGetInfo reports it: what the time stage checks a shape's
// peak against before it allocates anything (model/workload_cost.h).
struct DeviceMemory {
    std::int64_t free_bytes = 0, total_bytes = 0;
};
DeviceMemory device_memory();

// Bytes an attention launch reads or writes: the quantized q, k, v with their scales, and the output.
std::size_t attention_footprint_bytes(const DeviceQuantizedInputs &inputs, const AttentionOutputs &outputs);

// Checks every arm's outputs against what input set `set` must give (the time stage's, which knows
// the expected bytes and the accuracy conditions); one failure per arm that does not hold.
using OutputRecheck = std::function<std::vector<RecheckFailure>(std::size_t set)>;

// The real timer: one kernel per arm (the baseline's kernel for arms 0 and 1) and one launch per arm
// and input set, each packed by its arm's ABI adapter beforehand (the set's inputs, the arm's own
// outputs), on the default stream. A timed launch poisons the arm's outputs first, then flushes L2
// when there is a flusher, and only then records the start event; the SM clock probe runs right after
// the end event, and then NVML's reading when `power` is given. The kernels and outputs are referenced,
// not owned: they must outlive the timer. It resets the persisting-L2 carve-out first
// (reset_persisting_l2): a carve-out left by another program keeps lines in L2 that no flush evicts.
// An arm served by a host function is timed as do_bench times a Python call: the events bracket the
// whole host function (its checks, descriptors and launch), and a timed call that allocates fails.
class GpuLaunchTimer : public LaunchTimer {
public:
    // launches[set][arm]; outputs[arm] are what the launches of the arm write.
    GpuLaunchTimer(std::vector<const AttentionEntry *> kernels, std::vector<std::vector<AttentionLaunch>> launches,
                   std::vector<AttentionOutputs *> outputs, SmClockProbe &clock, L2Flusher *flusher,
                   OutputRecheck recheck, const NvmlProbe *power = nullptr);
    std::size_t arms() const override { return kernels_.size(); }
    std::size_t input_sets() const override { return launches_.size(); }
    void use_input_set(std::size_t set) override;
    void warm_up(Arm arm) override;
    LaunchSample timed(Arm arm) override;
    std::vector<RecheckFailure> recheck() override;

private:
    std::optional<HostCallResult> launch(Arm arm);

    std::vector<const AttentionEntry *> kernels_;
    std::vector<std::vector<AttentionLaunch>> launches_;
    std::vector<AttentionOutputs *> outputs_;
    SmClockProbe &clock_;
    L2Flusher *flusher_;
    const NvmlProbe *power_;
    OutputRecheck recheck_;
    std::size_t set_ = 0;
    EventTimer timer_;
};

}  // namespace s2tp
