#include "gpu/launch_timer.h"

#include "support/errors.h"

#include <cuda_runtime_api.h>

#include <utility>

namespace s2tp {

DeviceMemory device_memory() {
    std::size_t free_bytes = 0, total_bytes = 0;
    const cudaError_t error = cudaMemGetInfo(&free_bytes, &total_bytes);
    if (error != cudaSuccess)
        fail(ExitCode::missing_tool, std::string("cudaMemGetInfo failed: ") + cudaGetErrorString(error));
    return {static_cast<std::int64_t>(free_bytes), static_cast<std::int64_t>(total_bytes)};
}

std::size_t attention_footprint_bytes(const DeviceQuantizedInputs &inputs, const AttentionOutputs &outputs) {
    // k_mean is not listed: the attention kernel never reads it (K was quantized with it already).
    return inputs.q_int8.size() + inputs.q_scale.size() + inputs.k_int8.size() + inputs.k_scale.size() +
           inputs.v_fp8.size() + inputs.v_scale.size() + inputs.v_f16.size() + outputs.o.size() + outputs.lse.size();
}

GpuLaunchTimer::GpuLaunchTimer(std::vector<const AttentionEntry *> kernels,
                               std::vector<std::vector<AttentionLaunch>> launches,
                               std::vector<AttentionOutputs *> outputs, SmClockProbe &clock, L2Flusher *flusher,
                               OutputRecheck recheck, const NvmlProbe *power)
    : kernels_(std::move(kernels)), launches_(std::move(launches)), outputs_(std::move(outputs)), clock_(clock),
      flusher_(flusher), power_(power), recheck_(std::move(recheck)) {
    check_arm_count(kernels_.size());
    if (launches_.empty() || !recheck_)
        fail(ExitCode::internal, "launch timer: no input set, or no output re-check");
    for (const std::vector<AttentionLaunch> &set : launches_)
        if (set.size() != kernels_.size() || outputs_.size() != kernels_.size())
            fail(ExitCode::internal, "launch timer: " + std::to_string(kernels_.size()) + " kernels but " +
                                         std::to_string(set.size()) + " packed launches and " +
                                         std::to_string(outputs_.size()) + " outputs");
    reset_persisting_l2();
}

void GpuLaunchTimer::use_input_set(std::size_t set) {
    if (set >= launches_.size())
        fail(ExitCode::internal, "launch timer: input set " + std::to_string(set) + " of " +
                                     std::to_string(launches_.size()));
    set_ = set;
}

std::optional<HostCallResult> GpuLaunchTimer::launch(Arm arm) {
    return launch_attention(*kernels_.at(arm), launches_[set_].at(arm));
}

void GpuLaunchTimer::warm_up(Arm arm) { launch(arm); }

std::vector<RecheckFailure> GpuLaunchTimer::recheck() { return recheck_(set_); }

LaunchSample GpuLaunchTimer::timed(Arm arm) {
    // Every timed launch starts from poisoned outputs, so that one that skips work leaves NaN behind
    // whichever round is re-checked; the memset is stream-ordered before the start event.
    poison_outputs(*outputs_.at(arm));
    if (flusher_) flusher_->flush(nullptr);
    timer_.start(nullptr);
    const std::optional<HostCallResult> call = launch(arm);
    timer_.stop(nullptr);
    // The warm-up filled the host function's pool; a timed call that still allocates would time cudaMalloc.
    if (call && call->device_allocations > 0)
        fail(ExitCode::stop, "the host function of arm " + std::to_string(arm) + " allocated device memory (" +
                                 std::to_string(call->device_allocations) + " torch::empty block(s) beyond any call "
                                 "before) inside a timed call on " + launches_[set_].at(arm).context);
    LaunchSample sample;
    sample.time_ms = timer_.elapsed_ms();
    sample.sm_clock_mhz = clock_.mhz_now(nullptr);
    if (power_) sample.power = power_->read();
    return sample;
}

}  // namespace s2tp
