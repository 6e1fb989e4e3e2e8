#include "stages/time/processes.h"

#include "stages/time/stop_rule.h"
#include "support/errors.h"
#include "tools/gpu_session/gpu_work_pool.h"

#include <algorithm>
#include <optional>

namespace s2tp {

bool on_several_gpus(const TimeStageInputs &in) { return in.gpus.size() > 1; }

std::size_t gpu_count(const TimeStageInputs &in) { return on_several_gpus(in) ? in.gpus.size() : 1; }

std::size_t process_count(const TimeStageInputs &in) { return gpu_count(in) * in.repeats; }
std::size_t process_gpu(const TimeStageInputs &in, std::size_t index) { return index % gpu_count(in); }
std::size_t process_repeat(const TimeStageInputs &in, std::size_t index) { return index / gpu_count(in); }

TimingSettings process_settings(const TimeStageInputs &in, std::size_t index) {
    return repeat_settings(in.settings, in.repeats, index);
}

int process_device(const TimeStageInputs &in, std::size_t index) {
    return on_several_gpus(in) ? in.gpus.at(process_gpu(in, index)).index : in.device_index;
}

TimingSettings repeat_settings(const TimingSettings &settings, std::size_t repeats, std::size_t index) {
    TimingSettings s = settings;
    s.budget_seconds = settings.budget_seconds / static_cast<double>(repeats);
    s.order_seed = settings.order_seed + index;
    return s;
}

std::string repeat_where(const TimeStageInputs &in, std::size_t index) {
    const std::string repeat = in.repeats == 1 ? "" : "repeat " + std::to_string(process_repeat(in, index) + 1);
    if (!on_several_gpus(in)) return repeat;
    return "GPU " + std::to_string(process_device(in, index)) + (repeat.empty() ? "" : " " + repeat);
}

std::string process_stem(const TimeStageInputs &in, std::size_t index) {
    const std::string repeat = "repeat-" + std::to_string(process_repeat(in, index) + 1);
    if (!on_several_gpus(in)) return "time-" + repeat;
    return name_on_gpu("time", process_device(in, index), in.repeats == 1 ? "" : "-" + repeat);
}

namespace {

// One repeat on every GPU not yet lost, all at once, into `m`; false when no GPU is left. Each GPU's
// process is an item of the GPU pool pinned to its GPU: a lost GPU's measurement runs nowhere else.
bool measure_repeat_on_gpus(const TimeStageInputs &in, std::size_t repeat, Measurements &m, const ChildMeasure &child) {
    const std::size_t gpus = in.gpus.size();
    std::vector<std::size_t> places;  // of the GPUs still running, in in.gpus
    std::vector<int> devices;
    for (std::size_t g = 0; g < gpus; ++g)
        if (m.lost[g].empty()) {
            places.push_back(g);
            devices.push_back(in.gpus[g].index);
        }
    std::vector<std::optional<ArmMeasurement>> slots(places.size());
    GpuWorkPool pool(devices, places.size(), ItemPlacement::pinned);
    const GpuPoolReport report =
        pool.run([&](std::size_t item, int) { slots[item] = child(repeat * gpus + places[item]); });
    for (std::size_t i = 0; i < places.size(); ++i) {
        if (const std::optional<GpuLoss> &lost = report.share(devices[i]).lost) m.lost[places[i]] = lost->message;
        if (!slots[i]) continue;
        m.measured.push_back(std::move(*slots[i]));
        m.process.push_back(repeat * gpus + places[i]);
    }
    return std::any_of(m.lost.begin(), m.lost.end(), [](const std::string &l) { return l.empty(); });
}

bool first_outputs_failed(const ArmMeasurement &m) { return m.timing.rounds.empty(); }

bool recheck_failed(const ArmMeasurement &m) { return !m.timing.recheck_failures.empty(); }

}  // namespace

Measurements measure_repeats(const TimeStageInputs &in, const Reporter &reporter, const ChildMeasure &child) {
    Measurements m;
    if (on_several_gpus(in)) {
        m.lost.resize(in.gpus.size());
        for (std::size_t r = 0; r < in.repeats; ++r)
            if (!measure_repeat_on_gpus(in, r, m, child) ||
                std::any_of(m.measured.begin(), m.measured.end(), first_outputs_failed))
                break;
        if (m.measured.empty()) fail(ExitCode::missing_tool, "time: every GPU was lost: " + m.lost.front());
        return m;
    }
    const MeasureRequest here{in.workload, in.kernels, in.device, in.settings, in.expected_sha256, in.pin, in.accuracy};
    for (std::size_t r = 0; r < in.repeats; ++r) {
        m.measured.push_back(in.repeats == 1 ? measure_arms(here, reporter) : child(r));
        m.process.push_back(r);
        if (first_outputs_failed(m.measured.back()) || recheck_failed(m.measured.back())) break;
    }
    return m;
}

std::vector<std::string> repeat_output_reasons(const TimeStageInputs &in, const std::vector<std::string> &arms,
                                               const Measurements &m) {
    std::vector<std::string> reasons;
    const std::vector<OutputDigest> &reference = m.measured.front().first;
    for (std::size_t r = 0; r < m.measured.size(); ++r) {
        const std::string where = repeat_where(in, m.process[r]);
        if (r > 0)
            for (std::string &reason : changed_output_reasons(arms, reference, m.measured[r].first, where))
                reasons.push_back(std::move(reason));
        for (std::string &reason : recheck_failure_reasons(arms, m.measured[r].timing, where))
            reasons.push_back(std::move(reason));
    }
    return reasons;
}

}  // namespace s2tp
