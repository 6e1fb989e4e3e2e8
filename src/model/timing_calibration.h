// How far one process's ratio median strays from other processes' on the same GPU model, beyond what
// its own rounds show: the between-process component that a single `time` run's interval must carry to
// cover the value a fresh process would measure. What a process fixes once (its allocations and their
// placement, the modules' load addresses, the clock state it started in) moves all its rounds together,
// so no bootstrap over its rounds can see it; measured across processes it is a property of the GPU
// model, kept as data in data/timing_calibration.toml (one row per GPU model, with how it was measured).
//
// Usage:
//   s2tp::BetweenProcess component = s2tp::between_process_component(table, device.name);
//   s2tp::RatioInterval wide = s2tp::with_between_process(interval, component.relative_sd);
#pragma once

#include "support/statistics.h"

#include <string>
#include <vector>

namespace s2tp {

struct CalibrationRow {
    std::string gpu;          // the GPU's name as CUDA reports it: "NVIDIA H200"
    double relative_sd = 0;   // between-process standard deviation of a ratio median, over the median
    std::string basis;        // how, where and when it was measured
};

// Reads the table (a [[gpu]] array of name, between_process_sd, basis); Error(usage) naming file:line for
// a malformed row.
std::vector<CalibrationRow> load_timing_calibration(const std::string &path);

// The component for `gpu`: its own row's; for a GPU without one, the largest of the table's, saying so.
struct BetweenProcess {
    double relative_sd = 0;
    bool measured_on_this_gpu = false;
    std::string basis;  // the row's, or why another row's stands in
};
BetweenProcess between_process_component(const std::vector<CalibrationRow> &table, const std::string &gpu);

// The interval widened by the component: each end moves out to sqrt(d^2 + (z * sd * median)^2), d its
// distance from the median and z the interval's normal quantile, as two independent errors add. The
// median stays; a component of 0 leaves the interval as it is.
RatioInterval with_between_process(const RatioInterval &interval, double relative_sd);

}  // namespace s2tp
