// The library side of a host call (host_call_abi.h): included after a launcher file in the one
// translation unit sage2tp's build generates for it,
//
//   #include "<the tree's launcher file>.cu"
//   #include "host_call_export.h"
//   S2TP_EXPORT_HOST_FUNCTION(qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf)
//
// and linked with -Xlinker --wrap for each launch entry point below, so that every kernel launch the
// host function makes passes through a recorder first: its kernel, grid, block, dynamic shared memory
// and argument bytes are kept for the report and for replay, then the launch goes on unchanged.
// nvcc 13's <<<>>> stubs call __cudaLaunchKernel(cudaKernel_t, ...); cudaLaunchKernel and
// cudaLaunchKernelExC are what host code that launches explicitly (or with a cluster) calls.
//
// The parameter types come from the function's own definition, so the adapter's values are checked
// against what the user's tree declares: a count or kind that does not fit is reported, not cast.
#pragma once

#include "host_call_abi.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <torch/extension.h>

#include <cstdio>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

extern "C" {
cudaError_t __real___cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t smem,
                                      cudaStream_t stream);
cudaError_t __real___cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t smem,
                                           cudaStream_t stream);
cudaError_t __real_cudaLaunchKernel(const void *function, dim3 grid, dim3 block, void **args, size_t smem,
                                    cudaStream_t stream);
cudaError_t __real_cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *function, void **args);
}

namespace s2tp_host {

// A value of the wrong kind for a parameter, or the wrong number of values.
struct BadArguments : std::exception {
    explicit BadArguments(std::string text) : message(std::move(text)) {}
    const char *what() const noexcept override { return message.c_str(); }
    std::string message;
};

template <typename T>
T convert(const s2tp_host_value &value, int index) {
    using Plain = std::decay_t<T>;
    if constexpr (std::is_same_v<Plain, at::Tensor>) {
        if (value.kind != S2TP_HOST_TENSOR)
            throw BadArguments("parameter " + std::to_string(index + 1) + " is a tensor, and sage2tp passes a " +
                               (value.kind == S2TP_HOST_INTEGER ? "integer" : "real"));
        const s2tp_host_tensor &t = value.tensor;
        int device = t.device;
        if (device == S2TP_HOST_CURRENT_DEVICE) cudaGetDevice(&device);
        return at::Tensor(t.data, static_cast<c10::ScalarType>(t.dtype), std::vector<std::int64_t>(t.sizes, t.sizes + t.dims),
                          std::vector<std::int64_t>(t.strides, t.strides + t.dims),
                          at::Device(device < 0 ? at::DeviceType::CPU : at::DeviceType::CUDA, device));
    } else if constexpr (std::is_integral_v<Plain>) {
        if (value.kind != S2TP_HOST_INTEGER)
            throw BadArguments("parameter " + std::to_string(index + 1) + " is an integer, and sage2tp passes a " +
                               (value.kind == S2TP_HOST_TENSOR ? "tensor" : "real"));
        return static_cast<Plain>(value.integer);
    } else if constexpr (std::is_floating_point_v<Plain>) {
        if (value.kind != S2TP_HOST_REAL)
            throw BadArguments("parameter " + std::to_string(index + 1) + " is a real, and sage2tp passes a " +
                               (value.kind == S2TP_HOST_TENSOR ? "tensor" : "integer"));
        return static_cast<Plain>(value.real);
    } else {
        static_assert(std::is_same_v<Plain, at::Tensor>, "a host function parameter sage2tp cannot pass");
    }
}

// One launch, kept for replay: what the real entry point needs to make it again.
struct RecordedLaunch {
    bool extended = false;  // made through cudaLaunchKernelExC (its attributes kept)
    cudaKernel_t kernel = nullptr;
    const void *function = nullptr;
    dim3 grid, block;
    size_t smem = 0;
    std::vector<cudaLaunchAttribute> attributes;
    std::vector<std::vector<unsigned char>> arguments;
};

struct KernelFacts {
    std::string name;
    std::vector<size_t> parameter_sizes;  // read only for a call kept for replay
    bool sizes_read = false;
};

// A driver function by name, typed, from the version that introduced it; nullptr where the driver
// lacks it. The library asks the driver through cudart, so it needs no link to libcuda for these.
template <typename Function>
Function driver_function(const char *name, int version) {
    void *function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    cudaGetDriverEntryPointByVersion(name, &function, version, cudaEnableDefault, &found);
    return reinterpret_cast<Function>(function);
}

struct Residency {
    int32_t blocks_per_sm = 0;
    int32_t registers = 0;
};

class LaunchRecorder {
public:
    // Never destroyed, like every static here: dlclose runs a library's static destructors, and an
    // object destroyed then must not be reached by a later call (see returned_slot).
    static LaunchRecorder &instance() {
        static LaunchRecorder *recorder = new LaunchRecorder;
        return *recorder;
    }

    // With `keep`, this call's launches replace the kept ones, argument bytes included.
    void begin(s2tp_host_report *report, bool keep) {
        report_ = report;
        keep_ = keep;
        if (keep) launches_.clear();
    }
    void end() { report_ = nullptr; }
    const std::vector<RecordedLaunch> &launches() const { return launches_; }

    // Records a launch about to be made; false when the launch is a nested one (cudart calling itself).
    bool enter() { return depth_++ == 0; }
    void leave() { --depth_; }

    void record(RecordedLaunch launch, void **args, cudaError_t status, const cudaLaunchConfig_t *config = nullptr) {
        if (!report_) return;
        const KernelFacts &facts = facts_of(launch.kernel);
        if (keep_) {
            const std::vector<size_t> &sizes = parameter_sizes(launch.kernel);
            for (size_t i = 0; i < sizes.size(); ++i) {
                const auto *bytes = static_cast<const unsigned char *>(args[i]);
                launch.arguments.emplace_back(bytes, bytes + sizes[i]);
            }
        }
        const int index = report_->launch_count++;
        if (index < S2TP_HOST_MAX_LAUNCHES) {
            s2tp_launch_record &r = report_->launches[index];
            std::snprintf(r.kernel, sizeof r.kernel, "%s", facts.name.c_str());
            r.grid[0] = launch.grid.x, r.grid[1] = launch.grid.y, r.grid[2] = launch.grid.z;
            r.block[0] = launch.block.x, r.block[1] = launch.block.y, r.block[2] = launch.block.z;
            r.dynamic_smem_bytes = launch.smem;
            r.cluster[0] = r.cluster[1] = r.cluster[2] = 0;
            if (config)
                for (unsigned a = 0; a < config->numAttrs; ++a)
                    if (config->attrs[a].id == cudaLaunchAttributeClusterDimension) {
                        r.cluster[0] = static_cast<int32_t>(config->attrs[a].val.clusterDim.x);
                        r.cluster[1] = static_cast<int32_t>(config->attrs[a].val.clusterDim.y);
                        r.cluster[2] = static_cast<int32_t>(config->attrs[a].val.clusterDim.z);
                    }
            r.status = status;
            const Residency &residency = residency_of(launch.kernel, launch.block.x * launch.block.y * launch.block.z,
                                                      launch.smem);
            r.blocks_per_sm = residency.blocks_per_sm;
            r.registers = residency.registers;
        }
        if (keep_) launches_.push_back(std::move(launch));
    }

private:
    // The kernel's name, read from the driver once per kernel.
    const KernelFacts &facts_of(cudaKernel_t kernel) {
        auto found = facts_.find(kernel);
        if (found != facts_.end()) return found->second;
        KernelFacts facts;
        const auto get_name = driver_function<CUresult (*)(const char **, CUkernel)>("cuKernelGetName", 12030);
        const char *name = nullptr;
        if (get_name && get_name(&name, reinterpret_cast<CUkernel>(kernel)) == CUDA_SUCCESS && name)
            facts.name = name;
        else
            facts.name = "(unnamed: the driver has no cuKernelGetName)";
        return facts_.emplace(kernel, std::move(facts)).first->second;
    }

    // How many blocks of `kernel` fit an SM at this block size and dynamic shared memory, and its
    // registers, from the driver once per (kernel, threads, bytes): what the host function's launch
    // really gets, which build's table can only model for the launch it assumes.
    const Residency &residency_of(cudaKernel_t kernel, unsigned threads, size_t smem) {
        const auto key = std::make_tuple(kernel, threads, smem);
        auto found = residency_.find(key);
        if (found != residency_.end()) return found->second;
        const auto get_function = driver_function<CUresult (*)(CUfunction *, CUkernel)>("cuKernelGetFunction", 12000);
        const auto occupancy = driver_function<CUresult (*)(int *, CUfunction, int, size_t)>(
            "cuOccupancyMaxActiveBlocksPerMultiprocessor", 12000);
        const auto attribute =
            driver_function<CUresult (*)(int *, CUfunction_attribute, CUfunction)>("cuFuncGetAttribute", 12000);
        Residency residency;
        CUfunction function = nullptr;
        if (get_function && occupancy && attribute &&
            get_function(&function, reinterpret_cast<CUkernel>(kernel)) == CUDA_SUCCESS) {
            int blocks = 0, registers = 0;
            if (occupancy(&blocks, function, static_cast<int>(threads), smem) == CUDA_SUCCESS) residency.blocks_per_sm = blocks;
            if (attribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function) == CUDA_SUCCESS) residency.registers = registers;
        }
        return residency_.emplace(key, residency).first->second;
    }

    // The kernel's parameter sizes, read from the driver once per kernel, for replay only: the driver
    // says how many there are only by refusing the index after the last, an error compute-sanitizer
    // reports, so a call that is not kept for replay never asks.
    const std::vector<size_t> &parameter_sizes(cudaKernel_t kernel) {
        KernelFacts &facts = facts_.at(kernel);
        if (facts.sizes_read) return facts.parameter_sizes;
        const auto get_parameter =
            driver_function<CUresult (*)(CUkernel, size_t, size_t *, size_t *)>("cuKernelGetParamInfo", 12040);
        size_t offset = 0, size = 0;
        for (size_t i = 0; get_parameter && get_parameter(reinterpret_cast<CUkernel>(kernel), i, &offset, &size) == CUDA_SUCCESS;
             ++i)
            facts.parameter_sizes.push_back(size);
        facts.sizes_read = true;
        return facts.parameter_sizes;
    }

    s2tp_host_report *report_ = nullptr;
    bool keep_ = false;
    int depth_ = 0;
    std::vector<RecordedLaunch> launches_;
    std::map<cudaKernel_t, KernelFacts> facts_;
    std::map<std::tuple<cudaKernel_t, unsigned, size_t>, Residency> residency_;
};

// Makes a launch through `real` and records it, as `made` describes it, unless it is a nested one
// (cudart calling itself).
template <typename Real, typename Made>
cudaError_t recorded(void **args, const cudaLaunchConfig_t *config, Real real, Made made) {
    LaunchRecorder &recorder = LaunchRecorder::instance();
    const bool outermost = recorder.enter();
    const cudaError_t status = real();
    if (outermost) recorder.record(made(), args, status, config);
    recorder.leave();
    return status;
}

// A launch by kernel handle and dimensions (the <<<>>> stubs' and cudaLaunchKernel's).
inline RecordedLaunch plain_launch(cudaKernel_t kernel, dim3 grid, dim3 block, size_t smem) {
    RecordedLaunch launch;
    launch.kernel = kernel;
    launch.grid = grid, launch.block = block, launch.smem = smem;
    return launch;
}

inline cudaKernel_t kernel_of(const void *function) {
    cudaKernel_t kernel = nullptr;
    cudaGetKernel(&kernel, function);
    return kernel;
}

inline void copy_tensor(const at::Tensor &from, s2tp_host_tensor &to) {
    to.data = from.data_ptr();
    to.dtype = static_cast<int32_t>(from.scalar_type());
    to.dims = static_cast<int32_t>(from.dim() < S2TP_HOST_MAX_DIMS ? from.dim() : S2TP_HOST_MAX_DIMS);
    for (int axis = 0; axis < to.dims; ++axis) to.sizes[axis] = from.size(axis), to.strides[axis] = from.stride(axis);
    to.device = from.get_device();
}

inline void set_message(s2tp_host_report *report, const std::string &text) {
    std::snprintf(report->message, sizeof report->message, "%s", text.c_str());
}

// The tensor the last call returned, kept alive until the next call (its block then goes back to the pool).
inline at::Tensor &returned_slot() {
    static at::Tensor *returned = new at::Tensor;
    return *returned;
}

template <typename R, typename... P, size_t... I>
R invoke(R (*function)(P...), const s2tp_host_value *values, std::index_sequence<I...>) {
    return function(convert<P>(values[I], static_cast<int>(I))...);
}

template <typename R, typename... P>
int32_t call(R (*function)(P...), const s2tp_host_request *request, s2tp_host_report *report) {
    // Only the header fields: the launch records are written as launches are made, and a timed call
    // should not clear 19 KiB it does not use.
    report->status = S2TP_HOST_OK;
    report->message[0] = '\0';
    report->launch_count = 0;
    report->returned_tensor = 0;
    report->device_allocations = 0;
    returned_slot() = at::Tensor();
    c10::current_stream_slot() = static_cast<cudaStream_t>(request->stream);
    c10::DevicePool &pool = c10::DevicePool::instance();
    pool.poison_stream_set = request->poison_allocations != 0;
    pool.poison_stream = static_cast<cudaStream_t>(request->stream);
    const int allocations_before = pool.allocations;
    cudaGetLastError();  // an error of an earlier call is not this call's
    LaunchRecorder &recorder = LaunchRecorder::instance();
    recorder.begin(report, request->keep_for_replay != 0);
    try {
        if (request->count != static_cast<int32_t>(sizeof...(P)))
            throw BadArguments("the host function takes " + std::to_string(sizeof...(P)) + " parameters, and sage2tp passes " +
                               std::to_string(request->count));
        if constexpr (std::is_void_v<R>) {
            invoke(function, request->values, std::index_sequence_for<P...>{});
        } else {
            R result = invoke(function, request->values, std::index_sequence_for<P...>{});
            if constexpr (std::is_same_v<std::decay_t<R>, at::Tensor>) {
                if (result.defined() && result.numel() > 0) {
                    returned_slot() = result;
                    report->returned_tensor = 1;
                    copy_tensor(result, report->returned);
                }
            }
        }
    } catch (const BadArguments &e) {
        report->status = S2TP_HOST_BAD_ARGUMENTS;
        set_message(report, e.what());
    } catch (const c10::Error &e) {
        report->status = S2TP_HOST_THREW;
        set_message(report, std::string(e.what()) + " (" + e.where() + ")");
    } catch (const std::exception &e) {
        report->status = S2TP_HOST_THREW;
        set_message(report, e.what());
    } catch (...) {
        report->status = S2TP_HOST_THREW;
        set_message(report, "an exception of a type that is not std::exception");
    }
    recorder.end();
    report->device_allocations = pool.allocations - allocations_before;
    if (report->status == S2TP_HOST_OK) {
        for (int i = 0; i < report->launch_count && i < S2TP_HOST_MAX_LAUNCHES; ++i)
            if (report->launches[i].status != cudaSuccess) {
                const auto error = static_cast<cudaError_t>(report->launches[i].status);
                report->status = S2TP_HOST_CUDA_ERROR;
                set_message(report, std::string("launch ") + std::to_string(i + 1) + " of " + report->launches[i].kernel +
                                        " failed: " + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")");
                break;
            }
    }
    const cudaError_t left = cudaGetLastError();
    if (report->status == S2TP_HOST_OK && left != cudaSuccess) {
        report->status = S2TP_HOST_CUDA_ERROR;
        set_message(report, std::string("the call left a CUDA error: ") + cudaGetErrorName(left) + " (" +
                                cudaGetErrorString(left) + ")");
    }
    return report->status;
}

inline int32_t replay(void *stream, s2tp_host_report *report) {
    report->status = S2TP_HOST_OK;
    report->message[0] = '\0';
    report->launch_count = 0;
    if (LaunchRecorder::instance().launches().empty()) {
        report->status = S2TP_HOST_BAD_ARGUMENTS;
        set_message(report, "no call was kept for replay");
        return report->status;
    }
    for (const RecordedLaunch &launch : LaunchRecorder::instance().launches()) {
        std::vector<void *> args;
        for (const auto &bytes : launch.arguments) args.push_back(const_cast<unsigned char *>(bytes.data()));
        cudaError_t status;
        if (launch.extended) {
            cudaLaunchConfig_t config{};
            config.gridDim = launch.grid, config.blockDim = launch.block, config.dynamicSmemBytes = launch.smem;
            config.stream = static_cast<cudaStream_t>(stream);
            config.attrs = const_cast<cudaLaunchAttribute *>(launch.attributes.data());
            config.numAttrs = static_cast<unsigned>(launch.attributes.size());
            status = __real_cudaLaunchKernelExC(&config, launch.function, args.data());
        } else {
            status = __real___cudaLaunchKernel(launch.kernel, launch.grid, launch.block, args.data(), launch.smem,
                                               static_cast<cudaStream_t>(stream));
        }
        ++report->launch_count;
        if (status != cudaSuccess) {
            report->status = S2TP_HOST_CUDA_ERROR;
            set_message(report, std::string("replaying a launch failed: ") + cudaGetErrorName(status));
            return report->status;
        }
    }
    return report->status;
}

}  // namespace s2tp_host

// A failed assert in host code (torch_shim/assert.h): thrown, to be reported as the host function's failure.
[[noreturn]] void s2tp_assert_failed(const char *expression, const char *file, unsigned line, const char *function) {
    throw std::logic_error(std::string("assertion '") + expression + "' failed (" + function + " at " + file + ":" +
                           std::to_string(line) + ")");
}

extern "C" {

cudaError_t __wrap___cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t smem,
                                      cudaStream_t stream) {
    return s2tp_host::recorded(
        args, nullptr, [&] { return __real___cudaLaunchKernel(kernel, grid, block, args, smem, stream); },
        [&] { return s2tp_host::plain_launch(kernel, grid, block, smem); });
}

cudaError_t __wrap___cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t smem,
                                           cudaStream_t stream) {
    return s2tp_host::recorded(
        args, nullptr, [&] { return __real___cudaLaunchKernel_ptsz(kernel, grid, block, args, smem, stream); },
        [&] { return s2tp_host::plain_launch(kernel, grid, block, smem); });
}

cudaError_t __wrap_cudaLaunchKernel(const void *function, dim3 grid, dim3 block, void **args, size_t smem,
                                    cudaStream_t stream) {
    return s2tp_host::recorded(
        args, nullptr, [&] { return __real_cudaLaunchKernel(function, grid, block, args, smem, stream); },
        [&] { return s2tp_host::plain_launch(s2tp_host::kernel_of(function), grid, block, smem); });
}

cudaError_t __wrap_cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *function, void **args) {
    return s2tp_host::recorded(args, config, [&] { return __real_cudaLaunchKernelExC(config, function, args); }, [&] {
        s2tp_host::RecordedLaunch launch =
            s2tp_host::plain_launch(s2tp_host::kernel_of(function), config->gridDim, config->blockDim,
                                    config->dynamicSmemBytes);
        launch.extended = true;
        launch.function = function;
        launch.attributes.assign(config->attrs, config->attrs + config->numAttrs);
        return launch;
    });
}

}  // extern "C"

#define S2TP_HOST_EXPORT extern "C" __attribute__((visibility("default")))

// Exports `function` of the launcher file included before this header.
#define S2TP_EXPORT_HOST_FUNCTION(function)                                                                       \
    S2TP_HOST_EXPORT int32_t s2tp_host_call_version(void) { return S2TP_HOST_CALL_VERSION; }                  \
    S2TP_HOST_EXPORT const char *s2tp_host_function_name(void) { return #function; }                          \
    S2TP_HOST_EXPORT int32_t s2tp_host_call(const s2tp_host_request *request, s2tp_host_report *report) {     \
        return s2tp_host::call(&function, request, report);                                                   \
    }                                                                                                         \
    S2TP_HOST_EXPORT int32_t s2tp_host_replay(void *stream, s2tp_host_report *report) {                       \
        return s2tp_host::replay(stream, report);                                                             \
    }
