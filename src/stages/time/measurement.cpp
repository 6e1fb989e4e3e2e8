#include "stages/time/measurement.h"

#include "gpu/gpu_input_generator.h"
#include "gpu/gpu_reference.h"
#include "gpu/launch_timer.h"
#include "gpu/nvml_probe.h"
#include "model/workload_cost.h"
#include "stages/time/stop_rule.h"
#include "support/errors.h"
#include "support/hashing.h"
#include "support/number_format.h"

#include <memory>

namespace s2tp {

std::string shape_text(const AttentionProblem &p) {
    const AttentionShape &s = p.shape;
    return "b" + std::to_string(s.batch) + " h" + std::to_string(s.heads_q) + "/" + std::to_string(s.heads_kv) + " n" +
           std::to_string(s.len_q) + "/" + std::to_string(s.len_kv) + " d" + std::to_string(s.head_dim) + " " +
           layout_name(s.layout) + " " + dtype_name(p.dtype) + " " + (p.causal ? "causal" : "non-causal");
}

std::vector<std::string> candidate_names(const BuiltKernels &kernels) {
    std::vector<std::string> names;
    for (const BuiltAttention &candidate : kernels.candidates) names.push_back(candidate.variant);
    return names;
}

std::vector<OutputDigest> output_digests(OutputChecks &checks, const std::vector<AttentionOutputs> &outputs,
                                         bool first_record) {
    std::vector<const DeviceBuffer *> buffers;
    for (const AttentionOutputs &output : outputs) buffers.push_back(&output.o);
    if (first_record) return checks.record(buffers);
    std::vector<OutputDigest> digests;
    for (std::string &sha256 : checks.current_sha256(buffers)) digests.push_back({std::move(sha256), 0});
    return digests;
}

TimeAccuracy time_accuracy(const Experiment &experiment) {
    TimeAccuracy accuracy;
    if (!experiment.checks_accuracy()) return accuracy;
    accuracy.reference_rows = experiment.reference_rows;
    accuracy.rules = accuracy_rules(experiment);
    return accuracy;
}

namespace {

// What the accuracy of one input set's outputs is measured against: the float64 reference of its
// sampled rows and the baseline's output on them. Kept per set for the re-checks of a tolerance
// candidate, whose bytes may differ from one launch to the next.
struct AccuracyBasis {
    std::uint64_t seed = 0;
    std::vector<std::uint32_t> rows;
    Tensor reference, baseline_rows;
    AccuracyMetrics baseline;
};

AccuracyBasis accuracy_basis(const CubinModule &quantize, const AttentionProblem &problem,
                             const DeviceInputs &unquantized, const AttentionOutputs &baseline,
                             const TimeAccuracy &accuracy, std::uint64_t seed) {
    AccuracyBasis basis;
    basis.seed = seed;
    basis.rows = sample_query_rows(problem.shape.len_q, accuracy.reference_rows, seed);
    basis.reference = reference_on_gpu(quantize, problem, unquantized, basis.rows);
    basis.baseline_rows = gather_rows_on_gpu(quantize, problem, baseline.o, basis.rows);
    basis.baseline = accuracy_metrics(basis.baseline_rows, basis.reference, basis.rows);
    return basis;
}

bool tolerance_arm(const std::string &name, Arm arm, const TimeAccuracy &accuracy) {
    if (arm < first_candidate_arm) return false;
    const auto mode = accuracy.rules.modes.find(name);
    return mode != accuracy.rules.modes.end() && mode->second == ParityMode::tolerance;
}

// One arm's output against the basis: absolute limits, and for a tolerance candidate the baseline factor.
ArmAccuracy arm_accuracy(const CubinModule &quantize, const AttentionProblem &problem, const AccuracyBasis &basis,
                         const AttentionOutputs &output, Arm arm, const std::string &name,
                         const TimeAccuracy &accuracy) {
    ArmAccuracy a;
    const auto row_count = static_cast<std::int64_t>(basis.rows.size());
    const auto seed = static_cast<std::int64_t>(basis.seed);
    const std::string shape = problem.describe();
    const Tensor mine = arm == baseline_arm ? basis.baseline_rows : gather_rows_on_gpu(quantize, problem, output.o, basis.rows);
    const AccuracyMetrics metrics = accuracy_metrics(mine, basis.reference, basis.rows);
    std::vector<AccuracyCheck> checks = absolute_accuracy_checks(metrics, accuracy.rules.limits);
    if (arm != baseline_arm) {
        a.tolerance = tolerance_arm(name, arm, accuracy);
        if (a.tolerance) {
            const std::vector<AccuracyCheck> relative =
                relative_accuracy_checks(metrics, basis.baseline, accuracy.rules.limits.baseline_factor);
            checks.insert(checks.end(), relative.begin(), relative.end());
        }
        a.vs_baseline = AccuracyFigure::of(shape, seed, row_count, accuracy_metrics(mine, basis.baseline_rows, basis.rows));
    }
    a.reference = AccuracyFigure::of(shape, seed, row_count, metrics);
    a.passed = all_passed(checks);
    a.conditions = checks_text(checks);
    return a;
}

// One input set of a measurement: its inputs quantized for every recipe the arms read, each arm's
// launch packed on them, each arm's first output on them (the expected bytes of every later launch on
// the set), and, when the run checks accuracy, what that is measured against.
struct InputSet {
    std::uint64_t seed = 0;
    std::vector<std::optional<ArmLaunch>> launched;  // by arm: what its host function launched first
    std::unique_ptr<InputsByRecipe> inputs;
    std::vector<AttentionLaunch> launches;  // by arm
    std::unique_ptr<OutputChecks> expected;
    std::vector<OutputDigest> first;
    std::vector<ArmAccuracy> accuracy;
    std::optional<AccuracyBasis> basis;
};

std::string input_set_text(std::size_t set, std::size_t sets) {
    return "input set " + std::to_string(set) + " of " + std::to_string(sets);
}

// Makes input set `index`: its q, k, v (set 0 the workload's own, the others generated from
// input_set_seed), quantized per recipe; then every arm launched once on it from poisoned outputs, the
// outputs recorded and, when the run checks accuracy, measured. The q, k, v are freed at the end.
InputSet make_input_set(const MeasureRequest &request, const CubinModule &quantize, std::size_t index,
                        const std::vector<const BuiltAttention *> &built, const std::vector<const AttentionEntry *> &arm_kernels,
                        std::vector<AttentionOutputs> &outputs, const std::vector<std::string> &arms,
                        const Reporter &reporter) {
    const AttentionProblem &problem = request.workload.problem;
    InputSet set;
    set.seed = input_set_seed(request.workload.seed, index);
    const bool from_file = index == 0 && request.workload.q_file;
    reporter.progress("time: " + std::string(from_file ? "loading" : "generating") + " " +
                      input_set_text(index, timed_input_sets) + " of " + request.workload.name + " (" +
                      shape_text(problem) + (from_file ? "" : ", seed " + std::to_string(set.seed)) + ")");
    // A generated set is generated on the GPU, bit for bit as the host generator would.
    DeviceInputs unquantized;
    if (from_file) {
        const GeneratedInputs host = workload_inputs(request.workload);
        unquantized = upload_inputs(problem, host.q, host.k, host.v);
    } else {
        unquantized = generate_inputs_on_gpu(quantize, problem.shape, problem.dtype, set.seed);
    }
    // Each arm reads the inputs its launcher's recipe makes (one set where the arms agree). Packed here,
    // once per arm, by each arm's adapter: the timed region only launches.
    set.inputs = std::make_unique<InputsByRecipe>(quantize, problem, std::move(unquantized));
    for (Arm arm = 0; arm < arms.size(); ++arm) {
        const KernelAbi &abi = *built[arm]->abi;
        set.launches.push_back(abi.pack(
            problem, attention_buffers(problem, set.inputs->get(abi.quantization(problem.shape.head_dim)), outputs[arm])));
    }
    for (AttentionOutputs &output : outputs) poison_outputs(output);
    for (Arm arm = 0; arm < arms.size(); ++arm) {
        const std::optional<HostCallResult> call = launch_attention(*arm_kernels[arm], set.launches[arm]);
        // What the user's host function launched: its grid, block and shared memory, not sage2tp's.
        set.launched.push_back(std::nullopt);
        if (!call) continue;
        const std::vector<RecordedLaunch> launched = arm_kernels[arm]->library->launches();
        const RecordedLaunch &first = launched.front();
        set.launched.back() = ArmLaunch{first.describe(), first.kernel, static_cast<std::int64_t>(first.dynamic_smem_bytes),
                                        first.warps_per_scheduler()};
        if (index == 0 && arm != control_arm)
            for (const RecordedLaunch &launch : launched)
                reporter.progress("time: " + arms[arm] + " (" + arm_kernels[arm]->library->function() + ") launches " +
                                  launch.kernel + ": " + launch.describe());
    }
    synchronize("time: first launches on " + input_set_text(index, timed_input_sets) + ", " + problem.describe());
    set.expected = std::make_unique<OutputChecks>(quantize, problem.dtype);
    set.first = output_digests(*set.expected, outputs, true);
    if (request.accuracy.reference_rows > 0) {
        if (index == 0)
            reporter.progress("time: the accuracy of every output against the float64 reference (" +
                              std::to_string(std::min(request.accuracy.reference_rows, problem.shape.len_q)) +
                              " query rows of every head), on every input set");
        set.basis = accuracy_basis(quantize, problem, set.inputs->unquantized(), outputs[baseline_arm], request.accuracy,
                                   set.seed);
        set.accuracy.resize(arms.size());
        for (Arm arm = 0; arm < arms.size(); ++arm)
            if (arm != control_arm)
                set.accuracy[arm] = arm_accuracy(quantize, problem, *set.basis, outputs[arm], arm, arms[arm], request.accuracy);
    }
    set.inputs->release_unquantized();
    return set;
}

// The checks of every arm's outputs after a re-checked round on `set`: the bytes of the arm's first
// output on the set; for a tolerance candidate whose bytes differ, its accuracy conditions instead.
std::vector<RecheckFailure> recheck_outputs(const MeasureRequest &request, const CubinModule &quantize,
                                            const InputSet &set, const std::vector<AttentionOutputs> &outputs,
                                            const std::vector<std::string> &arms) {
    const AttentionProblem &problem = request.workload.problem;
    std::vector<RecheckFailure> failures;
    for (Arm arm = 0; arm < arms.size(); ++arm) {
        if (set.expected->holds_recorded(arm, outputs[arm].o)) continue;
        RecheckFailure failure;
        failure.arm = arm;
        if (const std::int64_t poisoned = count_nan_on_gpu(quantize, outputs[arm].o, problem.dtype); poisoned > 0) {
            failure.what = "left " + std::to_string(poisoned) + " output elements unwritten (still the NaN poison)";
        } else if (set.basis && tolerance_arm(arms[arm], arm, request.accuracy)) {
            const ArmAccuracy a = arm_accuracy(quantize, problem, *set.basis, outputs[arm], arm, arms[arm], request.accuracy);
            if (a.passed.value_or(false)) continue;
            failure.what = "misses the accuracy conditions: " + a.conditions;
        } else {
            const std::vector<std::string> now = set.expected->current_sha256({&outputs[arm].o});
            failure.what = "wrote other bytes than on its first launch on the set (sha256 " + now.front() + ", not " +
                           set.expected->recorded_sha256(arm) + ")";
        }
        failures.push_back(std::move(failure));
    }
    return failures;
}

}  // namespace

ArmMeasurement measure_arms(const MeasureRequest &request, const Reporter &reporter) {
    const AttentionProblem &problem = request.workload.problem;
    const BuiltKernels &kernels = request.kernels;
    const std::vector<std::string> arms = arm_names(candidate_names(kernels));
    check_arm_count(arms.size());

    // What the shape costs, before anything is allocated: one that cannot fit is refused with the numbers.
    const WorkloadCost cost =
        workload_cost(problem, kernels.quantizations(problem.shape.head_dim), arms.size(), timed_input_sets);
    const DeviceMemory memory = device_memory();
    reporter.progress("time: " + request.workload.name + ": " + cost_text(cost) + ", " +
                      sampling_budget_text(request.settings.budget_seconds) + "; the GPU has " +
                      bytes_text(static_cast<std::size_t>(memory.free_bytes)) + " free of " +
                      bytes_text(static_cast<std::size_t>(memory.total_bytes)));
    if (auto refusal = memory_refusal(request.workload.name, cost, memory.free_bytes, memory.total_bytes))
        fail(ExitCode::usage, "time: " + *refusal);

    const CubinModule quantize(kernels.quantize);
    // The baseline's module serves arms 0 and 1; each candidate has its own.
    std::vector<const BuiltAttention *> built{&kernels.baseline, &kernels.baseline};
    for (const BuiltAttention &candidate : kernels.candidates) built.push_back(&candidate);
    std::vector<std::unique_ptr<LoadedAttention>> modules;
    std::vector<AttentionEntry> kernel_of_variant;
    modules.push_back(std::make_unique<LoadedAttention>(load_attention(kernels.baseline)));
    kernel_of_variant.push_back(find_attention_entry(*modules.back(), problem));
    for (const BuiltAttention &candidate : kernels.candidates) {
        modules.push_back(std::make_unique<LoadedAttention>(load_attention(candidate)));
        kernel_of_variant.push_back(find_attention_entry(*modules.back(), problem));
    }
    std::vector<const AttentionEntry *> arm_kernels{&kernel_of_variant[0], &kernel_of_variant[0]};
    for (std::size_t c = 0; c < kernels.candidates.size(); ++c) arm_kernels.push_back(&kernel_of_variant[c + 1]);

    std::vector<AttentionOutputs> outputs;
    for (Arm arm = 0; arm < arms.size(); ++arm) outputs.push_back(allocate_outputs(problem, arms[arm]));

    // Outputs first, on every input set: timing a kernel that computes something else would be
    // meaningless. Set 0's are the ones the pin and the figures hold.
    ArmMeasurement m;
    std::vector<InputSet> sets;
    for (std::size_t index = 0; index < timed_input_sets; ++index) {
        sets.push_back(make_input_set(request, quantize, index, built, arm_kernels, outputs, arms, reporter));
        const InputSet &set = sets.back();
        if (index == 0) {
            m.first = set.first;
            m.launches = set.launched;
            m.accuracy = set.accuracy;
            m.footprint_bytes = attention_footprint_bytes(set.inputs->get(kernels.baseline.abi->quantization(problem.shape.head_dim)),
                                                          outputs[0]);
            m.l2_flushed = needs_l2_flush(m.footprint_bytes, request.device.l2_bytes);
            if (!first_output_failures(arms, m.first, request.expected_sha256, request.pin, kernels.pin_key(), m.accuracy).empty())
                return m;
            continue;
        }
        // The same conditions on every other set, against its own baseline output; no pin holds them.
        for (const std::string &reason : first_output_failures(arms, set.first, std::nullopt, false, kernels.pin_key(), set.accuracy))
            m.input_set_failures.push_back(reason + " (on " + input_set_text(index, timed_input_sets) + ", seed " +
                                           std::to_string(set.seed) + ")");
        if (!m.input_set_failures.empty()) return m;
    }

    std::unique_ptr<L2Flusher> flusher = m.l2_flushed ? std::make_unique<L2Flusher>(request.device) : nullptr;
    SmClockProbe clock(quantize);
    TimingSettings settings = request.settings;
    settings.reference_clock_mhz = request.device.sm_clock_khz / 1000.0;
    std::vector<std::vector<AttentionLaunch>> launches;
    for (const InputSet &set : sets) launches.push_back(set.launches);
    std::vector<AttentionOutputs *> written;
    for (AttentionOutputs &output : outputs) written.push_back(&output);
    std::string no_power;
    const std::unique_ptr<NvmlProbe> power = NvmlProbe::open(request.device.pci_bus_id, no_power);
    if (!power) reporter.progress("time: no clock-event reasons, power or temperature per launch: " + no_power);
    GpuLaunchTimer timer(
        arm_kernels, launches, written, clock, flusher.get(),
        [&](std::size_t set) { return recheck_outputs(request, quantize, sets.at(set), outputs, arms); }, power.get());
    reporter.progress("time: " + std::to_string(arms.size()) + " arms on " + std::to_string(sets.size()) +
                      " input sets, up to " + fixed(settings.budget_seconds, 0) +
                      " s, stopping once every candidate's half-width is below " +
                      fixed(settings.target_half_width * 100, 3) + "% after at least " +
                      std::to_string(settings.min_rounds) + " rounds; outputs poisoned before every launch" +
                      (m.l2_flushed ? ", L2 flushed" : "") + ", and re-checked after about " +
                      fixed(settings.recheck_fraction * 100, 0) + "% of the rounds and the last");
    const auto report_progress = [&](const TimingRun &so_far, const RatioInterval &widest) {
        const std::string line = "  " + std::to_string(so_far.rounds.size()) + " rounds (" +
                                 std::to_string(so_far.throttled_rounds) + " throttled, " +
                                 std::to_string(so_far.rechecked_rounds()) + " re-checked), " +
                                 fixed(so_far.seconds, 1) + " s: widest half-width " +
                                 fixed(widest.half_width_rel * 100, 3) + "%";
        // On a terminal in place, with the budget as the bound of the ETA (sampling may stop sooner).
        if (reporter.live())
            reporter.live_line(line + "; " + elapsed_and_eta(so_far.seconds, so_far.seconds / settings.budget_seconds) +
                               " at most");
        else
            reporter.progress(line);
    };
    m.timing = measure_interleaved(timer, settings, {}, report_progress);
    reporter.end_live_line();
    return m;
}

}  // namespace s2tp
