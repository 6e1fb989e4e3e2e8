#include "stages/time/figures.h"

#include "model/device_sharding.h"
#include "stages/time/stop_rule.h"

#include <algorithm>

namespace s2tp {

namespace {

RatioFigures ratio_figures(const RepeatedRatio &ratio) {
    RatioFigures f = RatioFigures::of(ratio.interval);
    if (ratio.repeat_medians.size() >= 2) {
        f.repeat_medians = ratio.repeat_medians;
        f.between_repeat_spread = ratio.between_repeat_spread;
        f.within_repeat_half_width = ratio.within_repeat_half_width;
    }
    return f;
}

}  // namespace

TimingStats with_between_process(const TimeStageInputs &in, TimingStats stats) {
    if (process_count(in) > 1) return stats;
    for (Arm arm = first_candidate_arm; arm < stats.ratios.size(); ++arm)
        stats.ratios[arm].interval = with_between_process(stats.ratios[arm].interval, in.between_process.relative_sd);
    return stats;
}

TimeFigures setting_figures(const TimeStageInputs &in) {
    TimeFigures f;
    f.workload = in.workload.name;
    f.shape = shape_text(in.workload.problem);
    f.device = in.device.summary();
    f.device_name = in.device.name;
    f.arch = in.kernels.arch;
    f.repeats = static_cast<std::int64_t>(in.repeats);
    f.expected_sha256 = in.expected_sha256;
    f.persisting_l2_max_bytes = in.device.persisting_l2_max_bytes;
    return f;
}

void accuracy_figures(TimeFigures &f, const std::vector<std::string> &arms, const std::vector<ArmAccuracy> &accuracy) {
    if (accuracy.empty()) return;
    for (Arm arm = first_candidate_arm; arm < arms.size() && arm < accuracy.size(); ++arm) {
        const ArmAccuracy &a = accuracy[arm];
        CandidateTimeFigures &c = f.candidate_or_add(arms[arm]);
        c.parity_mode = a.tolerance ? "tolerance" : "exact";
        c.accuracy = a.reference;
        c.vs_baseline = a.vs_baseline;
        c.accuracy_passed = a.passed;
        c.accuracy_conditions = a.conditions;
    }
    f.baseline_accuracy = accuracy[baseline_arm].reference;
    f.baseline_accuracy_passed = accuracy[baseline_arm].passed;
    f.baseline_accuracy_conditions = accuracy[baseline_arm].conditions;
}

void round_figures(TimeFigures &f, const TimeStageInputs &in, const ArmMeasurement &reference,
                   const std::vector<TimingRun> &runs) {
    std::size_t rounds = 0, throttled = 0;
    double seconds = 0;
    for (const TimingRun &run : runs) {
        rounds += run.rounds.size();
        throttled += run.throttled_rounds;
        seconds += run.seconds;
    }
    f.rounds = static_cast<std::int64_t>(rounds);
    f.throttled_rounds = static_cast<std::int64_t>(throttled);
    f.input_sets = static_cast<std::int64_t>(runs.front().input_sets);
    const std::vector<std::string> arms = arm_names(candidate_names(in.kernels));
    for (Arm arm = 0; arm < arms.size(); ++arm) {
        std::int64_t rechecked = 0, failed = 0;
        for (const TimingRun &run : runs) {
            rechecked += static_cast<std::int64_t>(run.rechecked_rounds());
            failed += std::count_if(run.recheck_failures.begin(), run.recheck_failures.end(),
                                    [arm](const RecheckFailure &failure) { return failure.arm == arm; });
        }
        f.recheck[arms[arm]] = ArmRecheckFigures{rechecked, failed};
    }
    f.stopped_by = stop_reason_name(runs.back().stopped_by);
    f.l2_flushed = reference.l2_flushed;
    f.footprint_bytes = static_cast<std::int64_t>(reference.footprint_bytes);
    f.order_seed = static_cast<std::int64_t>(in.settings.order_seed);
    f.warmup_launches = static_cast<std::int64_t>(in.settings.warmup_launches);
    f.min_rounds = static_cast<std::int64_t>(in.settings.min_rounds);
    f.target_half_width = in.settings.target_half_width;
    f.budget_seconds = in.settings.budget_seconds;
    f.measure_seconds = seconds;
}

std::vector<GpuFigures> time_gpu_figures(const TimeStageInputs &in, const Measurements &m) {
    std::vector<GpuFigures> gpus;
    for (std::size_t g = 0; g < in.gpus.size(); ++g) {
        GpuFigures figures = GpuFigures::of(in.gpus[g]);
        figures.checks = static_cast<std::int64_t>(in.repeats);
        figures.ran = 0;
        figures.lost = m.lost.at(g);
        std::vector<double> clocks;
        for (std::size_t r = 0; r < m.measured.size(); ++r) {
            if (process_gpu(in, m.process[r]) != g) continue;
            ++*figures.ran;
            for (const InterleavedRound &round : m.measured[r].timing.rounds)
                if (!round.throttled)
                    for (const LaunchSample &sample : round.samples) clocks.push_back(sample.sm_clock_mhz);
        }
        if (!clocks.empty()) figures.sample_clock_mhz = median(clocks);
        gpus.push_back(std::move(figures));
    }
    return gpus;
}

std::vector<std::string> gpu_models(const std::vector<DeviceFacts> &gpus) {
    std::vector<std::string> models;
    for (const DeviceFacts &gpu : gpus) models.push_back(gpu.name);
    return models;
}

std::vector<GpuTimeResult> gpu_time_results(const TimeStageInputs &in, const std::vector<std::string> &arms,
                                            const Measurements &m, std::vector<std::string> &reasons) {
    std::vector<GpuTimingRun> gpus;
    std::vector<bool> enough_rounds(in.gpus.size(), true);
    for (std::size_t g = 0; g < in.gpus.size(); ++g)
        gpus.push_back({in.gpus[g].index, in.gpus[g].name, in.gpus[g].uuid, in.gpus[g].pci_bus_id, {}, m.lost.at(g)});
    for (std::size_t r = 0; r < m.measured.size(); ++r) {
        const std::size_t g = process_gpu(in, m.process[r]);
        gpus[g].runs.push_back(m.measured[r].timing);
        if (m.measured[r].timing.kept_rounds < in.settings.min_rounds) enough_rounds[g] = false;
    }
    const GpuTimings timings = combine_gpu_timings(gpus, in.settings.bootstrap);
    std::vector<GpuTimeResult> results;
    for (std::size_t g = 0; g < in.gpus.size(); ++g) {
        GpuTimeResult result;
        result.index = in.gpus[g].index;
        result.name = in.gpus[g].name;
        result.uuid = in.gpus[g].uuid;
        result.pci_bus_id = in.gpus[g].pci_bus_id;
        result.lost = m.lost.at(g);
        for (const auto &[device, stats] : timings.per_gpu) {
            if (device != in.gpus[g].index || !enough_rounds[g]) continue;
            TimeFigures own;
            timed_figures(own, stats, arms, in.workload.problem);
            result.baseline = own.baseline;
            result.aa = own.aa;
            for (const CandidateTimeFigures &c : own.candidates) result.candidates.push_back({c.name, c.timing, c.ratio});
            if (auto noisy = too_noisy_reason(stats.control_vs_baseline(),
                                              aa_tolerance(in.settings.target_half_width, stats[baseline_arm].p50)))
                reasons.push_back(result.label() + ": " + *noisy + "; " + aa_band_basis_text(in.kernels.arch));
        }
        results.push_back(std::move(result));
    }
    return results;
}

void timed_figures(TimeFigures &f, const TimingStats &stats, const std::vector<std::string> &arms,
                   const AttentionProblem &problem) {
    const auto arm_figures = [&](Arm arm) {
        return ArmTimeFigures::of(stats[arm], attention_tops(problem, stats[arm].p50), stats.conditions.at(arm));
    };
    f.baseline = arm_figures(baseline_arm);
    f.baseline_control = arm_figures(control_arm);
    f.aa = ratio_figures(stats.ratios[control_arm]);
    for (Arm arm = first_candidate_arm; arm < arms.size(); ++arm) {
        CandidateTimeFigures &c = f.candidate_or_add(arms[arm]);
        c.timing = arm_figures(arm);
        c.ratio = ratio_figures(stats.ratios[arm]);
    }
    f.sm_clock_min_mhz = stats.clock_min_mhz;
    f.sm_clock_median_mhz = stats.clock_median_mhz;
    f.sm_clock_max_mhz = stats.clock_max_mhz;
}

void launch_figures(TimeFigures &f, const std::vector<std::optional<ArmLaunch>> &launches,
                    const std::vector<std::string> &arms) {
    const auto put = [&](std::optional<ArmTimeFigures> &timing, Arm arm) {
        if (!timing || arm >= launches.size() || !launches[arm]) return;
        timing->launch = launches[arm]->shape;
        timing->launch_kernel = launches[arm]->kernel;
        timing->launch_dynamic_smem_bytes = launches[arm]->dynamic_smem_bytes;
        timing->launch_warps_per_scheduler = launches[arm]->warps_per_scheduler;
    };
    put(f.baseline, baseline_arm);
    for (Arm arm = first_candidate_arm; arm < arms.size(); ++arm) put(f.candidate_or_add(arms[arm]).timing, arm);
}

}  // namespace s2tp
