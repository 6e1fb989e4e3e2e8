// model/input_generator.h's q, k and v generated on the GPU, byte for byte the same as generate_inputs
// makes them on the host, by the s2tp_generate_inputs_* kernels of the quantize cubin
// (kernels/sage2tp_abi.h). At the block-24 shape that is milliseconds instead of a second and a half of
// host threads plus a gigabyte's upload.
//
// Usage:
//   s2tp::CubinModule quant("quantize.sm_90a.cubin");
//   s2tp::DeviceInputs in = s2tp::generate_inputs_on_gpu(quant, problem.shape, problem.dtype, seed);
//   s2tp::DeviceQuantizedInputs q = s2tp::quantize_on_gpu(quant, problem, in);   // attention_launch.h
#pragma once

#include <cstdint>

#include "sage2tp_abi.h"
#include "formats/tensor.h"
#include "gpu/attention_launch.h"
#include "gpu/gpu_runtime.h"

namespace s2tp {

// dtype must be f16 or bf16 and the shape valid, as for generate_inputs (Error(usage) otherwise).
// Returns once the kernels are done.
DeviceInputs generate_inputs_on_gpu(const CubinModule &quantize_module, const AttentionShape &shape, DType dtype,
                                    std::uint64_t seed);

// The kernel parameters that write tensor `which` (S2TP_GENERATED_Q, _K or _V) of `shape` into
// `output`: the element mapping the kernel follows, so that it can be checked without a GPU.
s2tp_generate_params generate_params(const AttentionShape &shape, std::uint32_t which, std::uint64_t seed,
                                     void *output);

}  // namespace s2tp
