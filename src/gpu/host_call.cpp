#include "gpu/host_call.h"

#include "support/errors.h"

#include <dlfcn.h>


namespace s2tp {

HostDType host_dtype(DType dtype) {
    switch (dtype) {
    case DType::f16: return HostDType::f16;
    case DType::bf16: return HostDType::bf16;
    case DType::f32: return HostDType::f32;
    case DType::i8: return HostDType::int8;
    case DType::e4m3: return HostDType::e4m3;
    default: fail(ExitCode::internal, std::string("no torch dtype for ") + dtype_name(dtype) + " in a host call");
    }
}

void HostArguments::tensor(const void *data, HostDType dtype, std::initializer_list<std::int64_t> sizes) {
    tensor(data, dtype, std::vector<std::int64_t>(sizes));
}

void HostArguments::tensor(const void *data, HostDType dtype, const std::vector<std::int64_t> &sizes) {
    if (sizes.size() > S2TP_HOST_MAX_DIMS) fail(ExitCode::internal, "a host-call tensor has more than 6 dimensions");
    s2tp_host_value value{};
    value.kind = S2TP_HOST_TENSOR;
    value.tensor.data = const_cast<void *>(data);
    value.tensor.dtype = static_cast<std::int32_t>(dtype);
    value.tensor.dims = static_cast<std::int32_t>(sizes.size());
    std::int64_t stride = 1;
    for (std::size_t axis = sizes.size(); axis-- > 0;) {
        value.tensor.sizes[axis] = sizes[axis];
        value.tensor.strides[axis] = stride;
        stride *= sizes[axis];
    }
    value.tensor.device = S2TP_HOST_CURRENT_DEVICE;
    values_.push_back(value);
}

void HostArguments::integer(std::int64_t v) {
    s2tp_host_value value{};
    value.kind = S2TP_HOST_INTEGER;
    value.integer = v;
    values_.push_back(value);
}

void HostArguments::real(double v) {
    s2tp_host_value value{};
    value.kind = S2TP_HOST_REAL;
    value.real = v;
    values_.push_back(value);
}

std::string RecordedLaunch::describe() const {
    auto dims = [](const LaunchDims &d) {
        return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
    };
    std::string text = "grid " + dims(grid) + ", block " + dims(block) + ", " + std::to_string(dynamic_smem_bytes) +
                       " B dynamic smem";
    if (cluster.x) text += ", cluster " + dims(cluster);
    if (registers) text += ", " + std::to_string(*registers) + " registers";
    if (blocks_per_sm) text += ", " + std::to_string(*blocks_per_sm) + " blocks/SM";
    return text;
}

namespace {

template <typename Function>
Function symbol(void *handle, const char *name, const std::filesystem::path &library) {
    void *found = dlsym(handle, name);
    if (!found)
        fail(ExitCode::precondition, library.string() + " exports no " + name +
                                         ": it is not a host-call library of this sage2tp; run 'sage2tp build --force'");
    return reinterpret_cast<Function>(found);
}

LaunchDims dims_of(const std::uint32_t (&d)[3]) { return {d[0], d[1], d[2]}; }

}  // namespace

void HostCallLibrary::Unload::operator()(void *handle) const { dlclose(handle); }

HostCallLibrary::HostCallLibrary(const std::filesystem::path &library) : path_(library) {
    // RTLD_LOCAL: each variant's library keeps its own symbols, so two builds of one launcher file
    // (baseline and candidate) never resolve to each other's host function.
    handle_.reset(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL));
    if (!handle_) {
        const char *why = dlerror();
        fail(ExitCode::precondition, "cannot load the host-call library " + library.string() + ": " + (why ? why : "?"));
    }
    const auto version = symbol<s2tp_host_call_version_fn>(handle_.get(), "s2tp_host_call_version", library);
    if (version() != S2TP_HOST_CALL_VERSION)
        fail(ExitCode::precondition, library.string() + " was built for host-call version " + std::to_string(version()) +
                                         ", and this sage2tp speaks version " + std::to_string(S2TP_HOST_CALL_VERSION) +
                                         "; run 'sage2tp build --force'");
    function_ = symbol<s2tp_host_function_name_fn>(handle_.get(), "s2tp_host_function_name", library)();
    call_ = symbol<s2tp_host_call_fn>(handle_.get(), "s2tp_host_call", library);
    replay_ = symbol<s2tp_host_replay_fn>(handle_.get(), "s2tp_host_replay", library);
    report_ = std::make_unique<s2tp_host_report>();
}

HostCallResult HostCallLibrary::call(const HostArguments &arguments, GpuStream stream, bool poison_allocations,
                                     const std::string &context, bool keep_for_replay) const {
    s2tp_host_request request{};
    request.values = arguments.values().data();
    request.count = static_cast<std::int32_t>(arguments.values().size());
    request.stream = stream;
    request.poison_allocations = poison_allocations ? 1 : 0;
    request.keep_for_replay = keep_for_replay ? 1 : 0;
    const std::int32_t status = call_(&request, report_.get());
    const s2tp_host_report &r = *report_;
    // Spelled out only on failure: a timed call builds no strings.
    const auto who = [&] {
        return "the host function " + function_ + " (" + path_.filename().string() + ") on " + context;
    };
    switch (status) {
    case S2TP_HOST_OK: break;
    case S2TP_HOST_THREW: fail(ExitCode::stop, who() + " failed: " + r.message);
    case S2TP_HOST_CUDA_ERROR: fail(ExitCode::stop, who() + ": " + r.message);
    case S2TP_HOST_BAD_ARGUMENTS:
        fail(ExitCode::stop, who() + " does not take the arguments its adapter passes: " + std::string(r.message) +
                                 " (the launcher's signature changed; its adapter's argument map must follow)");
    default: fail(ExitCode::internal, who() + " returned an unknown status " + std::to_string(status));
    }
    if (r.launch_count == 0)
        fail(ExitCode::stop, who() + " returned without launching a kernel, so its output is whatever the buffer held");
    return {r.launch_count, r.device_allocations};
}

std::optional<double> RecordedLaunch::warps_per_scheduler() const {
    if (!blocks_per_sm) return std::nullopt;
    const unsigned threads = block.x * block.y * block.z;
    return *blocks_per_sm * ((threads + 31) / 32) / 4.0;
}

std::vector<RecordedLaunch> HostCallLibrary::launches() const {
    std::vector<RecordedLaunch> launches;
    for (int i = 0; i < report_->launch_count && i < S2TP_HOST_MAX_LAUNCHES; ++i) {
        const s2tp_launch_record &l = report_->launches[i];
        launches.push_back({l.kernel, dims_of(l.grid), dims_of(l.block), l.dynamic_smem_bytes,
                            LaunchDims{static_cast<unsigned>(l.cluster[0]), static_cast<unsigned>(l.cluster[1]),
                                       static_cast<unsigned>(l.cluster[2])},
                            l.blocks_per_sm > 0 ? std::optional<int>(l.blocks_per_sm) : std::nullopt,
                            l.registers > 0 ? std::optional<int>(l.registers) : std::nullopt});
    }
    return launches;
}

std::optional<s2tp_host_tensor> HostCallLibrary::returned() const {
    if (!report_->returned_tensor) return std::nullopt;
    return report_->returned;
}

void HostCallLibrary::replay(GpuStream stream, const std::string &context) const {
    if (replay_(stream, report_.get()) != S2TP_HOST_OK)
        fail(ExitCode::internal, "replaying the launches of " + function_ + " on " + context + ": " + report_->message);
}

}  // namespace s2tp
