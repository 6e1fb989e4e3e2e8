// The quantization cubin: what turns f16/bf16 Q, K, V into the attention kernel's inputs, shared by both
// arms of the experiment (not part of the A/B). The cubin also holds, each in its own file, the float64
// reference attention (reference_attention.cuh), the input generator (input_generator.cuh), the output
// checks (output_checks.cuh), the SM clock probe (sm_clock_probe.cuh) and the shared-memory fill before
// parity launches (shared_memory_fill.cuh).
//
// Byte-for-byte targets are upstream SageAttention's quantizers (reference sections 1.3 and 1.4), built
// like them with -O3 --use_fast_math. That flag matters here: it turns `a / b` into div.approx.ftz.f32
// (a * rcp.approx(b)), which is what produced upstream's scales and codes, so the divisions below are
// written as plain C++ divisions on purpose and must stay so. Every other fp32 operation is .ftz.
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "sage2tp_abi.h"
#include "mma_fragments.cuh"
#include "reference_attention.cuh"

namespace s2tp {
namespace {

constexpr float kInt8Max = 127.0f;
constexpr float kInt8AmaxFloor = 0.0000001f;  // upstream's start value of the block amax: no division by 0

__device__ __forceinline__ float to_f32(__half value) { return __half2float(value); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 value) { return __bfloat162float(value); }

template <typename T>
__device__ __forceinline__ T from_f32(float value);
template <>
__device__ __forceinline__ __half from_f32<__half>(float value) { return __float2half_rn(value); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float value) { return __float2bfloat16_rn(value); }

// 8 consecutive elements (one 16-byte load) widened to fp32, exactly.
template <typename T>
__device__ __forceinline__ void load8(const T *source, float (&out)[8]) {
    const uint4 raw = *reinterpret_cast<const uint4 *>(source);
    const T *elements = reinterpret_cast<const T *>(&raw);
#pragma unroll
    for (uint32_t e = 0; e < 8; ++e) {
        out[e] = to_f32(elements[e]);
    }
}

// ---- int8 Q / K ---------------------------------------------------------------------------------------------
// One CTA of 128 threads per group of GroupTokens tokens (32 for Q, 64 for K) of one (batch, head). Per
// element x = float(in) [- float(mean)]; amax = max(1e-7, max |x| over the group); scale = amax / 127 and
// code = cvt.rni.sat.s8(x * (127 / amax)), both divisions div.approx.ftz as upstream's. Tokens past the
// end count as 0 (a group entirely past the end still writes scale 1e-7 / 127) and are not written.

constexpr uint32_t kInt8Threads = S2TP_QUANT_INT8_THREADS;
constexpr uint32_t kInt8Warps = kInt8Threads / 32;
static_assert(kInt8Warps == 4, "block_amax takes the max of four warps' values");

// The maximum of `amax` over the CTA's kInt8Threads threads, in every thread: a warp shuffle, then each
// warp's value through `warp_amax` (the caller's shared array, so that each quantizer's keeps its name in
// the PTX). max is exact, so the reduction order cannot change the result.
__device__ __forceinline__ float block_amax(float amax, float (&warp_amax)[kInt8Warps]) {
#pragma unroll
    for (uint32_t offset = 16; offset > 0; offset /= 2) {
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
    }
    if (threadIdx.x % 32 == 0) {
        warp_amax[threadIdx.x / 32] = amax;
    }
    __syncthreads();
    return fmaxf(fmaxf(warp_amax[0], warp_amax[1]), fmaxf(warp_amax[2], warp_amax[3]));
}

template <typename T, uint32_t HeadDim, uint32_t GroupTokens, bool SubtractMean>
__device__ __forceinline__ void quantize_int8_group(const s2tp_quant_int8_params &p, uint32_t scale_groups) {
    constexpr uint32_t kChunksPerToken = HeadDim / 8;
    constexpr uint32_t kTokensPerWave = kInt8Threads / kChunksPerToken;
    constexpr uint32_t kWaves = GroupTokens / kTokensPerWave;
    static_assert(GroupTokens % kTokensPerWave == 0, "a group must be a whole number of thread waves");

    __shared__ float warp_amax[kInt8Warps];

    const uint32_t group = blockIdx.x;
    const uint32_t head = blockIdx.y;
    const uint32_t batch = blockIdx.z;
    const uint32_t tid = threadIdx.x;
    const uint32_t column = (tid % kChunksPerToken) * 8;
    const uint32_t first_token = group * GroupTokens + tid / kChunksPerToken;

    const T *input = static_cast<const T *>(p.input) + batch * p.stride_bz_in + head * p.stride_h_in + column;
    int8_t *output = p.output + batch * p.stride_bz_out + head * p.stride_h_out + column;

    float mean[8];
    if constexpr (SubtractMean) {
        load8(static_cast<const T *>(p.mean) + batch * p.stride_bz_mean + head * p.stride_h_mean + column, mean);
    }

    float x[kWaves][8];
    float amax = kInt8AmaxFloor;
#pragma unroll
    for (uint32_t wave = 0; wave < kWaves; ++wave) {
        const uint32_t token = first_token + wave * kTokensPerWave;
        if (token < p.len) {
            load8(input + token * p.stride_seq_in, x[wave]);
            if constexpr (SubtractMean) {
#pragma unroll
                for (uint32_t e = 0; e < 8; ++e) {
                    x[wave][e] = __fsub_rn(x[wave][e], mean[e]);
                }
            }
        } else {
#pragma unroll
            for (uint32_t e = 0; e < 8; ++e) {
                x[wave][e] = 0.0f;
            }
        }
#pragma unroll
        for (uint32_t e = 0; e < 8; ++e) {
            amax = fmaxf(amax, fabsf(x[wave][e]));
        }
    }

    amax = block_amax(amax, warp_amax);

    if (tid == 0) {
        p.scale[(batch * p.heads + head) * scale_groups + group] = amax / kInt8Max;
    }
    const float multiplier = kInt8Max / amax;

#pragma unroll
    for (uint32_t wave = 0; wave < kWaves; ++wave) {
        const uint32_t token = first_token + wave * kTokensPerWave;
        if (token < p.len) {
            uint32_t packed[2];
#pragma unroll
            for (uint32_t half = 0; half < 2; ++half) {
                uint32_t word = 0;
#pragma unroll
                for (uint32_t byte = 0; byte < 4; ++byte) {
                    const int8_t code = f32_to_s8_rni_sat(__fmul_rn(x[wave][4 * half + byte], multiplier));
                    word |= static_cast<uint32_t>(static_cast<uint8_t>(code)) << (8 * byte);
                }
                packed[half] = word;
            }
            *reinterpret_cast<uint2 *>(output + token * p.stride_seq_out) = make_uint2(packed[0], packed[1]);
        }
    }
}

template <typename T, uint32_t GroupTokens, bool SubtractMean>
__device__ __forceinline__ void quantize_int8(const s2tp_quant_int8_params &p, uint32_t scale_groups) {
    if (p.head_dim == 128) {
        quantize_int8_group<T, 128, GroupTokens, SubtractMean>(p, scale_groups);
    } else {
        quantize_int8_group<T, 64, GroupTokens, SubtractMean>(p, scale_groups);
    }
}

// ---- int8 Q / K per thread (upstream's Triton quantizer) -------------------------------------------------------
// One CTA of 128 threads per scale j of a (batch, head): thread group g = j % Groups of warp j / Groups,
// whose rows are warp * WarpTokens + i * 8 + g * RowsPerStep + r (i < WarpTokens / 8, r < RowsPerStep;
// Q: 8 groups of single rows, K: 4 groups of row pairs). K is k - mean rounded to its dtype first (torch's
// subtraction before the Triton kernel). scale = fma(amax, fl(1/127), 1e-7), as Triton's compiled
// amax / 127 + 1e-7 is; code = trunc(x / scale +- 0.5) with an IEEE division (__fdiv_rn: --use_fast_math
// must not turn it into an approximate one). Rows past the end count as absent and are not written.

template <typename T, uint32_t HeadDim, uint32_t WarpTokens, uint32_t Groups, uint32_t RowsPerStep, bool SubtractMean>
__device__ __forceinline__ void quantize_int8_per_thread_group(const s2tp_quant_int8_params &p, uint32_t scales) {
    constexpr uint32_t kChunksPerRow = HeadDim / 8;
    constexpr uint32_t kRows = WarpTokens / 8 * RowsPerStep;
    constexpr uint32_t kChunks = kRows * kChunksPerRow;
    constexpr uint32_t kChunksPerThread = (kChunks + kInt8Threads - 1) / kInt8Threads;
    static_assert(WarpTokens % 8 == 0, "a thread group's rows are 8 apart");

    __shared__ float warp_amax[kInt8Warps];

    const uint32_t j = blockIdx.x;
    const uint32_t head = blockIdx.y;
    const uint32_t batch = blockIdx.z;
    const uint32_t tid = threadIdx.x;
    const uint32_t warp = j / Groups, group = j % Groups;

    const T *input = static_cast<const T *>(p.input) + batch * p.stride_bz_in + head * p.stride_h_in;
    int8_t *output = p.output + batch * p.stride_bz_out + head * p.stride_h_out;
    const T *mean = SubtractMean ? static_cast<const T *>(p.mean) + batch * p.stride_bz_mean + head * p.stride_h_mean
                                 : nullptr;

    float x[kChunksPerThread][8];
    uint32_t token[kChunksPerThread];
    bool present[kChunksPerThread];
    float amax = 0.0f;
#pragma unroll
    for (uint32_t c = 0; c < kChunksPerThread; ++c) {
        const uint32_t chunk = tid + c * kInt8Threads;
        const uint32_t row = chunk / kChunksPerRow;
        const uint32_t column = (chunk % kChunksPerRow) * 8;
        token[c] = warp * WarpTokens + (row / RowsPerStep) * 8 + group * RowsPerStep + row % RowsPerStep;
        present[c] = chunk < kChunks && token[c] < p.len;
        if (present[c]) {
            load8(input + token[c] * p.stride_seq_in + column, x[c]);
            if constexpr (SubtractMean) {
                float m[8];
                load8(mean + column, m);
#pragma unroll
                for (uint32_t e = 0; e < 8; ++e) {
                    x[c][e] = to_f32(from_f32<T>(__fsub_rn(x[c][e], m[e])));
                }
            }
#pragma unroll
            for (uint32_t e = 0; e < 8; ++e) {
                amax = fmaxf(amax, fabsf(x[c][e]));
            }
        }
    }
    amax = block_amax(amax, warp_amax);
    const float scale = __fmaf_rn(amax, 1.0f / kInt8Max, kInt8AmaxFloor);
    if (tid == 0) {
        p.scale[(batch * p.heads + head) * scales + j] = scale;
    }

#pragma unroll
    for (uint32_t c = 0; c < kChunksPerThread; ++c) {
        if (present[c]) {
            const uint32_t column = ((tid + c * kInt8Threads) % kChunksPerRow) * 8;
            uint32_t packed[2];
#pragma unroll
            for (uint32_t half = 0; half < 2; ++half) {
                uint32_t word = 0;
#pragma unroll
                for (uint32_t byte = 0; byte < 4; ++byte) {
                    const float ratio = __fdiv_rn(x[c][4 * half + byte], scale);
                    const float shifted = __fadd_rn(ratio, ratio >= 0.0f ? 0.5f : -0.5f);
                    const int code = max(-128, min(127, __float2int_rz(shifted)));
                    word |= static_cast<uint32_t>(static_cast<uint8_t>(static_cast<int8_t>(code))) << (8 * byte);
                }
                packed[half] = word;
            }
            *reinterpret_cast<uint2 *>(output + token[c] * p.stride_seq_out + column) = make_uint2(packed[0], packed[1]);
        }
    }
}

template <typename T, uint32_t WarpTokens, uint32_t Groups, uint32_t RowsPerStep, bool SubtractMean>
__device__ __forceinline__ void quantize_int8_per_thread(const s2tp_quant_int8_params &p, uint32_t scales) {
    if (p.head_dim == 128) {
        quantize_int8_per_thread_group<T, 128, WarpTokens, Groups, RowsPerStep, SubtractMean>(p, scales);
    } else {
        quantize_int8_per_thread_group<T, 64, WarpTokens, Groups, RowsPerStep, SubtractMean>(p, scales);
    }
}

// ---- fp8 V -------------------------------------------------------------------------------------------------
// One CTA of 256 threads per 32 channels of one (batch, head). Pass 1: amax per channel = max |v| over
// all tokens (upstream takes max(|max|, |min|) over the zero-padded tokens; both are the same value).
// With a V mean m (smooth_v), v - m replaces v everywhere: amax = max |v - m| over the tokens and, when
// N is not a multiple of 16, over one zero token (upstream's max and min read the padding to 16), and
// every padded token's code is that of 0 - m, as upstream's codes are.
// v_scale = amax / scale_max, multiplier = scale_max / amax (div.approx.ftz; an all-zero channel gets
// scale 0 and multiplier +inf, so its codes are 0 * inf = NaN, 0x7F, exactly as upstream). Pass 2: per
// 64-token tile, code = cvt.rn.satfinite.e4m3(v * multiplier), padded tokens as v = 0, staged in shared
// memory transposed (channel rows) with the 16-token permutation, then written as 16-byte rows.

constexpr uint32_t kVThreads = S2TP_QUANT_V_THREADS;
constexpr uint32_t kVChannels = S2TP_QUANT_V_CHANNELS_PER_CTA;
constexpr uint32_t kVTileTokens = 64;
static_assert(kVThreads == (kVChannels / 8) * kVTileTokens, "one thread per (8 channels, token) of a tile");

// Stored position of token r of a 16-token group: the inverse of {0,1,8,9,2,3,10,11,4,5,12,13,6,7,14,15}.
__device__ __forceinline__ uint32_t permuted_position(uint32_t token_in_tile) {
    const uint32_t r = token_in_tile % 16;
    return (token_in_tile / 16) * 16 + (r / 8) * 2 + ((r / 2) % 4) * 4 + r % 2;
}

template <typename T, uint32_t PadTokens = kVTileTokens>
__device__ __forceinline__ void quantize_v_fp8(const s2tp_quant_v_fp8_params &p) {
    __shared__ float warp_amax[kVThreads / 32][kVChannels];
    __shared__ float channel_multiplier[kVChannels];
    __shared__ __align__(16) uint8_t tile[kVChannels][kVTileTokens];

    const uint32_t channel0 = blockIdx.x * kVChannels;
    const uint32_t head = blockIdx.y;
    const uint32_t batch = blockIdx.z;
    const uint32_t tid = threadIdx.x;
    const uint32_t lane = tid % 32;
    const uint32_t chunk = tid % 4;              // channels channel0 + 8*chunk .. +7
    const uint32_t token_in_tile = tid / 4;      // 0..63

    const T *input =
        static_cast<const T *>(p.input) + batch * p.stride_bz_in + head * p.stride_h_in + channel0 + 8 * chunk;

    float mean[8];
#pragma unroll
    for (uint32_t e = 0; e < 8; ++e) {
        mean[e] = p.mean ? p.mean[(batch * p.heads + head) * p.head_dim + channel0 + 8 * chunk + e] : 0.0f;
    }
    float amax[8];
    const bool reads_zero_token = p.mean && p.len % 16 != 0 && token_in_tile == 0;
#pragma unroll
    for (uint32_t e = 0; e < 8; ++e) {
        amax[e] = reads_zero_token ? fabsf(mean[e]) : 0.0f;
    }
    for (uint32_t base = 0; base < p.len; base += kVTileTokens) {
        const uint32_t token = base + token_in_tile;
        if (token < p.len) {
            float x[8];
            load8(input + token * p.stride_seq_in, x);
#pragma unroll
            for (uint32_t e = 0; e < 8; ++e) {
                amax[e] = fmaxf(amax[e], fabsf(p.mean ? __fsub_rn(x[e], mean[e]) : x[e]));
            }
        }
    }
    // Lanes of a warp with the same chunk differ in lane bits 2..4.
#pragma unroll
    for (uint32_t offset = 4; offset < 32; offset *= 2) {
#pragma unroll
        for (uint32_t e = 0; e < 8; ++e) {
            amax[e] = fmaxf(amax[e], __shfl_xor_sync(0xffffffffu, amax[e], offset));
        }
    }
    if (lane < 4) {
#pragma unroll
        for (uint32_t e = 0; e < 8; ++e) {
            warp_amax[tid / 32][8 * lane + e] = amax[e];
        }
    }
    __syncthreads();
    if (tid < kVChannels) {
        float channel_amax = warp_amax[0][tid];
#pragma unroll
        for (uint32_t w = 1; w < kVThreads / 32; ++w) {
            channel_amax = fmaxf(channel_amax, warp_amax[w][tid]);
        }
        p.scale[(batch * p.heads + head) * p.head_dim + channel0 + tid] = channel_amax / p.scale_max;
        channel_multiplier[tid] = p.scale_max / channel_amax;
    }
    __syncthreads();

    float multiplier[8];
#pragma unroll
    for (uint32_t e = 0; e < 8; ++e) {
        multiplier[e] = channel_multiplier[8 * chunk + e];
    }

    uint8_t *output = p.output + batch * p.stride_bz_out + head * p.stride_h_out + channel0 * p.stride_d_out;
    const uint32_t position = permuted_position(token_in_tile);
    // PadTokens is a multiple of the 64-token tile: core.py pads V to it before per_channel_fp8 pads to 64.
    static_assert(PadTokens % kVTileTokens == 0, "V padding must be whole tiles");
    const uint32_t padded_len = PadTokens == kVTileTokens ? S2TP_V_PADDED_LEN(p.len)
                                                          : (p.len + PadTokens - 1) / PadTokens * PadTokens;
    for (uint32_t base = 0; base < padded_len; base += kVTileTokens) {
        const uint32_t token = base + token_in_tile;
        float x[8];
        if (token < p.len) {
            load8(input + token * p.stride_seq_in, x);
        } else {
#pragma unroll
            for (uint32_t e = 0; e < 8; ++e) {
                x[e] = 0.0f;
            }
        }
        if (p.mean) {
#pragma unroll
            for (uint32_t e = 0; e < 8; ++e) {
                x[e] = __fsub_rn(x[e], mean[e]);
            }
        }
        const uint32_t codes_lo = pack_e4m3x4(__fmul_rn(x[0], multiplier[0]), __fmul_rn(x[1], multiplier[1]),
                                              __fmul_rn(x[2], multiplier[2]), __fmul_rn(x[3], multiplier[3]));
        const uint32_t codes_hi = pack_e4m3x4(__fmul_rn(x[4], multiplier[4]), __fmul_rn(x[5], multiplier[5]),
                                              __fmul_rn(x[6], multiplier[6]), __fmul_rn(x[7], multiplier[7]));
#pragma unroll
        for (uint32_t e = 0; e < 4; ++e) {
            tile[8 * chunk + e][position] = static_cast<uint8_t>(codes_lo >> (8 * e));
            tile[8 * chunk + 4 + e][position] = static_cast<uint8_t>(codes_hi >> (8 * e));
        }
        __syncthreads();
        if (tid < kVChannels * kVTileTokens / 16) {
            const uint32_t row = tid / 4;
            const uint32_t column = (tid % 4) * 16;
            *reinterpret_cast<uint4 *>(output + row * p.stride_d_out + base + column) =
                *reinterpret_cast<const uint4 *>(&tile[row][column]);
        }
        __syncthreads();
    }
}

// ---- fp16 V (the sm80 path) -------------------------------------------------------------------------------
// Each thread converts 8 consecutive channels of one token: v - mean with __hsub2 in V's dtype (correctly
// rounded, as upstream's sub_mean), then, for bf16, fl16 through fp32 (exact, then one rounding, as its
// __float22half2_rn and torch's v.to(float16) do).
template <typename T>
__device__ __forceinline__ void convert_v_f16(const s2tp_convert_v_f16_params &p) {
    using T2 = typename std::conditional<std::is_same<T, __half>::value, __half2, __nv_bfloat162>::type;
    const uint32_t chunks_per_token = p.head_dim / 8;
    const uint32_t chunk = blockIdx.x * S2TP_CONVERT_V_THREADS + threadIdx.x;
    const uint32_t token = chunk / chunks_per_token;
    if (token >= p.len) {
        return;
    }
    const uint32_t column = (chunk % chunks_per_token) * 8;
    const uint32_t at = blockIdx.z * p.stride_bz + blockIdx.y * p.stride_h + token * p.stride_seq + column;
    uint4 raw = *reinterpret_cast<const uint4 *>(static_cast<const T *>(p.input) + at);
    T2 *pairs = reinterpret_cast<T2 *>(&raw);
    if (p.mean) {
        const uint4 mean_raw = *reinterpret_cast<const uint4 *>(
            static_cast<const T *>(p.mean) + blockIdx.z * p.stride_bz_mean + blockIdx.y * p.stride_h_mean + column);
        const T2 *mean = reinterpret_cast<const T2 *>(&mean_raw);
#pragma unroll
        for (uint32_t i = 0; i < 4; ++i) {
            pairs[i] = __hsub2(pairs[i], mean[i]);
        }
    }
    if constexpr (std::is_same<T, __nv_bfloat16>::value) {
#pragma unroll
        for (uint32_t i = 0; i < 4; ++i) {
            reinterpret_cast<__half2 *>(&raw)[i] = __float22half2_rn(__bfloat1622float2(pairs[i]));
        }
    }
    *reinterpret_cast<uint4 *>(static_cast<__half *>(p.output) + at) = raw;
}

// ---- K mean ------------------------------------------------------------------------------------------------
// Rounding, fully specified so any implementation can reproduce it: per channel an fp32 sum over tokens
// 0, 1, ..., N-1 in that order (one add.rn.ftz each, starting from +0), then one IEEE division by
// float(N) (div.rn.ftz; exact conversion of N for N < 2^24), then one round-to-nearest-even conversion to
// the input dtype. It matches a host fp32 loop bit for bit unless a value or partial sum is an fp32
// subnormal (flushed to zero here). It does not try to match torch's mean, which upstream uses; feed
// upstream's k_mean to the K quantizer when byte identity with upstream's codes matters.
// The V mean (smooth_v) is the same fp32 sum divided by S2TP_V_MEAN_DIVISOR(N) and kept in fp32. Upstream
// sums with a block reduction, whose order this does not reproduce: feed upstream's v_mean to the V
// quantizer when byte identity matters, as for K.
template <typename T, bool FloatOutput>
__device__ __forceinline__ void channel_mean(const s2tp_k_mean_params &p) {
    const uint32_t head = blockIdx.x;
    const uint32_t batch = blockIdx.y;
    const uint32_t channel = threadIdx.x;
    const T *input = static_cast<const T *>(p.input) + batch * p.stride_bz_in + head * p.stride_h_in + channel;

    float sum = 0.0f;
#pragma unroll 8
    for (uint32_t token = 0; token < p.len; ++token) {
        sum = __fadd_rn(sum, to_f32(input[token * p.stride_seq_in]));
    }
    const uint32_t at = batch * p.stride_bz_mean + head * p.stride_h_mean + channel;
    if constexpr (FloatOutput) {
        static_cast<float *>(p.mean)[at] = __fdiv_rn(sum, static_cast<float>(S2TP_V_MEAN_DIVISOR(p.len)));
    } else {
        static_cast<T *>(p.mean)[at] = from_f32<T>(__fdiv_rn(sum, static_cast<float>(p.len)));
    }
}

}  // namespace
}  // namespace s2tp

extern "C" __global__ void s2tp_k_mean_f16(const s2tp_k_mean_params params) {
    s2tp::channel_mean<__half, false>(params);
}
extern "C" __global__ void s2tp_k_mean_bf16(const s2tp_k_mean_params params) {
    s2tp::channel_mean<__nv_bfloat16, false>(params);
}
extern "C" __global__ void s2tp_v_mean_f16(const s2tp_k_mean_params params) {
    s2tp::channel_mean<__half, true>(params);
}
extern "C" __global__ void s2tp_v_mean_bf16(const s2tp_k_mean_params params) {
    s2tp::channel_mean<__nv_bfloat16, true>(params);
}

extern "C" __global__ void s2tp_quant_q_int8_f16(const s2tp_quant_int8_params params) {
    s2tp::quantize_int8<__half, S2TP_QUANT_Q_GROUP_TOKENS, false>(params, S2TP_Q_SCALE_GROUPS(params.len));
}
extern "C" __global__ void s2tp_quant_q_int8_bf16(const s2tp_quant_int8_params params) {
    s2tp::quantize_int8<__nv_bfloat16, S2TP_QUANT_Q_GROUP_TOKENS, false>(params, S2TP_Q_SCALE_GROUPS(params.len));
}
extern "C" __global__ void s2tp_quant_k_int8_f16(const s2tp_quant_int8_params params) {
    s2tp::quantize_int8<__half, S2TP_QUANT_K_BLOCK_TOKENS, true>(params, S2TP_K_SCALE_GROUPS(params.len));
}
extern "C" __global__ void s2tp_quant_k_int8_bf16(const s2tp_quant_int8_params params) {
    s2tp::quantize_int8<__nv_bfloat16, S2TP_QUANT_K_BLOCK_TOKENS, true>(params, S2TP_K_SCALE_GROUPS(params.len));
}

extern "C" __global__ void s2tp_quant_v_fp8_f16(const s2tp_quant_v_fp8_params params) {
    s2tp::quantize_v_fp8<__half>(params);
}
extern "C" __global__ void s2tp_quant_v_fp8_bf16(const s2tp_quant_v_fp8_params params) {
    s2tp::quantize_v_fp8<__nv_bfloat16>(params);
}

// The cubin's other concerns, each in its own file. Included here, between the two sets of quantizers,
// because the entries' order is the PTX's: the cubin stays what it was before they moved out.
#include "input_generator.cuh"
#include "output_checks.cuh"
#include "sm_clock_probe.cuh"

// The sm90 path's quantizers (after the others, so that their PTX keeps its labels).
extern "C" __global__ void s2tp_quant_q_int8_sm90_f16(const s2tp_quant_int8_params params) {
    s2tp::quantize_int8<__half, S2TP_SM90_Q_WARP_TOKENS, false>(params, S2TP_SM90_Q_SCALE_GROUPS(params.len));
}
extern "C" __global__ void s2tp_quant_q_int8_sm90_bf16(const s2tp_quant_int8_params params) {
    s2tp::quantize_int8<__nv_bfloat16, S2TP_SM90_Q_WARP_TOKENS, false>(params, S2TP_SM90_Q_SCALE_GROUPS(params.len));
}
extern "C" __global__ void s2tp_quant_k_int8_sm90_f16(const s2tp_quant_int8_params params) {
    s2tp::quantize_int8<__half, S2TP_SM90_K_BLOCK_TOKENS, true>(params, S2TP_SM90_K_SCALE_GROUPS(params.len));
}
extern "C" __global__ void s2tp_quant_k_int8_sm90_bf16(const s2tp_quant_int8_params params) {
    s2tp::quantize_int8<__nv_bfloat16, S2TP_SM90_K_BLOCK_TOKENS, true>(params, S2TP_SM90_K_SCALE_GROUPS(params.len));
}
extern "C" __global__ void s2tp_quant_q_int8_per_thread_sm90_f16(const s2tp_quant_int8_params params) {
    s2tp::quantize_int8_per_thread<__half, S2TP_SM90_Q_WARP_TOKENS, S2TP_PER_THREAD_Q_GROUPS, 1, false>(
        params, S2TP_SM90_Q_SCALE_GROUPS(params.len) * S2TP_PER_THREAD_Q_GROUPS);
}
extern "C" __global__ void s2tp_quant_q_int8_per_thread_sm90_bf16(const s2tp_quant_int8_params params) {
    s2tp::quantize_int8_per_thread<__nv_bfloat16, S2TP_SM90_Q_WARP_TOKENS, S2TP_PER_THREAD_Q_GROUPS, 1, false>(
        params, S2TP_SM90_Q_SCALE_GROUPS(params.len) * S2TP_PER_THREAD_Q_GROUPS);
}
extern "C" __global__ void s2tp_quant_k_int8_per_thread_sm90_f16(const s2tp_quant_int8_params params) {
    s2tp::quantize_int8_per_thread<__half, S2TP_SM90_K_BLOCK_TOKENS, S2TP_PER_THREAD_K_GROUPS, 2, true>(
        params, S2TP_SM90_K_SCALE_GROUPS(params.len) * S2TP_PER_THREAD_K_GROUPS);
}
extern "C" __global__ void s2tp_quant_k_int8_per_thread_sm90_bf16(const s2tp_quant_int8_params params) {
    s2tp::quantize_int8_per_thread<__nv_bfloat16, S2TP_SM90_K_BLOCK_TOKENS, S2TP_PER_THREAD_K_GROUPS, 2, true>(
        params, S2TP_SM90_K_SCALE_GROUPS(params.len) * S2TP_PER_THREAD_K_GROUPS);
}
extern "C" __global__ void s2tp_quant_v_fp8_pad128_f16(const s2tp_quant_v_fp8_params params) {
    s2tp::quantize_v_fp8<__half, S2TP_SM90_V_PAD_TOKENS>(params);
}
extern "C" __global__ void s2tp_quant_v_fp8_pad128_bf16(const s2tp_quant_v_fp8_params params) {
    s2tp::quantize_v_fp8<__nv_bfloat16, S2TP_SM90_V_PAD_TOKENS>(params);
}

// The sm80 path's quantizers, and the per-thread ones the sm89 path shares with it (after the others, so
// that their PTX keeps its labels): the scale count per (batch, head) is the grid's x extent.
#define S2TP_SM80_QUANTIZERS(suffix, T)                                                                      \
    extern "C" __global__ void s2tp_quant_q_int8_warp16_##suffix(const s2tp_quant_int8_params params) {      \
        s2tp::quantize_int8<T, 16, false>(params, gridDim.x);                                                \
    }                                                                                                        \
    extern "C" __global__ void s2tp_quant_q_int8_per_thread_warp32_##suffix(const s2tp_quant_int8_params params) { \
        s2tp::quantize_int8_per_thread<T, 32, S2TP_PER_THREAD_Q_GROUPS, 1, false>(params, gridDim.x);        \
    }                                                                                                        \
    extern "C" __global__ void s2tp_quant_q_int8_per_thread_warp16_##suffix(const s2tp_quant_int8_params params) { \
        s2tp::quantize_int8_per_thread<T, 16, S2TP_PER_THREAD_Q_GROUPS, 1, false>(params, gridDim.x);        \
    }                                                                                                        \
    extern "C" __global__ void s2tp_quant_k_int8_per_thread_warp64_##suffix(const s2tp_quant_int8_params params) { \
        s2tp::quantize_int8_per_thread<T, 64, S2TP_PER_THREAD_K_GROUPS, 2, true>(params, gridDim.x);         \
    }                                                                                                        \
    extern "C" __global__ void s2tp_convert_v_f16_##suffix(const s2tp_convert_v_f16_params params) {         \
        s2tp::convert_v_f16<T>(params);                                                                      \
    }
S2TP_SM80_QUANTIZERS(f16, __half)
S2TP_SM80_QUANTIZERS(bf16, __nv_bfloat16)

// The shared-memory fill, last, so that the entries before it keep their PTX labels.
#include "shared_memory_fill.cuh"
