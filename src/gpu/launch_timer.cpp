#include "gpu/launch_timer.h"

namespace s2tp {

std::size_t attention_footprint_bytes(const DeviceQuantizedInputs &inputs, const AttentionOutputs &outputs) {
    // k_mean is not listed: the attention kernel never reads it (K was quantized with it already).
    return inputs.q_int8.size() + inputs.q_scale.size() + inputs.k_int8.size() + inputs.k_scale.size() +
           inputs.v_fp8.size() + inputs.v_scale.size() + outputs.o.size() + outputs.lse.size();
}

GpuLaunchTimer::GpuLaunchTimer(const Kernel &baseline, const Kernel &candidate,
                               const std::array<AttentionLaunch, launches_per_round> &launches, SmClockProbe &clock,
                               L2Flusher *flusher)
    : baseline_(baseline), candidate_(candidate), launches_(launches), clock_(clock), flusher_(flusher) {}

void GpuLaunchTimer::launch(Launch launch) {
    const Kernel &kernel = launch == Launch::candidate ? candidate_ : baseline_;
    launch_attention(kernel, launches_[static_cast<std::size_t>(launch)]);
}

void GpuLaunchTimer::warm_up(Launch launch) { this->launch(launch); }

LaunchSample GpuLaunchTimer::timed(Launch launch) {
    if (flusher_) flusher_->flush(nullptr);
    timer_.start(nullptr);
    this->launch(launch);
    timer_.stop(nullptr);
    LaunchSample sample;
    sample.time_ms = timer_.elapsed_ms();
    sample.sm_clock_mhz = clock_.mhz_now(nullptr);
    return sample;
}

}  // namespace s2tp
