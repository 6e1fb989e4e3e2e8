#include "stages/time_stage.h"

#include "pipeline/common_options.h"
#include "pipeline/file_artifact.h"

#include "figures/gpu_figures.h"
#include "formats/svg_plot.h"
#include "model/device_sharding.h"
#include "gpu/launch_timer.h"
#include "model/workload_cost.h"
#include "tools/ncu_profile.h"
#include "model/arch_limits.h"
#include "support/data_paths.h"
#include "support/errors.h"
#include "support/file_io.h"
#include "gpu/gpu_input_generator.h"
#include "gpu/gpu_reference.h"
#include "support/hashing.h"
#include "support/number_format.h"
#include "support/process_runner.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <thread>
#include <chrono>
#include <memory>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

// "b1 h40/40 n32760/32760 d128 NHD bf16 non-causal"
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

std::string in_where(const std::string &where) { return where.empty() ? "" : " in " + where; }

toml::array digests_array(const std::vector<OutputDigest> &digests) {
    toml::array array;
    for (const OutputDigest &d : digests) array.push_back(toml::table{{"sha256", d.sha256}, {"unwritten", d.nan_count}});
    return array;
}

std::vector<OutputDigest> digests_from(const toml::node_view<const toml::node> node) {
    std::vector<OutputDigest> digests;
    if (const toml::array *array = node.as_array())
        for (const toml::node &entry : *array) {
            const toml::table *t = entry.as_table();
            if (!t) continue;
            digests.push_back({(*t)["sha256"].value_or(std::string()), (*t)["unwritten"].value_or<std::int64_t>(0)});
        }
    return digests;
}

}  // namespace

// ---- Output records ----

std::vector<OutputDigest> output_digests(OutputChecks &checks, const std::vector<AttentionOutputs> &outputs,
                                         bool first_record) {
    std::vector<const DeviceBuffer *> buffers;
    for (const AttentionOutputs &output : outputs) buffers.push_back(&output.o);
    if (first_record) return checks.record(buffers);
    std::vector<OutputDigest> digests;
    for (std::string &sha256 : checks.current_sha256(buffers)) digests.push_back({std::move(sha256), 0});
    return digests;
}

// ---- Stop conditions ----

std::vector<std::string> unwritten_output_reasons(const std::vector<std::string> &arms,
                                                  const std::vector<OutputDigest> &first) {
    std::vector<std::string> reasons;
    for (Arm arm = 0; arm < first.size(); ++arm)
        if (arm != control_arm && first[arm].nan_count > 0)
            reasons.push_back("the " + arms.at(arm) + " left " + std::to_string(first[arm].nan_count) +
                              " output elements unwritten (still the NaN poison)");
    return reasons;
}

std::optional<std::string> nondeterminism_reason(const std::vector<OutputDigest> &first) {
    const std::string &base = first.at(baseline_arm).sha256, &control = first.at(control_arm).sha256;
    if (control == base) return std::nullopt;
    return "the baseline's output differs between two launches on the same inputs (sha256 " + base + " then " +
           control + "): it is not deterministic";
}

std::vector<std::string> candidate_mismatch_reasons(const std::vector<std::string> &arms,
                                                    const std::vector<OutputDigest> &first,
                                                    const std::vector<ArmAccuracy> &accuracy) {
    std::vector<std::string> reasons;
    for (Arm arm = first_candidate_arm; arm < first.size(); ++arm)
        if (first[arm].sha256 != first[baseline_arm].sha256 && !(arm < accuracy.size() && accuracy[arm].tolerance))
            reasons.push_back("the candidate " + arms.at(arm) + "'s output differs from the baseline's: sha256 " +
                              first[arm].sha256 + " vs " + first[baseline_arm].sha256);
    return reasons;
}

std::optional<std::string> pin_mismatch_reason(const std::string &baseline_sha256,
                                               const std::optional<std::string> &expected, const PinKey &key) {
    if (!expected || baseline_sha256 == *expected) return std::nullopt;
    return "the baseline, kernel " + key.kernel + " built for " + key.arch + ", gave output sha256 " + baseline_sha256 +
           ", but the workload pins " + *expected + " for kernel " + key.text() +
           ": the same kernel's bytes changed (its source, compiler or inputs); if that is intended, "
           "'sage2tp time --pin' records the new output";
}

std::vector<std::string> accuracy_failure_reasons(const std::vector<std::string> &arms,
                                                  const std::vector<ArmAccuracy> &accuracy) {
    std::vector<std::string> reasons;
    for (Arm arm = 0; arm < accuracy.size() && arm < arms.size(); ++arm)
        if (accuracy[arm].passed == false)
            reasons.push_back("the " + arms[arm] + "'s output misses the accuracy conditions: " + accuracy[arm].conditions);
    return reasons;
}

std::vector<std::string> first_output_failures(const std::vector<std::string> &arms,
                                               const std::vector<OutputDigest> &first,
                                               const std::optional<std::string> &expected, bool pin,
                                               const PinKey &key, const std::vector<ArmAccuracy> &accuracy) {
    std::vector<std::string> reasons = unwritten_output_reasons(arms, first);
    if (auto reason = nondeterminism_reason(first)) reasons.push_back(*reason);
    for (std::string &reason : candidate_mismatch_reasons(arms, first, accuracy)) reasons.push_back(std::move(reason));
    for (std::string &reason : accuracy_failure_reasons(arms, accuracy)) reasons.push_back(std::move(reason));
    // Under --pin the earlier pin is what gets replaced, not a criterion; the new one is written only
    // once the timed launches have shown the baseline's bytes to be stable.
    if (!pin)
        if (auto reason = pin_mismatch_reason(first.at(baseline_arm).sha256, expected, key)) reasons.push_back(*reason);
    return reasons;
}

std::vector<std::string> changed_output_reasons(const std::vector<std::string> &arms,
                                                const std::vector<OutputDigest> &reference,
                                                const std::vector<OutputDigest> &other, const std::string &where) {
    std::vector<std::string> reasons;
    if (other.size() != reference.size()) {
        reasons.push_back("the first outputs" + in_where(where) + " were not recorded for every arm (" +
                          std::to_string(other.size()) + " of " + std::to_string(reference.size()) + ")");
        return reasons;
    }
    for (Arm arm = 0; arm < reference.size(); ++arm)
        if (other[arm].sha256 != reference[arm].sha256)
            reasons.push_back("the " + arms.at(arm) + " launch's output" + in_where(where) +
                              " differs from the first measurement's (sha256 " + reference[arm].sha256 + " then " +
                              other[arm].sha256 + "): not deterministic");
    return reasons;
}

std::vector<std::string> recheck_failure_reasons(const std::vector<std::string> &arms, const TimingRun &run,
                                                 const std::string &where) {
    std::vector<std::string> reasons;
    for (const RecheckFailure &failure : run.recheck_failures)
        reasons.push_back("the " + (failure.arm < arms.size() ? arms[failure.arm] : "arm " + std::to_string(failure.arm)) +
                          " " + failure.what + " in timed round " + std::to_string(failure.round + 1) + " on input set " +
                          std::to_string(failure.input_set) + in_where(where) +
                          ": its timed launches did not compute what it was checked for");
    return reasons;
}

std::string sampling_budget_text(double seconds) { return "up to " + compact(seconds, 1) + " s of sampling"; }

std::optional<std::string> too_few_rounds_reason(const TimingRun &run, const TimingSettings &settings,
                                                 const std::string &where) {
    if (run.kept_rounds >= settings.min_rounds) return std::nullopt;
    return "only " + std::to_string(run.kept_rounds) + " unthrottled rounds (of " + std::to_string(run.rounds.size()) +
           ") fit in the budget of " + compact(settings.budget_seconds, 1) + " s" + in_where(where) +
           ", fewer than min_rounds " + std::to_string(settings.min_rounds) + ": no interval to trust; raise --budget";
}

// ---- One measurement ----

toml::table ArmMeasurement::to_toml() const {
    toml::array rounds;
    for (const InterleavedRound &round : timing.rounds) {
        toml::array order, times, clocks, reasons, watts, celsius;
        for (Arm arm : round.order) order.push_back(static_cast<std::int64_t>(arm));
        // NVML's readings: -1 and NaN where it gave none.
        for (const LaunchSample &sample : round.samples) {
            times.push_back(sample.time_ms);
            clocks.push_back(sample.sm_clock_mhz);
            reasons.push_back(sample.power.clock_reasons ? static_cast<std::int64_t>(*sample.power.clock_reasons) : -1);
            watts.push_back(sample.power.power_w.value_or(std::nan("")));
            celsius.push_back(sample.power.temperature_c.value_or(std::nan("")));
        }
        rounds.push_back(toml::table{{"order", order},
                                     {"time_ms", times},
                                     {"sm_clock_mhz", clocks},
                                     {"clock_reasons", reasons},
                                     {"power_w", watts},
                                     {"temperature_c", celsius},
                                     {"throttled", round.throttled},
                                     {"input_set", static_cast<std::int64_t>(round.input_set)},
                                     {"rechecked", round.rechecked}});
    }
    toml::array recheck_failures;
    for (const RecheckFailure &failure : timing.recheck_failures)
        recheck_failures.push_back(toml::table{{"round", static_cast<std::int64_t>(failure.round)},
                                               {"input_set", static_cast<std::int64_t>(failure.input_set)},
                                               {"arm", static_cast<std::int64_t>(failure.arm)},
                                               {"what", failure.what}});
    toml::array set_failures;
    for (const std::string &reason : input_set_failures) set_failures.push_back(reason);
    toml::array launched;  // an empty table for an arm launched from its cubin
    for (const std::optional<ArmLaunch> &launch : launches)
        launched.push_back(launch ? toml::table{{"shape", launch->shape}, {"dynamic_smem_bytes", launch->dynamic_smem_bytes}}
                                  : toml::table{});
    toml::array arm_accuracy;
    for (const ArmAccuracy &a : accuracy) {
        toml::table t{{"tolerance", a.tolerance}, {"conditions", a.conditions}};
        if (a.passed) t.insert("passed", *a.passed);
        if (a.reference) t.insert("reference", a.reference->to_toml());
        if (a.vs_baseline) t.insert("vs_baseline", a.vs_baseline->to_toml());
        arm_accuracy.push_back(std::move(t));
    }
    return toml::table{{"first", digests_array(first)},
                       {"input_set_failures", set_failures},
                       {"launches", launched},
                       {"accuracy", arm_accuracy},
                       {"footprint_bytes", static_cast<std::int64_t>(footprint_bytes)},
                       {"l2_flushed", l2_flushed},
                       {"stopped_by", stop_reason_name(timing.stopped_by)},
                       {"stop_checks", static_cast<std::int64_t>(timing.stop_checks)},
                       {"seconds", timing.seconds},
                       {"input_sets", static_cast<std::int64_t>(timing.input_sets)},
                       {"recheck_failures", recheck_failures},
                       {"rounds", rounds}};
}

ArmMeasurement ArmMeasurement::from_toml(const toml::table &t, const std::string &where) {
    ArmMeasurement m;
    m.first = digests_from(t["first"]);
    if (m.first.empty()) fail(ExitCode::internal, where + ": no output record");
    if (const toml::array *reasons = t["input_set_failures"].as_array())
        for (const toml::node &reason : *reasons) m.input_set_failures.push_back(reason.value_or(std::string()));
    if (const toml::array *launched = t["launches"].as_array())
        for (const toml::node &node : *launched) {
            const toml::table *l = node.as_table();
            if (l && l->contains("shape"))
                m.launches.push_back(ArmLaunch{(*l)["shape"].value_or(std::string()),
                                               (*l)["dynamic_smem_bytes"].value_or<std::int64_t>(0)});
            else
                m.launches.push_back(std::nullopt);
        }
    if (const toml::array *accuracy = t["accuracy"].as_array())
        for (const toml::node &node : *accuracy) {
            const toml::table *a = node.as_table();
            if (!a) continue;
            ArmAccuracy arm{(*a)["tolerance"].value_or(false), std::nullopt, std::nullopt, (*a)["passed"].value<bool>(),
                            (*a)["conditions"].value_or(std::string())};
            if (const toml::table *r = (*a)["reference"].as_table()) arm.reference = AccuracyFigure::from_toml(*r);
            if (const toml::table *r = (*a)["vs_baseline"].as_table()) arm.vs_baseline = AccuracyFigure::from_toml(*r);
            m.accuracy.push_back(std::move(arm));
        }
    m.footprint_bytes = static_cast<std::size_t>(t["footprint_bytes"].value_or<std::int64_t>(0));
    m.l2_flushed = t["l2_flushed"].value_or(false);
    m.timing.stopped_by = stop_reason_of(t["stopped_by"].value_or(std::string()));
    m.timing.stop_checks = static_cast<std::size_t>(t["stop_checks"].value_or<std::int64_t>(0));
    m.timing.seconds = t["seconds"].value_or(0.0);
    m.timing.input_sets = static_cast<std::size_t>(t["input_sets"].value_or<std::int64_t>(1));
    if (const toml::array *failures = t["recheck_failures"].as_array())
        for (const toml::node &node : *failures) {
            const toml::table *f = node.as_table();
            if (!f) continue;
            m.timing.recheck_failures.push_back({static_cast<std::size_t>((*f)["round"].value_or<std::int64_t>(0)),
                                                 static_cast<std::size_t>((*f)["input_set"].value_or<std::int64_t>(0)),
                                                 static_cast<Arm>((*f)["arm"].value_or<std::int64_t>(0)),
                                                 (*f)["what"].value_or(std::string())});
        }
    if (const toml::array *rounds = t["rounds"].as_array())
        for (const toml::node &node : *rounds) {
            const toml::table *r = node.as_table();
            const toml::array *order = r ? (*r)["order"].as_array() : nullptr;
            const toml::array *times = r ? (*r)["time_ms"].as_array() : nullptr;
            const toml::array *clocks = r ? (*r)["sm_clock_mhz"].as_array() : nullptr;
            if (!order || !times || !clocks || times->size() != m.first.size() || clocks->size() != times->size() ||
                order->size() != times->size())
                fail(ExitCode::internal, where + ": round " + std::to_string(m.timing.rounds.size()) +
                                             " does not hold one sample of each of " + std::to_string(m.first.size()) +
                                             " arms");
            InterleavedRound round;
            for (const toml::node &arm : *order) round.order.push_back(static_cast<Arm>(arm.value_or<std::int64_t>(0)));
            const toml::array *reasons = (*r)["clock_reasons"].as_array();
            const toml::array *watts = (*r)["power_w"].as_array();
            const toml::array *celsius = (*r)["temperature_c"].as_array();
            const auto reading = [](const toml::array *values, std::size_t i) -> std::optional<double> {
                if (!values || i >= values->size()) return std::nullopt;
                const double value = (*values)[i].value_or(std::nan(""));
                return std::isnan(value) ? std::nullopt : std::optional<double>(value);
            };
            for (std::size_t i = 0; i < times->size(); ++i) {
                LaunchSample sample{(*times)[i].value_or(0.0), (*clocks)[i].value_or(0.0), {}};
                const std::int64_t bits = reasons && i < reasons->size() ? (*reasons)[i].value_or<std::int64_t>(-1) : -1;
                if (bits >= 0) sample.power.clock_reasons = static_cast<std::uint64_t>(bits);
                sample.power.power_w = reading(watts, i);
                sample.power.temperature_c = reading(celsius, i);
                round.samples.push_back(sample);
            }
            round.throttled = (*r)["throttled"].value_or(false);
            round.input_set = static_cast<std::size_t>((*r)["input_set"].value_or<std::int64_t>(0));
            round.rechecked = (*r)["rechecked"].value_or(false);
            (round.throttled ? m.timing.throttled_rounds : m.timing.kept_rounds) += 1;
            m.timing.rounds.push_back(std::move(round));
        }
    return m;
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
        set.launched.back() = ArmLaunch{first.describe(), static_cast<std::int64_t>(first.dynamic_smem_bytes)};
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

namespace {

bool on_several_gpus(const TimeStageInputs &in) { return in.gpus.size() > 1; }

std::size_t gpu_count(const TimeStageInputs &in) { return on_several_gpus(in) ? in.gpus.size() : 1; }

// The measuring processes: one per repeat on each GPU. Process `index` is repeat index / gpu_count on
// the GPU in place index % gpu_count: the GPUs' processes of one repeat run at once, the repeats one
// after another.
std::size_t process_count(const TimeStageInputs &in) { return gpu_count(in) * in.repeats; }
std::size_t process_gpu(const TimeStageInputs &in, std::size_t index) { return index % gpu_count(in); }
std::size_t process_repeat(const TimeStageInputs &in, std::size_t index) { return index / gpu_count(in); }

// Each GPU samples at once with the others, so each has the whole budget, split over its repeats;
// every process has an order seed of its own.
TimingSettings process_settings(const TimeStageInputs &in, std::size_t index) {
    return repeat_settings(in.settings, in.repeats, index);
}

int process_device(const TimeStageInputs &in, std::size_t index) {
    return on_several_gpus(in) ? in.gpus.at(process_gpu(in, index)).index : in.device_index;
}

}  // namespace

RepeatChildRequest RepeatChildRequest::of_repeat(const TimeStageInputs &in, std::size_t index,
                                                 const fs::path &measurement_file) {
    const TimingSettings s = process_settings(in, index);
    return {in.run.root(),       measurement_file, in.workload_file,           s.budget_seconds, s.min_rounds,
            s.target_half_width, s.order_seed,     process_device(in, index), in.pin};
}

std::vector<std::string> RepeatChildRequest::to_argv() const {
    std::vector<std::string> argv{"--run", run.string(), "--repeat-child", measurement_file.string(),
                                  "--budget", shortest(budget_seconds), "--min-rounds", std::to_string(min_rounds),
                                  "--target-half-width", shortest(target_half_width), "--order-seed",
                                  std::to_string(order_seed), "--device", std::to_string(device_index)};
    if (workload_file) {
        argv.push_back("--workload");
        argv.push_back(workload_file->string());
    }
    if (pin) argv.push_back("--pin");
    return argv;
}

RepeatChildRequest RepeatChildRequest::from_args(const CommandLine &cl, const fs::path &run) {
    const auto &args = cl.result();
    const auto required = [&](const std::string &name) -> const cxxopts::OptionValue & {
        if (!cl.has(name)) fail(ExitCode::usage, "--repeat-child needs --" + name + " (it is internal to --repeat)");
        return args[name];
    };
    RepeatChildRequest request;
    request.run = run;
    request.measurement_file = fs::absolute(args["repeat-child"].as<std::string>()).lexically_normal();
    // The parent names a file of its run's reports/ that it removed first; anything else could be a
    // file of the user's, which the measurement would replace.
    std::error_code ec;
    const fs::path reports = fs::weakly_canonical(RunDirectory(run).reports(), ec);
    if (fs::weakly_canonical(request.measurement_file.parent_path(), ec) != reports ||
        request.measurement_file.extension() != ".toml" ||
        fs::symlink_status(request.measurement_file, ec).type() != fs::file_type::not_found)
        fail(ExitCode::usage, "--repeat-child '" + request.measurement_file.string() + "' is not a new .toml file in " +
                                  reports.string() + ": it is internal to --repeat, whose parent names one there");
    if (cl.has("workload")) request.workload_file = fs::absolute(args["workload"].as<std::string>());
    request.budget_seconds = required("budget").as<double>();
    request.min_rounds = static_cast<std::size_t>(required("min-rounds").as<double>());
    request.target_half_width = required("target-half-width").as<double>();
    request.order_seed = required("order-seed").as<std::uint64_t>();
    request.device_index = s2tp::device_index(cl);
    request.pin = cl.has("pin");
    return request;
}

TimeOverrides RepeatChildRequest::overrides() const {
    return {target_half_width, budget_seconds, min_rounds, order_seed};
}

void run_repeat_child(const RepeatChildRequest &request, const Reporter &reporter) {
    const RunDirectory run(request.run);
    const ResolvedTimeInputs in = resolve_time_inputs(run, inspect_run(run), load_experiment(run.manifest()),
                                                      request.overrides(), request.workload_file);
    const DeviceFacts device = require_gpu("time", request.device_index);
    require_kernels_for_device("time", in.kernels, device);
    const MeasureRequest measure{in.workload,        in.kernels,  device, in.settings,
                                 in.expected_sha256, request.pin, time_accuracy(in.experiment)};
    std::ostringstream text;
    text << measure_arms(measure, reporter).to_toml() << "\n";
    write_file_atomically(request.measurement_file, text.str());
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

std::string verify_time_outputs(const Checkpoint &c, const std::optional<std::string> &expected_sha256,
                                const PinKey &key) {
    // Every artifact the checkpoint records has been checked by inspect_run; the pin is no artifact's.
    // A pin added, changed or removed by hand after the stage ran must be checked again.
    if (TimeFigures::from_toml(c.figures).expected_sha256 != expected_sha256)
        return "the pinned output SHA-256 for " + key.text() + " changed";
    return "";
}

TimingStats with_between_process(const TimeStageInputs &in, TimingStats stats) {
    if (process_count(in) > 1) return stats;
    for (Arm arm = first_candidate_arm; arm < stats.ratios.size(); ++arm)
        stats.ratios[arm].interval = with_between_process(stats.ratios[arm].interval, in.between_process.relative_sd);
    return stats;
}

BetweenProcess between_process_for(const DeviceFacts &device) {
    return between_process_component(load_timing_calibration(timing_calibration_table().string()), device.name);
}

TimingSettings repeat_settings(const TimingSettings &settings, std::size_t repeats, std::size_t index) {
    TimingSettings s = settings;
    s.budget_seconds = settings.budget_seconds / static_cast<double>(repeats);
    s.order_seed = settings.order_seed + index;
    return s;
}

// ---- The stage ----

namespace {

// "repeat 3", "GPU 1", "GPU 1 repeat 3", or "" for a single measurement: how reasons name process `index`.
std::string repeat_where(const TimeStageInputs &in, std::size_t index) {
    const std::string repeat = in.repeats == 1 ? "" : "repeat " + std::to_string(process_repeat(in, index) + 1);
    if (!on_several_gpus(in)) return repeat;
    return "GPU " + std::to_string(process_device(in, index)) + (repeat.empty() ? "" : " " + repeat);
}

// The stem of process `index`'s log and measurement file: time-repeat-3, time-gpu1, time-gpu1-repeat-3.
std::string process_stem(const TimeStageInputs &in, std::size_t index) {
    const std::string repeat = "repeat-" + std::to_string(process_repeat(in, index) + 1);
    if (!on_several_gpus(in)) return "time-" + repeat;
    return "time-gpu" + std::to_string(process_device(in, index)) + (in.repeats == 1 ? "" : "-" + repeat);
}

// Starts process `index` as a fresh sage2tp process and reads back what it measured.

// `reporting`, when given, is held while it reports: processes on several GPUs run at once.
ArmMeasurement measure_in_child(const TimeStageInputs &in, std::size_t index, const Reporter &reporter,
                                std::mutex *reporting = nullptr) {
    const auto report = [&](const std::string &line) {
        std::unique_lock<std::mutex> lock;
        if (reporting) lock = std::unique_lock<std::mutex>(*reporting);
        reporter.progress(line);
    };
    const TimingSettings s = process_settings(in, index);
    const std::string stem = process_stem(in, index);
    const fs::path file = in.run.reports() / (stem + ".toml");
    const fs::path log = in.run.logs() / (stem + ".log");
    fs::create_directories(in.run.reports());
    fs::create_directories(in.run.logs());
    std::error_code ec;
    fs::remove(file, ec);
    std::vector<std::string> argv{current_executable().string(), "time"};
    for (std::string &word : RepeatChildRequest::of_repeat(in, index, file).to_argv()) argv.push_back(std::move(word));
    const std::string where = repeat_where(in, index);
    const std::string of_repeats = in.repeats == 1 ? "" : " of " + std::to_string(in.repeats);
    report("time: " + where + (on_several_gpus(in) ? of_repeats + ", " + std::to_string(in.gpus.size()) + " GPUs at once"
                                                   : of_repeats) +
           " in a fresh process, " + sampling_budget_text(s.budget_seconds));
    // Sampling stops at the repeat's budget; the rest is the repeat's start (inputs, modules, checks),
    // which even a host-generated block-24 workload finishes in well under the margin.
    ProcessOptions options;
    options.timeout = std::chrono::seconds(static_cast<long long>(s.budget_seconds) + 900);
    // The child times alone on its GPU, as a single run does: another process's idle context beside the
    // default experiment's single runs moved its ratios by about 0.25 % on an H100.
    release_primary_contexts({process_device(in, index)});
    const ProcessResult ran = run_process(argv, options);
    write_file_atomically(log, ran.out + ran.err);
    if (ran.exit_code != 0 || !fs::is_regular_file(file, ec)) {
        // A device error means the GPU went away (exit 3, the GPU lost); anything else is a failure.
        const std::optional<std::string> device_error = device_error_in(ran.out + ran.err);
        fail(device_error ? ExitCode::missing_tool : ExitCode::internal,
             "time: " + where + " (" + in.run.relative(log) + ") " +
                 (ran.timed_out ? "ran past its " + std::to_string(options.timeout->count()) + " s"
                                : "exited with " + std::to_string(ran.exit_code)) +
                 " and wrote no measurement" + (device_error ? ": the GPU failed with " + *device_error : ""));
    }
    ArmMeasurement m = ArmMeasurement::from_toml(toml::parse_file(file.string()), in.run.relative(file));
    fs::remove(file, ec);
    std::string medians;
    if (m.timing.kept_rounds >= 2)
        for (Arm arm = first_candidate_arm; arm < m.first.size(); ++arm)
            medians += ", " + in.kernels.candidates.at(arm - first_candidate_arm).variant + "/baseline " +
                       fixed(median(kept_ratios(m.timing.rounds, arm)), 4);
    report("  " + where + ": " + std::to_string(m.timing.kept_rounds) + " rounds kept, " +
                      std::to_string(m.timing.throttled_rounds) + " throttled, stopped by " +
                      stop_reason_name(m.timing.stopped_by) + medians);
    return m;
}

toml::array rounds_array(const std::vector<TimingRun> &repeats, const std::vector<std::string> &arms) {
    toml::array rounds;
    for (std::size_t r = 0; r < repeats.size(); ++r)
        for (std::size_t i = 0; i < repeats[r].rounds.size(); ++i) {
            const InterleavedRound &round = repeats[r].rounds[i];
            toml::array order;
            for (Arm arm : round.order) order.push_back(arms[arm]);
            // The samples by arm name in a table of their own: a candidate may be named like a round's key.
            toml::table samples;
            for (Arm arm = 0; arm < arms.size(); ++arm)
                samples.insert(arms[arm], toml::table{{"time_ms", round[arm].time_ms},
                                                      {"sm_clock_mhz", round[arm].sm_clock_mhz}});
            rounds.push_back(toml::table{{"repeat", static_cast<std::int64_t>(r + 1)},
                                         {"round", static_cast<std::int64_t>(i)},
                                         {"order", order},
                                         {"throttled", round.throttled},
                                         {"samples", samples}});
        }
    return rounds;
}

RatioFigures ratio_figures(const RepeatedRatio &ratio) {
    RatioFigures f = RatioFigures::of(ratio.interval);
    if (ratio.repeat_medians.size() >= 2) {
        f.repeat_medians = ratio.repeat_medians;
        f.between_repeat_spread = ratio.between_repeat_spread;
        f.within_repeat_half_width = ratio.within_repeat_half_width;
    }
    return f;
}

// The mangled name of the attention entry the variant's adapter selects for the problem: what ncu
// matches (the module is loaded only to read it).
std::string find_entry_name(const BuiltAttention &built, const AttentionProblem &problem) {
    const CubinModule module(built.cubin);
    return built.abi->select_entry(problem, module.entry_names(), built.cubin.string());
}


// ---- The parts of the stage ----

// The figures every time checkpoint holds, timed or not.
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

// The accuracy of each arm's first outputs, when the run checks it: the candidates' parity mode, figures
// and conditions, and the baseline's.
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

// The settings the rounds were timed with, and what they came to: counts, L2, footprint, seconds.
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

// The measurements: in this process for one, in fresh processes for several. A repeat whose first
// outputs fail the checks did not time anything, and the later ones are not started. On several GPUs
// the GPUs' processes of one repeat run at once, the repeats one after another; a process whose output
// holds a device error loses its GPU (`lost`, per GPU, the error), which then runs no later repeat,
// and the other GPUs' measurements are kept.
struct Measurements {
    std::vector<ArmMeasurement> measured;
    std::vector<std::size_t> process;  // each measurement's process index (repeat_where)
    std::vector<std::string> lost;     // per GPU on several GPUs: the device error, "" when not lost
};

// One repeat on every GPU not yet lost, all at once, into `m`; false when no GPU is left.
bool measure_repeat_on_gpus(const TimeStageInputs &in, std::size_t repeat, Measurements &m, const ChildMeasure &child) {
    const std::size_t gpus = in.gpus.size();
    std::vector<std::optional<ArmMeasurement>> slots(gpus);
    std::vector<std::exception_ptr> failures(gpus);
    std::vector<std::thread> threads;
    for (std::size_t g = 0; g < gpus; ++g) {
        if (!m.lost[g].empty()) continue;
        threads.emplace_back([&, g] {
            try {
                slots[g] = child(repeat * gpus + g);
            } catch (const Error &e) {
                if (e.code() == ExitCode::missing_tool) m.lost[g] = e.what();
                else failures[g] = std::current_exception();
            } catch (...) {
                failures[g] = std::current_exception();
            }
        });
    }
    for (std::thread &t : threads) t.join();
    for (const std::exception_ptr &failure : failures)
        if (failure) std::rethrow_exception(failure);
    for (std::size_t g = 0; g < gpus; ++g)
        if (slots[g]) {
            m.measured.push_back(std::move(*slots[g]));
            m.process.push_back(repeat * gpus + g);
        }
    return std::any_of(m.lost.begin(), m.lost.end(), [](const std::string &l) { return l.empty(); });
}

bool first_outputs_failed(const ArmMeasurement &m) { return m.timing.rounds.empty(); }

bool recheck_failed(const ArmMeasurement &m) { return !m.timing.recheck_failures.empty(); }

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

// The output checks after the first record: every repeat must have produced the reference's bytes
// before timing (a fresh process with fresh allocations), and every re-checked round its expected
// outputs. One reason per difference.
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

// figures.gpus on several GPUs: each GPU, the median SM clock during its kept samples, and the error
// that lost it.
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

// Defined below: the figures of the timed rounds, and what the A/A band rests on.
void timed_figures(TimeFigures &f, const TimingStats &stats, const std::vector<std::string> &arms,
                   const AttentionProblem &problem);
std::string aa_band_basis_text(const std::string &arch);

// figures.gpu_results for GPUs of several models: each GPU's statistics over its own processes
// (model/device_sharding.h's fold), and a reason for each GPU whose A/A control is too noisy. A GPU
// with a process of too few rounds has no interval (its reason is already given).
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

// --pin, or the first passing run of a kernel nothing pinned: the baseline's digest into the run's pins,
// once the timed launches showed its bytes stable.
void pin_baseline_output(const TimeStageInputs &in, const std::string &baseline_sha256, TimeFigures &f,
                         const Reporter &reporter) {
    const PinKey key = in.kernels.pin_key();
    f.replaced_pin = pin_expected_output_sha256(in.run.pins(), in.workload, key, baseline_sha256);
    if (f.replaced_pin) reporter.warn("time: --pin replaced the earlier pin " + *f.replaced_pin + " for " + key.text());
    if (in.pin)
        reporter.progress("time: pinned the baseline's output sha256 " + baseline_sha256 + " for " + key.text() +
                          " in " + in.run.relative(in.run.pins()));
    else
        reporter.say("time: nothing pinned the output of " + key.text() + " on " + in.workload.name +
                     ": recorded the baseline's, sha256 " + baseline_sha256 + ", in " + in.run.relative(in.run.pins()) +
                     "; later runs check against it");
    f.recorded_pin = !in.pin;
    f.expected_sha256 = baseline_sha256;
}

// The figures of the timed rounds: counts, the interval statistics per arm and ratio, the clocks.
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

// What each arm's host function launched (the first measurement's), beside its times: the launch that
// was timed, which the gate's shared-memory condition judges in place of build's table.
void launch_figures(TimeFigures &f, const std::vector<std::optional<ArmLaunch>> &launches,
                    const std::vector<std::string> &arms) {
    const auto put = [&](std::optional<ArmTimeFigures> &timing, Arm arm) {
        if (!timing || arm >= launches.size() || !launches[arm]) return;
        timing->launch = launches[arm]->shape;
        timing->launch_dynamic_smem_bytes = launches[arm]->dynamic_smem_bytes;
    };
    put(f.baseline, baseline_arm);
    for (Arm arm = first_candidate_arm; arm < arms.size(); ++arm) put(f.candidate_or_add(arms[arm]).timing, arm);
}

// What the A/A band rests on for `arch`, after a too-noisy reason: the band was set from an H200's A/A
// figures.
std::string aa_band_basis_text(const std::string &arch) {
    const ArchLimitsTable table = load_arch_limits(arch_limits_table().string());
    const std::string &basis = resolve_arch(table, arch).aa_band_basis;
    return "the band is a tenth of [time] target_half_width (or one 0.5 us CUDA event tick of the baseline's p50, "
           "if wider), " +
           (basis.empty() ? "set from an H200's A/A control and not measured on " + arch : basis) +
           "; on a desktop GPU that drives a display, see sage2tp-time(1) for what to set";
}

std::string in_processes(std::size_t repeats) {
    return repeats > 1 ? " in " + std::to_string(repeats) + " processes" : std::string();
}

// reports/REPORT_NAME.svg (time.svg for the run's workload): every arm's kept times and every ratio's interval,
// the A/A control against `aa_band`, the band the stage judged it by.
fs::path write_time_plot(const TimeStageInputs &in, const TimeFigures &f, const TimingStats &stats,
                         const std::vector<std::string> &arms, const std::vector<TimingRun> &runs, std::size_t kept,
                         double aa_band) {
    TimePlot plot;
    plot.title = "sage2tp time: " + in.workload.name;
    plot.subtitle = *f.shape + " on " + in.device.name + "; " + std::to_string(kept) + " rounds kept" +
                    in_processes(process_count(in)) + ", " + std::to_string(*f.throttled_rounds) + " throttled; stopped by " +
                    *f.stopped_by;
    for (Arm arm = 0; arm < arms.size(); ++arm) {
        std::vector<double> times;
        for (const TimingRun &run : runs) {
            const std::vector<double> t = kept_times(run.rounds, arm);
            times.insert(times.end(), t.begin(), t.end());
        }
        plot.arms.push_back({arms[arm], times});
        if (arm >= first_candidate_arm) plot.ratios.push_back({arms[arm], stats.vs_baseline(arm)});
    }
    plot.baseline_vs_baseline = stats.control_vs_baseline();
    plot.aa_tolerance = aa_band;
    if (plot.ratios.empty()) plot.ratios.push_back({arms[control_arm], plot.baseline_vs_baseline});  // an A/A run
    const fs::path svg = in.run.reports() / (in.report_name + ".svg");
    fs::create_directories(in.run.reports());
    write_file_atomically(svg, render_time_plot_svg(plot));
    return svg;
}

// The one line of a timed run: each candidate's ratio with its interval and p50s, then the A/A.
std::string timed_summary(const TimeStageInputs &in, const TimingStats &stats, const std::vector<std::string> &arms,
                          std::size_t kept, bool too_noisy) {
    std::ostringstream summary;
    summary << in.workload.name << ":";
    for (Arm arm = first_candidate_arm; arm < arms.size(); ++arm) {
        summary << (arm > first_candidate_arm ? ";" : "") << " " << arms[arm] << "/baseline "
                << interval_text(stats.vs_baseline(arm)) << ", p50 " << fixed(stats[baseline_arm].p50, 2)
                << " -> " << fixed(stats[arm].p50, 2) << " ms";
    }
    summary << ", A/A " << fixed(stats.control_vs_baseline().median, 4) << (too_noisy ? " (too noisy)" : "") << ", "
            << kept << " rounds" << in_processes(process_count(in));
    return summary.str();
}

// reports/REPORT_NAME.json (time.json for the run's workload): the settings, every round's samples, the statistics and the output digests.
fs::path write_json_report(const TimeStageInputs &in, const TimeFigures &f, const std::vector<std::string> &arms,
                           const ArmMeasurement &reference, const std::vector<TimingRun> &runs, bool stable) {
    toml::array arm_list;
    for (const std::string &name : arms) arm_list.push_back(name);
    toml::table report{{"workload", in.workload.name},
                       {"shape", *f.shape},
                       {"problem", in.workload.problem.describe()},
                       {"device", in.device.summary()},
                       {"device_uuid", in.device.uuid},
                       {"reference_sm_clock_mhz", in.device.sm_clock_khz / 1000.0},
                       {"throttle_fraction", in.settings.throttle_fraction},
                       {"l2_flushed", reference.l2_flushed},
                       {"footprint_bytes", static_cast<std::int64_t>(reference.footprint_bytes)},
                       {"warmup_launches", static_cast<std::int64_t>(in.settings.warmup_launches)},
                       {"order_seed", static_cast<std::int64_t>(in.settings.order_seed)},
                       {"repeats", static_cast<std::int64_t>(in.repeats)},
                       {"arms", arm_list},
                       {"stopped_by", *f.stopped_by},
                       {"seconds", *f.measure_seconds},
                       {"rounds", rounds_array(runs, arms)}};
    if (f.baseline) {
        const toml::table figures = f.to_toml();
        for (const char *key : {"baseline", "baseline_control", "aa", "candidates", "sm_clock_mhz"})
            report.insert(std::string("stats_") + key, *figures[key].as_table());
    }
    report.insert("sha256", toml::table{{"baseline", reference.first.at(baseline_arm).sha256}, {"match", stable}});
    const fs::path json = in.run.reports() / (in.report_name + ".json");
    fs::create_directories(in.run.reports());
    std::ostringstream json_text;
    json_text << toml::json_formatter{report} << "\n";
    write_file_atomically(json, json_text.str());
    return json;
}

// --ncu: one launch of each variant under Nsight Compute, its figures and the largest changes.
void add_ncu_profiles(const TimeStageInputs &in, TimeFigures &f, StageResult &result, const Reporter &reporter) {
    std::vector<NcuVariant> variants{{"baseline", find_entry_name(in.kernels.baseline, in.workload.problem)}};
    for (const BuiltAttention &candidate : in.kernels.candidates)
        variants.push_back({candidate.variant, find_entry_name(candidate, in.workload.problem)});
    NcuProfiles profiles = profile_with_ncu(in.run, {variants, in.ncu_metrics, in.ncu_seq_len, in.device_index, in.workload_file}, reporter);
    if (profiles.version) result.tools.insert("ncu", *profiles.version);
    for (auto &&[name, node] : profiles.artifacts) result.artifacts.insert(name, node);
    f.ncu = profiles.figures;
    std::string changes;
    for (auto &[name, comparison] : profiles.comparisons) {
        if (!comparison.largest_changes.empty())
            changes += (changes.empty() ? "" : "; ") + name + ": " + comparison.largest_changes_text();
        f.candidate_or_add(name).ncu = std::move(comparison);
    }
    if (!changes.empty()) f.summary = f.summary.value_or(std::string()) + "; ncu: " + changes;
}

}  // namespace

TimedWorkload time_workload(const TimeStageInputs &in, const Reporter &reporter, const ChildMeasure &child) {
    const std::vector<std::string> arms = arm_names(candidate_names(in.kernels));
    check_arm_count(arms.size());
    if (in.repeats < 1) fail(ExitCode::internal, "time: repeats must be at least 1");

    TimedWorkload timed;
    StageResult &result = timed.result;
    result.tools.insert("gpu", on_several_gpus(in) ? gpu_names(in.gpus) : in.device.name);
    result.tools.insert("cuda_driver", cuda_version_string(in.device.driver_version));
    TimeFigures f = setting_figures(in);
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
        result.figures = f.to_toml();
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
    } else {
        f.summary = in.workload.name + ": " + std::to_string(kept) + " unthrottled rounds, too few for an interval";
    }
    result.artifacts.insert("time_json", FileArtifact::of(in.run, write_json_report(in, f, arms, reference, runs, stable)).to_toml());
    if (in.ncu) add_ncu_profiles(in, f, result, reporter);

    result.figures = f.to_toml();
    result.status = result.reasons.empty() ? StageStatus::passed : StageStatus::failed;
    timed.runs = std::move(runs);
    return timed;
}

std::optional<std::vector<DeviceFacts>> time_devices(StageWork &work, const RunDirectory &run,
                                                     const std::string &built_arch, const DeviceList &devices,
                                                     bool may_keep) {
    try {
        return require_gpus("time", devices);
    } catch (const Error &e) {
        if (e.code() != ExitCode::missing_tool) throw;
        if (!may_keep) {
            stop_if_no_gpu(Stage::time, run, built_arch);
            throw;
        }
        // A run timed on a GPU host and copied back stays up to date here; anything else needs the GPU.
        work.unavailable = e;
        work.keep_reason = "no GPU here to time on again";
        work.stop_unavailable = [&run, built_arch] { stop_if_no_gpu(Stage::time, run, built_arch); };
        return std::nullopt;
    }
}

StageWork time_stage_work(StageContext &context, const TimeRequest &request, const Reporter &reporter) {
    const RunDirectory &run = context.run();
    const auto resolved = std::make_shared<const ResolvedTimeInputs>(
        resolve_time_inputs(run, context.states(), context.experiment(), request.overrides, request.workload_file));
    StageWork work;
    work.stage = Stage::time;
    work.force = request.force || request.pin;
    work.verify_outputs = [resolved](const Checkpoint &c) {
        return verify_time_outputs(c, resolved->expected_sha256, resolved->kernels.pin_key());
    };
    work.summarize = print_time;
    const std::optional<std::vector<DeviceFacts>> gpus = time_devices(
        work, run, resolved->kernels.arch, request.devices, !request.force && !request.pin && !request.ncu);
    if (!gpus) return work;
    for (const DeviceFacts &gpu : *gpus) require_kernels_for_device("time", resolved->kernels, gpu);
    const Experiment &experiment = resolved->experiment;
    const std::size_t repeats = request.repeats.value_or(static_cast<std::size_t>(experiment.repeats));
    const DeviceFacts &device = gpus->front();
    const auto inputs = std::make_shared<const TimeStageInputs>(TimeStageInputs{
        run, resolved->workload, request.workload_file, resolved->kernels, device, resolved->settings, repeats,
        resolved->expected_sha256, request.pin,
        /*record_first_pin=*/!resolved->expected_sha256 && !request.pin && !request.workload_file, request.ncu,
        experiment.ncu_metrics, experiment.ncu_seq_len, device.index, time_accuracy(experiment),
        gpus->size() > 1 ? *gpus : std::vector<DeviceFacts>{}, "time", between_process_for(device)});
    work.add_inputs = [inputs](Fingerprint &f) { add_time_inputs(f, *inputs); };
    work.run = [inputs, &reporter] { return time_workload(*inputs, reporter).result; };
    return work;
}

}  // namespace s2tp
