// The GPU side of the time stage's measurement: the LaunchTimer that launches the real kernels between
// CUDA events (model/ab_timing.h drives it), and what one launch moves through memory.
#pragma once

#include "gpu/attention_launch.h"
#include "gpu/gpu_runtime.h"
#include "gpu/kernel_abi.h"
#include "model/ab_timing.h"

#include <array>
#include <cstddef>

namespace s2tp {

// Bytes an attention launch reads or writes: the quantized q, k, v with their scales, and the output.
std::size_t attention_footprint_bytes(const DeviceQuantizedInputs &inputs, const AttentionOutputs &outputs);

// The real timer: the baseline kernel for both baseline launches and the candidate kernel, each with
// its own launch packed by its arm's ABI adapter beforehand (same inputs, separate outputs), on the
// default stream; the SM clock probe runs right after each timed launch. With a flusher, L2 is flushed
// before every timed launch.
class GpuLaunchTimer : public LaunchTimer {
public:
    GpuLaunchTimer(const Kernel &baseline, const Kernel &candidate,
                   const std::array<AttentionLaunch, launches_per_round> &launches, SmClockProbe &clock,
                   L2Flusher *flusher);
    void warm_up(Launch launch) override;
    LaunchSample timed(Launch launch) override;

private:
    void launch(Launch launch);

    const Kernel &baseline_;
    const Kernel &candidate_;
    std::array<AttentionLaunch, launches_per_round> launches_;
    SmClockProbe &clock_;
    L2Flusher *flusher_;
    EventTimer timer_;
};

}  // namespace s2tp
