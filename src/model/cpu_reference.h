// float64 CPU reference of the attention the kernel computes, on the DEQUANTIZED inputs the kernel
// sees (q_int8 * q_scale and k_int8 * k_scale per scale group of the quantization recipe, e4m3 V
// decoded from its permuted, padded layout * v_scale per channel, or fp16 V; plus the V mean under
// smooth_v, which the kernel adds back), and the rel-L2 comparison used against it.
//
// Usage:
//   s2tp::QuantizedInputs qi = s2tp::quantize_inputs(shape, q, k, v);   // or loaded golden tensors
//   s2tp::ReferenceResult ref = s2tp::reference_attention(shape, qi, sm_scale, causal);
//   s2tp::RelL2 err = s2tp::relative_l2(gpu_o, ref.o);   // gpu_o: f16/bf16/f32 tensor, q_shape()
//   if (err.non_finite > 0 || err.rel_l2 > 0.05) ...
#pragma once

#include <cstdint>
#include <vector>

#include "model/host_quantizer.h"
#include "formats/tensor.h"

namespace s2tp {

struct ReferenceResult {
    Tensor o;    // f64, q_shape()
    Tensor lse;  // f64, [B, Hq, Nq]: log2(sum_j exp2(s_j * sm_scale * log2(e))) over the unmasked keys,
                 // s = dequantized q . dequantized (smoothed) k: comparable to the kernel's returned LSE
};

// Uses q_int8, q_scale, k_int8, k_scale, v_fp8 and v_scale (or v_f16), and v_mean under smooth_v, of
// `inputs` (k_mean is not needed: the
// smoothed K is what the kernel sees), laid out by `recipe` (its Q/K scale groups and V padding; the
// sm90 path's is sm90_recipe). causal masks kv > q (top-left aligned). GQA: q head h reads kv
// head h / (heads_q / heads_kv). threads = 0 picks min(hardware threads, 8).
// Throws Error(usage) if a tensor's dtype or shape does not match `shape` and `recipe`.
ReferenceResult reference_attention(const AttentionShape &shape, const QuantizedInputs &inputs,
                                    double sm_scale, bool causal, unsigned threads = 0,
                                    const QuantizationRecipe &recipe = {});

// float64 attention on the UNQUANTIZED q, k, v (f16 or bf16, shape.q_shape() / kv_shape()) at query rows
// `rows` of every (batch, q head): f64 [B, Hq, R, D]. What the GPU reference (gpu/gpu_reference.h)
// computes, written as the plain two-pass softmax, single-threaded: for small shapes and tests.
Tensor unquantized_reference(const AttentionShape &shape, const Tensor &q, const Tensor &k, const Tensor &v,
                             double sm_scale, bool causal, const std::vector<std::uint32_t> &rows);

struct RelL2 {
    double rel_l2 = 0;           // ||out - ref|| / ||ref|| over the elements where both are finite
    std::int64_t non_finite = 0; // elements of `out` that are NaN or infinite
    std::int64_t compared = 0;   // elements that entered the norms
};

// out: any floating dtype; ref: any floating dtype with the same number of elements (shapes may
// differ only if numel matches, e.g. a flattened output). Throws Error(usage) on a size mismatch.
// With ||ref|| = 0 the result is 0 if out equals ref there and infinity otherwise.
RelL2 relative_l2(const Tensor &out, const Tensor &ref);

}  // namespace s2tp
