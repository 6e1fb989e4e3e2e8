// Register-level building blocks of the attention kernel: tensor-core MMAs, ldmatrix, the fp8/fp16
// conversions and the MUFU approximations. Every numerically relevant instruction is written as the
// exact PTX upstream SageAttention executes (csrc/mma.cuh and csrc/numeric_conversion.cuh at commit d1a57a5),
// so neither the compiler nor a later edit can substitute a differently rounding equivalent.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace s2tp {

// ---- Tensor cores -------------------------------------------------------------------------------------
// Fragment layouts are PTX's for m16n8k32 with 8-bit operands (g = lane / 4, t = lane % 4):
//   A (16x32, row):  a[0] row g, k 4t..4t+3 | a[1] row g+8, k 4t.. | a[2] row g, k 16+4t.. | a[3] row g+8, k 16+4t..
//   B (32x8, col):   b0 column g, k 4t..4t+3 | b1 column g, k 16+4t..16+4t+3
//   C/D (16x8):      c[0] (row g, col 2t) c[1] (row g, col 2t+1) c[2] (row g+8, col 2t) c[3] (row g+8, col 2t+1)
// With an f16 accumulator C/D is two b32 registers: {row g: col 2t (low half), 2t+1}, {row g+8: ...}.

// QK^T step: acc = A * B + acc, int32 (exact; the summation order cannot matter).
__device__ __forceinline__ void mma_s8_m16n8k32_accumulate(int32_t *acc, const uint32_t *a, uint32_t b0,
                                                           uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// First QK^T step of a tile: acc = A * B.
__device__ __forceinline__ void mma_s8_m16n8k32_first(int32_t *acc, const uint32_t *a, uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %10, %10, %10};\n"
        : "=r"(acc[0]), "=r"(acc[1]), "=r"(acc[2]), "=r"(acc[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));
}

// PV, first 32 keys of a tile: h = P * V with C = +0, exactly upstream's kInit (a zero register as C).
__device__ __forceinline__ void mma_e4m3_f16acc_m16n8k32_first(uint32_t *h, const uint32_t *a, uint32_t b0,
                                                               uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %8};\n"
        : "=r"(h[0]), "=r"(h[1])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));
}

// PV, second 32 keys of a tile: h = P * V + h. The f16 partial never spans more than these two MMAs.
__device__ __forceinline__ void mma_e4m3_f16acc_m16n8k32_accumulate(uint32_t *h, const uint32_t *a, uint32_t b0,
                                                                    uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};\n"
        : "+r"(h[0]), "+r"(h[1])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ---- Accumulator fragments of a 16x16 block --------------------------------------------------------------
// Two m16n8 C/D fragments side by side (the n8 halves of a 16-wide block) as 8 values per lane, the layout
// every score block and output block of the kernel uses: element e is register e % 4 of n8 half e / 4, so
//   row    g + 8 * row_half(e)            (row_half = (e % 4) / 2)
//   column 2t + column_offset(e)          (column_offset = 8 * (e / 4) + e % 2)
// A lane's 4 values of one row (half h) are elements 2h, 2h+1 (first n8 half) and 2h+4, 2h+5 (second);
// the 4 lanes of a quad (same g) hold the rest of the row, so a row reduction is a quad reduction.
struct AccumulatorLayout16x16 {
    static constexpr uint32_t kElements = 8;

    __device__ __forceinline__ static constexpr uint32_t row_half(uint32_t e) { return (e % 4) / 2; }
    __device__ __forceinline__ static constexpr uint32_t column_offset(uint32_t e) { return 8 * (e / 4) + e % 2; }
    // The i-th (0..3) of the lane's elements in row half h, in column order.
    __device__ __forceinline__ static constexpr uint32_t row_element(uint32_t h, uint32_t i) {
        return 2 * h + (i % 2) + 4 * (i / 2);
    }
};

// Reductions over the 4 lanes of a quad (lanes 4g..4g+3), xor 1 then xor 2. Max is exact; for the sum
// each lane adds the same two pairs in the same order up to commutativity, so all 4 lanes agree bit for bit.
__device__ __forceinline__ float quad_max(float value) {
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, 1));
    return fmaxf(value, __shfl_xor_sync(0xffffffffu, value, 2));
}

__device__ __forceinline__ float quad_sum_rn(float value) {
    value = __fadd_rn(value, __shfl_xor_sync(0xffffffffu, value, 1));
    return __fadd_rn(value, __shfl_xor_sync(0xffffffffu, value, 2));
}

// ---- Shared memory to registers --------------------------------------------------------------------------
// Four 8x8 b16 matrices; lanes 8i..8i+7 supply the 16-byte row addresses of matrix i, and register i
// of lane L receives bytes 4*(L%4)..+3 of row L/4 of matrix i. Volatile: it reads shared memory that
// barriers and cp.async waits order, so it must not move across them.
__device__ __forceinline__ void ldmatrix_x4(uint32_t *r, uint32_t smem_address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_address));
}

// ---- Conversions -----------------------------------------------------------------------------------------

// Four fp32 values to four e4m3 bytes, byte i = x_i. cvt.rn.satfinite rounds to nearest even, clamps
// finite overflow to +-448 and keeps NaN. PTX puts the FIRST source operand in the UPPER byte, hence
// the (x1, x0) operand order.
__device__ __forceinline__ uint32_t pack_e4m3x4(float x0, float x1, float x2, float x3) {
    uint32_t packed;
    asm("{\n"
        ".reg .b16 lo, hi;\n"
        "cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n"
        "cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
        "mov.b32 %0, {lo, hi};\n"
        "}\n"
        : "=r"(packed)
        : "f"(x0), "f"(x1), "f"(x2), "f"(x3));
    return packed;
}

// Widen the low / high f16 of an MMA accumulator register (exact).
__device__ __forceinline__ float f16_low_to_f32(uint32_t pair) {
    float value;
    asm("{\n"
        ".reg .b16 lo, hi;\n"
        "mov.b32 {lo, hi}, %1;\n"
        "cvt.f32.f16 %0, lo;\n"
        "}\n"
        : "=f"(value)
        : "r"(pair));
    return value;
}

__device__ __forceinline__ float f16_high_to_f32(uint32_t pair) {
    float value;
    asm("{\n"
        ".reg .b16 lo, hi;\n"
        "mov.b32 {lo, hi}, %1;\n"
        "cvt.f32.f16 %0, hi;\n"
        "}\n"
        : "=f"(value)
        : "r"(pair));
    return value;
}

// int32 score to fp32. cvt.rz as upstream; |S| < 2^24 here, so the value is exact in any mode.
__device__ __forceinline__ float score_to_f32(int32_t score) {
    float value;
    asm("cvt.rz.f32.s32 %0, %1;\n" : "=f"(value) : "r"(score));
    return value;
}

// fp32 to int8 code: round half to even, saturate to [-128, 127].
__device__ __forceinline__ int8_t f32_to_s8_rni_sat(float x) {
    uint32_t code;
    asm("cvt.rni.sat.s8.f32 %0, %1;\n" : "=r"(code) : "f"(x));
    return static_cast<int8_t>(code & 0xffu);
}

// Two fp32 output values to one b32 of f16 or bf16, round to nearest even (cvt.rn.f16x2.f32 /
// cvt.rn.bf16x2.f32); `first` lands in the low half, i.e. at the lower address.
template <typename OutputType>
__device__ __forceinline__ uint32_t pack_output_pair(float first, float second) {
    if constexpr (std::is_same_v<OutputType, __half>) {
        const __half2 pair = __float22half2_rn(make_float2(first, second));
        return *reinterpret_cast<const uint32_t *>(&pair);
    } else {
        static_assert(std::is_same_v<OutputType, __nv_bfloat16>, "output type must be __half or __nv_bfloat16");
        const __nv_bfloat162 pair = __float22bfloat162_rn(make_float2(first, second));
        return *reinterpret_cast<const uint32_t *>(&pair);
    }
}

// ---- MUFU approximations (hardware-defined bits; never replace with exp2f/__frcp_rn/log2f) ------------

__device__ __forceinline__ float ex2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float rcp_approx(float x) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float lg2_approx(float x) {
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

}  // namespace s2tp
