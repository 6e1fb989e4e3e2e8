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
#include <optional>
#include <string>

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
AttentionStrides attention_strides(const AttentionShape &shape);

Shape lse_shape(const AttentionShape &shape);  // [B, Hq, Nq]

// The quantized tensors the attention kernel reads, plus the K mean that K was quantized with.
struct DeviceQuantizedInputs {
    DeviceBuffer q_int8, q_scale, k_mean, k_int8, k_scale, v_fp8, v_scale;
};

// q, k and v in device memory, in the problem's dtype and shape's q/kv shapes, contiguous (the device
// side of model/input_generator.h's GeneratedInputs; gpu/gpu_input_generator.h makes them).
struct DeviceInputs {
    DeviceBuffer q, k, v;
};

// Quantizes q, k, v with the kernels of the quantize cubin: the K mean first (unless k_mean is given,
// [B, 1, Hk, D] or [B, Hk, 1, D] as host_quantizer.h describes), then Q, K minus the mean, and V.
// Throws Error(internal) when a buffer's size does not match the problem.
DeviceQuantizedInputs quantize_on_gpu(const CubinModule &quantize_module, const AttentionProblem &problem,
                                      const DeviceInputs &inputs, const std::optional<Tensor> &k_mean = std::nullopt);
// The same from host tensors, uploaded first after checking each dtype and shape.
DeviceQuantizedInputs quantize_on_gpu(const CubinModule &quantize_module, const AttentionProblem &problem,
                                      const Tensor &q, const Tensor &k, const Tensor &v,
                                      const std::optional<Tensor> &k_mean = std::nullopt);

// Uploads already quantized tensors (e.g. upstream's golden ones) after checking each dtype and shape.
DeviceQuantizedInputs upload_quantized(const AttentionProblem &problem, const QuantizedInputs &host);

// Copies the device tensors back, shaped as host_quantizer.h's QuantizedInputs.
QuantizedInputs download_quantized(const AttentionProblem &problem, const DeviceQuantizedInputs &device);

struct AttentionOutputs {
    DeviceBuffer o;
    DeviceBuffer lse;  // empty when the problem has with_lse off
};
AttentionOutputs allocate_outputs(const AttentionProblem &problem, const std::string &label);
void poison_outputs(AttentionOutputs &outputs);
Tensor download_output(const AttentionProblem &problem, const AttentionOutputs &outputs);  // dtype, q_shape()
Tensor download_lse(const AttentionProblem &problem, const AttentionOutputs &outputs);     // f32, lse_shape()

}  // namespace s2tp
