// Calling a launcher file's own host function: the host-call library the build stage links from the
// user's launcher file (kernels/host_call_export.h), loaded with dlopen, called with values that wrap
// sage2tp's device buffers (kernels/host_call_abi.h). The host function checks its tensors, picks its
// template instance, encodes its TMA descriptors and launches its kernel: its grid, block, shared
// memory and stream, not sage2tp's idea of them. Every launch it makes is recorded.
//
// Usage:
//   s2tp::HostCallLibrary library("builds/baseline/qk_int_sv_f8_cuda_sm90.sm_90a.so");
//   s2tp::HostArguments args;
//   args.tensor(q, s2tp::HostDType::int8, {B, N, H, D}); ... args.integer(1); args.real(sm_scale);
//   library.call(args, nullptr, false, "hd128 bf16 B1 H40 N32760");   // throws on failure
//   library.launches().front().grid ...                               // what that call launched
#pragma once

#include "gpu/gpu_runtime.h"

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "host_call_abi.h"

namespace s2tp {

// torch's ScalarType codes for the dtypes sage2tp passes.
enum class HostDType : std::int32_t { int8 = 1, f16 = 5, f32 = 6, bf16 = 15, e4m3 = 24 };
HostDType host_dtype(DType dtype);  // f16, bf16 or f32

// A host function's arguments in its parameter order.
class HostArguments {
public:
    // A contiguous device tensor of `sizes` at `data`, on the device current when the call is made.
    void tensor(const void *data, HostDType dtype, std::initializer_list<std::int64_t> sizes);
    void tensor(const void *data, HostDType dtype, const std::vector<std::int64_t> &sizes);
    void integer(std::int64_t value);
    void real(double value);

    const std::vector<s2tp_host_value> &values() const { return values_; }

private:
    std::vector<s2tp_host_value> values_;
};

// One kernel launch the host function made, as it made it.
struct RecordedLaunch {
    std::string kernel;  // mangled, as the cubin names it
    LaunchDims grid, block;
    std::uint64_t dynamic_smem_bytes = 0;
    LaunchDims cluster{0, 0, 0};  // 0 0 0 unless launched with a cluster dimension
    // The driver's occupancy calculator for this kernel at this block and dynamic shared memory, and
    // the kernel's registers per thread; unset when the driver could not say.
    std::optional<int> blocks_per_sm, registers;

    std::string describe() const;  // "grid 256x40x1, block 128x1x1, 32768 B dynamic smem"
    // Resident warps per SM scheduler (4 per SM): blocks_per_sm times the block's warps, over 4.
    std::optional<double> warps_per_scheduler() const;
};

// What a call reports at once: counts only, so that a timed call allocates nothing to return them.
struct HostCallResult {
    int launch_count = 0;
    int device_allocations = 0;  // cudaMalloc calls its torch::empty made
};

// A loaded host-call library. Move-only; unloaded on destruction.
class HostCallLibrary {
public:
    // Error(precondition) naming the file when it cannot be loaded, exports no host call, or was built
    // for another version of host_call_abi.h.
    explicit HostCallLibrary(const std::filesystem::path &library);

    const std::string &function() const { return function_; }
    const std::filesystem::path &path() const { return path_; }

    // Calls the host function on `stream` (what at::cuda::getCurrentCUDAStream() returns). With
    // `poison_allocations`, every block its torch::empty hands out is filled with 0xFF bytes first; with
    // `keep_for_replay`, its launches are kept, argument bytes included, for replay().
    // Throws Error(stop) naming the host function and `context` when it throws (a TORCH_CHECK, an
    // assert), takes other parameters than `arguments` gives, leaves a CUDA error, or launches nothing.
    HostCallResult call(const HostArguments &arguments, GpuStream stream, bool poison_allocations,
                        const std::string &context, bool keep_for_replay = false) const;
    // The last call's launches (the first S2TP_HOST_MAX_LAUNCHES), as it made them.
    std::vector<RecordedLaunch> launches() const;
    // The tensor the last call returned, when it returned one with elements; valid until the next call.
    std::optional<s2tp_host_tensor> returned() const;
    // Makes the launches of the last call kept for replay again with the same arguments, without the
    // host function: the kernels' own cost. Error(internal) naming `context` when a launch fails or no
    // call was kept.
    void replay(GpuStream stream, const std::string &context) const;

private:
    struct Unload {
        void operator()(void *handle) const;
    };
    std::unique_ptr<void, Unload> handle_;
    std::filesystem::path path_;
    std::string function_;
    s2tp_host_call_fn call_ = nullptr;
    s2tp_host_replay_fn replay_ = nullptr;
    std::unique_ptr<s2tp_host_report> report_;  // one per library, reused by every call
};

}  // namespace s2tp
