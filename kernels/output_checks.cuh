// The output checks of the quantization cubin (kernels/quantize.cu includes them): the NaN count of an
// f16/bf16 buffer and the number of 16-byte chunks in which two buffers differ, counted on the GPU
// (gpu/output_checks.h launches them).
#pragma once

#include <cstdint>

#include "sage2tp_abi.h"

namespace s2tp {
namespace {

// Counts summed per CTA, then one atomic add per CTA.
__device__ __forceinline__ void add_block_count(uint32_t count, unsigned long long *result) {
    __shared__ uint32_t warp_counts[S2TP_CHECK_THREADS / 32];
#pragma unroll
    for (uint32_t offset = 16; offset > 0; offset /= 2) {
        count += __shfl_xor_sync(0xffffffffu, count, offset);
    }
    if (threadIdx.x % 32 == 0) {
        warp_counts[threadIdx.x / 32] = count;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        uint32_t total = 0;
#pragma unroll
        for (uint32_t w = 0; w < S2TP_CHECK_THREADS / 32; ++w) {
            total += warp_counts[w];
        }
        if (total > 0) {
            atomicAdd(result, static_cast<unsigned long long>(total));
        }
    }
}

template <uint32_t InfBits>
__device__ __forceinline__ void count_nan(const s2tp_count_nan_params &p) {
    const unsigned long long first = (static_cast<unsigned long long>(blockIdx.x) * S2TP_CHECK_THREADS + threadIdx.x) * 8;
    uint32_t count = 0;
    if (first + 8 <= p.count) {
        const uint4 raw = *reinterpret_cast<const uint4 *>(p.data + first);
        const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
        for (uint32_t w = 0; w < 4; ++w) {
            count += S2TP_IS_NAN16(words[w] & 0xffffu, InfBits) + S2TP_IS_NAN16(words[w] >> 16, InfBits);
        }
    } else {
        for (unsigned long long i = first; i < p.count; ++i) {
            count += S2TP_IS_NAN16(p.data[i], InfBits);
        }
    }
    add_block_count(count, p.result);
}

__device__ __forceinline__ void compare_bytes(const s2tp_compare_params &p) {
    const unsigned long long first = (static_cast<unsigned long long>(blockIdx.x) * S2TP_CHECK_THREADS + threadIdx.x) * 16;
    uint32_t differs = 0;
    if (first + 16 <= p.bytes) {
        const uint4 a = *reinterpret_cast<const uint4 *>(p.a + first);
        const uint4 b = *reinterpret_cast<const uint4 *>(p.b + first);
        differs = (a.x != b.x) | (a.y != b.y) | (a.z != b.z) | (a.w != b.w);
    } else {
        for (unsigned long long i = first; i < p.bytes; ++i) {
            differs |= p.a[i] != p.b[i];
        }
    }
    add_block_count(differs, p.result);
}

}  // namespace
}  // namespace s2tp

extern "C" __global__ void s2tp_count_nan_f16(const s2tp_count_nan_params params) {
    s2tp::count_nan<S2TP_F16_INF_BITS>(params);
}
extern "C" __global__ void s2tp_count_nan_bf16(const s2tp_count_nan_params params) {
    s2tp::count_nan<S2TP_BF16_INF_BITS>(params);
}
extern "C" __global__ void s2tp_compare_bytes(const s2tp_compare_params params) { s2tp::compare_bytes(params); }
