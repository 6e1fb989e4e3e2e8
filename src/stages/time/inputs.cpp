#include "stages/time/inputs.h"

#include "support/data_paths.h"
#include "tools/gpu_session/gpu_session.h"

namespace fs = std::filesystem;

namespace s2tp {

ResolvedTimeInputs resolve_time_inputs(const RunDirectory &run, const std::vector<StageState> &states,
                                       Experiment experiment, const TimeOverrides &overrides,
                                       const std::optional<fs::path> &workload_file) {
    BuiltKernels kernels = built_kernels(run, states, experiment);
    apply_run_pins(experiment.workload, run.pins());
    WorkloadSpec workload = workload_file ? load_workload(*workload_file) : experiment.workload;
    std::optional<std::string> expected_sha256 = expected_output_sha256(workload, kernels.pin_key());
    const TimingSettings settings = timing_settings(experiment, overrides);
    return {std::move(experiment), std::move(workload), std::move(kernels), std::move(expected_sha256), settings};
}

TimingSettings timing_settings(const Experiment &experiment, const TimeOverrides &overrides) {
    TimingSettings settings;
    settings.target_half_width = overrides.target_half_width.value_or(experiment.target_half_width);
    settings.budget_seconds = overrides.budget_seconds.value_or(experiment.budget_seconds);
    settings.min_rounds = overrides.min_rounds.value_or(static_cast<std::size_t>(experiment.min_rounds));
    settings.warmup_launches = static_cast<std::size_t>(experiment.warmup_launches);
    settings.throttle_fraction = experiment.throttle_fraction;
    settings.order_seed = overrides.order_seed.value_or(experiment.bootstrap_seed);
    settings.bootstrap.seed = experiment.bootstrap_seed;
    settings.bootstrap.resamples = static_cast<std::size_t>(experiment.bootstrap_resamples);
    return settings;
}

void add_time_inputs(Fingerprint &f, const TimeStageInputs &in) {
    const WorkloadSpec &workload = in.workload;
    const TimingSettings &settings = in.settings;
    float scale = workload.problem.sm_scale;
    f.add("workload", workload.name).add("problem", workload.problem.describe()).add("sm_scale", &scale, sizeof scale);
    f.add("with_lse", std::int64_t{workload.problem.with_lse});
    if (workload.q_file)
        f.add_file("q", *workload.q_file).add_file("k", *workload.k_file).add_file("v", *workload.v_file);
    else
        f.add("workload_seed", static_cast<std::int64_t>(workload.seed));
    f.add("target_half_width", &settings.target_half_width, sizeof settings.target_half_width);
    f.add("budget_seconds", &settings.budget_seconds, sizeof settings.budget_seconds);
    f.add("min_rounds", static_cast<std::int64_t>(settings.min_rounds));
    f.add("warmup_launches", static_cast<std::int64_t>(settings.warmup_launches));
    f.add("throttle_fraction", &settings.throttle_fraction, sizeof settings.throttle_fraction);
    f.add("bootstrap_seed", static_cast<std::int64_t>(settings.bootstrap.seed));
    f.add("resamples", static_cast<std::int64_t>(settings.bootstrap.resamples));
    f.add("repeats", static_cast<std::int64_t>(in.repeats));
    for (const BuiltAttention &candidate : in.kernels.candidates) f.add("candidate", candidate.variant);
    f.add("device_name", in.device.name).add("device_uuid", in.device.uuid);
    for (const DeviceFacts &gpu : in.gpus) f.add("gpu_uuid", gpu.uuid);
    if (in.accuracy.reference_rows > 0) add_accuracy_inputs(f, in.accuracy.rules, in.accuracy.reference_rows);
    f.add("ncu", std::int64_t{in.ncu});
    if (in.ncu) {
        for (const std::string &metric : in.ncu_metrics) f.add("ncu_metric", metric);
        f.add("ncu_seq_len", in.ncu_seq_len);
    }
}

BetweenProcess between_process_for(const DeviceFacts &device) {
    return between_process_component(load_timing_calibration(timing_calibration_table().string()), device.name);
}

}  // namespace s2tp
