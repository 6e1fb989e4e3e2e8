#include "model/host_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "support/errors.h"
#include "support/integer_math.h"

namespace s2tp {

namespace {

constexpr std::int64_t kVLayoutTokens = 64;   // per_channel_fp8 pads the (already padded) V to 64 tokens
constexpr float kInt8Max = 127.0f;
constexpr float kMinAmax = 1e-7f;             // upstream's floor for per-warp Q/K block maxima; the
                                              // per-thread scale adds the same constant instead
constexpr std::int64_t kQThreadGroups = 8;     // per thread: a Q warp's rows go to 8 thread groups,
constexpr std::int64_t kKThreadGroups = 4;     // a K warp's to 4 (pairs of rows), as in the mma fragments
constexpr std::int64_t kThreadGroupStride = 8; // rows of one group are 8 apart

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

// Triton's quant_{query,key}_per_thread_int8_kernel in fp32: scale = amax / 127 + 1e-7, which it
// computes as one fused multiply-add of amax by fl(1/127) (matched on every golden scale); the code is
// x / scale rounded to nearest by adding +-0.5 (+0.5 for x/scale >= 0) and truncating, each step in fp32.
float per_thread_scale(float amax) { return std::fma(amax, 1.0f / kInt8Max, kMinAmax); }

std::int8_t per_thread_code(float value, float scale) {
    const float ratio = value / scale;
    const float shifted = ratio + (ratio >= 0.0f ? 0.5f : -0.5f);
    // |ratio| <= 127 since scale > amax / 127; the clamp only keeps a NaN or overflow defined.
    if (std::isnan(shifted)) return 0;
    return static_cast<std::int8_t>(std::clamp(std::trunc(shifted), -128.0f, 127.0f));
}

// Per thread: scale index j of a (batch, head) covers warp group j / groups and, within it, the rows
// first_row(j % groups) + i * 8 (+ 1 for K's row pairs). `rows_per_step` is 1 for Q, 2 for K.
template <typename ValueFn>
void quantize_int8_per_thread(const AttentionShape &shape, bool kv, std::int64_t warp_tokens, std::int64_t groups,
                              std::int64_t rows_per_step, ValueFn value, Tensor &codes, Tensor &scales) {
    const std::int64_t heads = kv ? shape.heads_kv : shape.heads_q;
    const std::int64_t len = kv ? shape.len_kv : shape.len_q;
    const std::int64_t per_head = scales.shape[2];
    std::int8_t *out = codes.data<std::int8_t>();
    float *scale_out = scales.data<float>();
    std::vector<std::int64_t> rows;
    for (std::int64_t b = 0; b < shape.batch; ++b)
        for (std::int64_t h = 0; h < heads; ++h)
            for (std::int64_t j = 0; j < per_head; ++j) {
                const std::int64_t warp = j / groups, group = j % groups;
                rows.clear();
                for (std::int64_t i = 0; i < warp_tokens / kThreadGroupStride; ++i)
                    for (std::int64_t r = 0; r < rows_per_step; ++r) {
                        const std::int64_t t = warp * warp_tokens + i * kThreadGroupStride + group * rows_per_step + r;
                        if (t < len) rows.push_back(t);
                    }
                float amax = 0.0f;
                for (std::int64_t t : rows)
                    for (std::int64_t d = 0; d < shape.head_dim; ++d) amax = std::max(amax, std::fabs(value(b, h, t, d)));
                const float scale = per_thread_scale(amax);
                scale_out[(b * heads + h) * per_head + j] = scale;
                for (std::int64_t t : rows)
                    for (std::int64_t d = 0; d < shape.head_dim; ++d)
                        out[shape.offset(kv, b, h, t, d)] = per_thread_code(value(b, h, t, d), scale);
            }
}

// d rounded to fp32 with round-to-odd: any rounding of that to a format at least two bits narrower
// (fp16, bfloat16) is the correct rounding of d itself, with no double-rounding error.
float round_to_odd(double d) {
    float f = static_cast<float>(d);
    if (static_cast<double>(f) == d || std::isnan(d)) return f;
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);  // truncate
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    bits |= 1u;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

void require_blocks(const QkQuantization &qk) {
    const auto bad = [&](const std::string &why) {
        fail(ExitCode::usage, "host quantizer: Q/K blocks " + std::to_string(qk.q_block) + "/" +
                                  std::to_string(qk.q_warp) + " and " + std::to_string(qk.k_block) + "/" +
                                  std::to_string(qk.k_warp) + ": " + why);
    };
    if (qk.q_warp < 1 || qk.k_warp < 1 || qk.q_block % qk.q_warp != 0 || qk.k_block % qk.k_warp != 0)
        bad("each warp must divide its block");
    if (qk.granularity == QkGranularity::per_thread &&
        (qk.q_warp % kThreadGroupStride != 0 || qk.k_warp % kThreadGroupStride != 0))
        bad("per thread, each warp must be a multiple of 8 rows");
}

std::int64_t k_mean_offset(const AttentionShape &shape, std::int64_t b, std::int64_t h, std::int64_t d) {
    // [B, 1, Hk, D] and [B, Hk, 1, D] are the same row-major order.
    return (b * shape.heads_kv + h) * shape.head_dim + d;
}

}  // namespace

const char *granularity_name(QkGranularity granularity) {
    return granularity == QkGranularity::per_thread ? "per_thread" : "per_warp";
}

std::string QuantizationRecipe::describe() const {
    std::ostringstream s;
    s << "Q/K " << granularity_name(qk.granularity) << " " << qk.q_block << "/" << qk.q_warp << " " << qk.k_block
      << "/" << qk.k_warp;
    if (v_format == VFormat::f16) s << ", V f16";
    else s << ", V scale_max " << v_scale_max << " padded to " << v_pad_tokens;
    s << (smooth_v ? ", V mean subtracted" : "");
    return s.str();
}

QuantizationRecipe sm90_recipe(QkGranularity granularity) {
    QuantizationRecipe recipe;
    recipe.qk = {granularity, 64, 16, 128, 128};
    recipe.v_scale_max = S2TP_V_SCALE_MAX_E4M3;
    recipe.v_pad_tokens = 128;
    return recipe;
}

QuantizationRecipe sm80_recipe(QkGranularity granularity, std::int64_t q_warp, bool smooth_v) {
    QuantizationRecipe recipe;
    recipe.qk = {granularity, 128, q_warp, 64, 64};
    recipe.v_format = VFormat::f16;
    recipe.smooth_v = smooth_v;
    return recipe;
}

DType v_mean_dtype(const QuantizationRecipe &recipe, DType input) {
    return recipe.v_format == VFormat::f16 ? input : DType::f32;
}

Shape q_scale_shape(const AttentionShape &shape, const QkQuantization &qk) {
    const std::int64_t per_warp = ceil_div(shape.len_q, qk.q_block) * (qk.q_block / qk.q_warp);
    return {shape.batch, shape.heads_q, per_warp * (qk.granularity == QkGranularity::per_thread ? kQThreadGroups : 1)};
}

Shape k_mean_shape(const AttentionShape &shape) {
    return shape.layout == Layout::nhd ? Shape{shape.batch, 1, shape.heads_kv, shape.head_dim}
                                       : Shape{shape.batch, shape.heads_kv, 1, shape.head_dim};
}

Shape k_scale_shape(const AttentionShape &shape, const QkQuantization &qk) {
    const std::int64_t blocks = ceil_div(shape.len_kv, qk.k_block);
    return {shape.batch, shape.heads_kv,
            qk.granularity == QkGranularity::per_thread ? blocks * (qk.k_block / qk.k_warp) * kKThreadGroups : blocks};
}

Shape v_fp8_shape(const AttentionShape &shape, std::int64_t v_pad_tokens) {
    const std::int64_t padded =
        ceil_div(ceil_div(shape.len_kv, v_pad_tokens) * v_pad_tokens, kVLayoutTokens) * kVLayoutTokens;
    return shape.layout == Layout::nhd ? Shape{shape.batch, shape.head_dim, shape.heads_kv, padded}
                                       : Shape{shape.batch, shape.heads_kv, shape.head_dim, padded};
}

Shape v_scale_shape(const AttentionShape &shape) { return {shape.batch, shape.heads_kv, shape.head_dim}; }

Shape v_mean_shape(const AttentionShape &shape) { return {shape.batch, shape.heads_kv, shape.head_dim}; }

std::int64_t q_scale_index(const QkQuantization &qk, std::int64_t token) {
    const std::int64_t warp = token / qk.q_warp;
    if (qk.granularity == QkGranularity::per_warp) return warp;
    return warp * kQThreadGroups + token % kThreadGroupStride;  // rows g, g + 8, ... of the warp
}

std::int64_t k_scale_index(const QkQuantization &qk, std::int64_t token) {
    if (qk.granularity == QkGranularity::per_warp) return token / qk.k_block;
    // rows 2g, 2g + 1, 2g + 8, 2g + 9, ... of the warp
    return token / qk.k_warp * kKThreadGroups + token % kThreadGroupStride / 2;
}

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

void quantize_q(const AttentionShape &shape, const Tensor &q, Tensor &q_int8, Tensor &q_scale,
                const QkQuantization &qk) {
    shape.validate("host quantizer");
    require_half_input(q, shape.q_shape(), "q");
    require_blocks(qk);
    const HalfReader read(q);
    q_int8 = Tensor(DType::i8, shape.q_shape());
    q_scale = Tensor(DType::f32, q_scale_shape(shape, qk));
    const auto value = [&](std::int64_t b, std::int64_t h, std::int64_t t, std::int64_t d) {
        return read(shape.offset(false, b, h, t, d));
    };
    if (qk.granularity == QkGranularity::per_thread)
        quantize_int8_per_thread(shape, false, qk.q_warp, kQThreadGroups, 1, value, q_int8, q_scale);
    else
        quantize_int8_blocks(shape, false, qk.q_warp, q_scale.shape[2], value, q_int8, q_scale);
}

void quantize_k(const AttentionShape &shape, const Tensor &k, const Tensor &k_mean, Tensor &k_int8, Tensor &k_scale,
                const QkQuantization &qk) {
    shape.validate("host quantizer");
    require_half_input(k, shape.kv_shape(), "k");
    require_half_input(k_mean, k_mean_shape(shape), "k_mean");
    require_blocks(qk);
    const HalfReader read(k), read_mean(k_mean);
    k_int8 = Tensor(DType::i8, shape.kv_shape());
    k_scale = Tensor(DType::f32, k_scale_shape(shape, qk));
    const auto centred = [&](std::int64_t b, std::int64_t h, std::int64_t t, std::int64_t d) {
        return read(shape.offset(true, b, h, t, d)) - read_mean(k_mean_offset(shape, b, h, d));
    };
    if (qk.granularity == QkGranularity::per_thread) {
        // torch's k - km, rounded to K's dtype, is what the Triton kernel reads.
        const bool bf16 = k.dtype == DType::bf16;
        const auto rounded = [&](std::int64_t b, std::int64_t h, std::int64_t t, std::int64_t d) {
            const float x = centred(b, h, t, d);
            return bf16 ? bf16_to_float(float_to_bf16(x)) : half_to_float(float_to_half(x));
        };
        quantize_int8_per_thread(shape, true, qk.k_warp, kKThreadGroups, 2, rounded, k_int8, k_scale);
    } else {
        quantize_int8_blocks(shape, true, qk.k_block, k_scale.shape[2], centred, k_int8, k_scale);
    }
}

void quantize_v(const AttentionShape &shape, const Tensor &v, Tensor &v_fp8, Tensor &v_scale, float v_scale_max,
                std::int64_t v_pad_tokens) {
    shape.validate("host quantizer");
    require_half_input(v, shape.kv_shape(), "v");
    if (v_pad_tokens < 1) fail(ExitCode::usage, "host quantizer: V padding must be positive, not " + std::to_string(v_pad_tokens));
    const HalfReader read(v);
    v_fp8 = Tensor(DType::e4m3, v_fp8_shape(shape, v_pad_tokens));
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
                scale_out[(b * shape.heads_kv + h) * shape.head_dim + d] = scale_of(amax, v_scale_max);
                // An all-zero channel gives an infinite multiplier and NaN codes (0 * inf), like upstream.
                const float multiplier = multiplier_of(amax, v_scale_max);
                const std::int64_t row = shape.layout == Layout::nhd ? (b * shape.head_dim + d) * shape.heads_kv + h
                                                                     : (b * shape.heads_kv + h) * shape.head_dim + d;
                std::uint8_t *row_out = out + row * padded;
                for (std::int64_t position = 0; position < padded; ++position) {
                    const std::int64_t token = position / 16 * 16 + kVTokenAtPosition[position % 16];
                    row_out[position] = float_to_e4m3(channel[token] * multiplier);
                }
            }
}

Tensor convert_v_f16(const AttentionShape &shape, const Tensor &v, const Tensor *v_mean) {
    shape.validate("host quantizer");
    require_half_input(v, shape.kv_shape(), "v");
    if (v_mean) {
        require_half_input(*v_mean, v_scale_shape(shape), "v_mean");
        if (v_mean->dtype != v.dtype)
            fail(ExitCode::usage, std::string("host quantizer: v_mean must have v's dtype ") + dtype_name(v.dtype) +
                                      ", not " + dtype_name(v_mean->dtype));
    }
    const HalfReader read(v);
    const HalfReader read_mean(v_mean ? *v_mean : v);  // read only with a mean
    const bool bf16 = v.dtype == DType::bf16;
    Tensor out(DType::f16, shape.kv_shape());
    std::uint16_t *bits = out.data<std::uint16_t>();
    for (std::int64_t b = 0; b < shape.batch; ++b)
        for (std::int64_t h = 0; h < shape.heads_kv; ++h)
            for (std::int64_t t = 0; t < shape.len_kv; ++t)
                for (std::int64_t d = 0; d < shape.head_dim; ++d) {
                    const std::int64_t at = shape.offset(true, b, h, t, d);
                    float x = read(at);
                    if (v_mean) {
                        // The difference of two halves (or bfloat16s of like magnitude) is exact in
                        // double; rounding it once to V's dtype is the correctly rounded subtraction
                        // that __hsub2 performs. The mean is [B, Hk, D], ordered as K's.
                        const double m = read_mean(k_mean_offset(shape, b, h, d));
                        const float rounded = round_to_odd(static_cast<double>(x) - m);
                        x = bf16 ? bf16_to_float(float_to_bf16(rounded)) : half_to_float(float_to_half(rounded));
                    }
                    bits[at] = float_to_half(x);
                }
    return out;
}

QuantizedInputs quantize_inputs(const AttentionShape &shape, const Tensor &q, const Tensor &k, const Tensor &v,
                                const QuantizationRecipe &recipe) {
    if (q.dtype != k.dtype || q.dtype != v.dtype)
        fail(ExitCode::usage, std::string("host quantizer: q, k and v must share one dtype (got ") + dtype_name(q.dtype) +
                                  ", " + dtype_name(k.dtype) + ", " + dtype_name(v.dtype) + ")");
    if (recipe.smooth_v)
        fail(ExitCode::usage, "host quantizer: " + recipe.describe() +
                                  ": subtracting the V mean (smooth_v) is not implemented on the host");
    QuantizedInputs out;
    quantize_q(shape, q, out.q_int8, out.q_scale, recipe.qk);
    out.k_mean = compute_k_mean(shape, k);
    quantize_k(shape, k, out.k_mean, out.k_int8, out.k_scale, recipe.qk);
    if (recipe.v_format == VFormat::f16) out.v_f16 = convert_v_f16(shape, v);
    else quantize_v(shape, v, out.v_fp8, out.v_scale, recipe.v_scale_max, recipe.v_pad_tokens);
    return out;
}

}  // namespace s2tp
