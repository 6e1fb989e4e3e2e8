#include "formats/tensor.h"

#include "support/integer_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "support/errors.h"

namespace s2tp {

namespace {

std::uint32_t float_bits(float value) {
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

float bits_to_float(std::uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

// Rounds mantissa >> shift to nearest, ties to even (shift >= 1).
std::uint32_t shift_round_even(std::uint32_t mantissa, unsigned shift) {
    std::uint32_t kept = mantissa >> shift;
    std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    std::uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1u))) ++kept;
    return kept;
}

constexpr std::int64_t kMaxElements = std::int64_t(1) << 62;

}  // namespace

std::size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::f16: return 2;
        case DType::bf16: return 2;
        case DType::f32: return 4;
        case DType::f64: return 8;
        case DType::i8: return 1;
        case DType::e4m3: return 1;
        case DType::i32: return 4;
        case DType::u16: return 2;
    }
    fail(ExitCode::internal, "dtype_size: invalid dtype value");
}

const char *dtype_name(DType dtype) {
    switch (dtype) {
        case DType::f16: return "f16";
        case DType::bf16: return "bf16";
        case DType::f32: return "f32";
        case DType::f64: return "f64";
        case DType::i8: return "i8";
        case DType::e4m3: return "e4m3";
        case DType::i32: return "i32";
        case DType::u16: return "u16";
    }
    fail(ExitCode::internal, "dtype_name: invalid dtype value");
}

DType parse_dtype(std::string_view name) {
    for (DType d : {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i8, DType::e4m3, DType::i32,
                    DType::u16}) {
        if (name == dtype_name(d)) return d;
    }
    fail(ExitCode::usage, "unknown dtype '" + std::string(name) +
                              "' (expected one of f16, bf16, f32, f64, i8, e4m3, i32, u16)");
}

bool dtype_is_floating(DType dtype) {
    return dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::f32 || dtype == DType::f64 ||
           dtype == DType::e4m3;
}

std::string shape_to_string(const Shape &shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) text += ", ";
        text += std::to_string(shape[i]);
    }
    return text + "]";
}

std::int64_t shape_numel(const Shape &shape) {
    std::int64_t count = 1;
    for (std::int64_t extent : shape) {
        if (extent < 0) fail(ExitCode::usage, "negative extent in shape " + shape_to_string(shape));
        if (extent != 0 && count > kMaxElements / extent)
            fail(ExitCode::usage, "shape " + shape_to_string(shape) + " has too many elements");
        count *= extent;
    }
    return count;
}

Shape unravel_index(std::int64_t flat_index, const Shape &shape) {
    Shape index(shape.size(), 0);
    for (std::size_t i = shape.size(); i-- > 0;) {
        if (shape[i] <= 0) continue;
        index[i] = flat_index % shape[i];
        flat_index /= shape[i];
    }
    return index;
}

Tensor::Tensor(DType dtype_, Shape shape_) : dtype(dtype_), shape(std::move(shape_)) {
    bytes.assign(static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype), 0);
}

void Tensor::check_element_type(std::size_t size) const {
    if (size != dtype_size(dtype))
        fail(ExitCode::internal, std::string("tensor of dtype ") + dtype_name(dtype) + " viewed with a " +
                                     std::to_string(size) + "-byte element type");
}

double Tensor::value_at(std::int64_t flat_index) const {
    const std::size_t size = dtype_size(dtype);
    if (flat_index < 0 || static_cast<std::size_t>(flat_index) >= bytes.size() / size)
        fail(ExitCode::internal, "tensor element " + std::to_string(flat_index) + " out of range " +
                                     shape_to_string(shape));
    const std::uint8_t *p = bytes.data() + static_cast<std::size_t>(flat_index) * size;
    switch (dtype) {
        case DType::f16: { std::uint16_t b; std::memcpy(&b, p, 2); return half_to_float(b); }
        case DType::bf16: { std::uint16_t b; std::memcpy(&b, p, 2); return bf16_to_float(b); }
        case DType::f32: { float v; std::memcpy(&v, p, 4); return v; }
        case DType::f64: { double v; std::memcpy(&v, p, 8); return v; }
        case DType::i8: return static_cast<std::int8_t>(*p);
        case DType::e4m3: return e4m3_to_float(*p);
        case DType::i32: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
        case DType::u16: { std::uint16_t v; std::memcpy(&v, p, 2); return v; }
    }
    fail(ExitCode::internal, "value_at: invalid dtype value");
}

// ---- attention geometry ----

const char *layout_name(Layout layout) { return layout == Layout::nhd ? "NHD" : "HND"; }

Layout parse_layout(std::string_view name) {
    if (name == "NHD" || name == "nhd") return Layout::nhd;
    if (name == "HND" || name == "hnd") return Layout::hnd;
    fail(ExitCode::usage, "unknown layout '" + std::string(name) + "' (expected NHD or HND)");
}

Shape AttentionShape::q_shape() const {
    return layout == Layout::nhd ? Shape{batch, len_q, heads_q, head_dim} : Shape{batch, heads_q, len_q, head_dim};
}

Shape AttentionShape::kv_shape() const {
    return layout == Layout::nhd ? Shape{batch, len_kv, heads_kv, head_dim}
                                 : Shape{batch, heads_kv, len_kv, head_dim};
}

std::int64_t AttentionShape::offset(bool kv, std::int64_t b, std::int64_t h, std::int64_t token,
                                    std::int64_t d) const {
    const std::int64_t heads = kv ? heads_kv : heads_q;
    const std::int64_t len = kv ? len_kv : len_q;
    if (layout == Layout::nhd) return ((b * len + token) * heads + h) * head_dim + d;
    return ((b * heads + h) * len + token) * head_dim + d;
}

void AttentionShape::validate(const std::string &what) const {
    if (batch <= 0 || heads_q <= 0 || heads_kv <= 0 || len_q <= 0 || len_kv <= 0 || head_dim <= 0)
        fail(ExitCode::usage, what + ": every extent must be positive (" + to_string() + ")");
    if (heads_q % heads_kv != 0)
        fail(ExitCode::usage, what + ": heads_q (" + std::to_string(heads_q) +
                                  ") is not a multiple of heads_kv (" + std::to_string(heads_kv) + ")");
    // The kernel indexes with 32-bit arithmetic; keep every tensor (V padded to 64 tokens) below 2^31
    // elements. Each product is checked: extents from a manifest may be anything up to 2^63 - 1.
    const std::int64_t limit = std::int64_t(1) << 31;
    const std::optional<std::int64_t> q_elements = checked_product({batch, len_q, heads_q, head_dim});
    // round_up itself would overflow near 2^63; a length of 2^31 or more is too long anyway.
    const std::optional<std::int64_t> kv_elements =
        checked_product({batch, len_kv < limit ? round_up(len_kv, 64) : limit, heads_kv, head_dim});
    if (!q_elements || *q_elements >= limit)
        fail(ExitCode::usage, what + ": Q and O of " + to_string() + " (batch x len_q x heads_q x head_dim = " +
                                  (q_elements ? std::to_string(*q_elements) : std::string("more than 2^63")) +
                                  " elements) must have fewer than 2^31 elements");
    if (!kv_elements || *kv_elements >= limit)
        fail(ExitCode::usage, what + ": K and V of " + to_string() +
                                  " (batch x len_kv padded to 64 x heads_kv x head_dim = " +
                                  (kv_elements ? std::to_string(*kv_elements) : std::string("more than 2^63")) +
                                  " elements) must have fewer than 2^31 elements");
}

std::string AttentionShape::to_string() const {
    std::ostringstream text;
    text << "b=" << batch << " hq=" << heads_q << " hkv=" << heads_kv << " nq=" << len_q << " nkv=" << len_kv
         << " d=" << head_dim << " " << layout_name(layout);
    return text.str();
}

// ---- scalar conversions ----

float half_to_float(std::uint16_t bits) {
    const std::uint32_t sign = std::uint32_t(bits & 0x8000u) << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1fu;
    std::uint32_t mantissa = bits & 0x3ffu;
    if (exponent == 0x1f) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0) return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
    if (mantissa == 0) return bits_to_float(sign);
    // Subnormal half: normalise into a float exponent (every half subnormal is a float normal).
    std::uint32_t float_exponent = 113;
    while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --float_exponent;
    }
    return bits_to_float(sign | (float_exponent << 23) | ((mantissa & 0x3ffu) << 13));
}

float bf16_to_float(std::uint16_t bits) { return bits_to_float(std::uint32_t(bits) << 16); }

float e4m3_to_float(std::uint8_t bits) {
    const float sign = (bits & 0x80u) ? -1.0f : 1.0f;
    const int exponent = (bits >> 3) & 0xf;
    const int mantissa = bits & 0x7;
    if (exponent == 0xf && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
    if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);
    return sign * std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
}

std::uint16_t float_to_half(float value) {
    const std::uint32_t bits = float_bits(value);
    const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const std::uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u)  // NaN: keep the top payload bits, force quiet
        return static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
    if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
    const std::uint32_t exponent = magnitude >> 23;
    if (exponent >= 113) {  // half normal range: drop 13 mantissa bits; a carry moves into the exponent
        const std::uint32_t rebased = ((exponent - 112) << 23) | (magnitude & 0x7fffffu);
        return static_cast<std::uint16_t>(sign | shift_round_even(rebased, 13));
    }
    // Half subnormal: value / 2^-24, rounded. The float has at most 24 significant bits.
    if (exponent < 102) return sign;  // below 2^-25: rounds to zero (never exactly half of 2^-24)
    const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    return static_cast<std::uint16_t>(sign | shift_round_even(mantissa, 126 - exponent));
}

std::uint16_t float_to_bf16(float value) {
    const std::uint32_t bits = float_bits(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
    const std::uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>(rounded >> 16);
}

std::uint8_t float_to_e4m3(float value) {
    if (std::isnan(value)) return 0x7f;
    const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
    const float magnitude = std::fabs(value);
    if (magnitude >= 448.0f) return sign | 0x7e;  // satfinite: infinity too
    const std::uint32_t bits = float_bits(magnitude);
    const int exponent = static_cast<int>(bits >> 23) - 127;
    // Both ranges reduce to rounding a 24-bit float mantissa to the e4m3 grid of the value's binade
    // (3 fraction bits for normals, fewer for subnormals, where the grid is fixed at 2^-9).
    const int grid_exponent = exponent < -6 ? -9 : exponent - 3;  // value of one code step
    if (exponent < -10) return sign;  // below 2^-10, half of the smallest subnormal: rounds to zero
    const std::uint32_t mantissa = (bits & 0x7fffffu) | 0x800000u;  // value = mantissa * 2^(exponent-23)
    const unsigned shift = static_cast<unsigned>(grid_exponent - (exponent - 23));
    const std::uint32_t steps = shift_round_even(mantissa, shift);  // value / 2^grid_exponent, rounded
    std::uint32_t code;
    if (exponent < -6) {
        code = steps;  // 0..8; 8 is the smallest normal 0x08
    } else {
        code = static_cast<std::uint32_t>(exponent + 7) * 8 + (steps - 8);  // steps 8..16, 16 carries
    }
    return static_cast<std::uint8_t>(sign | (code > 0x7e ? 0x7e : code));
}

}  // namespace s2tp
