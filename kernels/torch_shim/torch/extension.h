// sage2tp's own subset of torch's C++ extension API: what the host functions of a CUDA extension's
// launcher files use (SageAttention's csrc/qattn/*.cu and their utils.cuh / dispatch_utils.h), so that
// such a file compiles into a shared object with plain nvcc, with no torch installed, and is called
// by sage2tp with tensors that wrap sage2tp's own device buffers (kernels/host_call_export.h).
//
// It mirrors the spelling of torch's API, not its implementation: a Tensor is a non-owning view
// (pointer, dtype, sizes, strides, device) unless torch::empty made it, the ScalarType codes are
// torch's own (c10/core/ScalarType.h), and torch::empty draws device memory from a pool that keeps
// every block for the next call (so a timed call allocates nothing). What is not here fails to
// compile, which names the missing part of the API.
#pragma once

#include <cuda_runtime_api.h>

#include <cassert>  // torch's headers include it, and CUDA's fp8 headers use assert without including it
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace c10 {

// Each dtype once: its name, torch's code (c10/core/ScalarType.h, so that a value printed here reads as
// torch prints it) and its element size in bytes.
#define S2TP_SHIM_SCALAR_TYPES(X) \
    X(Byte, 0, 1)                 \
    X(Char, 1, 1)                 \
    X(Short, 2, 2)                \
    X(Int, 3, 4)                  \
    X(Long, 4, 8)                 \
    X(Half, 5, 2)                 \
    X(Float, 6, 4)                \
    X(Double, 7, 8)               \
    X(Bool, 11, 1)                \
    X(BFloat16, 15, 2)            \
    X(Float8_e5m2, 23, 1)         \
    X(Float8_e4m3fn, 24, 1)

#define S2TP_SHIM_ENUMERATOR(name, code, bytes) name = code,
enum class ScalarType : std::int8_t { S2TP_SHIM_SCALAR_TYPES(S2TP_SHIM_ENUMERATOR) };
#undef S2TP_SHIM_ENUMERATOR

inline const char *scalar_type_name(ScalarType type) {
#define S2TP_SHIM_NAME(name, code, bytes) \
    case ScalarType::name: return #name;
    switch (type) { S2TP_SHIM_SCALAR_TYPES(S2TP_SHIM_NAME) }
#undef S2TP_SHIM_NAME
    return "Unknown";
}

inline std::ostream &operator<<(std::ostream &out, ScalarType type) { return out << scalar_type_name(type); }

inline std::size_t element_size(ScalarType type) {
#define S2TP_SHIM_SIZE(name, code, bytes) \
    case ScalarType::name: return bytes;
    switch (type) { S2TP_SHIM_SCALAR_TYPES(S2TP_SHIM_SIZE) }
#undef S2TP_SHIM_SIZE
    return 1;
}

// TORCH_CHECK's exception. what() is the message alone; where() says where the check failed.
class Error : public std::runtime_error {
public:
    Error(const std::string &message, std::string where) : std::runtime_error(message), where_(std::move(where)) {}
    const std::string &where() const { return where_; }

private:
    std::string where_;
};

namespace detail {
inline void append(std::ostringstream &) {}
template <typename First, typename... Rest>
void append(std::ostringstream &out, const First &first, const Rest &...rest) {
    out << first;
    append(out, rest...);
}
template <typename... Parts>
[[noreturn]] void check_failed(const char *condition, const char *function, const char *file, int line,
                               const Parts &...parts) {
    std::ostringstream message;
    append(message, parts...);
    if (message.str().empty()) message << "Expected " << condition << " to be true, but got false.";
    std::ostringstream where;
    where << function << " at " << file << ":" << line;
    throw Error(message.str(), where.str());
}
}  // namespace detail

// A list of sizes, as torch's ArrayRef<int64_t> is used: built from a braced list or a vector and
// compared. It keeps its own copy, so it never outlives what it was built from.
class IntArrayRef {
public:
    IntArrayRef() = default;
    IntArrayRef(std::initializer_list<std::int64_t> values) : values_(values) {}
    IntArrayRef(std::vector<std::int64_t> values) : values_(std::move(values)) {}

    const std::int64_t *begin() const { return values_.data(); }
    const std::int64_t *end() const { return values_.data() + values_.size(); }
    std::size_t size() const { return values_.size(); }
    std::int64_t operator[](std::size_t index) const { return values_[index]; }
    const std::vector<std::int64_t> &vec() const { return values_; }

    friend bool operator==(const IntArrayRef &a, const IntArrayRef &b) { return a.values_ == b.values_; }
    friend bool operator!=(const IntArrayRef &a, const IntArrayRef &b) { return !(a == b); }
    friend std::ostream &operator<<(std::ostream &out, const IntArrayRef &values) {
        out << "[";
        for (std::size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
        return out << "]";
    }

private:
    std::vector<std::int64_t> values_;
};

enum class DeviceType : std::int8_t { CPU = 0, CUDA = 1 };

class Device {
public:
    Device(DeviceType type = DeviceType::CPU, int index = -1) : type_(type), index_(index) {}
    DeviceType type() const { return type_; }
    int index() const { return index_; }
    bool is_cuda() const { return type_ == DeviceType::CUDA; }

private:
    DeviceType type_;
    int index_;
};

class TensorOptions {
public:
    TensorOptions() = default;
    TensorOptions(ScalarType dtype) : dtype_(dtype) {}
    TensorOptions dtype(ScalarType dtype) const {
        TensorOptions copy = *this;
        copy.dtype_ = dtype;
        return copy;
    }
    TensorOptions device(Device device) const {
        TensorOptions copy = *this;
        copy.device_ = device;
        return copy;
    }
    ScalarType dtype() const { return dtype_; }
    Device device() const { return device_; }

private:
    ScalarType dtype_ = ScalarType::Float;
    Device device_;
};

// The device memory torch::empty hands out: blocks of one size are kept when their last tensor goes
// and handed out again, so only a call that needs more blocks than any call before it allocates.
// One pool per shared object (this header is compiled into exactly one translation unit of it).
class DevicePool {
public:
    // Never destroyed: a tensor held elsewhere (the last returned one) may give its block back after
    // the library's static destructors have run (dlclose runs them).
    static DevicePool &instance() {
        static DevicePool *pool = new DevicePool;
        return *pool;
    }
    std::shared_ptr<void> take(std::size_t bytes, int device) {
        void *block = nullptr;
        std::vector<void *> &free = free_[{device, bytes}];
        if (!free.empty()) {
            block = free.back();
            free.pop_back();
        } else {
            const cudaError_t status = cudaMalloc(&block, bytes == 0 ? 1 : bytes);
            if (status != cudaSuccess)
                detail::check_failed("cudaMalloc", __func__, __FILE__, __LINE__, "torch::empty could not allocate ", bytes,
                                     " bytes of device memory: ", cudaGetErrorName(status), " (",
                                     cudaGetErrorString(status), ")");
            ++allocations;
        }
        if (poison_stream_set)  // every byte 0xFF (NaN in f16, bf16 and f32), so a value never written shows
            cudaMemsetAsync(block, 0xFF, bytes, poison_stream);
        const std::pair<int, std::size_t> key{device, bytes};
        return std::shared_ptr<void>(block, [this, key](void *released) { free_[key].push_back(released); });
    }

    int allocations = 0;  // cudaMalloc calls so far
    bool poison_stream_set = false;
    cudaStream_t poison_stream = nullptr;

private:
    DevicePool() = default;
    std::map<std::pair<int, std::size_t>, std::vector<void *>> free_;  // (device, bytes) -> blocks not in use
};

// The stream a host function launches on when it asks for the current one; the caller sets it.
inline cudaStream_t &current_stream_slot() {
    static cudaStream_t stream = nullptr;
    return stream;
}

}  // namespace c10

namespace at {

using c10::Device;
using c10::DeviceType;
using c10::IntArrayRef;
using c10::ScalarType;
using c10::TensorOptions;

constexpr ScalarType kByte = ScalarType::Byte, kUInt8 = ScalarType::Byte, kChar = ScalarType::Char,
                     kInt8 = ScalarType::Char, kShort = ScalarType::Short, kInt16 = ScalarType::Short,
                     kInt = ScalarType::Int, kInt32 = ScalarType::Int, kLong = ScalarType::Long,
                     kInt64 = ScalarType::Long, kHalf = ScalarType::Half, kFloat16 = ScalarType::Half,
                     kFloat = ScalarType::Float, kFloat32 = ScalarType::Float, kDouble = ScalarType::Double,
                     kFloat64 = ScalarType::Double, kBool = ScalarType::Bool, kBFloat16 = ScalarType::BFloat16,
                     kFloat8_e5m2 = ScalarType::Float8_e5m2, kFloat8_e4m3fn = ScalarType::Float8_e4m3fn;

class Tensor {
public:
    Tensor() = default;
    // A view of memory someone else owns (or keeps alive through `owner`).
    Tensor(void *data, ScalarType dtype, std::vector<std::int64_t> sizes, std::vector<std::int64_t> strides, Device device,
           std::shared_ptr<void> owner = nullptr)
        : defined_(true), data_(data), dtype_(dtype), sizes_(std::move(sizes)), strides_(std::move(strides)),
          device_(device), owner_(std::move(owner)) {}

    bool defined() const { return defined_; }
    std::int64_t dim() const { return static_cast<std::int64_t>(sizes_.size()); }
    std::int64_t size(std::int64_t axis) const { return sizes_[wrap(axis)]; }
    std::int64_t stride(std::int64_t axis) const { return strides_[wrap(axis)]; }
    IntArrayRef sizes() const { return sizes_; }
    IntArrayRef strides() const { return strides_; }
    std::int64_t numel() const {
        std::int64_t count = 1;
        for (std::int64_t s : sizes_) count *= s;
        return count;
    }
    ScalarType scalar_type() const { return dtype_; }
    ScalarType dtype() const { return dtype_; }
    std::size_t element_size() const { return c10::element_size(dtype_); }
    std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * element_size(); }
    Device device() const { return device_; }
    int get_device() const { return device_.index(); }
    bool is_cuda() const { return device_.is_cuda(); }
    TensorOptions options() const { return TensorOptions(dtype_).device(device_); }
    void *data_ptr() const { return data_; }
    template <typename T>
    T *data_ptr() const {
        return static_cast<T *>(data_);
    }
    bool is_contiguous() const {
        std::int64_t expected = 1;
        for (std::int64_t axis = dim() - 1; axis >= 0; --axis) {
            if (sizes_[axis] != 1 && strides_[axis] != expected) return false;
            expected *= sizes_[axis];
        }
        return true;
    }

private:
    std::size_t wrap(std::int64_t axis) const {
        const std::int64_t wrapped = axis < 0 ? axis + dim() : axis;
        if (wrapped < 0 || wrapped >= dim())
            c10::detail::check_failed("axis in range", __func__, __FILE__, __LINE__, "Dimension out of range (expected to be in range of [",
                                      -dim(), ", ", dim() - 1, "], but got ", axis, ")");
        return static_cast<std::size_t>(wrapped);
    }

    bool defined_ = false;
    void *data_ = nullptr;
    ScalarType dtype_ = ScalarType::Float;
    std::vector<std::int64_t> sizes_, strides_;
    Device device_;
    std::shared_ptr<void> owner_;
};

// Contiguous strides for `sizes`.
inline std::vector<std::int64_t> contiguous_strides(const IntArrayRef &sizes) {
    std::vector<std::int64_t> strides(sizes.size());
    std::int64_t stride = 1;
    for (std::size_t axis = sizes.size(); axis-- > 0;) {
        strides[axis] = stride;
        stride *= sizes[axis];
    }
    return strides;
}

// Device memory from the pool. A tensor of no elements needs none, on any device (torch::empty({0})
// is how launchers spell "no LSE"); any other CPU tensor is outside this subset.
inline Tensor empty(const IntArrayRef &sizes, TensorOptions options = {}) {
    const std::vector<std::int64_t> &shape = sizes.vec();
    const std::vector<std::int64_t> strides = contiguous_strides(sizes);
    std::int64_t count = 1;
    for (std::int64_t s : shape) count *= s;
    if (count == 0) return Tensor(nullptr, options.dtype(), shape, strides, options.device());
    if (!options.device().is_cuda())
        c10::detail::check_failed("options.device().is_cuda()", __func__, __FILE__, __LINE__,
                                  "sage2tp's torch subset allocates device memory only; torch::empty was asked for a "
                                  "CPU tensor of ", count, " elements");
    const std::size_t bytes = static_cast<std::size_t>(count) * c10::element_size(options.dtype());
    std::shared_ptr<void> block = c10::DevicePool::instance().take(bytes, options.device().index());
    return Tensor(block.get(), options.dtype(), shape, strides, options.device(), block);
}

inline Tensor empty_like(const Tensor &like) { return empty(like.sizes(), like.options()); }

namespace cuda {

class CUDAStream {
public:
    explicit CUDAStream(cudaStream_t stream) : stream_(stream) {}
    cudaStream_t stream() const { return stream_; }
    operator cudaStream_t() const { return stream_; }

private:
    cudaStream_t stream_;
};

inline CUDAStream getCurrentCUDAStream(int = -1) { return CUDAStream(c10::current_stream_slot()); }

// Makes a device current for its lifetime and restores the one before.
class CUDAGuard {
public:
    explicit CUDAGuard(Device device) : CUDAGuard(device.index()) {}
    explicit CUDAGuard(int index) {
        cudaGetDevice(&previous_);
        if (index >= 0) cudaSetDevice(index);
    }
    ~CUDAGuard() { cudaSetDevice(previous_); }
    CUDAGuard(const CUDAGuard &) = delete;
    CUDAGuard &operator=(const CUDAGuard &) = delete;

private:
    int previous_ = 0;
};
using OptionalCUDAGuard = CUDAGuard;

}  // namespace cuda
}  // namespace at

namespace torch {
using namespace at;
using at::Tensor;
}  // namespace torch

namespace c10 {
namespace cuda {
using at::cuda::CUDAGuard;
using at::cuda::CUDAStream;
using at::cuda::getCurrentCUDAStream;
using at::cuda::OptionalCUDAGuard;
}  // namespace cuda
}  // namespace c10

#define TORCH_CHECK(condition, ...)                                                                               \
    do {                                                                                                          \
        if (!(condition)) ::c10::detail::check_failed(#condition, __func__, __FILE__, __LINE__, ##__VA_ARGS__); \
    } while (false)
