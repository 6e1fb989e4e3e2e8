// The input generator of the quantization cubin (kernels/quantize.cu includes it): the seeded f16/bf16
// Q, K and V of a problem, made on the GPU (gpu/gpu_input_generator.h launches it). The arithmetic is in
// input_generator_math.h, which the host's unit tests compile too.
#pragma once

#include <cstdint>

#include "sage2tp_abi.h"
#include "input_generator_math.h"

namespace s2tp {
namespace {

template <bool Half>
__device__ __forceinline__ void generate_inputs(const s2tp_generate_params &p) {
    // Every tensor has fewer than 2^31 elements (AttentionShape::validate), so 32 bits index it.
    const uint32_t element = blockIdx.x * S2TP_GENERATE_THREADS + threadIdx.x;
    if (element >= p.batch * p.heads * p.len * p.head_dim) {
        return;
    }
    const generator::GeneratedElement generated = generator::generated_element(p, element, Half);
    static_cast<uint16_t *>(p.output)[generated.offset] = generated.bits;
}

}  // namespace
}  // namespace s2tp

extern "C" __global__ void s2tp_generate_inputs_f16(const s2tp_generate_params params) {
    s2tp::generate_inputs<true>(params);
}
extern "C" __global__ void s2tp_generate_inputs_bf16(const s2tp_generate_params params) {
    s2tp::generate_inputs<false>(params);
}
