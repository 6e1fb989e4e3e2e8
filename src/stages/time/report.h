// The time stage's reports of one workload, beside its checkpoint: the plot (reports/REPORT_NAME.svg),
// the report of every round (reports/REPORT_NAME.json) and the summary line.
#pragma once

#include "figures/time_figures.h"
#include "stages/time/inputs.h"

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace s2tp {

// reports/REPORT_NAME.svg (time.svg for the run's workload): every arm's kept times and every ratio's interval,
// the A/A control against `aa_band`, the band the stage judged it by.
std::filesystem::path write_time_plot(const TimeStageInputs &in, const TimeFigures &f, const TimingStats &stats,
                         const std::vector<std::string> &arms, const std::vector<TimingRun> &runs, std::size_t kept,
                         double aa_band);

// The one line of a timed run: each candidate's ratio with its interval and p50s, then the A/A.
std::string timed_summary(const TimeStageInputs &in, const TimingStats &stats, const std::vector<std::string> &arms,
                          std::size_t kept, bool too_noisy);

// reports/REPORT_NAME.json (time.json for the run's workload): the settings, every round's samples, the statistics and the output digests.
std::filesystem::path write_json_report(const TimeStageInputs &in, const TimeFigures &f, const std::vector<std::string> &arms,
                           const ArmMeasurement &reference, const std::vector<TimingRun> &runs, bool stable);

}  // namespace s2tp
