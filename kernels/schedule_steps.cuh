// The step vocabulary schedules are written in: one object per warp that holds the warp's softmax
// hand-off (PendingPV) and the current tile's k_scale, and offers the schedule's steps by name.
//
//   issue_q(), issue_k<Bounded>(j), issue_next_k<Bounded>(j) (K of j+1), issue_k_bounded_if_last(j),
//   issue_next_k_bounded_if_last(j), issue_v(j), issue_v_into(buffer, j)
//       one cp.async group each, committed; an issue of K also fetches that tile's k_scale (a plain load
//       the next qk_softmax uses), so "issue K of tile j" is all a schedule says about K.
//   land_copies<Pending>()   cp.async.wait_group Pending: this thread's copies but the newest Pending
//   cta_barrier()            __syncthreads: after it, the landed copies of every thread are visible
//   qk_softmax<Kind>(j), qk_softmax_any_kind(j)   QK^T of tile j (Q and K smem) and its online softmax
//   pv(), pv_from(buffer)    PV of the tile whose softmax ran last, against the V tile in smem
//   finish()                 end of the schedule (after its final barrier)
//
// Every step is stamped (phase_stamps.cuh): copy waits, CTA barriers, QK+softmax, PV, copy issue, and
// the whole schedule from construction to finish(). Without S2TP_PHASE_TIMING the stamps are empty and
// a step is exactly the code it names: the two schedules written by hand before these steps existed
// compile to the same PTX in steps (tests/test_kernel_ptx.cpp; kernels/NOTES.md says what that took).
//
// Contract with the epilogue (run_attention_cta): a schedule ends with a CTA barrier that follows every
// warp's last PV, because the O staging overwrites Q, K and V.
#pragma once

#include <cstdint>

#include "phase_stamps.cuh"
#include "smem_tiles.cuh"
#include "softmax_state.cuh"

namespace s2tp {

template <typename Cta>
class ScheduleSteps {
public:
    using State = typename Cta::State;

    // `pending` is the warp's softmax -> PV hand-off; the schedule owns it (a local of its own, which
    // keeps the PTX that of the hand-written schedules: as a member here it is split differently).
    __device__ __forceinline__ ScheduleSteps(const Cta &cta, State &state, PendingPV &pending)
        : cta_(cta), state_(state), pending_(pending), stamps_(cta.warp, cta.lane),
          schedule_start_(PhaseStamps::now()) {}

    __device__ __forceinline__ uint32_t num_tiles() const { return cta_.num_tiles; }
    // Warps {0,1} = pair A, {2,3} = pair B (they sit on different SM sub-partitions).
    __device__ __forceinline__ bool in_pair_a() const { return cta_.warp < 2; }
    __device__ __forceinline__ uint32_t v_buffer() const { return cta_.v_buffer(); }

    // ---- copies ----

    __device__ __forceinline__ void issue_q() {
        const long long start = PhaseStamps::now();
        cta_.issue_q_load();
        cp_async_commit();
        stamps_.close(S2TP_STEP_COPY_ISSUE, start);
    }

    // K of `tile`; Bounded: rows at or past len_kv are not copied (needed for the last tile only).
    template <bool Bounded>
    __device__ __forceinline__ void issue_k(uint32_t tile) {
        const long long start = PhaseStamps::now();
        cta_.template issue_k_load<Bounded>(tile);
        commit_k(tile);
        stamps_.close(S2TP_STEP_COPY_ISSUE, start);
    }

    // K of tile `tile` + 1, the form a loop over the current tile uses.
    template <bool Bounded>
    __device__ __forceinline__ void issue_next_k(uint32_t tile) {
        const long long start = PhaseStamps::now();
        cta_.template issue_k_load<Bounded>(tile + 1);
        commit_k(tile + 1);
        stamps_.close(S2TP_STEP_COPY_ISSUE, start);
    }

    // Bounded exactly when the tile is the last one, decided at run time.
    __device__ __forceinline__ void issue_k_bounded_if_last(uint32_t tile) {
        const long long start = PhaseStamps::now();
        if (tile + 1 == cta_.num_tiles) {
            cta_.template issue_k_load<true>(tile);
        } else {
            cta_.template issue_k_load<false>(tile);
        }
        commit_k(tile);
        stamps_.close(S2TP_STEP_COPY_ISSUE, start);
    }

    __device__ __forceinline__ void issue_next_k_bounded_if_last(uint32_t tile) {
        const long long start = PhaseStamps::now();
        if (tile + 2 == cta_.num_tiles) {
            cta_.template issue_k_load<true>(tile + 1);
        } else {
            cta_.template issue_k_load<false>(tile + 1);
        }
        commit_k(tile + 1);
        stamps_.close(S2TP_STEP_COPY_ISSUE, start);
    }

    __device__ __forceinline__ void issue_v(uint32_t tile) {
        const long long start = PhaseStamps::now();
        cta_.issue_v_load(tile);
        cp_async_commit();
        stamps_.close(S2TP_STEP_COPY_ISSUE, start);
    }

    // Into another V buffer of Cta::kVTileBytes (shared address), for a schedule that keeps two.
    __device__ __forceinline__ void issue_v_into(uint32_t buffer, uint32_t tile) {
        const long long start = PhaseStamps::now();
        cta_.issue_v_load_into(buffer, tile);
        cp_async_commit();
        stamps_.close(S2TP_STEP_COPY_ISSUE, start);
    }

    // ---- waits ----

    template <int Pending>
    __device__ __forceinline__ void land_copies() {
        const long long start = PhaseStamps::now();
        cp_async_wait<Pending>();
        stamps_.close(S2TP_STEP_COPY_WAIT, start);
    }

    __device__ __forceinline__ void cta_barrier() {
        const long long start = PhaseStamps::now();
        __syncthreads();
        stamps_.close(S2TP_STEP_BARRIER, start);
    }

    // ---- compute (this warp's rows only) ----

    template <TileKind Kind>
    __device__ __forceinline__ void qk_softmax(uint32_t tile) {
        const long long start = PhaseStamps::now();
        cta_.template qk_softmax<Kind>(tile, k_scale_, state_, pending_);
        stamps_.close(S2TP_STEP_QK_SOFTMAX, start);
    }

    // The tile's kind chosen at run time (one copy of the QK/softmax code for every tile).
    __device__ __forceinline__ void qk_softmax_any_kind(uint32_t tile) {
        const long long start = PhaseStamps::now();
        cta_.qk_softmax_any_kind(tile, k_scale_, state_, pending_);
        stamps_.close(S2TP_STEP_QK_SOFTMAX, start);
    }

    __device__ __forceinline__ void pv() {
        const long long start = PhaseStamps::now();
        cta_.pv(state_, pending_);
        stamps_.close(S2TP_STEP_PV, start);
    }

    __device__ __forceinline__ void pv_from(uint32_t buffer) {
        const long long start = PhaseStamps::now();
        cta_.pv_from(buffer, state_, pending_);
        stamps_.close(S2TP_STEP_PV, start);
    }

    __device__ __forceinline__ void finish() const { stamps_.close(S2TP_STEP_SCHEDULE, schedule_start_); }

private:
    // Closes the K group and fetches the tile's k_scale. Each caller spells the tile index where it uses
    // it (`tile + 1` twice rather than once into a shared local), as the hand-written schedules did: NVVM
    // folds (tile + 1) * 64 into tile * 64 + 64 only when the sum has one user, so sharing it would
    // change the PTX.
    __device__ __forceinline__ void commit_k(uint32_t tile) {
        cp_async_commit();
        k_scale_ = cta_.k_scale_of(tile);
    }

    const Cta &cta_;
    State &state_;
    PendingPV &pending_;  // written by this warp's softmax, read by its next PV
    float k_scale_;      // of the tile whose K was issued last
    PhaseStamps stamps_;
    long long schedule_start_;
};

}  // namespace s2tp
