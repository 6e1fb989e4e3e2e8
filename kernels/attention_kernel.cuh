// The attention kernel body, shared by every entry point and both schedules:
//   run_attention_cta<HeadDim, OutputType, Causal, Schedule>(params)
// sets up the CTA context (indices, pointers, scales, shared-memory addresses), lets the Schedule drive
// the KV loop through the context's stage functions, then runs the epilogue (normalise, V scale,
// convert, store O, LSE). attention_entry.cu wraps it in the extern "C" __global__ entry points.
//
// CTA geometry (upstream's): 128 query rows x 64-key tiles, block (32, 4, 1) with threadIdx.y = warp,
// grid (ceil(Nq/128), Hq, B). Warp w owns query rows 32w..32w+31 of the CTA for the whole kernel.
#pragma once

#include <cstdint>

#include "sage2tp_abi.h"
#include "mma_fragments.cuh"
#include "phase_stamps.cuh"
#include "smem_tiles.cuh"
#include "softmax_state.cuh"

namespace s2tp {

// Everything one CTA needs to run a stage. A Schedule sees only the interface in the public section;
// the warps of a CTA hold identical values except `warp` and the lane-dependent offsets.
template <uint32_t HeadDim, bool Causal>
class AttentionCta {
public:
    using State = WarpState<HeadDim>;
    static constexpr uint32_t kHeadDim = HeadDim;
    static constexpr uint32_t kVTileBytes = SmemLayout<HeadDim>::kVTileBytes;

    uint32_t warp;       // 0..3, threadIdx.y
    uint32_t lane;       // 0..31, threadIdx.x
    uint32_t num_tiles;  // n: KV tiles this CTA visits (per CTA, identical for all warps)

    __device__ __forceinline__ AttentionCta(const s2tp_attn_params &p, uint8_t *smem) {
        warp = threadIdx.y;
        lane = threadIdx.x;
        const uint32_t bx = blockIdx.x;
        const uint32_t head = blockIdx.y;
        const uint32_t batch = blockIdx.z;
        const uint32_t kv_head = head / (p.heads_q / p.heads_kv);

        // Causal CTAs stop at the diagonal: keys past the CTA's last query row are all masked.
        const uint32_t kv_extent = Causal ? min(p.len_kv, (bx + 1) * S2TP_CTA_Q) : p.len_kv;
        num_tiles = (kv_extent + S2TP_CTA_K - 1) / S2TP_CTA_K;
        len_kv_ = p.len_kv;

        smem_ = smem;
        smem_q_ = shared_address(smem) + SmemLayout<HeadDim>::kQOffset;
        smem_k_ = shared_address(smem) + SmemLayout<HeadDim>::kKOffset;
        smem_v_ = shared_address(smem) + SmemLayout<HeadDim>::kVOffset;
        q_lane_offset_ = q_fragment_offset<HeadDim>(warp, lane);
        k_lane_offset_ = k_fragment_offset<HeadDim>(lane);
        v_lane_offset_ = v_fragment_offset<HeadDim>(lane);

        // All index arithmetic is 32-bit, as upstream's (the ABI caps tensors at 2^32 elements).
        q_cta_ = p.q + batch * p.stride_bz_q + head * p.stride_h_q + bx * S2TP_CTA_Q * p.stride_seq_q;
        q_stride_ = p.stride_seq_q;
        q_valid_rows_ = p.len_q - bx * S2TP_CTA_Q;
        k_head_ = p.k + batch * p.stride_bz_k + kv_head * p.stride_h_k;
        k_stride_ = p.stride_seq_k;
        v_head_ = p.v + batch * p.stride_bz_v + kv_head * p.stride_h_v;
        v_stride_d_ = p.stride_d_v;

        const uint32_t q_groups = S2TP_Q_SCALE_GROUPS(p.len_q);
        const uint32_t k_blocks = S2TP_K_SCALE_GROUPS(p.len_kv);
        q_scale_ = p.q_scale[batch * p.heads_q * q_groups + head * q_groups + bx * S2TP_WARPS_PER_CTA + warp];
        k_scale_row_ = p.k_scale + batch * p.heads_kv * k_blocks + kv_head * k_blocks;
        orig_scale_ = __fmul_rn(p.sm_scale, kLog2e);

        mask_q_row_ = bx * S2TP_CTA_Q + S2TP_WARP_Q * warp + lane / 4;
    }

    // ---- copies (cp.async; the schedule commits, waits and places the barriers) ----

    __device__ __forceinline__ void issue_q_load() const {
        load_q_tile<HeadDim>(smem_q_, q_cta_, q_stride_, q_valid_rows_, warp, lane);
    }

    // Bounded: rows at or past len_kv are not copied. Only the last tile may need it.
    template <bool Bounded>
    __device__ __forceinline__ void issue_k_load(uint32_t tile) const {
        load_k_tile<HeadDim, Bounded>(smem_k_, k_head_ + tile * S2TP_CTA_K * k_stride_, k_stride_,
                                      len_kv_ - tile * S2TP_CTA_K, warp, lane);
    }

    __device__ __forceinline__ void issue_v_load(uint32_t tile) const { issue_v_load_into(smem_v_, tile); }

    // The same into another V buffer of kVTileBytes (shared address), for a schedule that keeps two.
    __device__ __forceinline__ void issue_v_load_into(uint32_t smem_v, uint32_t tile) const {
        load_v_tile<HeadDim>(smem_v, v_head_ + tile * S2TP_CTA_K, v_stride_d_, warp, lane);
    }

    // The V buffer of the ABI's dynamic shared memory.
    __device__ __forceinline__ uint32_t v_buffer() const { return smem_v_; }

    // k_scale of a tile; a plain global load the schedule can issue ahead of its use.
    __device__ __forceinline__ float k_scale_of(uint32_t tile) const { return k_scale_row_[tile]; }

    // ---- stages (one warp, its own rows) ----

    // QK^T of `tile` (reads Q and K smem) and its online softmax with the numerics of Kind.
    template <TileKind Kind>
    __device__ __forceinline__ void qk_softmax(uint32_t tile, float tile_k_scale, State &state,
                                               PendingPV &pending) const {
        int32_t scores[2][4][8];
        compute_scores<HeadDim>(scores, smem_q_, q_lane_offset_, smem_k_, k_lane_offset_);
        softmax_with_kind<Kind>(scores, tile, tile_k_scale, state, pending);
    }

    // The same with the kind chosen at run time from the tile index (one copy of the QK code).
    __device__ __forceinline__ void qk_softmax_any_kind(uint32_t tile, float tile_k_scale, State &state,
                                                        PendingPV &pending) const {
        int32_t scores[2][4][8];
        compute_scores<HeadDim>(scores, smem_q_, q_lane_offset_, smem_k_, k_lane_offset_);
        if (tile + 2 < num_tiles) {
            softmax_with_kind<TileKind::kMain>(scores, tile, tile_k_scale, state, pending);
        } else if (tile + 2 == num_tiles) {
            softmax_with_kind<TileKind::kPenultimate>(scores, tile, tile_k_scale, state, pending);
        } else {
            softmax_with_kind<TileKind::kLast>(scores, tile, tile_k_scale, state, pending);
        }
    }

    // PV of the tile whose P is in `pending`, against the V tile currently in smem.
    __device__ __forceinline__ void pv(State &state, const PendingPV &pending) const {
        pv_from(smem_v_, state, pending);
    }

    // The same against the V tile in another buffer (laid out like the V region).
    __device__ __forceinline__ void pv_from(uint32_t smem_v, State &state, const PendingPV &pending) const {
        pv_stage<HeadDim>(state, pending, smem_v, v_lane_offset_);
    }

    // ---- epilogue (after the schedule's final barrier: O staging aliases Q, K and V) ----

    template <typename OutputType>
    __device__ __forceinline__ void write_output(State &state, const s2tp_attn_params &p) const {
        const uint32_t bx = blockIdx.x;
        const uint32_t head = blockIdx.y;
        const uint32_t batch = blockIdx.z;
        const uint32_t kv_head = head / (p.heads_q / p.heads_kv);

        normalize<HeadDim>(state);
        apply_v_scale<HeadDim>(state, p.v_scale + batch * p.heads_kv * HeadDim + kv_head * HeadDim, lane);

        // Channel 16b + 2t of row 16fq + 8h + g is chunk 2b (+1 for channels 8..15), word t.
        const uint32_t g = lane / 4;
        const uint32_t t = lane % 4;
#pragma unroll
        for (uint32_t fq = 0; fq < 2; ++fq) {
            const uint32_t row = S2TP_WARP_Q * warp + 16 * fq + g;
#pragma unroll
            for (uint32_t b = 0; b < State::kOutBlocks; ++b) {
                const float *ro = state.ro[fq][b];
                stage_o_word<HeadDim>(smem_, row, 2 * b, t, pack_output_pair<OutputType>(ro[0], ro[1]));
                stage_o_word<HeadDim>(smem_, row + 8, 2 * b, t, pack_output_pair<OutputType>(ro[2], ro[3]));
                stage_o_word<HeadDim>(smem_, row, 2 * b + 1, t, pack_output_pair<OutputType>(ro[4], ro[5]));
                stage_o_word<HeadDim>(smem_, row + 8, 2 * b + 1, t, pack_output_pair<OutputType>(ro[6], ro[7]));
            }
        }
        __syncwarp();

        uint8_t *o_cta = reinterpret_cast<uint8_t *>(p.o) +
                         sizeof(OutputType) * (batch * p.stride_bz_o + head * p.stride_h_o +
                                               bx * S2TP_CTA_Q * p.stride_seq_o);
        store_o_rows<HeadDim>(smem_, o_cta, sizeof(OutputType) * p.stride_seq_o, q_valid_rows_, warp, lane);

        if (p.lse != nullptr) {
            const uint32_t row = S2TP_WARP_Q * warp + 8 * t + g;
            if (row < q_valid_rows_) {
                p.lse[batch * p.heads_q * p.len_q + head * p.len_q + bx * S2TP_CTA_Q + row] =
                    row_lse<HeadDim>(state, lane);
            }
        }
    }

private:
    template <TileKind Kind>
    __device__ __forceinline__ void softmax_with_kind(const int32_t (&scores)[2][4][8], uint32_t tile,
                                                      float tile_k_scale, State &state, PendingPV &pending) const {
        const float dequant = __fmul_rn(q_scale_, tile_k_scale);
        const float folded_scale = __fmul_rn(orig_scale_, dequant);
        const MaskCoordinates mask{mask_q_row_, tile * S2TP_CTA_K + 2 * (lane % 4), len_kv_};
        softmax_stage<HeadDim, Kind, Causal>(scores, state, pending, dequant, folded_scale, orig_scale_, mask);
    }

    uint8_t *smem_;
    uint32_t smem_q_, smem_k_, smem_v_;
    uint32_t q_lane_offset_, k_lane_offset_, v_lane_offset_;
    const int8_t *q_cta_;
    uint32_t q_stride_, q_valid_rows_;
    const int8_t *k_head_;
    uint32_t k_stride_;
    const uint8_t *v_head_;
    uint32_t v_stride_d_;
    const float *k_scale_row_;
    float q_scale_, orig_scale_;
    uint32_t len_kv_;
    uint32_t mask_q_row_;
};

template <uint32_t HeadDim, typename OutputType, bool Causal, typename Schedule>
__device__ __forceinline__ void run_attention_cta(const s2tp_attn_params &p) {
    extern __shared__ __align__(128) uint8_t attention_smem[];
    AttentionCta<HeadDim, Causal> cta(p, attention_smem);
    WarpState<HeadDim> state;
    state.init();
    record_schedule<Schedule>(cta.warp, cta.lane);
    Schedule::run(cta, state);
    cta.template write_output<OutputType>(state, p);
}

}  // namespace s2tp
