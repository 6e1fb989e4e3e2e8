// The warp schedules of the experiment. This is the ONLY place the baseline and the candidates differ;
// attention_entry.cu selects one of them.
//
// A schedule orders, for the 4 warps of a CTA, the copies (cp.async groups), the CTA barriers and each
// warp's two stages per KV tile: qk_softmax (reads Q and K smem) and pv (reads V smem). It must keep every
// warp's own sequence QK_j -> softmax_j -> PV_j in tile order; the numerics then cannot change, because no
// value ever crosses warps (reference section 7). It is written in the steps of schedule_steps.cuh, which
// also stamp it under S2TP_PHASE_TIMING. It ends with a CTA barrier after every warp's last PV, because
// the O staging overwrites Q, K and V.
//
// A schedule also says what it is, for the phase report (phase_log.h): name() and each warp's
// warp_role(warp). Instrumented kernels record them (phase_stamps.cuh, record_schedule); plain builds
// never call them, so they leave the PTX alone.
#pragma once

#include <cstdint>

#include "phase_log.h"
#include "schedule_steps.cuh"

namespace s2tp {

// Upstream's pipeline (reference section 4): single-buffered K and V, 4 CTA barriers per tile, the K_{j+1}
// copy overlapping PV_j and the V_{j+1} copy overlapping QK/softmax of tile j+1. Commit groups in order:
// Q, K0, V0, then K_{j+1}, V_{j+1} per tile, so "wait_group 1" always means "all but the newest".
struct SequentialSchedule {
    __device__ static const char *name() { return "SequentialSchedule"; }
    __device__ static constexpr s2tp_warp_role warp_role(uint32_t) { return S2TP_WARP_ON_ITS_OWN; }

    template <typename Cta, typename State>
    __device__ __forceinline__ static void run(const Cta &cta, State &state) {
        PendingPV pending;
        ScheduleSteps<Cta> steps(cta, state, pending);
        const uint32_t n = steps.num_tiles();

        steps.issue_q();
        steps.template land_copies<0>();
        steps.cta_barrier();

        steps.template issue_k<true>(0);
        steps.issue_v(0);

#pragma unroll 1
        for (uint32_t tile = 0; tile + 2 < n; ++tile) {
            steps.template land_copies<1>();  // K_tile landed (V_tile may still be in flight)
            steps.cta_barrier();
            steps.template qk_softmax<TileKind::kMain>(tile);
            steps.cta_barrier();  // every warp is done reading K_tile
            steps.template issue_next_k<false>(tile);
            steps.template land_copies<1>();  // V_tile landed
            steps.cta_barrier();
            steps.pv();
            steps.cta_barrier();  // every warp is done reading V_tile
            steps.issue_v(tile + 1);
        }

        if (n > 1) {
            const uint32_t tile = n - 2;
            steps.template land_copies<1>();
            steps.cta_barrier();
            steps.template qk_softmax<TileKind::kPenultimate>(tile);
            steps.cta_barrier();
            steps.template issue_next_k<true>(tile);
            steps.template land_copies<1>();
            steps.cta_barrier();
            steps.pv();
            steps.cta_barrier();
            steps.issue_v(tile + 1);
        }

        steps.template land_copies<1>();
        steps.cta_barrier();
        steps.template qk_softmax<TileKind::kLast>(n - 1);
        steps.template land_copies<0>();
        steps.cta_barrier();
        steps.pv();
        steps.cta_barrier();  // the O staging may now overwrite Q, K and V
        steps.finish();
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
    __device__ static const char *name() { return "TemporalPairSchedule"; }
    // The split ScheduleSteps::in_pair_a makes (warps 0 and 1 are pair A). Not one function for both:
    // calling one from in_pair_a renumbers the double-V schedule's PTX registers (same SASS), and the
    // recorded PTX must stay.
    __device__ static constexpr s2tp_warp_role warp_role(uint32_t warp) {
        return warp < 2 ? S2TP_WARP_PAIR_A : S2TP_WARP_PAIR_B;
    }

    template <typename Cta, typename State>
    __device__ __forceinline__ static void run(const Cta &cta, State &state) {
        PendingPV pending;
        ScheduleSteps<Cta> steps(cta, state, pending);
        const uint32_t n = steps.num_tiles();
        const bool pair_a = steps.in_pair_a();

        steps.issue_q();
        steps.template land_copies<0>();
        steps.cta_barrier();

        steps.issue_k_bounded_if_last(0);

#pragma unroll 1
        for (uint32_t phase = 0; phase <= 2 * n; ++phase) {
            const uint32_t tile = phase / 2;
            const bool first_phase = (phase % 2) == 0;

            steps.template land_copies<0>();
            steps.cta_barrier();

            if (pair_a == first_phase) {
                if (tile < n) {
                    steps.qk_softmax_any_kind(tile);
                }
            } else if (phase > 0) {
                steps.pv();
            }

            steps.cta_barrier();

            if (first_phase) {
                if (tile < n) {
                    steps.issue_v(tile);
                }
            } else if (tile + 1 < n) {
                steps.issue_next_k_bounded_if_last(tile);
            }
        }
        steps.finish();
    }
};

// The hypothesis test of issue 13: the temporal pair with a second V buffer, so that V_j's copy is no
// longer exposed between two barriers. It breaks the experiment's single-buffer rule on purpose: the
// second buffer is static __shared__ memory of this schedule only (the launch's dynamic shared memory,
// an ABI constant, stays as it is; the static size shows in build's resource comparison).
// Tile j's V lives in buffer j % 2: buffer 0 is the V region of the dynamic smem, buffer 1 the static one.
// Phases, barriers and roles are the temporal pair's, one thing moves: V_{j+1} is issued together with
// K_{j+1} after phase 2 of tile j, and
//   top of phase 1 of j:  cp.async.wait_group 1; CTA barrier   (K_j landed; V_j may still be in flight)
//   top of phase 2 of j:  cp.async.wait_group 0; CTA barrier   (V_j landed, copied during phase 1)
// V_{j+1}'s buffer last held V_{j-1}, read by pair B in phase 1 of j, so the barriers that close phase 1
// and phase 2 of j separate its last read from the copy. Per warp the order stays QK_j, softmax_j, PV_j
// for j = 0..n-1.
struct TemporalPairDoubleVSchedule {
    __device__ static const char *name() { return "TemporalPairDoubleVSchedule"; }
    __device__ static constexpr s2tp_warp_role warp_role(uint32_t warp) { return TemporalPairSchedule::warp_role(warp); }

    template <typename Cta, typename State>
    __device__ __forceinline__ static void run(const Cta &cta, State &state) {
        __shared__ __align__(128) uint8_t second_v_buffer[Cta::kVTileBytes];
        PendingPV pending;
        ScheduleSteps<Cta> steps(cta, state, pending);
        const uint32_t n = steps.num_tiles();
        const bool pair_a = steps.in_pair_a();
        // A select, not an array: a run-time index into a local array would put it in local memory.
        const uint32_t first_v = steps.v_buffer();
        const uint32_t second_v = shared_address(second_v_buffer);
        const auto v_buffer_of = [&](uint32_t tile) { return tile % 2 == 0 ? first_v : second_v; };

        steps.issue_q();
        steps.template land_copies<0>();
        steps.cta_barrier();

        steps.issue_k_bounded_if_last(0);
        steps.issue_v_into(first_v, 0);

#pragma unroll 1
        for (uint32_t phase = 0; phase <= 2 * n; ++phase) {
            const uint32_t tile = phase / 2;
            const bool first_phase = (phase % 2) == 0;

            if (first_phase) {
                steps.template land_copies<1>();
            } else {
                steps.template land_copies<0>();
            }
            steps.cta_barrier();

            if (pair_a == first_phase) {
                if (tile < n) {
                    steps.qk_softmax_any_kind(tile);
                }
            } else if (phase > 0) {
                const uint32_t pv_tile = first_phase ? tile - 1 : tile;
                steps.pv_from(v_buffer_of(pv_tile));
            }

            steps.cta_barrier();

            if (!first_phase && tile + 1 < n) {
                steps.issue_next_k_bounded_if_last(tile);
                steps.issue_v_into(v_buffer_of(tile + 1), tile + 1);
            }
        }
        steps.finish();
    }
};

}  // namespace s2tp
