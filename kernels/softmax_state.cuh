// One warp's private attention state and the per-tile numerical stages that update it.
//
// A warp owns 32 query rows (two m16 blocks, fq) for the whole kernel. Lane (g = lane/4, t = lane%4)
// holds, for fq in {0,1} and row half h in {0,1}, query row 16*fq + 8*h + g of the warp, and for each
// 16-wide block b of scores or output channels the 4 columns 16*b + 8*(e/4) + 2t + (e%2) of that row,
// where e in {2h, 2h+1, 2h+4, 2h+5} indexes the 8-element fragment. Nothing here ever reads another
// warp's registers, which is why a schedule may interleave warps freely (reference section 7).
//
// The per-tile sequence is upstream's, operation for operation (reference 3.2-3.9 and 7.2):
//   S = int8 QK^T -> x = float(S) (main tiles) or float(S) * dequant (last two tiles, then masks)
//   -> m, o = ex2(m_old - m_new), P = ex2(fma(x, scale, -m_new)) -> d = fma(o, d, s_0) + s_1 + s_2 + s_3
//   -> P to e4m3 -> h = two chained f16-accumulating MMAs per 64 keys -> RO = fma(o, RO, float(h)).
// Each of those roundings is written as an explicit intrinsic or PTX instruction, so the compiler can
// neither contract nor split them (the file is built with --use_fast_math, which makes all of them .ftz,
// as upstream's).
#pragma once

#include <cstdint>

#include "mma_fragments.cuh"
#include "smem_tiles.cuh"

namespace s2tp {

// Score blocks x[fq][fk] and output blocks ro[fq][b] are 16x16 accumulator blocks.
using Fragment = AccumulatorLayout16x16;

// S_FP8_OFFSET: the row maximum maps to 2^8.807 ~ 447.9, just below e4m3's 448.
constexpr float kFp8ExpOffset = 8.807f;
// Masked logit; on the last two tiles it is scaled by the unfolded softmax scale, so ex2 underflows to 0.
constexpr float kMaskedLogit = -5000000.0f;
constexpr float kLog2e = 1.44269504088896340736f;

// Which numerics a KV tile gets; decided per CTA from the tile index and the CTA's tile count.
enum class TileKind {
    kMain,         // tiles 0..n-3: x = float(S), scale folded with the dequantization, no mask
    kPenultimate,  // tile n-2: x = float(S) * dequant, causal mask, unfolded scale
    kLast,         // tile n-1: as n-2 plus the kv >= len_kv mask
};

template <uint32_t HeadDim>
struct WarpState {
    static constexpr uint32_t kOutBlocks = HeadDim / 16;

    float ro[2][kOutBlocks][8];  // unnormalised output, fp32
    float m[2][2];               // running max of scale*x - 8.807 per row (quad-uniform)
    float d[2][2];               // per-LANE partial denominator; quad-reduced only in finalize()

    __device__ __forceinline__ void init() {
#pragma unroll
        for (uint32_t fq = 0; fq < 2; ++fq) {
#pragma unroll
            for (uint32_t b = 0; b < kOutBlocks; ++b) {
#pragma unroll
                for (uint32_t e = 0; e < 8; ++e) {
                    ro[fq][b][e] = 0.0f;
                }
            }
#pragma unroll
            for (uint32_t h = 0; h < 2; ++h) {
                m[fq][h] = kMaskedLogit;
                d[fq][h] = 1.0f;  // upstream's start value; the first tile's o = ex2(-5e6 - m) = 0 wipes it
            }
        }
    }
};

// What the softmax of a tile hands to that tile's PV: P in e4m3 as m16n8k32 A-fragments and the rescale
// factors o. A schedule may hold it across barriers (and, for a deferred PV, across loop iterations).
struct PendingPV {
    uint32_t p[2][2][4];  // [fq][32-key half c][A register]
    float o[2][2];        // [fq][row half]
};

// Per-lane coordinates the masks need.
struct MaskCoordinates {
    uint32_t q_row;    // global query row of (fq=0, h=0): CTA row0 + 32*warp + g
    uint32_t kv_col;   // global key column of (fk=0, e=0) in this tile: 64*tile + 2t
    uint32_t len_kv;
};

// S = Q K^T for the warp's 32 rows and the tile's 64 keys. Integer products and sums are exact, so the
// k-step order is free; the first step uses C = 0 as upstream.
template <uint32_t HeadDim>
__device__ __forceinline__ void compute_scores(int32_t (&s)[2][4][8], uint32_t smem_q, uint32_t q_lane_offset,
                                               uint32_t smem_k, uint32_t k_lane_offset) {
    constexpr uint32_t kRowBytes = SmemLayout<HeadDim>::kQKRowBytes;
#pragma unroll
    for (uint32_t step = 0; step < HeadDim / 32; ++step) {
        uint32_t a[2][4];
#pragma unroll
        for (uint32_t fq = 0; fq < 2; ++fq) {
            ldmatrix_x4(a[fq], fragment_address<kRowBytes>(smem_q, q_lane_offset, fq, step));
        }
#pragma unroll
        for (uint32_t fk = 0; fk < 4; ++fk) {
            uint32_t b[4];
            ldmatrix_x4(b, fragment_address<kRowBytes>(smem_k, k_lane_offset, fk, step));
#pragma unroll
            for (uint32_t fq = 0; fq < 2; ++fq) {
                if (step == 0) {
                    mma_s8_m16n8k32_first(&s[fq][fk][0], a[fq], b[0], b[1]);
                    mma_s8_m16n8k32_first(&s[fq][fk][4], a[fq], b[2], b[3]);
                } else {
                    mma_s8_m16n8k32_accumulate(&s[fq][fk][0], a[fq], b[0], b[1]);
                    mma_s8_m16n8k32_accumulate(&s[fq][fk][4], a[fq], b[2], b[3]);
                }
            }
        }
    }
}

// Online softmax of one tile: updates m and d, leaves P (e4m3) and o for the PV stage. RO is NOT touched
// here: its rescale by o is fused into the PV flush, RO = fma(o, RO, h), exactly as upstream's compiled
// code does it. `dequant` = q_scale * k_scale[tile]; `folded_scale` = orig_scale * dequant.
template <uint32_t HeadDim, TileKind Kind, bool Causal>
__device__ __forceinline__ void softmax_stage(const int32_t (&s)[2][4][8], WarpState<HeadDim> &state,
                                              PendingPV &out, float dequant, float folded_scale,
                                              float orig_scale, const MaskCoordinates &mask) {
    float x[2][4][8];
#pragma unroll
    for (uint32_t fq = 0; fq < 2; ++fq) {
#pragma unroll
        for (uint32_t fk = 0; fk < 4; ++fk) {
#pragma unroll
            for (uint32_t e = 0; e < 8; ++e) {
                const float raw = score_to_f32(s[fq][fk][e]);
                if constexpr (Kind == TileKind::kMain) {
                    x[fq][fk][e] = raw;
                } else {
                    float value = __fmul_rn(raw, dequant);
                    const uint32_t q_idx = mask.q_row + 16 * fq + 8 * Fragment::row_half(e);
                    const uint32_t kv_idx = mask.kv_col + 16 * fk + Fragment::column_offset(e);
                    if (Causal && kv_idx > q_idx) {
                        value = kMaskedLogit;
                    }
                    if (Kind == TileKind::kLast && kv_idx >= mask.len_kv) {
                        value = kMaskedLogit;
                    }
                    x[fq][fk][e] = value;
                }
            }
        }
    }

    const float scale = (Kind == TileKind::kMain) ? folded_scale : orig_scale;

#pragma unroll
    for (uint32_t fq = 0; fq < 2; ++fq) {
#pragma unroll
        for (uint32_t h = 0; h < 2; ++h) {
            // Max is exact, so grouping and order are free; scale > 0, so max-then-fma = fma-then-max.
            float row_max = kMaskedLogit;
#pragma unroll
            for (uint32_t fk = 0; fk < 4; ++fk) {
                const float *row = x[fq][fk];
                row_max = fmaxf(row_max,
                                fmaxf(fmaxf(row[Fragment::row_element(h, 0)], row[Fragment::row_element(h, 1)]),
                                      fmaxf(row[Fragment::row_element(h, 2)], row[Fragment::row_element(h, 3)])));
            }
            const float tile_max = quad_max(__fmaf_rn(row_max, scale, -kFp8ExpOffset));

            const float m_prev = state.m[fq][h];
            const float m_new = fmaxf(m_prev, tile_max);
            state.m[fq][h] = m_new;
            out.o[fq][h] = ex2_approx(__fsub_rn(m_prev, m_new));

            const float neg_m = -m_new;
#pragma unroll
            for (uint32_t fk = 0; fk < 4; ++fk) {
#pragma unroll
                for (uint32_t i = 0; i < 4; ++i) {
                    const uint32_t e = Fragment::row_element(h, i);
                    x[fq][fk][e] = ex2_approx(__fmaf_rn(x[fq][fk][e], scale, neg_m));
                }
            }
        }
    }

    // Denominator from the fp32 P (before e4m3 rounding): per fk the lane's 4 values of a row in the order
    // ((P0 + P1) + P4) + P5, and the first one fused with the rescale of d.
#pragma unroll
    for (uint32_t fq = 0; fq < 2; ++fq) {
#pragma unroll
        for (uint32_t h = 0; h < 2; ++h) {
#pragma unroll
            for (uint32_t fk = 0; fk < 4; ++fk) {
                const float *row = x[fq][fk];
                const float part = __fadd_rn(__fadd_rn(__fadd_rn(row[Fragment::row_element(h, 0)],
                                                                 row[Fragment::row_element(h, 1)]),
                                                       row[Fragment::row_element(h, 2)]),
                                             row[Fragment::row_element(h, 3)]);
                state.d[fq][h] = (fk == 0) ? __fmaf_rn(out.o[fq][h], state.d[fq][h], part)
                                           : __fadd_rn(state.d[fq][h], part);
            }
        }
    }

    // P to e4m3 A-fragments. Register r of half c: rows g (r even) / g+8 (r odd) of score block 2c + r/2;
    // its bytes are fragment elements {0,1,4,5} (row g) or {2,3,6,7} (row g+8), i.e. k-slot 4t+j holds
    // key 2t + (j&1) + 8*(j>>1): the token order V is stored in.
#pragma unroll
    for (uint32_t fq = 0; fq < 2; ++fq) {
#pragma unroll
        for (uint32_t c = 0; c < 2; ++c) {
#pragma unroll
            for (uint32_t r = 0; r < 4; ++r) {
                const float *block = x[fq][2 * c + r / 2];
                const uint32_t h = r % 2;
                out.p[fq][c][r] = pack_e4m3x4(block[Fragment::row_element(h, 0)], block[Fragment::row_element(h, 1)],
                                              block[Fragment::row_element(h, 2)], block[Fragment::row_element(h, 3)]);
            }
        }
    }
}

// PV of one tile and the fused flush. Per (fq, 16-channel block, n8 half) exactly two chained MMAs,
// keys 0-31 with C = 0 then keys 32-63 accumulating, then every f16 partial goes into fp32 with one FMA
// that also applies the tile's rescale factor: RO = fma(o, RO, float(h)).
template <uint32_t HeadDim>
__device__ __forceinline__ void pv_stage(WarpState<HeadDim> &state, const PendingPV &in, uint32_t smem_v,
                                         uint32_t v_lane_offset) {
    constexpr uint32_t kRowBytes = SmemLayout<HeadDim>::kVRowBytes;
#pragma unroll
    for (uint32_t b = 0; b < WarpState<HeadDim>::kOutBlocks; ++b) {
        uint32_t v_keys_lo[4];  // keys 0-31: {ch 0-7 k0-15, ch 0-7 k16-31, ch 8-15 k0-15, ch 8-15 k16-31}
        uint32_t v_keys_hi[4];  // keys 32-63, same order
        ldmatrix_x4(v_keys_lo, fragment_address<kRowBytes>(smem_v, v_lane_offset, b, 0));
        ldmatrix_x4(v_keys_hi, fragment_address<kRowBytes>(smem_v, v_lane_offset, b, 1));
#pragma unroll
        for (uint32_t fq = 0; fq < 2; ++fq) {
            uint32_t h_ch0[2];  // channels 16b + 0..7: {row g, row g+8}, each two f16 (2t, 2t+1)
            uint32_t h_ch8[2];  // channels 16b + 8..15
            mma_e4m3_f16acc_m16n8k32_first(h_ch0, in.p[fq][0], v_keys_lo[0], v_keys_lo[1]);
            mma_e4m3_f16acc_m16n8k32_accumulate(h_ch0, in.p[fq][1], v_keys_hi[0], v_keys_hi[1]);
            mma_e4m3_f16acc_m16n8k32_first(h_ch8, in.p[fq][0], v_keys_lo[2], v_keys_lo[3]);
            mma_e4m3_f16acc_m16n8k32_accumulate(h_ch8, in.p[fq][1], v_keys_hi[2], v_keys_hi[3]);

            float *ro = state.ro[fq][b];
            const float o_g = in.o[fq][0];
            const float o_g8 = in.o[fq][1];
            ro[0] = __fmaf_rn(o_g, ro[0], f16_low_to_f32(h_ch0[0]));
            ro[1] = __fmaf_rn(o_g, ro[1], f16_high_to_f32(h_ch0[0]));
            ro[2] = __fmaf_rn(o_g8, ro[2], f16_low_to_f32(h_ch0[1]));
            ro[3] = __fmaf_rn(o_g8, ro[3], f16_high_to_f32(h_ch0[1]));
            ro[4] = __fmaf_rn(o_g, ro[4], f16_low_to_f32(h_ch8[0]));
            ro[5] = __fmaf_rn(o_g, ro[5], f16_high_to_f32(h_ch8[0]));
            ro[6] = __fmaf_rn(o_g8, ro[6], f16_low_to_f32(h_ch8[1]));
            ro[7] = __fmaf_rn(o_g8, ro[7], f16_high_to_f32(h_ch8[1]));
        }
    }
}

// End of the KV loop: quad-reduce d (quad_sum_rn: the 4 lanes agree bit for bit) and normalise RO by
// rcp.approx(d). Order as upstream: O = (RO * rcp(d)) * v_scale.
template <uint32_t HeadDim>
__device__ __forceinline__ void normalize(WarpState<HeadDim> &state) {
    float inverse[2][2];
#pragma unroll
    for (uint32_t fq = 0; fq < 2; ++fq) {
#pragma unroll
        for (uint32_t h = 0; h < 2; ++h) {
            state.d[fq][h] = quad_sum_rn(state.d[fq][h]);
            inverse[fq][h] = rcp_approx(state.d[fq][h]);
        }
    }
#pragma unroll
    for (uint32_t fq = 0; fq < 2; ++fq) {
#pragma unroll
        for (uint32_t b = 0; b < WarpState<HeadDim>::kOutBlocks; ++b) {
#pragma unroll
            for (uint32_t e = 0; e < 8; ++e) {
                state.ro[fq][b][e] = __fmul_rn(state.ro[fq][b][e], inverse[fq][Fragment::row_half(e)]);
            }
        }
    }
}

// Fused per-channel V scale: channel 16b + 8*(e/4) + 2t + (e%2).
template <uint32_t HeadDim>
__device__ __forceinline__ void apply_v_scale(WarpState<HeadDim> &state, const float *v_scale_head, uint32_t lane) {
#pragma unroll
    for (uint32_t b = 0; b < WarpState<HeadDim>::kOutBlocks; ++b) {
        const float2 lo = *reinterpret_cast<const float2 *>(v_scale_head + 16 * b + 2 * (lane % 4));
        const float2 hi = *reinterpret_cast<const float2 *>(v_scale_head + 16 * b + 8 + 2 * (lane % 4));
#pragma unroll
        for (uint32_t fq = 0; fq < 2; ++fq) {
            float *ro = state.ro[fq][b];
            ro[0] = __fmul_rn(ro[0], lo.x);
            ro[1] = __fmul_rn(ro[1], lo.y);
            ro[2] = __fmul_rn(ro[2], lo.x);
            ro[3] = __fmul_rn(ro[3], lo.y);
            ro[4] = __fmul_rn(ro[4], hi.x);
            ro[5] = __fmul_rn(ro[5], hi.y);
            ro[6] = __fmul_rn(ro[6], hi.x);
            ro[7] = __fmul_rn(ro[7], hi.y);
        }
    }
}

// Base-2 LSE of the lane's row 8t + g (fq = t/2, h = t%2): lg2(d) + m, net of the 8.807 offset because m
// carries it too. Needs the quad-reduced d of normalize().
template <uint32_t HeadDim>
__device__ __forceinline__ float row_lse(const WarpState<HeadDim> &state, uint32_t lane) {
    const uint32_t t = lane % 4;
    const uint32_t fq = t / 2;
    const uint32_t h = t % 2;
    const float d = fq == 0 ? (h == 0 ? state.d[0][0] : state.d[0][1]) : (h == 0 ? state.d[1][0] : state.d[1][1]);
    const float m = fq == 0 ? (h == 0 ? state.m[0][0] : state.m[0][1]) : (h == 0 ? state.m[1][0] : state.m[1][1]);
    return __fadd_rn(lg2_approx(d), m);
}

}  // namespace s2tp
