// The time stage's figures of one workload (figures/time_figures.h), made from its inputs and
// measurements: what every checkpoint holds, the accuracy of the first outputs, the rounds, the
// statistics of the timed ones, the launches, and per GPU on several GPUs.
#pragma once

#include "figures/gpu_figures.h"
#include "figures/time_figures.h"
#include "stages/time/inputs.h"
#include "stages/time/processes.h"

#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// One process's candidate intervals widened by inputs.between_process (model/timing_calibration.h), so
// that they cover the median a fresh process would measure; the A/A control's is left as measured, since
// its two arms share every placement a process fixes, and several processes (--repeat, several GPUs of
// one model) measure the component themselves.
TimingStats with_between_process(const TimeStageInputs &in, TimingStats stats);

// The figures every time checkpoint holds, timed or not.
TimeFigures setting_figures(const TimeStageInputs &in);

// The accuracy of each arm's first outputs, when the run checks it: the candidates' parity mode, figures
// and conditions, and the baseline's.
void accuracy_figures(TimeFigures &f, const std::vector<std::string> &arms, const std::vector<ArmAccuracy> &accuracy);

// The settings the rounds were timed with, and what they came to: counts, L2, footprint, seconds.
void round_figures(TimeFigures &f, const TimeStageInputs &in, const ArmMeasurement &reference,
                   const std::vector<TimingRun> &runs);

// figures.gpus on several GPUs: each GPU, the median SM clock during its kept samples, and the error
// that lost it.
std::vector<GpuFigures> time_gpu_figures(const TimeStageInputs &in, const Measurements &m);

// Each GPU's model, in the order of `gpus`.
std::vector<std::string> gpu_models(const std::vector<DeviceFacts> &gpus);

// figures.gpu_results for GPUs of several models: each GPU's statistics over its own processes
// (model/device_sharding.h's fold), and a reason for each GPU whose A/A control is too noisy. A GPU
// with a process of too few rounds has no interval (its reason is already given).
std::vector<GpuTimeResult> gpu_time_results(const TimeStageInputs &in, const std::vector<std::string> &arms,
                                            const Measurements &m, std::vector<std::string> &reasons);

// The figures of the timed rounds: counts, the interval statistics per arm and ratio, the clocks.
void timed_figures(TimeFigures &f, const TimingStats &stats, const std::vector<std::string> &arms,
                   const AttentionProblem &problem);

// What each arm's host function launched (the first measurement's), beside its times: the launch that
// was timed, which the gate's shared-memory condition judges in place of build's table.
void launch_figures(TimeFigures &f, const std::vector<std::optional<ArmLaunch>> &launches,
                    const std::vector<std::string> &arms);

}  // namespace s2tp
