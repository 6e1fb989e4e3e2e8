#include "gpu/gpu_runtime.h"

#include "support/errors.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

#include "sage2tp_abi.h"

namespace s2tp {
namespace {

// ---- Runtime API errors ----

bool means_no_device(cudaError_t error) {
    return error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice || error == cudaErrorInvalidDevice ||
           error == cudaErrorDevicesUnavailable;
}

std::string describe(cudaError_t error) {
    return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

void check_cuda(cudaError_t error, const char *call, const std::string &context) {
    if (error == cudaSuccess) return;
    fail(means_no_device(error) ? ExitCode::missing_tool : ExitCode::internal,
         std::string(call) + " failed [" + context + "]: " + describe(error));
}

// ---- Driver API, fetched from the driver at run time (the program never links libcuda) ----

struct DriverApi {
    PFN_cuGetErrorName_v6000 get_error_name = nullptr;
    PFN_cuGetErrorString_v6000 get_error_string = nullptr;
    PFN_cuModuleLoadData_v2000 module_load_data = nullptr;
    PFN_cuModuleUnload_v2000 module_unload = nullptr;
    PFN_cuModuleGetFunction_v2000 module_get_function = nullptr;
    PFN_cuModuleGetFunctionCount_v12040 module_get_function_count = nullptr;
    PFN_cuModuleEnumerateFunctions_v12040 module_enumerate_functions = nullptr;
    PFN_cuModuleGetGlobal_v3020 module_get_global = nullptr;
    PFN_cuMemsetD8_v3020 memset_d8 = nullptr;
    PFN_cuMemcpyDtoH_v3020 memcpy_dtoh = nullptr;
    PFN_cuFuncGetName_v12030 func_get_name = nullptr;
    PFN_cuFuncGetAttribute_v2020 func_get_attribute = nullptr;
    PFN_cuFuncSetAttribute_v9000 func_set_attribute = nullptr;
    PFN_cuFuncGetParamInfo_v12040 func_get_param_info = nullptr;
    PFN_cuLaunchKernel_v4000 launch_kernel = nullptr;
    PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 occupancy_max_active_blocks = nullptr;
};

template <typename Function>
void fetch(Function &slot, const char *symbol, unsigned cuda_version) {
    void *address = nullptr;
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    check_cuda(cudaGetDriverEntryPointByVersion(symbol, &address, cuda_version, cudaEnableDefault, &status),
               "cudaGetDriverEntryPointByVersion", symbol);
    if (status != cudaDriverEntryPointSuccess || address == nullptr)
        fail(ExitCode::missing_tool, std::string("the NVIDIA driver does not provide ") + symbol + " (CUDA " +
                                         cuda_version_string(static_cast<int>(cuda_version)) + " version)" +
                                         (status == cudaDriverEntryPointVersionNotSufficent
                                              ? ": the driver is older than that"
                                              : ""));
    slot = reinterpret_cast<Function>(address);
}

const DriverApi &driver() {
    static const DriverApi api = [] {
        DriverApi a;
        fetch(a.get_error_name, "cuGetErrorName", 12000);
        fetch(a.get_error_string, "cuGetErrorString", 12000);
        fetch(a.module_load_data, "cuModuleLoadData", 12000);
        fetch(a.module_unload, "cuModuleUnload", 12000);
        fetch(a.module_get_function, "cuModuleGetFunction", 12000);
        fetch(a.module_get_function_count, "cuModuleGetFunctionCount", 12040);      // new in CUDA 12.4
        fetch(a.module_enumerate_functions, "cuModuleEnumerateFunctions", 12040);  // new in CUDA 12.4
        fetch(a.module_get_global, "cuModuleGetGlobal", 12000);
        fetch(a.memset_d8, "cuMemsetD8", 12000);
        fetch(a.memcpy_dtoh, "cuMemcpyDtoH", 12000);
        fetch(a.func_get_name, "cuFuncGetName", 12030);                            // new in CUDA 12.3
        fetch(a.func_get_attribute, "cuFuncGetAttribute", 12000);
        fetch(a.func_set_attribute, "cuFuncSetAttribute", 12000);
        fetch(a.func_get_param_info, "cuFuncGetParamInfo", 12040);  // new in CUDA 12.4
        fetch(a.launch_kernel, "cuLaunchKernel", 12000);
        fetch(a.occupancy_max_active_blocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor", 12000);
        return a;
    }();
    return api;
}

std::string describe(CUresult result) {
    const char *name = nullptr;
    const char *text = nullptr;
    if (driver().get_error_name(result, &name) != CUDA_SUCCESS) name = nullptr;
    if (driver().get_error_string(result, &text) != CUDA_SUCCESS) text = nullptr;
    return std::string(name ? name : "CUresult " + std::to_string(static_cast<int>(result))) + " (" +
           (text ? text : "no description") + ")";
}

void check_cu(CUresult result, const char *call, const std::string &context,
              ExitCode code = ExitCode::internal) {
    if (result == CUDA_SUCCESS) return;
    fail(code, std::string(call) + " failed [" + context + "]: " + describe(result));
}

int device_attribute(cudaDeviceAttr attribute, int device, const char *name) {
    int value = 0;
    check_cuda(cudaDeviceGetAttribute(&value, attribute, device), "cudaDeviceGetAttribute",
               std::string(name) + " of device " + std::to_string(device));
    return value;
}

std::string format_uuid(const cudaUUID_t &uuid) {
    const auto *b = reinterpret_cast<const unsigned char *>(uuid.bytes);
    char text[64];
    std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return text;
}

}  // namespace

// ---- Devices ----

std::string cuda_version_string(int version) {
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

GpuProbe probe_gpu() {
    GpuProbe probe;
    int driver_version = 0;
    // Reports 0, successfully, when no driver is installed at all.
    if (cudaDriverGetVersion(&driver_version) != cudaSuccess) driver_version = 0;
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    cudaGetLastError();  // a failed probe must not linger as the "last error" of later calls
    if (error == cudaErrorInsufficientDriver) {
        if (driver_version == 0) {
            probe.reason = "no NVIDIA driver found (cudaErrorInsufficientDriver)";
        } else {
            int runtime_version = 0;
            cudaRuntimeGetVersion(&runtime_version);
            probe.reason = "the NVIDIA driver supports CUDA " + cuda_version_string(driver_version) +
                           " but this program needs CUDA " + cuda_version_string(runtime_version) +
                           " (cudaErrorInsufficientDriver)";
        }
        return probe;
    }
    if (error == cudaErrorNoDevice || (error == cudaSuccess && count == 0)) {
        probe.reason = "no CUDA device visible (cudaErrorNoDevice)";
        if (const char *visible = std::getenv("CUDA_VISIBLE_DEVICES"))
            probe.reason += "; CUDA_VISIBLE_DEVICES is '" + std::string(visible) + "'";
        return probe;
    }
    if (error != cudaSuccess) {
        probe.reason = "CUDA could not be initialised: " + describe(error);
        return probe;
    }
    probe.available = true;
    probe.device_count = count;
    return probe;
}

std::string DeviceFacts::arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }

std::string DeviceFacts::summary() const {
    return "device " + std::to_string(index) + ": " + name + " (" + arch() + ", " + std::to_string(sm_count) +
           " SMs, L2 " + std::to_string(l2_bytes / (1024 * 1024)) + " MiB, SM clock " +
           std::to_string(sm_clock_khz / 1000) + " MHz, driver CUDA " + cuda_version_string(driver_version) +
           ", runtime " + cuda_version_string(runtime_version) + ", PCI " + pci_bus_id + ", " + uuid + ")";
}

DeviceFacts select_device(int index) {
    GpuProbe probe = probe_gpu();
    if (!probe.available) fail(ExitCode::missing_tool, probe.reason);
    if (index < 0 || index >= probe.device_count)
        fail(ExitCode::missing_tool, "device index " + std::to_string(index) + " is out of range: " +
                                         std::to_string(probe.device_count) + " CUDA device(s) visible");
    const std::string context = "device " + std::to_string(index);
    check_cuda(cudaSetDevice(index), "cudaSetDevice", context);
    // Creates the primary context now, so that driver-API calls (module loading) find it current.
    check_cuda(cudaFree(nullptr), "cudaFree(nullptr)", context);

    cudaDeviceProp properties{};
    check_cuda(cudaGetDeviceProperties(&properties, index), "cudaGetDeviceProperties", context);
    DeviceFacts facts;
    facts.index = index;
    facts.name = properties.name;
    facts.cc_major = properties.major;
    facts.cc_minor = properties.minor;
    facts.uuid = format_uuid(properties.uuid);
    facts.sm_count = device_attribute(cudaDevAttrMultiProcessorCount, index, "multiprocessor count");
    facts.l2_bytes = device_attribute(cudaDevAttrL2CacheSize, index, "L2 cache size");
    facts.persisting_l2_max_bytes =
        device_attribute(cudaDevAttrMaxPersistingL2CacheSize, index, "largest persisting L2 carve-out");
    // CUDA 13 removed cudaDeviceProp::clockRate; the attribute remains.
    facts.sm_clock_khz = device_attribute(cudaDevAttrClockRate, index, "SM clock rate");
    check_cuda(cudaDriverGetVersion(&facts.driver_version), "cudaDriverGetVersion", context);
    check_cuda(cudaRuntimeGetVersion(&facts.runtime_version), "cudaRuntimeGetVersion", context);
    char bus_id[64] = {};
    check_cuda(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, index), "cudaDeviceGetPCIBusId", context);
    facts.pci_bus_id = bus_id;
    return facts;
}

void reset_persisting_l2() {
    check_cuda(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0), "cudaDeviceSetLimit", "the persisting-L2 carve-out");
    check_cuda(cudaCtxResetPersistingL2Cache(), "cudaCtxResetPersistingL2Cache", "the persisting-L2 carve-out");
}

void synchronize(const std::string &context) {
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize", context);
}

// ---- Memory ----

DeviceBuffer::DeviceBuffer(std::size_t bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {
    if (bytes == 0) return;  // cudaMalloc of 0 bytes gives no usable pointer; nothing to hold
    check_cuda(cudaMalloc(&pointer_, bytes), "cudaMalloc",
               what_ + ", " + std::to_string(bytes) + " bytes");
}

DeviceBuffer::~DeviceBuffer() {
    // Nothing can be reported from a destructor; a failed free leaves the memory to the context.
    if (pointer_) cudaFree(pointer_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : pointer_(std::exchange(other.pointer_, nullptr)), bytes_(std::exchange(other.bytes_, 0)),
      what_(std::move(other.what_)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
    if (this != &other) {
        if (pointer_) cudaFree(pointer_);
        pointer_ = std::exchange(other.pointer_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
        what_ = std::move(other.what_);
    }
    return *this;
}

DeviceBuffer upload(const Tensor &tensor, const std::string &what) {
    DeviceBuffer buffer(tensor.nbytes(), what);
    upload_into(buffer, tensor);
    return buffer;
}

void upload_into(DeviceBuffer &buffer, const Tensor &tensor) {
    if (buffer.size() != tensor.nbytes())
        fail(ExitCode::internal, "uploading " + buffer.what() + ": the tensor " + shape_to_string(tensor.shape) + " " +
                                     dtype_name(tensor.dtype) + " has " + std::to_string(tensor.nbytes()) +
                                     " bytes but the buffer " + std::to_string(buffer.size()));
    if (buffer.size() == 0) return;
    check_cuda(cudaMemcpy(buffer.get(), tensor.bytes.data(), buffer.size(), cudaMemcpyHostToDevice), "cudaMemcpy",
               "uploading " + buffer.what());
}

Tensor download(const DeviceBuffer &buffer, DType dtype, const Shape &shape) {
    Tensor tensor(dtype, shape);
    if (buffer.size() != tensor.nbytes())
        fail(ExitCode::internal, "downloading " + buffer.what() + " as " + shape_to_string(shape) + " " +
                                     dtype_name(dtype) + ": that is " + std::to_string(tensor.nbytes()) +
                                     " bytes but the buffer has " + std::to_string(buffer.size()));
    if (buffer.size() == 0) return tensor;
    check_cuda(cudaMemcpy(tensor.bytes.data(), buffer.get(), buffer.size(), cudaMemcpyDeviceToHost), "cudaMemcpy",
               "downloading " + buffer.what());
    return tensor;
}

void poison(DeviceBuffer &buffer) {
    if (buffer.size() == 0) return;
    check_cuda(cudaMemsetAsync(buffer.get(), 0xFF, buffer.size(), nullptr), "cudaMemsetAsync",
               "poisoning " + buffer.what());
}

void zero(DeviceBuffer &buffer) {
    if (buffer.size() == 0) return;
    check_cuda(cudaMemsetAsync(buffer.get(), 0, buffer.size(), nullptr), "cudaMemsetAsync", "zeroing " + buffer.what());
}

void release_primary_contexts(const std::vector<int> &device_indices) {
    for (int index : device_indices) {
        const std::string context = "releasing device " + std::to_string(index) + "'s context";
        check_cuda(cudaSetDevice(index), "cudaSetDevice", context);
        check_cuda(cudaDeviceReset(), "cudaDeviceReset", context);
    }
}

void copy_device_bytes(void *destination, const void *source, std::size_t bytes) {
    if (bytes == 0) return;
    check_cuda(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice, nullptr), "cudaMemcpyAsync",
               "copying " + std::to_string(bytes) + " device bytes");
}

void copy_device(DeviceBuffer &destination, const DeviceBuffer &source) {
    if (destination.size() != source.size())
        fail(ExitCode::internal, "copying " + source.what() + " (" + std::to_string(source.size()) + " bytes) into " +
                                     destination.what() + " (" + std::to_string(destination.size()) + " bytes)");
    if (source.size() == 0) return;
    check_cuda(cudaMemcpyAsync(destination.get(), source.get(), source.size(), cudaMemcpyDeviceToDevice, nullptr),
               "cudaMemcpyAsync", "copying " + source.what() + " into " + destination.what());
}

void download_bytes(const DeviceBuffer &buffer, void *destination) {
    if (buffer.size() == 0) return;
    check_cuda(cudaMemcpy(destination, buffer.get(), buffer.size(), cudaMemcpyDeviceToHost), "cudaMemcpy",
               "downloading " + buffer.what());
}

// ---- Modules and kernels ----

CubinModule::CubinModule(const std::filesystem::path &cubin) : path_(cubin) {
    std::ifstream file(cubin, std::ios::binary);
    if (!file) fail(ExitCode::usage, "cannot read cubin '" + cubin.string() + "'");
    std::vector<char> image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (file.bad() || image.empty()) fail(ExitCode::usage, "cannot read cubin '" + cubin.string() + "' (empty or unreadable)");
    CUresult result = driver().module_load_data(&module_, image.data());
    // A cubin for another architecture or a damaged file is bad input, not a sage2tp bug.
    bool bad_image = result == CUDA_ERROR_NO_BINARY_FOR_GPU || result == CUDA_ERROR_INVALID_IMAGE ||
                     result == CUDA_ERROR_INVALID_PTX || result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    check_cu(result, "cuModuleLoadData", "cubin '" + cubin.string() + "'",
             bad_image ? ExitCode::usage : ExitCode::internal);
}

CubinModule::~CubinModule() {
    if (module_) driver().module_unload(module_);
}

CubinModule::CubinModule(CubinModule &&other) noexcept
    : module_(std::exchange(other.module_, nullptr)), path_(std::move(other.path_)) {}

CubinModule &CubinModule::operator=(CubinModule &&other) noexcept {
    if (this != &other) {
        if (module_) driver().module_unload(module_);
        module_ = std::exchange(other.module_, nullptr);
        path_ = std::move(other.path_);
    }
    return *this;
}

Kernel CubinModule::function(const std::string &name) const {
    CUfunction function = nullptr;
    CUresult result = driver().module_get_function(&function, module_, name.c_str());
    if (result == CUDA_ERROR_NOT_FOUND)
        fail(ExitCode::usage, "cubin '" + path_.string() + "' has no kernel entry '" + name + "'");
    const std::string context = name + " in '" + path_.string() + "'";
    check_cu(result, "cuModuleGetFunction", context);

    // Only parameter 0 is asked about: probing for a second one would fail on purpose, and
    // compute-sanitizer counts every failed driver call as an error of the run. A kernel with more
    // parameters still fails launch()'s size check unless its first one happens to match the struct.
    std::size_t offset = 0, bytes = 0;
    check_cu(driver().func_get_param_info(function, 0, &offset, &bytes), "cuFuncGetParamInfo", context + ", parameter 0");
    return Kernel(function, name, bytes);
}

std::vector<std::string> CubinModule::entry_names() const {
    const std::string context = "cubin '" + path_.string() + "'";
    unsigned count = 0;
    check_cu(driver().module_get_function_count(&count, module_), "cuModuleGetFunctionCount", context);
    std::vector<CUfunction> functions(count);
    if (count > 0)
        check_cu(driver().module_enumerate_functions(functions.data(), count, module_), "cuModuleEnumerateFunctions",
                 context);
    std::vector<std::string> names;
    for (CUfunction function : functions) {
        const char *name = nullptr;
        check_cu(driver().func_get_name(&name, function), "cuFuncGetName", context);
        names.emplace_back(name ? name : "");
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::optional<DeviceGlobal> CubinModule::global(const std::string &name) const {
    CUdeviceptr address = 0;
    std::size_t bytes = 0;
    const CUresult result = driver().module_get_global(&address, &bytes, module_, name.c_str());
    if (result == CUDA_ERROR_NOT_FOUND) return std::nullopt;
    check_cu(result, "cuModuleGetGlobal", name + " in '" + path_.string() + "'");
    return DeviceGlobal{name, static_cast<std::uint64_t>(address), bytes};
}

void zero_global(const DeviceGlobal &global, const std::string &context) {
    check_cu(driver().memset_d8(static_cast<CUdeviceptr>(global.address), 0, global.bytes), "cuMemsetD8",
             global.name + ", " + context);
}

std::vector<unsigned char> read_global(const DeviceGlobal &global, const std::string &context) {
    std::vector<unsigned char> bytes(global.bytes);
    if (!bytes.empty())
        check_cu(driver().memcpy_dtoh(bytes.data(), static_cast<CUdeviceptr>(global.address), bytes.size()),
                 "cuMemcpyDtoH", global.name + ", " + context);
    return bytes;
}

// ---- Kernel arguments ----

KernelArguments::KernelArguments(const KernelArguments &other)
    : storage_(other.storage_), offsets_(other.offsets_), sizes_(other.sizes_) {
    point();
}

KernelArguments &KernelArguments::operator=(const KernelArguments &other) {
    if (this != &other) {
        storage_ = other.storage_;
        offsets_ = other.offsets_;
        sizes_ = other.sizes_;
        point();
    }
    return *this;
}

// A moved vector keeps its heap block, so the moved pointers stay valid.
KernelArguments::KernelArguments(KernelArguments &&other) noexcept = default;
KernelArguments &KernelArguments::operator=(KernelArguments &&other) noexcept = default;

void KernelArguments::add_bytes(const void *bytes, std::size_t size) {
    offsets_.push_back(storage_.size());
    sizes_.push_back(size);
    const auto *begin = static_cast<const unsigned char *>(bytes);
    storage_.insert(storage_.end(), begin, begin + size);
    point();  // the insert may have moved the bytes
}

void KernelArguments::point() {
    pointers_.clear();
    for (std::size_t offset : offsets_) pointers_.push_back(storage_.data() + offset);
}

void KernelArguments::copy_out(std::size_t index, void *out, std::size_t size) const {
    if (index >= sizes_.size() || sizes_[index] != size)
        fail(ExitCode::internal, "kernel argument " + std::to_string(index) + " read as " + std::to_string(size) +
                                     " bytes, but " + (index < sizes_.size()
                                                           ? "it has " + std::to_string(sizes_[index])
                                                           : "there are only " + std::to_string(sizes_.size()) +
                                                                 " arguments"));
    std::memcpy(out, storage_.data() + offsets_[index], size);
}

Kernel::Kernel(CUfunc_st *function, std::string name, std::size_t parameter_bytes)
    : function_(function), name_(std::move(name)), parameter_bytes_(parameter_bytes) {}

KernelAttributes Kernel::attributes() const {
    auto get = [this](CUfunction_attribute attribute, const char *what) {
        int value = 0;
        check_cu(driver().func_get_attribute(&value, attribute, function_), "cuFuncGetAttribute",
                 name_ + ", " + what);
        return value;
    };
    KernelAttributes a;
    a.registers = get(CU_FUNC_ATTRIBUTE_NUM_REGS, "registers");
    a.static_smem_bytes = get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "static shared memory");
    a.local_bytes = get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "local memory");
    a.max_threads_per_block = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block");
    return a;
}

void Kernel::allow_dynamic_smem(std::size_t dynamic_smem, const std::string &context) const {
    if (dynamic_smem <= dynamic_smem_allowed_) return;
    check_cu(driver().func_set_attribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         static_cast<int>(dynamic_smem)),
             "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", context);
    dynamic_smem_allowed_ = dynamic_smem;
}

int Kernel::max_active_blocks_per_sm(int block_threads, std::size_t dynamic_smem) const {
    const std::string context = name_ + ", " + std::to_string(block_threads) + " threads, " +
                                std::to_string(dynamic_smem) + " B dynamic shared memory";
    allow_dynamic_smem(dynamic_smem, context);
    int blocks = 0;
    check_cu(driver().occupancy_max_active_blocks(&blocks, function_, block_threads, dynamic_smem),
             "cuOccupancyMaxActiveBlocksPerMultiprocessor", context);
    return blocks;
}

void Kernel::launch(LaunchDims grid, LaunchDims block, std::size_t dynamic_smem, const void *params,
                    std::size_t params_size, GpuStream stream, const std::string &context) const {
    const std::string where = name_ + ", " + context;
    if (params_size != parameter_bytes_)
        fail(ExitCode::internal, "launching " + where + ": the host passes a " + std::to_string(params_size) +
                                     "-byte parameter but the kernel takes " + std::to_string(parameter_bytes_) +
                                     " bytes; kernels/sage2tp_abi.h and the cubin disagree");
    allow_dynamic_smem(dynamic_smem, where);
    // The by-value struct is the kernel's single parameter: the driver copies params_size bytes from it.
    void *kernel_params[] = {const_cast<void *>(params)};
    check_cu(driver().launch_kernel(function_, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                    static_cast<unsigned>(dynamic_smem), stream, kernel_params, nullptr),
             "cuLaunchKernel", where);
}

void Kernel::set_max_dynamic_smem(std::size_t bytes, const std::string &context) const {
    if (smem_attribute_set_ && dynamic_smem_allowed_ == bytes) return;
    check_cu(driver().func_set_attribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         static_cast<int>(bytes)),
             "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", context);
    dynamic_smem_allowed_ = bytes;
    smem_attribute_set_ = true;
}

void Kernel::check_parameters(const std::vector<std::size_t> &sizes, const std::string &context) const {
    // Parameter 0 was read when the kernel was looked up; a parameter index past the kernel's last one
    // is a failed driver call, which is what a host passing too many arguments deserves. The driver
    // gives no parameter count, and probing one index further would be a failed call on every good
    // launch (compute-sanitizer counts those as errors), so fewer arguments than parameters are
    // caught where an adapter selects its entry: by the parameter list in its demangled name.
    for (std::size_t index = 0; index < sizes.size(); ++index) {
        std::size_t offset = 0, bytes = parameter_bytes_;
        if (index > 0) {
            const CUresult result = driver().func_get_param_info(function_, index, &offset, &bytes);
            if (result == CUDA_ERROR_INVALID_VALUE)
                fail(ExitCode::internal, "launching " + context + ": the host passes " + std::to_string(sizes.size()) +
                                             " arguments but the kernel has only " + std::to_string(index) +
                                             " parameters; the kernel ABI adapter and the cubin disagree");
            check_cu(result, "cuFuncGetParamInfo", context + ", parameter " + std::to_string(index));
        }
        if (bytes != sizes[index])
            fail(ExitCode::internal, "launching " + context + ": argument " + std::to_string(index) + " has " +
                                         std::to_string(sizes[index]) + " bytes but the kernel's parameter " +
                                         std::to_string(index) + " takes " + std::to_string(bytes) +
                                         "; the kernel ABI adapter and the cubin disagree");
    }
    checked_sizes_ = sizes;
}

void Kernel::launch(LaunchDims grid, LaunchDims block, std::size_t dynamic_smem, const KernelArguments &arguments,
                    GpuStream stream, const std::string &context) const {
    // Timing loops launch through here between two events: on the good path nothing is built or asked
    // beyond the launch itself, and the message text is made only for a failure.
    const auto where = [&] { return name_ + ", " + context; };
    if (arguments.sizes() != checked_sizes_) check_parameters(arguments.sizes(), where());
    if (dynamic_smem > dynamic_smem_allowed_) allow_dynamic_smem(dynamic_smem, where());
    const CUresult result =
        driver().launch_kernel(function_, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                               static_cast<unsigned>(dynamic_smem), stream, arguments.parameter_array(), nullptr);
    if (result != CUDA_SUCCESS) check_cu(result, "cuLaunchKernel", where());
}

// ---- Timing ----

EventTimer::EventTimer() {
    check_cuda(cudaEventCreate(&start_), "cudaEventCreate", "timer start event");
    cudaError_t error = cudaEventCreate(&stop_);
    if (error != cudaSuccess) {
        cudaEventDestroy(start_);
        check_cuda(error, "cudaEventCreate", "timer stop event");
    }
}

EventTimer::~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
}

void EventTimer::start(GpuStream stream) { check_cuda(cudaEventRecord(start_, stream), "cudaEventRecord", "timer start"); }

void EventTimer::stop(GpuStream stream) { check_cuda(cudaEventRecord(stop_, stream), "cudaEventRecord", "timer stop"); }

double EventTimer::elapsed_ms() {
    check_cuda(cudaEventSynchronize(stop_), "cudaEventSynchronize", "timer stop");
    float ms = 0.0f;
    check_cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime", "timer");
    return ms;
}

L2Flusher::L2Flusher(const DeviceFacts &device)
    : buffer_(static_cast<std::size_t>(2 * device.l2_bytes), "L2 flush buffer") {}

void L2Flusher::flush(GpuStream stream) {
    check_cuda(cudaMemsetAsync(buffer_.get(), 0, buffer_.size(), stream), "cudaMemsetAsync", "L2 flush");
}

SmClockProbe::SmClockProbe(const CubinModule &quantize_module)
    : kernel_(quantize_module.function(S2TP_CLOCK_PROBE_ENTRY)),
      result_(2 * sizeof(unsigned long long), "SM clock probe result") {}

double SmClockProbe::mhz_now(GpuStream stream, std::uint64_t spin_ns) {
    s2tp_clock_probe_params params{};
    params.out = result_.as<unsigned long long>();
    params.spin_ns = spin_ns;
    const std::string context = "spin " + std::to_string(spin_ns) + " ns";
    kernel_.launch({1, 1, 1}, {1, 1, 1}, 0, &params, sizeof params, stream, context);
    unsigned long long cycles_and_ns[2] = {0, 0};
    check_cuda(cudaMemcpyAsync(cycles_and_ns, result_.get(), sizeof cycles_and_ns, cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync", "SM clock probe result");
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize", "SM clock probe");
    if (cycles_and_ns[1] == 0)
        fail(ExitCode::internal, "the SM clock probe measured 0 ns of %globaltimer while spinning for " +
                                     std::to_string(spin_ns) + " ns");
    return static_cast<double>(cycles_and_ns[0]) * 1000.0 / static_cast<double>(cycles_and_ns[1]);
}

}  // namespace s2tp
