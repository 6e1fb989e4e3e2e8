// The attention cubin: the 8 extern "C" entry points of sage2tp_abi.h, all built with one schedule.
// Baseline = this file as is; each candidate = this file with one data/patches/temporal-pair*.patch applied,
// which changes only the ActiveSchedule line below. Build flags are upstream's: -O3 --use_fast_math.
#include "attention_kernel.cuh"
#include "schedule.cuh"

namespace s2tp {

using ActiveSchedule = SequentialSchedule;

}  // namespace s2tp

#define S2TP_ATTENTION_ENTRY(name, head_dim, dtype, output_type, causal)                                \
    extern "C" __global__ void name(const s2tp_attn_params params) {                                   \
        s2tp::run_attention_cta<head_dim, output_type, causal, s2tp::ActiveSchedule>(params);           \
    }

S2TP_ATTN_ENTRIES(S2TP_ATTENTION_ENTRY)
