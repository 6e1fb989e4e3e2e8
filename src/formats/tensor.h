// A small host tensor: dtype, shape and a contiguous little-endian byte buffer (row-major, C order),
// plus exact scalar conversions between the storage formats sage2tp handles and float.
//
// Usage:
//   s2tp::Tensor q(s2tp::DType::f16, {1, 64, 2, 128});     // zero-filled
//   std::uint16_t *bits = q.data<std::uint16_t>();         // element size must match the dtype
//   bits[0] = s2tp::float_to_half(0.5f);
//   double x = q.value_at(0);                               // any dtype -> double
//   std::string s = s2tp::shape_to_string(q.shape);         // "[1, 64, 2, 128]"
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace s2tp {

// e4m3 is OCP FP8 E4M3 (bias 7, no infinities, S.1111.111 is NaN, max finite 448), stored one byte each.
enum class DType { f16, bf16, f32, f64, i8, e4m3, i32, u16 };

std::size_t dtype_size(DType dtype);
// Names as used in cases.toml and in messages: "f16", "bf16", "f32", "f64", "i8", "e4m3", "i32", "u16".
const char *dtype_name(DType dtype);
// Inverse of dtype_name; throws Error(usage) naming the value if it is not one of them.
DType parse_dtype(std::string_view name);
// Floating-point dtypes are the ones whose values can be NaN or infinite.
bool dtype_is_floating(DType dtype);

using Shape = std::vector<std::int64_t>;

// "[1, 64, 2, 128]"; "[]" for a 0-d tensor.
std::string shape_to_string(const Shape &shape);
// Product of the extents; throws Error(usage) for a negative extent or a product past 2^62.
std::int64_t shape_numel(const Shape &shape);
// Multi-index of a flat row-major index, e.g. 5 in [2, 3] -> {1, 2}.
Shape unravel_index(std::int64_t flat_index, const Shape &shape);

struct Tensor {
    DType dtype = DType::f32;
    Shape shape;
    std::vector<std::uint8_t> bytes;  // numel() * dtype_size(dtype) bytes, row-major

    Tensor() = default;
    Tensor(DType dtype, Shape shape);  // zero-filled

    std::int64_t numel() const { return shape_numel(shape); }
    std::size_t element_size() const { return dtype_size(dtype); }
    std::size_t nbytes() const { return bytes.size(); }

    // Typed view of the buffer. T must have the dtype's element size (e.g. uint16_t for f16/bf16/u16,
    // uint8_t or int8_t for e4m3/i8); throws Error(internal) otherwise.
    template <typename T>
    T *data() {
        check_element_type(sizeof(T));
        return reinterpret_cast<T *>(bytes.data());
    }
    template <typename T>
    const T *data() const {
        check_element_type(sizeof(T));
        return reinterpret_cast<const T *>(bytes.data());
    }

    // Element flat_index converted exactly to double (f16/bf16/e4m3 decoded, integers widened).
    double value_at(std::int64_t flat_index) const;

private:
    void check_element_type(std::size_t size) const;
};

// ---- Attention tensor geometry (shared by the generator, the host quantizer and the CPU reference) ----

// NHD: q/k/v are [batch, tokens, heads, head_dim]; HND: [batch, heads, tokens, head_dim].
enum class Layout { nhd, hnd };
const char *layout_name(Layout layout);    // "NHD" / "HND"
Layout parse_layout(std::string_view name);  // "NHD"/"HND" (also lower case); throws Error(usage)

struct AttentionShape {
    std::int64_t batch = 1;
    std::int64_t heads_q = 1;
    std::int64_t heads_kv = 1;
    std::int64_t len_q = 1;
    std::int64_t len_kv = 1;
    std::int64_t head_dim = 128;
    Layout layout = Layout::nhd;

    Shape q_shape() const;   // also the shape of O
    Shape kv_shape() const;  // K and V
    // Flat element offset of (b, h, token, d) in a q-shaped (kv = false) or kv-shaped (kv = true) tensor.
    std::int64_t offset(bool kv, std::int64_t b, std::int64_t h, std::int64_t token, std::int64_t d) const;
    // Throws Error(usage, "<what>: ...") unless every extent is positive, heads_q is a multiple of
    // heads_kv and the tensors stay below 2^31 elements.
    void validate(const std::string &what) const;
    std::string to_string() const;  // "b=1 hq=2 hkv=2 nq=64 nkv=64 d=128 NHD"
};

// Exact decodes (every f16/bf16/e4m3 value is representable as float). NaN stays NaN.
float half_to_float(std::uint16_t bits);
float bf16_to_float(std::uint16_t bits);
float e4m3_to_float(std::uint8_t bits);

// Round to nearest, ties to even; overflow goes to infinity; NaN stays NaN (quiet, sign kept).
std::uint16_t float_to_half(float value);
std::uint16_t float_to_bf16(float value);
// Round to nearest, ties to even, saturating to +-448 (what cvt.rn.satfinite.e4m3x2.f32 does); NaN -> 0x7f.
std::uint8_t float_to_e4m3(float value);

}  // namespace s2tp
