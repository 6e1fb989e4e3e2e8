// time --ncu: one launch of each variant of one workload under Nsight Compute (tools/ncu_profile.h), its
// figures in the time checkpoint.
#pragma once

#include "figures/time_figures.h"
#include "pipeline/stage_pipeline.h"
#include "stages/time/inputs.h"

namespace s2tp {

// --ncu: one launch of each variant under Nsight Compute, its figures and the largest changes.
void add_ncu_profiles(const TimeStageInputs &in, TimeFigures &f, StageResult &result, const Reporter &reporter);

}  // namespace s2tp
