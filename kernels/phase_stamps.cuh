// Device side of the phase log (phase_log.h): per warp, the clock64() cycles each schedule step took.
//
// Built with -DS2TP_PHASE_TIMING, every step of schedule_steps.cuh reads clock64() before and after
// itself, and lane 0 of the warp adds the difference and a count of 1 to
//   s2tp_phase_log[(cta * S2TP_PHASE_LOG_WARPS + warp) * S2TP_PHASE_STEPS + step]
// with fire-and-forget reductions (red.relaxed.gpu.global.add.u64: no result, so nothing waits for them).
// cta is the CTA's linear index, blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z); CTAs at
// or past S2TP_PHASE_LOG_MAX_CTAS log nothing. The log is a plain extern "C" __device__ array, so its
// PTX/ELF name is S2TP_PHASE_LOG_SYMBOL and cuModuleGetGlobal finds it; so is the schedule's record,
// S2TP_PHASE_SCHEDULE_SYMBOL, which record_schedule fills from the schedule's name() and warp_role().
//
// Without the macro PhaseStamps is empty and every member compiles to nothing: the PTX is that of the
// plain build (tests/test_kernel_ptx.cpp holds it to the recorded digests).
//
// What a stamp costs: two S2R/CS2R clock reads per step for every lane and two reductions for lane 0,
// plus one 64-bit register for the warp's slot pointer and one for the open step's start. clock64()
// is ordered against the volatile asm of the steps (cp.async, ldmatrix, mma, bar.sync), not against
// plain arithmetic, so a few ALU instructions may be counted in a neighbouring step.
#pragma once

#include <cstdint>

#include "phase_log.h"

#ifdef S2TP_PHASE_TIMING
extern "C" {
__device__ s2tp_phase_slot s2tp_phase_log[S2TP_PHASE_LOG_SLOTS];
__device__ s2tp_schedule_record s2tp_phase_schedule;
}
#endif

namespace s2tp {

// CTA 0 (linear index 0) records what Schedule says of itself: lane 0 of each warp its role, warp 0 the
// name (cut to S2TP_SCHEDULE_NAME_BYTES - 1 characters). Nothing without S2TP_PHASE_TIMING.
template <typename Schedule>
__device__ __forceinline__ void record_schedule([[maybe_unused]] uint32_t warp, [[maybe_unused]] uint32_t lane) {
#ifdef S2TP_PHASE_TIMING
    if (lane != 0 || blockIdx.x != 0 || blockIdx.y != 0 || blockIdx.z != 0) {
        return;
    }
    s2tp_phase_schedule.warp_role[warp] = Schedule::warp_role(warp);
    if (warp == 0) {
        const char *name = Schedule::name();
        uint32_t length = 0;
        for (; length + 1 < S2TP_SCHEDULE_NAME_BYTES && name[length] != '\0'; ++length) {
            s2tp_phase_schedule.name[length] = name[length];
        }
        s2tp_phase_schedule.name[length] = '\0';
    }
#endif
}

#ifdef S2TP_PHASE_TIMING

class PhaseStamps {
public:
    __device__ __forceinline__ PhaseStamps(uint32_t warp, uint32_t lane) {
        const uint32_t cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
        slots_ = (lane == 0 && cta < S2TP_PHASE_LOG_MAX_CTAS)
                     ? s2tp_phase_log + (cta * S2TP_PHASE_LOG_WARPS + warp) * S2TP_PHASE_STEPS
                     : nullptr;
    }

    __device__ __forceinline__ static long long now() { return clock64(); }

    // Adds now() - start to `step`'s cycles and 1 to its count.
    __device__ __forceinline__ void close(s2tp_phase_step step, long long start) const {
        const long long end = clock64();
        if (slots_ != nullptr) {
            add_without_result(&slots_[step].cycles, static_cast<unsigned long long>(end - start));
            add_without_result(&slots_[step].count, 1ull);
        }
    }

    // Runs `body` as one occurrence of `step`.
    template <typename Body>
    __device__ __forceinline__ void time(s2tp_phase_step step, Body &&body) const {
        const long long start = now();
        body();
        close(step, start);
    }

private:
    // red, not atom: no result comes back, so nothing in the warp waits for the add.
    __device__ __forceinline__ static void add_without_result(unsigned long long *address, unsigned long long value) {
        asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;\n" ::"l"(__cvta_generic_to_global(address)),
                     "l"(value));
    }

    s2tp_phase_slot *slots_;
};

#else

class PhaseStamps {
public:
    __device__ __forceinline__ PhaseStamps(uint32_t, uint32_t) {}
    __device__ __forceinline__ static long long now() { return 0; }
    __device__ __forceinline__ void close(s2tp_phase_step, long long) const {}
    template <typename Body>
    __device__ __forceinline__ void time(s2tp_phase_step, Body &&body) const {
        body();
    }
};

#endif

}  // namespace s2tp
