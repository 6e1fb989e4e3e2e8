// The data side of an attention launch: quantizing a problem's inputs on the GPU with sage2tp's own
// quantization kernels (kernels/sage2tp_abi.h, quantize.cu; upstream SageAttention's byte layouts),
// uploading and downloading quantized tensors, and the outputs. How an attention kernel is found and
// launched on these buffers is its ABI adapter's business (kernel_abi.h).
//
// Usage:
//   s2tp::AttentionProblem problem;
//   problem.shape = shape;                 // s2tp::AttentionShape (tensor.h)
//   problem.dtype = s2tp::DType::bf16;
//   problem.sm_scale = 0.08838834764831845f;
//   s2tp::CubinModule quant("quantize.cubin"), attn("attention.cubin");
//   s2tp::DeviceQuantizedInputs in = s2tp::quantize_on_gpu(quant, problem, q, k, v);   // host q, k, v
//   s2tp::AttentionOutputs out = s2tp::allocate_outputs(problem, "baseline");
//   s2tp::poison_outputs(out);
//   s2tp::launch_attention(s2tp::kernel_abi("sage2tp", "..."), attn, problem, in, out);   // kernel_abi.h
//   s2tp::synchronize(problem.describe());
//   s2tp::Tensor o = s2tp::download_output(problem, out);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sage2tp_abi.h"
#include "gpu/gpu_runtime.h"
#include "model/attention_problem.h"
#include "model/host_quantizer.h"
#include "formats/tensor.h"

namespace s2tp {


// Element strides of every tensor the kernels read or write, for the problem's layout.
struct AttentionStrides {
    std::uint32_t bz_q, seq_q, h_q;    // q and o (same shape)
    std::uint32_t bz_kv, seq_kv, h_kv; // k and v before quantization, and k_int8
    std::uint32_t bz_v, h_v, d_v;      // v_fp8: tokens are the contiguous axis
    std::uint32_t bz_mean, h_mean;     // k_mean, [B, Hk, D] contiguous
};
// v_pad_tokens: the recipe's V padding (host_quantizer.h), which sets v_fp8's token extent.
AttentionStrides attention_strides(const AttentionShape &shape, std::int64_t v_pad_tokens = 64);

Shape lse_shape(const AttentionShape &shape);  // [B, Hq, Nq]

// The quantized tensors the attention kernel reads, plus the K mean that K was quantized with and,
// under smooth_v, the V mean ([B, Hk, D] in v_mean_dtype; empty otherwise); `recipe` says their scale
// and V shapes, and whether V is v_fp8 with v_scale or v_f16 (the others then empty).
struct DeviceQuantizedInputs {
    DeviceBuffer q_int8, q_scale, k_mean, k_int8, k_scale, v_fp8, v_scale, v_mean, v_f16;
    QuantizationRecipe recipe;
};

// q, k and v in device memory, in the problem's dtype and shape's q/kv shapes, contiguous (the device
// side of model/input_generator.h's GeneratedInputs; gpu/gpu_input_generator.h makes them).
struct DeviceInputs {
    DeviceBuffer q, k, v;
};

// Means given instead of computed: upstream's come from torch's and its own block reductions, whose
// summation order sage2tp does not reproduce, so byte identity with upstream's codes needs them given.
struct GivenMeans {
    std::optional<Tensor> k_mean;  // problem dtype, [B, 1, Hk, D] or [B, Hk, 1, D] (host_quantizer.h)
    std::optional<Tensor> v_mean;  // v_mean_dtype, [B, Hk, D]; only read under smooth_v
};

// Quantizes q, k, v with the kernels of the quantize cubin by `recipe`: the K mean first (unless given),
// then Q, K minus the mean, the V mean under smooth_v (unless given), and V. The kernels cover the sm89
// path's recipes (per warp and per thread), the sm90 path's (sm90_recipe) and the sm80 path's
// (sm80_recipe, fp16 V), bytes as the host quantizer's.
// Throws Error(internal) when a buffer's size does not match the problem, Error(usage) for other recipes.
DeviceQuantizedInputs quantize_on_gpu(const CubinModule &quantize_module, const AttentionProblem &problem,
                                      const DeviceInputs &inputs, const GivenMeans &given = {},
                                      const QuantizationRecipe &recipe = {});
// The same from host tensors, uploaded first after checking each dtype and shape.
DeviceQuantizedInputs quantize_on_gpu(const CubinModule &quantize_module, const AttentionProblem &problem,
                                      const Tensor &q, const Tensor &k, const Tensor &v, const GivenMeans &given = {},
                                      const QuantizationRecipe &recipe = {});

// q, k, v uploaded after checking each dtype and shape against the problem.
DeviceInputs upload_inputs(const AttentionProblem &problem, const Tensor &q, const Tensor &k, const Tensor &v);

// One problem's quantized inputs for every recipe its kernels need, each quantized on first use from
// the same q, k, v: the arms of a run whose launchers want different quantizations (an FP16- and an
// FP32-accumulating launcher, say) each read their own, and arms that agree share one set.
class InputsByRecipe {
public:
    InputsByRecipe(const CubinModule &quantize_module, const AttentionProblem &problem, DeviceInputs inputs);
    const DeviceQuantizedInputs &get(const QuantizationRecipe &recipe);
    // The q, k, v every recipe is quantized from (what the float64 reference reads).
    const DeviceInputs &unquantized() const { return inputs_; }
    // Frees q, k and v once every recipe needed is quantized and the reference has read them (the time
    // stage holds several input sets at once); get() of a recipe not quantized yet then throws
    // Error(internal).
    void release_unquantized();

private:
    const CubinModule &quantize_;
    AttentionProblem problem_;
    DeviceInputs inputs_;
    std::vector<std::pair<QuantizationRecipe, std::unique_ptr<DeviceQuantizedInputs>>> sets_;  // stable addresses
};

// Uploads already quantized tensors (e.g. upstream's golden ones) after checking each dtype and shape
// (the scale and V shapes by `recipe`).
DeviceQuantizedInputs upload_quantized(const AttentionProblem &problem, const QuantizedInputs &host,
                                       const QuantizationRecipe &recipe = {});

// Copies the device tensors back, shaped as host_quantizer.h's QuantizedInputs by their recipe (v_mean
// only under smooth_v).
QuantizedInputs download_quantized(const AttentionProblem &problem, const DeviceQuantizedInputs &device);

struct AttentionOutputs {
    DeviceBuffer o;
    DeviceBuffer lse;  // empty when the problem has with_lse off
};
AttentionOutputs allocate_outputs(const AttentionProblem &problem, const std::string &label);
void poison_outputs(AttentionOutputs &outputs);
// Fills every SM's shared memory of the current GPU with NaN (0xFF bytes) by the quantize cubin's
// s2tp_fill_shared_nan, one block of the largest dynamic shared memory per SM, on the default stream:
// before a launch, so that shared memory the kernel reads without writing it shows as NaN in its output.
void fill_shared_memory_with_nan(const CubinModule &quantize_module);
Tensor download_output(const AttentionProblem &problem, const AttentionOutputs &outputs);  // dtype, q_shape()
Tensor download_lse(const AttentionProblem &problem, const AttentionOutputs &outputs);     // f32, lse_shape()

}  // namespace s2tp
