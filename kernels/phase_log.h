/*
 * sage2tp phase log: where a schedule's warps spend their cycles, for telling "a pair waits for the
 * slower pair" (time in CTA barriers) from "a copy is exposed" (time waiting for cp.async groups).
 *
 * Only cubins compiled with -DS2TP_PHASE_TIMING log anything; without it every stamp compiles to
 * nothing and the PTX is that of the plain build, so baseline and candidate are instrumented alike or
 * not at all. An instrumented kernel adds, per step and warp, the clock64() cycles the step took to
 * s2tp_phase_log[cta][warp][step] (lane 0 only, with one atomic add each for cycles and count, which
 * the launch does not wait for). CTAs whose linear index is S2TP_PHASE_LOG_MAX_CTAS or more log
 * nothing. The host finds the array by name (cuModuleGetGlobal), zeroes it before the launch and reads
 * it after. Beside it, CTA 0 records what the schedule says of itself (s2tp_schedule_record: its name
 * and each warp's role), so that the report labels the warps without knowing any schedule. Plain C,
 * like sage2tp_abi.h, so the host reader includes it too.
 */
#ifndef SAGE2TP_PHASE_LOG_H
#define SAGE2TP_PHASE_LOG_H

#include <stdint.h>

#define S2TP_PHASE_LOG_SYMBOL "s2tp_phase_log"
#define S2TP_PHASE_LOG_MAX_CTAS 16384u
#define S2TP_PHASE_LOG_WARPS 4u

/* The steps a schedule's time splits into; a warp's steps do not overlap, and their sum is at most
 * S2TP_STEP_SCHEDULE, the whole of the warp's schedule from its first copy to its last barrier. */
enum s2tp_phase_step {
    S2TP_STEP_COPY_WAIT = 0,   /* cp.async.wait_group: waiting for K or V (or Q) to land */
    S2TP_STEP_BARRIER = 1,     /* a CTA barrier: waiting for the other warps */
    S2TP_STEP_QK_SOFTMAX = 2,  /* QK^T of a tile and its online softmax */
    S2TP_STEP_PV = 3,          /* the PV product of a tile */
    S2TP_STEP_COPY_ISSUE = 4,  /* issuing a tile's cp.async copies */
    S2TP_STEP_SCHEDULE = 5,    /* the whole schedule */
    S2TP_PHASE_STEPS = 6
};

typedef struct s2tp_phase_slot {
    unsigned long long cycles; /* clock64() cycles summed over the step's occurrences */
    unsigned long long count;  /* occurrences */
} s2tp_phase_slot;

/* A warp's part in its schedule, as the schedule declares it (schedule.cuh, warp_role). */
enum s2tp_warp_role {
    S2TP_WARP_ON_ITS_OWN = 0, /* the warp runs the same steps as every other, in step with them */
    S2TP_WARP_PAIR_A = 1,     /* one of two warp pairs that alternate their steps: the first ... */
    S2TP_WARP_PAIR_B = 2      /* ... and the second */
};

#define S2TP_PHASE_SCHEDULE_SYMBOL "s2tp_phase_schedule"
#define S2TP_SCHEDULE_NAME_BYTES 64u

/* Written by lane 0 of each warp of CTA 0 (linear index 0) before the schedule runs. */
typedef struct s2tp_schedule_record {
    char name[S2TP_SCHEDULE_NAME_BYTES];      /* the schedule's name, NUL-terminated */
    uint32_t warp_role[S2TP_PHASE_LOG_WARPS]; /* an s2tp_warp_role per warp */
} s2tp_schedule_record;

/* The device array's shape: [S2TP_PHASE_LOG_MAX_CTAS][S2TP_PHASE_LOG_WARPS][S2TP_PHASE_STEPS]. */
#define S2TP_PHASE_LOG_SLOTS (S2TP_PHASE_LOG_MAX_CTAS * S2TP_PHASE_LOG_WARPS * S2TP_PHASE_STEPS)

#endif /* SAGE2TP_PHASE_LOG_H */
