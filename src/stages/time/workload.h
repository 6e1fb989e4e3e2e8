// The time stage's body for one workload: the measurements (stages/time/processes.h), the output
// checks (stages/time/stop_rule.h), the figures, the reports, the pin and ncu, as one StageResult and
// its typed figures. The stage over one workload (stages/time/stage.h) and each shape of a set
// (stages/time/set.h) run it alike.
#pragma once

#include "figures/time_figures.h"
#include "pipeline/stage_pipeline.h"
#include "stages/time/inputs.h"
#include "stages/time/processes.h"

#include <vector>

namespace s2tp {

// What time_workload made: the result without its figures, which stay typed until the checkpoint is
// written (stage_result), and the measurements they came from (empty when the first outputs failed
// their checks), which a set's combined interval resamples.
struct TimedWorkload {
    StageResult result;
    TimeFigures figures;
    std::vector<TimingRun> runs;  // one per process: repeat, or GPU and repeat

    // The result with its figures, as the checkpoint holds them.
    StageResult stage_result() const;
};

// Writes under run.reports() and, with pin, the run's pins file. `child` measures process `index`
// (RepeatChildRequest::of_repeat's) when the measurement is not made in this process (repeats,
// several GPUs); by default it runs `sage2tp time-repeat` (stages/time/repeat_protocol.h; tests hand
// it their own measurements).
TimedWorkload time_workload(const TimeStageInputs &inputs, const Reporter &reporter, const ChildMeasure &child = {});

}  // namespace s2tp
