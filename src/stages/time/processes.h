// The processes that measure one workload: one per repeat on each GPU (sage2tp-time(1), Repeats and
// SEVERAL GPUS), what each is given, how reasons and files name it, and the measurements they make in
// order, stopping early where a later one could not count.
#pragma once

#include "stages/time/inputs.h"
#include "stages/time/measurement.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace s2tp {

bool on_several_gpus(const TimeStageInputs &inputs);
std::size_t gpu_count(const TimeStageInputs &inputs);

// The measuring processes: one per repeat on each GPU. Process `index` is repeat index / gpu_count on
// the GPU in place index % gpu_count: the GPUs' processes of one repeat run at once, the repeats one
// after another.
std::size_t process_count(const TimeStageInputs &inputs);
std::size_t process_gpu(const TimeStageInputs &inputs, std::size_t index);
std::size_t process_repeat(const TimeStageInputs &inputs, std::size_t index);
// The GPU index process `index` measures on.
int process_device(const TimeStageInputs &inputs, std::size_t index);

// The budget and order seed of repeat `index` (0-based) of `repeats`: the stage's budget split evenly,
// and a seed of its own per repeat so the repeats do not share one sequence of orders. Several GPUs
// sample at once, so each GPU's processes share the whole budget as one GPU's repeats do; `index` is
// the process's (repeat * GPUs + the GPU's place), so every process has a seed of its own.
TimingSettings repeat_settings(const TimingSettings &settings, std::size_t repeats, std::size_t index);
// Each GPU samples at once with the others, so each has the whole budget, split over its repeats;
// every process has an order seed of its own.
TimingSettings process_settings(const TimeStageInputs &inputs, std::size_t index);

// "repeat 3", "GPU 1", "GPU 1 repeat 3", or "" for a single measurement: how reasons name process `index`.
std::string repeat_where(const TimeStageInputs &inputs, std::size_t index);
// The stem of process `index`'s log and measurement file: time-repeat-3, time-gpu1, time-gpu1-repeat-3.
std::string process_stem(const TimeStageInputs &inputs, std::size_t index);

// The measurements: in this process for one, in fresh processes for several. A repeat whose first
// outputs fail the checks did not time anything, and the later ones are not started. On several GPUs
// the GPUs' processes of one repeat run at once (through the GPU pool, tools/gpu_session/gpu_work_pool.h),
// the repeats one after another; a process whose output holds a device error loses its GPU (`lost`,
// per GPU, the error), which then runs no later repeat, and the other GPUs' measurements are kept.
struct Measurements {
    std::vector<ArmMeasurement> measured;
    std::vector<std::size_t> process;  // each measurement's process index (repeat_where)
    std::vector<std::string> lost;     // per GPU on several GPUs: the device error, "" when not lost
};
// Measures process `index` in another process, and throws an Error naming the device error
// (device_error_in) when its GPU failed.
using ChildMeasure = std::function<ArmMeasurement(std::size_t index)>;
Measurements measure_repeats(const TimeStageInputs &inputs, const Reporter &reporter, const ChildMeasure &child);

// The output checks after the first record: every repeat must have produced the reference's bytes
// before timing (a fresh process with fresh allocations), and every re-checked round its expected
// outputs. One reason per difference.
std::vector<std::string> repeat_output_reasons(const TimeStageInputs &inputs, const std::vector<std::string> &arms,
                                               const Measurements &measurements);

}  // namespace s2tp
