// The two warp schedules of the experiment. This is the ONLY place the baseline and the candidate differ;
// attention_entry.cu selects one of them.
//
// A schedule orders, for the 4 warps of a CTA, the copies (cp.async groups), the CTA barriers and each
// warp's two stages per KV tile: qk_softmax (reads Q and K smem) and pv (reads V smem). It must keep every
// warp's own sequence QK_j -> softmax_j -> PV_j in tile order; the numerics then cannot change, because no
// value ever crosses warps (reference section 7). Interface used, from AttentionCta:
//   warp, num_tiles, issue_q_load(), issue_k_load<Bounded>(tile), issue_v_load(tile), k_scale_of(tile),
//   qk_softmax<Kind>(tile, k_scale, state, pending), qk_softmax_any_kind(...), pv(state, pending).
// Contract with the epilogue: run() returns after a CTA barrier that follows every warp's last PV,
// because the O staging overwrites Q, K and V.
#pragma once

#include <cstdint>

#include "smem_tiles.cuh"
#include "softmax_state.cuh"

namespace s2tp {

// Upstream's pipeline (reference section 4): single-buffered K and V, 4 CTA barriers per tile, the K_{j+1}
// copy overlapping PV_j and the V_{j+1} copy overlapping QK/softmax of tile j+1. Commit groups in order:
// Q, K0, V0, then K_{j+1}, V_{j+1} per tile, so "wait_group 1" always means "all but the newest".
struct SequentialSchedule {
    template <typename Cta, typename State>
    __device__ __forceinline__ static void run(const Cta &cta, State &state) {
        PendingPV pending;
        const uint32_t n = cta.num_tiles;

        cta.issue_q_load();
        cp_async_commit();
        cp_async_wait<0>();
        __syncthreads();

        cta.template issue_k_load<true>(0);
        cp_async_commit();
        float k_scale = cta.k_scale_of(0);
        cta.issue_v_load(0);
        cp_async_commit();

#pragma unroll 1
        for (uint32_t tile = 0; tile + 2 < n; ++tile) {
            cp_async_wait<1>();  // K_tile landed (V_tile may still be in flight)
            __syncthreads();
            cta.template qk_softmax<TileKind::kMain>(tile, k_scale, state, pending);
            __syncthreads();  // every warp is done reading K_tile
            cta.template issue_k_load<false>(tile + 1);
            cp_async_commit();
            k_scale = cta.k_scale_of(tile + 1);
            cp_async_wait<1>();  // V_tile landed
            __syncthreads();
            cta.pv(state, pending);
            __syncthreads();  // every warp is done reading V_tile
            cta.issue_v_load(tile + 1);
            cp_async_commit();
        }

        if (n > 1) {
            const uint32_t tile = n - 2;
            cp_async_wait<1>();
            __syncthreads();
            cta.template qk_softmax<TileKind::kPenultimate>(tile, k_scale, state, pending);
            __syncthreads();
            cta.template issue_k_load<true>(tile + 1);
            cp_async_commit();
            k_scale = cta.k_scale_of(tile + 1);
            cp_async_wait<1>();
            __syncthreads();
            cta.pv(state, pending);
            __syncthreads();
            cta.issue_v_load(tile + 1);
            cp_async_commit();
        }

        cp_async_wait<1>();
        __syncthreads();
        cta.template qk_softmax<TileKind::kLast>(n - 1, k_scale, state, pending);
        cp_async_wait<0>();
        __syncthreads();
        cta.pv(state, pending);
        __syncthreads();  // the O staging may now overwrite Q, K and V
    }
};

// The candidate: warps {0,1} = pair A, {2,3} = pair B. Per KV tile j two phases,
//   phase 1: A does QK_j + softmax_j   while B does PV_{j-1} (its P and o carried from the previous phase 2)
//   phase 2: B does QK_j + softmax_j   while A does PV_j
// K and V stay single-buffered: K_j is read in both phases of tile j, V_j in phase 2 of j and phase 1 of
// j+1, so each copy is issued between the two phases that bracket it:
//   top of every phase:   cp.async.wait_group 0; CTA barrier          (the buffer just copied is visible)
//   after phase 1 of j:   CTA barrier; copy V_j   (V_{j-1} read by B for the last time)
//   after phase 2 of j:   CTA barrier; copy K_{j+1} (K_j read by B for the last time)
// Barriers are never inside a role branch. The loop runs 2n+1 phases: in the extra phase 1 of "tile n"
// pair A is idle and pair B drains its last PV, and the barrier after it protects the O staging.
// A warp's pending P/o is written by its softmax phase and consumed by its next PV phase, so one
// PendingPV serves both pairs. Per warp the order stays QK_j, softmax_j, PV_j for j = 0..n-1.
struct TemporalPairSchedule {
    template <typename Cta, typename State>
    __device__ __forceinline__ static void run(const Cta &cta, State &state) {
        PendingPV pending;
        const uint32_t n = cta.num_tiles;
        const bool pair_a = cta.warp < 2;

        cta.issue_q_load();
        cp_async_commit();
        cp_async_wait<0>();
        __syncthreads();

        if (n == 1) {
            cta.template issue_k_load<true>(0);
        } else {
            cta.template issue_k_load<false>(0);
        }
        cp_async_commit();
        float k_scale = cta.k_scale_of(0);

#pragma unroll 1
        for (uint32_t phase = 0; phase <= 2 * n; ++phase) {
            const uint32_t tile = phase / 2;
            const bool first_phase = (phase % 2) == 0;

            cp_async_wait<0>();
            __syncthreads();

            if (pair_a == first_phase) {
                if (tile < n) {
                    cta.qk_softmax_any_kind(tile, k_scale, state, pending);
                }
            } else if (phase > 0) {
                cta.pv(state, pending);
            }

            __syncthreads();

            if (first_phase) {
                if (tile < n) {
                    cta.issue_v_load(tile);
                    cp_async_commit();
                }
            } else if (tile + 1 < n) {
                if (tile + 2 == n) {
                    cta.template issue_k_load<true>(tile + 1);
                } else {
                    cta.template issue_k_load<false>(tile + 1);
                }
                cp_async_commit();
                k_scale = cta.k_scale_of(tile + 1);
            }
        }
    }
};

}  // namespace s2tp
