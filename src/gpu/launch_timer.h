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

// The real timer: one kernel and one launch per arm (the baseline's kernel for arms 0 and 1), each
// launch packed by its arm's ABI adapter beforehand (same inputs, separate outputs), on the default
// stream; the SM clock probe runs right after each timed launch, and then NVML's reading when `power` is
// given. With a flusher, L2 is flushed before every timed launch. The kernels are referenced, not owned:
// they must outlive the timer. It resets the persisting-L2 carve-out first (reset_persisting_l2): a
// carve-out left by another program keeps lines in L2 that no flush evicts.
class GpuLaunchTimer : public LaunchTimer {
public:
    GpuLaunchTimer(std::vector<const Kernel *> kernels, std::vector<AttentionLaunch> launches, SmClockProbe &clock,
                   L2Flusher *flusher, const NvmlProbe *power = nullptr);
    std::size_t arms() const override { return kernels_.size(); }
    void warm_up(Arm arm) override;
    LaunchSample timed(Arm arm) override;

private:
    void launch(Arm arm);

    std::vector<const Kernel *> kernels_;
    std::vector<AttentionLaunch> launches_;
    SmClockProbe &clock_;
    L2Flusher *flusher_;
    const NvmlProbe *power_;
    EventTimer timer_;
};

}  // namespace s2tp
