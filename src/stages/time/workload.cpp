#include "stages/time/workload.h"

#include "gpu/gpu_runtime.h"
#include "model/arch_limits.h"
#include "model/device_sharding.h"
#include "pipeline/file_artifact.h"
#include "stages/time/figures.h"
#include "stages/time/ncu.h"
#include "stages/time/pin.h"
#include "stages/time/repeat_protocol.h"
#include "stages/time/report.h"
#include "stages/time/stop_rule.h"
#include "support/data_paths.h"
#include "support/errors.h"
#include "tools/gpu_session/gpu_session.h"

#include <algorithm>
#include <mutex>

namespace fs = std::filesystem;

namespace s2tp {

StageResult TimedWorkload::stage_result() const {
    StageResult with_figures = result;
    with_figures.figures = figures.to_toml();
    return with_figures;
}

namespace {

// The rounds of one model's GPUs, enough of them: the statistics with their figures, the A/A control
// judged against its band, the plot and the summary line.
void interval_figures(const TimeStageInputs &in, const std::vector<std::string> &arms, const ArmMeasurement &reference,
                      const std::vector<TimingRun> &runs, std::size_t kept, TimedWorkload &timed) {
    TimeFigures &f = timed.figures;
    StageResult &result = timed.result;
    const TimingStats stats = with_between_process(in, timing_stats(runs, in.settings.bootstrap));
    timed_figures(f, stats, arms, in.workload.problem);
    launch_figures(f, reference.launches, arms);
    if (process_count(in) == 1 && in.between_process.relative_sd > 0) {
        for (CandidateTimeFigures &c : f.candidates)
            if (c.ratio) c.ratio->between_process_sd = in.between_process.relative_sd;
        f.between_process_basis = in.between_process.basis;
    }
    f.tensor_peak_tops = dense_tensor_peak_tops(
        resolve_arch(load_arch_limits(arch_limits_table().string()), in.kernels.arch), in.device.sm_count,
        stats.clock_median_mhz);
    // The band the control is judged by, and the plot draws.
    const double aa_band = aa_tolerance(in.settings.target_half_width, stats[baseline_arm].p50);
    const std::optional<std::string> noisy = too_noisy_reason(stats.control_vs_baseline(), aa_band);
    if (noisy) result.reasons.push_back(*noisy + "; " + aa_band_basis_text(in.kernels.arch));
    const fs::path svg = write_time_plot(in, f, stats, arms, runs, kept, aa_band);
    result.artifacts.insert("time_svg", FileArtifact::of(in.run, svg).to_toml());
    f.summary = timed_summary(in, stats, arms, kept, noisy.has_value());
    if (const std::string clocks = arm_conditions_text(f, true); !clocks.empty()) *f.summary += "; " + clocks;
}

}  // namespace

TimedWorkload time_workload(const TimeStageInputs &in, const Reporter &reporter, const ChildMeasure &child) {
    const std::vector<std::string> arms = arm_names(candidate_names(in.kernels));
    check_arm_count(arms.size());
    if (in.repeats < 1) fail(ExitCode::internal, "time: repeats must be at least 1");

    TimedWorkload timed;
    StageResult &result = timed.result;
    TimeFigures &f = timed.figures;
    result.tools.insert("gpu", on_several_gpus(in) ? gpu_names(in.gpus) : in.device.name);
    result.tools.insert("cuda_driver", cuda_version_string(in.device.driver_version));
    f = setting_figures(in);
    f.pinned_kernel = in.kernels.pin_key().kernel;
    if (!in.expected_sha256 && !in.pin)
        reporter.progress("time: the workload pins no output SHA-256 for " + in.kernels.pin_key().text() +
                          " ([workload.expected_sha256]); each candidate's output is compared with the baseline's" +
                          (in.record_first_pin ? ", and the baseline's is recorded once the outputs pass"
                                               : " ('sage2tp time --pin' pins the baseline's)"));
    std::mutex reporting;  // processes on several GPUs run, and report, at once
    const ChildMeasure fresh_process = [&](std::size_t process) {
        return measure_in_child(in, process, reporter, on_several_gpus(in) ? &reporting : nullptr);
    };
    const Measurements measured = measure_repeats(in, reporter, child ? child : fresh_process);
    const std::vector<ArmMeasurement> &measurements = measured.measured;
    if (on_several_gpus(in)) f.gpus = time_gpu_figures(in, measured);
    const ArmMeasurement &reference = measurements.front();
    const std::string &base_sha = reference.first.at(baseline_arm).sha256;
    f.baseline_sha256 = base_sha;
    for (Arm arm = first_candidate_arm; arm < arms.size(); ++arm) {
        CandidateTimeFigures &c = f.candidate_or_add(arms[arm]);
        c.sha256 = reference.first.at(arm).sha256;
        c.matches_baseline = *c.sha256 == base_sha;
    }
    accuracy_figures(f, arms, reference.accuracy);

    std::vector<std::string> failures =
        first_output_failures(arms, reference.first, in.expected_sha256, in.pin, in.kernels.pin_key(), reference.accuracy);
    failures.insert(failures.end(), reference.input_set_failures.begin(), reference.input_set_failures.end());
    if (!failures.empty()) {
        result.status = StageStatus::failed;
        result.reasons = failures;
        result.reasons.push_back(std::string("not timed") + (in.pin ? " and nothing pinned" : "") +
                                 ": the outputs must match before the times mean anything");
        f.outputs_match = false;
        f.summary = in.workload.name + ": outputs do not match; not timed";
        return timed;
    }

    result.reasons = repeat_output_reasons(in, arms, measured);
    // A lost GPU is never a pass; the ratios below come from the GPUs that measured.
    for (std::size_t g = 0; g < measured.lost.size(); ++g)
        if (!measured.lost[g].empty())
            result.reasons.push_back("GPU " + std::to_string(in.gpus[g].index) + " " + in.gpus[g].name + " (" +
                                     in.gpus[g].pci_bus_id + ") was lost: " + measured.lost[g]);
    const bool stable = result.reasons.empty();
    f.outputs_match = stable;
    if ((in.pin || in.record_first_pin) && stable) pin_baseline_output(in, base_sha, f, reporter);
    else if (in.pin)
        result.reasons.push_back("nothing pinned: an output differed between processes or failed a re-check");

    std::vector<TimingRun> runs;
    std::size_t kept = 0;
    for (const ArmMeasurement &m : measurements) {
        runs.push_back(m.timing);
        kept += m.timing.kept_rounds;
    }
    round_figures(f, in, reference, runs);

    for (std::size_t r = 0; r < runs.size(); ++r) {
        const std::size_t process = measured.process[r];
        // A failed re-check ended that sampling early: its reason is the one to give, not the budget.
        if (runs[r].stopped_by == StopReason::recheck_failed) continue;
        if (auto reason = too_few_rounds_reason(runs[r], process_settings(in, process), repeat_where(in, process)))
            result.reasons.push_back(*reason);
    }
    const bool enough_rounds = std::all_of(runs.begin(), runs.end(), [&](const TimingRun &run) {
        return run.kept_rounds >= in.settings.min_rounds;
    });
    if (on_several_gpus(in) && several_gpu_models(gpu_models(in.gpus))) {
        // No ratio across GPUs of different models: a verdict per GPU, and no combined figures or plot.
        f.gpu_results = gpu_time_results(in, arms, measured, result.reasons);
        std::string per_gpu;
        for (const std::string &line : gpu_result_lines(f)) per_gpu += (per_gpu.empty() ? " " : "; ") + line;
        f.summary = in.workload.name + ":" + per_gpu;
    } else if (enough_rounds) {
        interval_figures(in, arms, reference, runs, kept, timed);
    } else {
        f.summary = in.workload.name + ": " + std::to_string(kept) + " unthrottled rounds, too few for an interval";
    }
    result.artifacts.insert("time_json", FileArtifact::of(in.run, write_json_report(in, f, arms, reference, runs, stable)).to_toml());
    if (in.ncu) add_ncu_profiles(in, f, result, reporter);

    result.status = result.reasons.empty() ? StageStatus::passed : StageStatus::failed;
    timed.runs = std::move(runs);
    return timed;
}

}  // namespace s2tp
