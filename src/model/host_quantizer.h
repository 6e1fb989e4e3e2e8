// Host implementations of the upstream quantizers, for cross-checking the GPU ones and for feeding the
// CPU reference: int8 Q and K (K minus its mean) per warp (upstream's CUDA quantizer) or per thread
// (upstream's Triton one), with the block sizes core.py passes for the launcher; per-channel fp8 V in the
// transposed, padded, permuted layout with the launcher's scale_max, or fp16 V (the sm80 path).
//
// Usage:
//   s2tp::QuantizedInputs qi = s2tp::quantize_inputs(shape, q, k, v);   // q/k/v: f16 or bf16; sm89 per-warp
//   s2tp::QuantizedInputs q90 = s2tp::quantize_inputs(shape, q, k, v, s2tp::sm90_recipe(s2tp::QkGranularity::per_thread));
//   s2tp::QuantizedInputs q80 = s2tp::quantize_inputs(shape, q, k, v, s2tp::sm80_recipe(s2tp::QkGranularity::per_thread, 32));
//   // or step by step, e.g. with a k_mean from elsewhere:
//   s2tp::Tensor km = s2tp::compute_k_mean(shape, k);
//   s2tp::quantize_k(shape, k, km, qi.k_int8, qi.k_scale);
//
// Precision contract. Per thread (Triton): exact. Triton computes the scale as one fma(amax, fl(1/127),
// 1e-7) and the code as trunc(fl(x / scale) +- 0.5) with an IEEE division, which the host reproduces
// bit for bit (all 12 golden cases, both launchers of the sm90 path). Per warp and V (upstream's CUDA
// quantizers, built with --use_fast_math): the scales amax * fl(1/c) are exact, but the multipliers
// c / amax are c * MUFU.RCP(amax), a hardware reciprocal that is not correctly rounded and not
// specified bit for bit; the host uses c * fl(1/amax). A code differs (int8 by 1, e4m3 by one step) only
// where x * c / amax falls within an ulp of a rounding boundary, e.g. an element equal to amax / 2 in
// its group (63.5 before rounding). Against upstream's outputs the host promises: every scale within
// 1 ulp, every per-warp int8 code within +-1, every e4m3 code within 1 step (adjacent encodings), the
// k mean within 1 ulp of the input dtype. Everything else (amax, rounding modes, the permutation,
// padding) is exact, and so is fp16 V (one correctly rounded conversion, after one correctly rounded
// subtraction of the mean in V's dtype where the mean is subtracted).
#pragma once

#include <cstdint>
#include <string>

#include "formats/tensor.h"
#include "sage2tp_abi.h"

namespace s2tp {

// How Q and K get their int8 scales: one per warp's rows (CUDA, per_warp_int8) or one per thread's rows
// of a warp (Triton, per_thread_int8: 8 per Q warp group, 4 per K one).
enum class QkGranularity { per_warp, per_thread };
const char *granularity_name(QkGranularity granularity);  // "per_warp", as core.py's qk_quant_gran

// The block sizes core.py passes to its Q/K quantizer (BLKQ, WARPQ, BLKK, WARPK): the defaults are the
// sm89 path's; per-warp K ignores k_warp (one scale per k_block tokens).
struct QkQuantization {
    QkGranularity granularity = QkGranularity::per_warp;
    std::int64_t q_block = 128, q_warp = 32, k_block = 64, k_warp = 64;
    bool operator==(const QkQuantization &other) const {
        return granularity == other.granularity && q_block == other.q_block && q_warp == other.q_warp &&
               k_block == other.k_block && k_warp == other.k_warp;
    }
    bool operator!=(const QkQuantization &other) const { return !(*this == other); }
};

// What the kernel reads as V: per-channel e4m3 (the sm89 and sm90 paths) or fp16 in V's own layout
// (the sm80 path: core.py's v.to(torch.float16), or sub_mean's fp16 V minus its mean).
enum class VFormat { e4m3, f16 };

// How a launcher's inputs are quantized, as upstream's Python prepares them for it (an adapter says,
// gpu/kernel_abi.h): Q/K int8 by `qk` with the K mean subtracted; V per-channel e4m3 with
// v_scale = amax / v_scale_max, its tokens zero-padded to a multiple of v_pad_tokens (then of 64),
// after subtracting its own mean when smooth_v is on; or V fp16 (v_scale_max and v_pad_tokens unused),
// minus its mean in V's dtype when smooth_v is on.
struct QuantizationRecipe {
    QkQuantization qk;
    float v_scale_max = S2TP_V_SCALE_MAX_FP16_ACCUM;  // 2.25 for FP16 PV accumulation, else 448
    std::int64_t v_pad_tokens = 64;                   // the sm90 path pads V to 128 tokens first
    bool smooth_v = false;                            // fuse_v_mean launchers: V minus its mean, and the mean
    VFormat v_format = VFormat::e4m3;
    bool operator==(const QuantizationRecipe &other) const {
        return qk == other.qk && v_scale_max == other.v_scale_max && v_pad_tokens == other.v_pad_tokens &&
               smooth_v == other.smooth_v && v_format == other.v_format;
    }
    // "Q/K per_warp 128/32 64/64, V scale_max 448 padded to 64, V mean subtracted"; "..., V f16"
    std::string describe() const;
};

// core.py's sageattn_qk_int8_pv_fp8_cuda_sm90: Q/K blocks 64/16 and 128/128, V padded to 128 tokens,
// scale_max 448 (its only PV accumulation is fp32).
QuantizationRecipe sm90_recipe(QkGranularity granularity);

// core.py's sageattn_qk_int8_pv_fp16_cuda (sm80): Q/K blocks 128/q_warp and 64/64 (q_warp 32, or 16
// for head dim 128 with pv_accum_dtype "fp16+fp32"), V fp16, minus its mean under smooth_v.
QuantizationRecipe sm80_recipe(QkGranularity granularity, std::int64_t q_warp, bool smooth_v = false);

// The e4m3 V layout: within each 16-token group, stored position s holds token kVTokenAtPosition[s].
constexpr int kVTokenAtPosition[16] = {0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15};

struct QuantizedInputs {
    Tensor q_int8;   // i8, q_shape()
    Tensor q_scale;  // f32, q_scale_shape(): per warp, [B, Hq, ceil(Nq/BLKQ)*(BLKQ/WARPQ)] (x8 per thread)
    Tensor k_mean;   // input dtype, [B, 1, Hk, D] (NHD) or [B, Hk, 1, D] (HND)
    Tensor k_int8;   // i8, kv_shape(), of k - k_mean
    Tensor k_scale;  // f32, k_scale_shape(): per warp, [B, Hk, ceil(Nk/BLKK)] (x BLKK/WARPK x 4 per thread)
    Tensor v_fp8;    // e4m3, [B, D, Hk, Nk_pad] (NHD) or [B, Hk, D, Nk_pad] (HND), Nk_pad: v_fp8_shape()
    Tensor v_scale;  // f32, [B, Hk, D]
    Tensor v_mean;   // v_mean_dtype(), [B, Hk, D] under smooth_v (the fuse_v_mean launchers); otherwise empty
    Tensor v_f16;    // f16, kv_shape(), for VFormat::f16 (v_fp8 and v_scale are then empty)
};

// The V mean's dtype: f32 for e4m3 V (per_channel_fp8's), V's dtype for fp16 V (sub_mean's torch mean).
DType v_mean_dtype(const QuantizationRecipe &recipe, DType input);

// Shapes of the quantized tensors, for callers that allocate or validate them.
Shape q_scale_shape(const AttentionShape &shape, const QkQuantization &qk = {});
Shape k_mean_shape(const AttentionShape &shape);
Shape k_scale_shape(const AttentionShape &shape, const QkQuantization &qk = {});
Shape v_fp8_shape(const AttentionShape &shape, std::int64_t v_pad_tokens = 64);
Shape v_scale_shape(const AttentionShape &shape);
Shape v_mean_shape(const AttentionShape &shape);  // [B, Hk, D], in v_mean_dtype

// Which of its (batch, head)'s scales (q_scale_shape()[2] or k_scale_shape()[2] of them) a token's row
// was quantized with: per warp its warp's (Q) or block's (K); per thread its thread group's.
std::int64_t q_scale_index(const QkQuantization &qk, std::int64_t token);
std::int64_t k_scale_index(const QkQuantization &qk, std::int64_t token);

// Mean of K over tokens per (batch, kv head, channel): fp32 sum in token order, one fp32 division,
// rounded to K's dtype (torch computes km in the input dtype).
Tensor compute_k_mean(const AttentionShape &shape, const Tensor &k);

// Throws Error(usage) for block sizes upstream's quantizers cannot take (a warp that does not divide its
// block, or is not a multiple of 8 rows per thread group).
void quantize_q(const AttentionShape &shape, const Tensor &q, Tensor &q_int8, Tensor &q_scale,
                const QkQuantization &qk = {});
// Per warp, k - k_mean is taken in fp32 (the CUDA quantizer); per thread, in K's dtype first (torch's
// k - km before the Triton kernel).
void quantize_k(const AttentionShape &shape, const Tensor &k, const Tensor &k_mean, Tensor &k_int8,
                Tensor &k_scale, const QkQuantization &qk = {});
void quantize_v(const AttentionShape &shape, const Tensor &v, Tensor &v_fp8, Tensor &v_scale,
                float v_scale_max = S2TP_V_SCALE_MAX_FP16_ACCUM, std::int64_t v_pad_tokens = 64);

// V as fp16 in its own layout: each element fl16(v), or with `v_mean` (V's dtype, [B, Hk, D]) fl16 of
// v - mean rounded to V's dtype first, as sub_mean's __hsub2 in V's dtype and conversion do.
Tensor convert_v_f16(const AttentionShape &shape, const Tensor &v, const Tensor *v_mean = nullptr);

// All of the above by `recipe`, with k_mean from compute_k_mean. Inputs must be f16 or bf16 (one dtype)
// with the shape's q/kv shapes; throws Error(usage) otherwise, and for smooth_v, which the host does not
// implement.
QuantizedInputs quantize_inputs(const AttentionShape &shape, const Tensor &q, const Tensor &k, const Tensor &v,
                                const QuantizationRecipe &recipe = {});

}  // namespace s2tp
