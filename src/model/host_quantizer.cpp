#include "model/host_quantizer.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "support/errors.h"

namespace s2tp {

namespace {

constexpr std::int64_t kQGroupTokens = 32;    // one warp's rows
constexpr std::int64_t kQCtaTokens = 128;     // scales are allocated per 128-row CTA, 4 groups each
constexpr std::int64_t kKBlockTokens = 64;
constexpr std::int64_t kVPadTokens = 64;
constexpr float kInt8Max = 127.0f;
constexpr float kVScaleMax = 2.25f;           // fp32+fp16 PV accumulation (see the kernel spec, 1.4)
constexpr float kMinAmax = 1e-7f;             // upstream's floor for Q/K block maxima

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Reads f16/bf16 elements as float.
class HalfReader {
public:
    explicit HalfReader(const Tensor &tensor)
        : bits_(tensor.data<std::uint16_t>()), bf16_(tensor.dtype == DType::bf16) {}
    float operator()(std::int64_t index) const {
        return bf16_ ? bf16_to_float(bits_[index]) : half_to_float(bits_[index]);
    }

private:
    const std::uint16_t *bits_;
    bool bf16_;
};

void require_half_input(const Tensor &tensor, const Shape &shape, const char *name) {
    if (tensor.dtype != DType::f16 && tensor.dtype != DType::bf16)
        fail(ExitCode::usage, std::string("host quantizer: ") + name + " must be f16 or bf16, not " + dtype_name(tensor.dtype));
    if (tensor.shape != shape)
        fail(ExitCode::usage, std::string("host quantizer: ") + name + " has shape " + shape_to_string(tensor.shape) +
                                  ", expected " + shape_to_string(shape));
}

// Upstream computes amax / c and c / amax with div.approx.ftz.f32, i.e. a multiplication by an
// approximate reciprocal. Mirroring that form (rather than IEEE division) keeps the host within one
// ulp; MUFU's reciprocal itself is not specified exactly, so bit identity is not promised.
float scale_of(float amax, float code_max) { return amax * (1.0f / code_max); }
float multiplier_of(float amax, float code_max) { return code_max * (1.0f / amax); }

std::int8_t to_int8(float value) {
    // cvt.rni.sat.s8.f32: round half to even (the default rounding mode), saturate; NaN -> 0.
    if (std::isnan(value)) return 0;
    const float rounded = std::nearbyint(value);
    return static_cast<std::int8_t>(std::clamp(rounded, -128.0f, 127.0f));
}

// Shared by Q and K: per (batch, head, block of `block_tokens`) symmetric int8 with a fp32 scale.
// `value(b, h, t, d)` yields the (already mean-subtracted) float input.
template <typename ValueFn>
void quantize_int8_blocks(const AttentionShape &shape, bool kv, std::int64_t block_tokens, std::int64_t blocks,
                          ValueFn value, Tensor &codes, Tensor &scales) {
    const std::int64_t heads = kv ? shape.heads_kv : shape.heads_q;
    const std::int64_t len = kv ? shape.len_kv : shape.len_q;
    std::int8_t *out = codes.data<std::int8_t>();
    float *scale_out = scales.data<float>();
    for (std::int64_t b = 0; b < shape.batch; ++b)
        for (std::int64_t h = 0; h < heads; ++h)
            for (std::int64_t block = 0; block < blocks; ++block) {
                const std::int64_t first = block * block_tokens;
                const std::int64_t last = std::min(len, first + block_tokens);
                float amax = kMinAmax;
                for (std::int64_t t = first; t < last; ++t)
                    for (std::int64_t d = 0; d < shape.head_dim; ++d) amax = std::max(amax, std::fabs(value(b, h, t, d)));
                scale_out[(b * heads + h) * blocks + block] = scale_of(amax, kInt8Max);
                const float multiplier = multiplier_of(amax, kInt8Max);
                for (std::int64_t t = first; t < last; ++t)
                    for (std::int64_t d = 0; d < shape.head_dim; ++d)
                        out[shape.offset(kv, b, h, t, d)] = to_int8(value(b, h, t, d) * multiplier);
            }
}

std::int64_t k_mean_offset(const AttentionShape &shape, std::int64_t b, std::int64_t h, std::int64_t d) {
    // [B, 1, Hk, D] and [B, Hk, 1, D] are the same row-major order.
    return (b * shape.heads_kv + h) * shape.head_dim + d;
}

}  // namespace

Shape q_scale_shape(const AttentionShape &shape) {
    return {shape.batch, shape.heads_q, ceil_div(shape.len_q, kQCtaTokens) * (kQCtaTokens / kQGroupTokens)};
}

Shape k_mean_shape(const AttentionShape &shape) {
    return shape.layout == Layout::nhd ? Shape{shape.batch, 1, shape.heads_kv, shape.head_dim}
                                       : Shape{shape.batch, shape.heads_kv, 1, shape.head_dim};
}

Shape k_scale_shape(const AttentionShape &shape) {
    return {shape.batch, shape.heads_kv, ceil_div(shape.len_kv, kKBlockTokens)};
}

Shape v_fp8_shape(const AttentionShape &shape) {
    const std::int64_t padded = ceil_div(shape.len_kv, kVPadTokens) * kVPadTokens;
    return shape.layout == Layout::nhd ? Shape{shape.batch, shape.head_dim, shape.heads_kv, padded}
                                       : Shape{shape.batch, shape.heads_kv, shape.head_dim, padded};
}

Shape v_scale_shape(const AttentionShape &shape) { return {shape.batch, shape.heads_kv, shape.head_dim}; }

Tensor compute_k_mean(const AttentionShape &shape, const Tensor &k) {
    shape.validate("host quantizer");
    require_half_input(k, shape.kv_shape(), "k");
    const HalfReader read(k);
    Tensor mean(k.dtype, k_mean_shape(shape));
    std::uint16_t *out = mean.data<std::uint16_t>();
    for (std::int64_t b = 0; b < shape.batch; ++b)
        for (std::int64_t h = 0; h < shape.heads_kv; ++h)
            for (std::int64_t d = 0; d < shape.head_dim; ++d) {
                float sum = 0.0f;
                for (std::int64_t t = 0; t < shape.len_kv; ++t) sum += read(shape.offset(true, b, h, t, d));
                const float value = sum / static_cast<float>(shape.len_kv);
                out[k_mean_offset(shape, b, h, d)] = k.dtype == DType::bf16 ? float_to_bf16(value) : float_to_half(value);
            }
    return mean;
}

void quantize_q(const AttentionShape &shape, const Tensor &q, Tensor &q_int8, Tensor &q_scale) {
    shape.validate("host quantizer");
    require_half_input(q, shape.q_shape(), "q");
    const HalfReader read(q);
    q_int8 = Tensor(DType::i8, shape.q_shape());
    q_scale = Tensor(DType::f32, q_scale_shape(shape));
    quantize_int8_blocks(
        shape, false, kQGroupTokens, q_scale.shape[2],
        [&](std::int64_t b, std::int64_t h, std::int64_t t, std::int64_t d) { return read(shape.offset(false, b, h, t, d)); },
        q_int8, q_scale);
}

void quantize_k(const AttentionShape &shape, const Tensor &k, const Tensor &k_mean, Tensor &k_int8, Tensor &k_scale) {
    shape.validate("host quantizer");
    require_half_input(k, shape.kv_shape(), "k");
    require_half_input(k_mean, k_mean_shape(shape), "k_mean");
    const HalfReader read(k), read_mean(k_mean);
    k_int8 = Tensor(DType::i8, shape.kv_shape());
    k_scale = Tensor(DType::f32, k_scale_shape(shape));
    quantize_int8_blocks(
        shape, true, kKBlockTokens, k_scale.shape[2],
        [&](std::int64_t b, std::int64_t h, std::int64_t t, std::int64_t d) {
            return read(shape.offset(true, b, h, t, d)) - read_mean(k_mean_offset(shape, b, h, d));
        },
        k_int8, k_scale);
}

void quantize_v(const AttentionShape &shape, const Tensor &v, Tensor &v_fp8, Tensor &v_scale) {
    shape.validate("host quantizer");
    require_half_input(v, shape.kv_shape(), "v");
    const HalfReader read(v);
    v_fp8 = Tensor(DType::e4m3, v_fp8_shape(shape));
    v_scale = Tensor(DType::f32, v_scale_shape(shape));
    const std::int64_t padded = v_fp8.shape[3];
    std::uint8_t *out = v_fp8.data<std::uint8_t>();
    float *scale_out = v_scale.data<float>();
    std::vector<float> channel(static_cast<std::size_t>(padded));
    for (std::int64_t b = 0; b < shape.batch; ++b)
        for (std::int64_t h = 0; h < shape.heads_kv; ++h)
            for (std::int64_t d = 0; d < shape.head_dim; ++d) {
                // Padding tokens are zeros, as upstream's zero-filling copy makes them.
                float amax = 0.0f;
                for (std::int64_t t = 0; t < padded; ++t) {
                    channel[t] = t < shape.len_kv ? read(shape.offset(true, b, h, t, d)) : 0.0f;
                    amax = std::max(amax, std::fabs(channel[t]));
                }
                scale_out[(b * shape.heads_kv + h) * shape.head_dim + d] = scale_of(amax, kVScaleMax);
                // An all-zero channel gives an infinite multiplier and NaN codes (0 * inf), like upstream.
                const float multiplier = multiplier_of(amax, kVScaleMax);
                const std::int64_t row = shape.layout == Layout::nhd ? (b * shape.head_dim + d) * shape.heads_kv + h
                                                                     : (b * shape.heads_kv + h) * shape.head_dim + d;
                std::uint8_t *row_out = out + row * padded;
                for (std::int64_t position = 0; position < padded; ++position) {
                    const std::int64_t token = position / 16 * 16 + kVTokenAtPosition[position % 16];
                    row_out[position] = float_to_e4m3(channel[token] * multiplier);
                }
            }
}

QuantizedInputs quantize_inputs(const AttentionShape &shape, const Tensor &q, const Tensor &k, const Tensor &v) {
    if (q.dtype != k.dtype || q.dtype != v.dtype)
        fail(ExitCode::usage, std::string("host quantizer: q, k and v must share one dtype (got ") + dtype_name(q.dtype) +
                                  ", " + dtype_name(k.dtype) + ", " + dtype_name(v.dtype) + ")");
    QuantizedInputs out;
    quantize_q(shape, q, out.q_int8, out.q_scale);
    out.k_mean = compute_k_mean(shape, k);
    quantize_k(shape, k, out.k_mean, out.k_int8, out.k_scale);
    quantize_v(shape, v, out.v_fp8, out.v_scale);
    return out;
}

}  // namespace s2tp
