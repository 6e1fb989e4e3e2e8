// The float64 reference of attention on the unquantized inputs (kernels/sage2tp_abi.h,
// s2tp_reference_params), and the gathering of an output's sampled rows: the tolerance checks of parity
// and time compare a kernel's output with this reference on the same rows. Part of the quantization
// cubin, so every run builds it beside the quantizers and no experiment's sources can change it.
//
// Every input element is widened to double exactly; every product, sum, exponential and the division
// are IEEE double operations (--use_fast_math changes only single-precision arithmetic), so the
// reference's own error is about 1e-15 relative, far below any kernel's. The softmax is the online
// form over key tiles, with the running maximum and sum rescaled in double.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

#include "sage2tp_abi.h"

namespace s2tp {
namespace reference {

constexpr uint32_t kThreads = S2TP_REFERENCE_THREADS;
constexpr uint32_t kRows = S2TP_REFERENCE_ROWS_PER_CTA;
constexpr uint32_t kWarps = kThreads / 32;

__device__ __forceinline__ double widen(__half value) { return static_cast<double>(__half2float(value)); }
__device__ __forceinline__ double widen(__nv_bfloat16 value) { return static_cast<double>(__bfloat162float(value)); }

// The maximum of `value` over the CTA, in every thread (max is exact, so the order does not matter).
__device__ __forceinline__ double block_max(double value, double *scratch) {
#pragma unroll
    for (uint32_t offset = 16; offset > 0; offset /= 2) value = fmax(value, __shfl_xor_sync(0xffffffffu, value, offset));
    __syncthreads();
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = value;
    __syncthreads();
    double result = scratch[0];
#pragma unroll
    for (uint32_t w = 1; w < kWarps; ++w) result = fmax(result, scratch[w]);
    return result;
}

// The sum of `value` over the CTA, in every thread, in one fixed order (so a launch repeats bit for bit).
__device__ __forceinline__ double block_sum(double value, double *scratch) {
#pragma unroll
    for (uint32_t offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
    __syncthreads();
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = value;
    __syncthreads();
    double result = 0.0;
#pragma unroll
    for (uint32_t w = 0; w < kWarps; ++w) result += scratch[w];
    return result;
}

// Per tile of kThreads keys: thread t scores key tile + t against each of the CTA's rows; then thread d
// (< head_dim) adds p * v[., d] over the tile's keys for every row. Keys a row may not see (past its
// causal limit, or past len_kv) get p = 0; key 0 is visible to every row, so each row's running maximum
// is finite after the first tile.
template <typename T>
__device__ void attention(const s2tp_reference_params &p) {
    __shared__ double q[kRows][kThreads];
    __shared__ double probability[kRows][kThreads];
    __shared__ double scratch[kWarps];

    const uint32_t head = blockIdx.y, batch = blockIdx.z, tid = threadIdx.x;
    const uint32_t kv_head = head / (p.heads_q / p.heads_kv);
    const uint32_t first = blockIdx.x * kRows;
    const uint32_t rows = min(kRows, p.row_count - first);
    const T *queries = static_cast<const T *>(p.q) + batch * p.stride_bz_q + head * p.stride_h_q;
    const T *keys = static_cast<const T *>(p.k) + batch * p.stride_bz_kv + kv_head * p.stride_h_kv;
    const T *values = static_cast<const T *>(p.v) + batch * p.stride_bz_kv + kv_head * p.stride_h_kv;

    uint32_t visible[kRows];
    uint32_t longest = 0;
#pragma unroll
    for (uint32_t r = 0; r < kRows; ++r) {
        const uint32_t row = r < rows ? p.rows[first + r] : 0;
        visible[r] = r < rows ? (p.causal ? min(p.len_kv, row + 1) : p.len_kv) : 0;
        longest = max(longest, visible[r]);
        if (tid < p.head_dim) q[r][tid] = r < rows ? widen(queries[row * p.stride_seq_q + tid]) * p.sm_scale : 0.0;
    }
    __syncthreads();

    double running_max[kRows], partial_sum[kRows], accumulator[kRows];
#pragma unroll
    for (uint32_t r = 0; r < kRows; ++r) {
        running_max[r] = -CUDART_INF;
        partial_sum[r] = 0.0;
        accumulator[r] = 0.0;
    }
    for (uint32_t tile = 0; tile < longest; tile += kThreads) {
        const uint32_t key = tile + tid;
        double score[kRows];
#pragma unroll
        for (uint32_t r = 0; r < kRows; ++r) score[r] = 0.0;
        if (key < longest) {
            const T *k_row = keys + key * p.stride_seq_kv;
            for (uint32_t d = 0; d < p.head_dim; ++d) {
                const double k_value = widen(k_row[d]);
#pragma unroll
                for (uint32_t r = 0; r < kRows; ++r) score[r] = fma(q[r][d], k_value, score[r]);
            }
        }
        double rescale[kRows];
#pragma unroll
        for (uint32_t r = 0; r < kRows; ++r) {
            const bool seen = key < visible[r];
            const double tile_max = block_max(seen ? score[r] : -CUDART_INF, scratch);
            const double new_max = fmax(running_max[r], tile_max);
            rescale[r] = exp(running_max[r] - new_max);  // exp(-inf) = 0 on the first tile
            const double probability_of_key = seen ? exp(score[r] - new_max) : 0.0;
            probability[r][tid] = probability_of_key;
            partial_sum[r] = partial_sum[r] * rescale[r] + probability_of_key;
            running_max[r] = new_max;
        }
        __syncthreads();
        if (tid < p.head_dim) {
            const uint32_t keys_here = min(kThreads, longest - tile);
#pragma unroll
            for (uint32_t r = 0; r < kRows; ++r) accumulator[r] *= rescale[r];
            for (uint32_t j = 0; j < keys_here; ++j) {
                const double v_value = widen(values[(tile + j) * p.stride_seq_kv + tid]);
#pragma unroll
                for (uint32_t r = 0; r < kRows; ++r) accumulator[r] = fma(probability[r][j], v_value, accumulator[r]);
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (uint32_t r = 0; r < kRows; ++r) {
        const double sum = block_sum(partial_sum[r], scratch);
        if (r < rows && tid < p.head_dim)
            p.output[((static_cast<uint64_t>(batch) * p.heads_q + head) * p.row_count + first + r) * p.head_dim + tid] =
                accumulator[r] / sum;
    }
}

__device__ __forceinline__ void gather_rows(const s2tp_gather_rows_params &p) {
    const uint64_t element = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const uint64_t total = static_cast<uint64_t>(p.batch) * p.heads * p.row_count * p.head_dim;
    if (element >= total) return;
    const uint32_t d = static_cast<uint32_t>(element % p.head_dim);
    const uint32_t r = static_cast<uint32_t>(element / p.head_dim % p.row_count);
    const uint32_t h = static_cast<uint32_t>(element / p.head_dim / p.row_count % p.heads);
    const uint32_t b = static_cast<uint32_t>(element / p.head_dim / p.row_count / p.heads);
    p.output[element] = p.input[static_cast<uint64_t>(b) * p.stride_bz + static_cast<uint64_t>(p.rows[r]) * p.stride_seq +
                                static_cast<uint64_t>(h) * p.stride_h + d];
}

}  // namespace reference
}  // namespace s2tp

extern "C" __global__ void __launch_bounds__(S2TP_REFERENCE_THREADS)
    s2tp_reference_attention_f16(const s2tp_reference_params params) {
    s2tp::reference::attention<__half>(params);
}
extern "C" __global__ void __launch_bounds__(S2TP_REFERENCE_THREADS)
    s2tp_reference_attention_bf16(const s2tp_reference_params params) {
    s2tp::reference::attention<__nv_bfloat16>(params);
}
extern "C" __global__ void s2tp_gather_rows(const s2tp_gather_rows_params params) {
    s2tp::reference::gather_rows(params);
}
