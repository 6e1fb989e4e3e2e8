// The time stage's summarize hook (StageWork::summarize): a time checkpoint in words, over one workload
// (figures/time_figures.h's printer) or a workload set (figures/set_time_figures.h's), whichever the
// checkpoint holds; neither printer knows the other.
#pragma once

#include "formats/checkpoint_store.h"
#include "pipeline/cli.h"

namespace s2tp {

void print_time_checkpoint(const Checkpoint &checkpoint, const Reporter &reporter);

}  // namespace s2tp
