// Host implementations of the upstream quantizers (per-warp int8 Q, per-64-block int8 K with mean
// subtraction, per-channel fp8 V with scale_max 2.25 in the transposed, padded, permuted layout),
// for cross-checking the GPU ones and for feeding the CPU reference.
//
// Usage:
//   s2tp::QuantizedInputs qi = s2tp::quantize_inputs(shape, q, k, v);   // q/k/v: f16 or bf16
//   // or step by step, e.g. with a k_mean from elsewhere:
//   s2tp::Tensor km = s2tp::compute_k_mean(shape, k);
//   s2tp::quantize_k(shape, k, km, qi.k_int8, qi.k_scale);
//
// Precision contract: upstream divides with div.approx.ftz.f32 on the GPU (amax/127, 127/amax,
// amax/2.25, 2.25/amax), which the host cannot reproduce bit for bit. The host computes the scales as
// amax * fl(1/c) and the multipliers as c * fl(1/amax) in float. Against upstream's outputs it promises:
// every scale within 1 ulp, every int8 code within +-1, every e4m3 code within 1 step (adjacent
// encodings), the k mean within 1 ulp of the input dtype. Everything else (amax, rounding modes, the
// permutation, padding) is exact.
#pragma once

#include "formats/tensor.h"

namespace s2tp {

// The e4m3 V layout: within each 16-token group, stored position s holds token kVTokenAtPosition[s].
constexpr int kVTokenAtPosition[16] = {0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15};

struct QuantizedInputs {
    Tensor q_int8;   // i8, q_shape()
    Tensor q_scale;  // f32, [B, Hq, ceil(Nq/128)*4]: one scale per 32-token group
    Tensor k_mean;   // input dtype, [B, 1, Hk, D] (NHD) or [B, Hk, 1, D] (HND)
    Tensor k_int8;   // i8, kv_shape(), of k - k_mean
    Tensor k_scale;  // f32, [B, Hk, ceil(Nk/64)]: one scale per 64-token block
    Tensor v_fp8;    // e4m3, [B, D, Hk, Nk_pad] (NHD) or [B, Hk, D, Nk_pad] (HND), Nk_pad = ceil(Nk/64)*64
    Tensor v_scale;  // f32, [B, Hk, D]
    Tensor v_mean;   // f32, [B, Hk, D] under smooth_v (the fuse_v_mean launchers); otherwise empty
};

// Shapes of the quantized tensors, for callers that allocate or validate them.
Shape q_scale_shape(const AttentionShape &shape);
Shape k_mean_shape(const AttentionShape &shape);
Shape k_scale_shape(const AttentionShape &shape);
Shape v_fp8_shape(const AttentionShape &shape);
Shape v_scale_shape(const AttentionShape &shape);

// Mean of K over tokens per (batch, kv head, channel): fp32 sum in token order, one fp32 division,
// rounded to K's dtype (torch computes km in the input dtype).
Tensor compute_k_mean(const AttentionShape &shape, const Tensor &k);

void quantize_q(const AttentionShape &shape, const Tensor &q, Tensor &q_int8, Tensor &q_scale);
void quantize_k(const AttentionShape &shape, const Tensor &k, const Tensor &k_mean, Tensor &k_int8,
                Tensor &k_scale);
void quantize_v(const AttentionShape &shape, const Tensor &v, Tensor &v_fp8, Tensor &v_scale);

// All of the above, with k_mean from compute_k_mean. Inputs must be f16 or bf16 (one dtype) with the
// shape's q/kv shapes; throws Error(usage) otherwise.
QuantizedInputs quantize_inputs(const AttentionShape &shape, const Tensor &q, const Tensor &k, const Tensor &v);

}  // namespace s2tp
