// The part of sage2tp that talks to CUDA (gpu/host_call.h calls a host-call library, which talks to
// CUDA itself): device discovery, cubin loading and launching through the driver API, device memory,
// event timing, the SM clock probe and the L2 flush.
//
// Usage:
//   s2tp::GpuProbe probe = s2tp::probe_gpu();
//   if (!probe.available) { std::cerr << probe.reason << "\n"; return 77; }
//   s2tp::DeviceFacts device = s2tp::select_device(0);
//   s2tp::CubinModule module("build/attn.sm_90a.cubin");
//   s2tp::Kernel kernel = module.function("s2tp_attn_hd128_bf16_nomask");
//   s2tp::DeviceBuffer out(bytes, "attention output");
//   s2tp::poison(out);                                     // NaN everywhere until the kernel writes it
//   kernel.launch({grid_x, heads, batch}, {32, 4, 1}, smem, &params, sizeof params, nullptr, "hd128 bf16 ...");
//   s2tp::KernelArguments args;                            // or a parameter list, argument by argument
//   args.add(q_pointer); args.add(std::uint32_t{len_q}); ...
//   kernel.launch(grid, block, smem, args, nullptr, "hd128 bf16 ...");
//   s2tp::Tensor o = s2tp::download(out, s2tp::DType::bf16, shape, "attention output");
//
// Build facts that shape this file: the program links only cudart (static), never
// libcuda, so that it starts on a machine without a driver and can say so; every driver-API function is
// fetched at run time with cudaGetDriverEntryPointByVersion. The header names no CUDA type, so callers
// compile without the CUDA include path; GpuStream is the same pointer type as cudaStream_t/CUstream.
//
// Every CUDA call is checked. A failure throws Error(missing_tool) when the driver or device is
// missing and Error(internal) otherwise, with a message naming the call, CUDA's error name and text,
// and the caller's context string (for launches: the kernel name and problem shape).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "formats/tensor.h"

struct CUstream_st;
struct CUevent_st;
struct CUmod_st;
struct CUfunc_st;

namespace s2tp {

using GpuStream = CUstream_st *;  // nullptr is the legacy default stream, which every call here uses

// ---- Devices ----

struct GpuProbe {
    bool available = false;
    int device_count = 0;
    std::string reason;  // why not available, as one plain sentence
};

// Never throws: a missing driver or device is an answer, not an error.
GpuProbe probe_gpu();

struct DeviceFacts {
    int index = 0;
    std::string name;
    int cc_major = 0, cc_minor = 0;
    int sm_count = 0;
    std::int64_t l2_bytes = 0;
    int sm_clock_khz = 0;      // cudaDevAttrClockRate: the default (boost) SM clock, not the current one
    int driver_version = 0;    // e.g. 13000
    int runtime_version = 0;
    std::string pci_bus_id;    // "0000:19:00.0"
    std::string uuid;          // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
    // cudaDevAttrMaxPersistingL2CacheSize: the most of L2 a context may set aside for persisting accesses
    // (cudaLimitPersistingL2CacheSize); lines kept there survive an L2 flush.
    std::int64_t persisting_l2_max_bytes = 0;

    std::string arch() const;  // "sm_90" (the plain compute capability, no feature-set suffix)
    std::string summary() const;  // one line for logs
};

// Makes device `index` (counted within CUDA_VISIBLE_DEVICES) current, creates its primary context and
// returns its facts. Throws Error(missing_tool) without a driver/device or for an index out of range.
DeviceFacts select_device(int index);

// Destroys this process's primary context on each device (cudaDeviceReset; a later CUDA call makes a new
// one), so that the processes it starts next have the GPUs to themselves, as a lone process does: an idle
// context of another process moves a kernel's time measurably. Nothing of this process may live there.
void release_primary_contexts(const std::vector<int> &device_indices);

// 13000 -> "13.0", 12080 -> "12.8".
std::string cuda_version_string(int version);

// Waits for all queued work; a fault inside a kernel surfaces here, named with `context`.
void synchronize(const std::string &context);

// ---- Memory ----

// Device memory from cudaMalloc (never managed memory, so an out-of-bounds access is an access outside
// an allocation that compute-sanitizer can see). Move-only; freed on destruction.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(std::size_t bytes, std::string what);  // `what` names the buffer in error messages
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer &&other) noexcept;
    DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;

    void *get() const { return pointer_; }
    template <typename T>
    T *as() const { return static_cast<T *>(pointer_); }
    std::size_t size() const { return bytes_; }
    const std::string &what() const { return what_; }

private:
    void *pointer_ = nullptr;
    std::size_t bytes_ = 0;
    std::string what_;
};

DeviceBuffer upload(const Tensor &tensor, const std::string &what);
// Copies into an existing buffer, which must be exactly tensor.nbytes() long.
void upload_into(DeviceBuffer &buffer, const Tensor &tensor);
// A tensor of the given dtype and shape from the buffer, whose size must match exactly.
Tensor download(const DeviceBuffer &buffer, DType dtype, const Shape &shape);
// Fills every byte with 0xFF: NaN in f16, bf16 and f32, so an element a kernel failed to write is
// visible. Done before every launch whose output is checked.
void poison(DeviceBuffer &buffer);
// Every byte 0, on the default stream.
void zero(DeviceBuffer &buffer);
// Device-to-device copy on the default stream; the buffers must be the same size.
void copy_device(DeviceBuffer &destination, const DeviceBuffer &source);
// `bytes` from device address `source` to device address `destination`, on the default stream.
void copy_device_bytes(void *destination, const void *source, std::size_t bytes);
// The buffer's bytes into `destination`, which must hold buffer.size() bytes; waits for the copy.
void download_bytes(const DeviceBuffer &buffer, void *destination);

// ---- Modules and kernels ----

struct LaunchDims {
    unsigned x = 1, y = 1, z = 1;
};

// What the driver reports for a loaded kernel (the cudaFuncGetAttributes numbers, for the
// occupancy cross-check against ptxas and the occupancy model).
struct KernelAttributes {
    int registers = 0;
    int static_smem_bytes = 0;
    int local_bytes = 0;  // per thread: stack frame plus spills
    int max_threads_per_block = 0;
};

// A kernel's arguments as cuLaunchKernel's parameter array takes them: each argument's bytes, in the
// kernel's parameter order. Packed once, launched any number of times; copies point at their own bytes.
class KernelArguments {
public:
    KernelArguments() = default;
    KernelArguments(const KernelArguments &other);
    KernelArguments &operator=(const KernelArguments &other);
    KernelArguments(KernelArguments &&other) noexcept;
    KernelArguments &operator=(KernelArguments &&other) noexcept;

    template <typename T>
    void add(const T &value) {
        static_assert(std::is_trivially_copyable<T>::value, "kernel arguments are copied byte for byte");
        add_bytes(&value, sizeof value);
    }
    void add_bytes(const void *bytes, std::size_t size);

    std::size_t count() const { return sizes_.size(); }
    const std::vector<std::size_t> &sizes() const { return sizes_; }
    const void *argument(std::size_t index) const { return storage_.data() + offsets_.at(index); }
    // The argument at `index` as a T; Error(internal) if its size is not sizeof(T).
    template <typename T>
    T get(std::size_t index) const {
        static_assert(std::is_trivially_copyable<T>::value, "kernel arguments are copied byte for byte");
        T value;
        copy_out(index, &value, sizeof value);
        return value;
    }
    // One pointer per argument, into this object's own bytes (cuLaunchKernel's kernelParams).
    void **parameter_array() const { return const_cast<void **>(pointers_.data()); }

private:
    void copy_out(std::size_t index, void *out, std::size_t size) const;
    void point();

    std::vector<unsigned char> storage_;  // the driver copies each argument's bytes, so no alignment is needed
    std::vector<std::size_t> offsets_, sizes_;
    std::vector<void *> pointers_;
};

// A kernel entry of a loaded CubinModule; valid while that module lives.
class Kernel {
public:
    const std::string &name() const { return name_; }
    // Size of the kernel's single by-value parameter, as recorded in the cubin.
    std::size_t parameter_bytes() const { return parameter_bytes_; }
    KernelAttributes attributes() const;
    // cuOccupancyMaxActiveBlocksPerMultiprocessor. Raises the kernel's dynamic shared memory limit
    // first when dynamic_smem needs it, as a launch would.
    int max_active_blocks_per_sm(int block_threads, std::size_t dynamic_smem) const;
    // Launches with `params` (params_size bytes, a by-value struct) as the one kernel parameter.
    // Above 48 KiB of dynamic shared memory the kernel's limit is raised first. The size must equal
    // parameter_bytes(): a mismatch means the host's ABI header and the cubin disagree.
    void launch(LaunchDims grid, LaunchDims block, std::size_t dynamic_smem, const void *params,
                std::size_t params_size, GpuStream stream, const std::string &context) const;
    // Launches with `arguments` as the kernel's parameter list. Before the first launch with a given
    // argument count, every parameter's size is read from the cubin (cuFuncGetParamInfo) and compared
    // with the argument's: a mismatch, or a parameter the kernel does not have, means the adapter's
    // idea of the kernel's signature and the cubin disagree.
    void launch(LaunchDims grid, LaunchDims block, std::size_t dynamic_smem, const KernelArguments &arguments,
                GpuStream stream, const std::string &context) const;
    // cudaFuncAttributeMaxDynamicSharedMemorySize set to exactly `bytes`, as a launcher that always sets
    // it does (no driver call when it already holds that value).
    void set_max_dynamic_smem(std::size_t bytes, const std::string &context) const;

private:
    friend class CubinModule;
    Kernel(CUfunc_st *function, std::string name, std::size_t parameter_bytes);
    void allow_dynamic_smem(std::size_t dynamic_smem, const std::string &context) const;
    void check_parameters(const std::vector<std::size_t> &sizes, const std::string &context) const;

    CUfunc_st *function_ = nullptr;
    std::string name_;
    std::size_t parameter_bytes_ = 0;
    mutable std::vector<std::size_t> checked_sizes_;  // the parameter sizes check_parameters has confirmed
    mutable bool smem_attribute_set_ = false;
    mutable std::size_t dynamic_smem_allowed_ = 48 * 1024;  // every kernel may use this much without opting in
};

// A __device__ variable of a loaded module, found by name (cuModuleGetGlobal): its device address and
// size. Valid while the module lives.
struct DeviceGlobal {
    std::string name;
    std::uint64_t address = 0;  // a CUdeviceptr
    std::size_t bytes = 0;
};

// A cubin loaded into the current device's primary context (select_device first). Move-only.
class CubinModule {
public:
    explicit CubinModule(const std::filesystem::path &cubin);
    ~CubinModule();
    CubinModule(CubinModule &&other) noexcept;
    CubinModule &operator=(CubinModule &&other) noexcept;
    CubinModule(const CubinModule &) = delete;
    CubinModule &operator=(const CubinModule &) = delete;

    // Throws Error(usage) naming the cubin if it has no such entry.
    Kernel function(const std::string &name) const;
    // The names of every kernel entry in the cubin, mangled as the cubin stores them, sorted.
    std::vector<std::string> entry_names() const;
    // The module's __device__ variable `name`; nullopt when the cubin defines none by that name.
    std::optional<DeviceGlobal> global(const std::string &name) const;
    const std::filesystem::path &path() const { return path_; }

private:
    CUmod_st *module_ = nullptr;
    std::filesystem::path path_;
};

// Zeroes every byte of `global` (cuMemsetD8, ordered with the launches on the default stream).
void zero_global(const DeviceGlobal &global, const std::string &context);
// Copies `global` back once the work queued before has finished (cuMemcpyDtoH).
std::vector<unsigned char> read_global(const DeviceGlobal &global, const std::string &context);

// ---- Timing ----

// A pair of CUDA events around work on one stream. cudaEventElapsedTime resolves about 0.5 us, so
// time regions much longer than that.
class EventTimer {
public:
    EventTimer();
    ~EventTimer();
    EventTimer(const EventTimer &) = delete;
    EventTimer &operator=(const EventTimer &) = delete;

    void start(GpuStream stream);
    void stop(GpuStream stream);
    double elapsed_ms();  // waits for the stop event

private:
    CUevent_st *start_ = nullptr;
    CUevent_st *stop_ = nullptr;
};

// Sets the current context's persisting-L2 carve-out to 0 and returns every persisting line to normal
// (cudaCtxResetPersistingL2Cache), so that nothing an earlier launch set aside survives the L2 flush.
void reset_persisting_l2();

// Evicts the L2 by clearing a buffer of twice its size (nvbench clears one L2's worth; twice leaves no
// doubt with any replacement policy).
class L2Flusher {
public:
    explicit L2Flusher(const DeviceFacts &device);
    void flush(GpuStream stream);

private:
    DeviceBuffer buffer_;
};

// The SM clock at this moment, from the s2tp_sm_clock_probe kernel of the quantize cubin: one thread
// spins for `spin_ns` of %globaltimer and counts clock64 cycles meanwhile (nvbench's method, so the
// clock is read without changing any GPU setting).
class SmClockProbe {
public:
    explicit SmClockProbe(const CubinModule &quantize_module);
    double mhz_now(GpuStream stream, std::uint64_t spin_ns = 20000);

private:
    Kernel kernel_;
    DeviceBuffer result_;
};

}  // namespace s2tp
