#include "model/gate_rules.h"
#include "support/number_format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <utility>

namespace s2tp {

namespace {

std::string signed_bytes(std::int64_t bytes) { return (bytes >= 0 ? "+" : "") + std::to_string(bytes) + " B"; }

std::string lowercase(std::string text) {
    for (char &c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

std::string digest_prefix(const std::string &sha) { return sha.substr(0, 12) + (sha.size() > 12 ? "..." : ""); }

GateCondition make(const char *name, GateStatus status, std::string figure, std::string detail = "",
                   bool required = true) {
    return {name, status, std::move(figure), std::move(detail), required, ""};
}

// A missing or stale checkpoint is not evidence: the condition it feeds cannot be decided.
// The stage before `stage_name` that failed, which is why `stage_name` never ran; "" when none did.
std::string failed_before(const GateEvidence &e, const std::string &stage_name) {
    const std::pair<const char *, const StageEvidence *> order[] = {
        {"prepare", &e.prepare}, {"build", &e.build}, {"sanitize", &e.sanitize}, {"parity", &e.parity}, {"time", &e.time}};
    for (const auto &[name, stage] : order) {
        if (name == stage_name) return "";
        const bool skipped = stage == &e.sanitize && e.sanitizer_skipped;
        if (stage->present && !stage->passed && !skipped) return name;
    }
    return "";
}

std::optional<GateCondition> unusable(const char *name, const std::string &stage_name, const StageEvidence &stage,
                                      bool required, const GateEvidence &e) {
    if (!stage.present) {
        // A stage that never ran because an earlier one failed: name the real cause, not the missing stage.
        if (std::string cause = failed_before(e, stage_name); !cause.empty())
            return make(name, GateStatus::not_checked, cause + " failed, so " + stage_name + " did not run",
                        "fix what " + cause + " reports first", required);
        return make(name, GateStatus::not_checked, "no " + stage_name + " checkpoint",
                    "run the " + stage_name + " stage", required);
    }
    if (!stage.fresh)
        return make(name, GateStatus::not_checked, stage_name + " checkpoint is stale",
                    "its inputs changed since it ran; rerun the " + stage_name + " stage", required);
    return std::nullopt;
}

// Timing figures from a time stage that did not pass (e.g. its A/A control excluded 1) are not
// trustworthy enough to pass or fail a candidate on.
std::optional<GateCondition> timing_unusable(const char *name, const GateEvidence &e, bool required) {
    if (auto not_evidence = unusable(name, "time", e.time, required, e)) return not_evidence;
    if (!e.time.passed) return make(name, GateStatus::not_checked, "time stage did not pass", e.time.note, required);
    return std::nullopt;
}

std::optional<GateCondition> resources_unusable(const char *name, const GateEvidence &e, bool recorded) {
    if (auto not_evidence = unusable(name, "build", e.build, true, e)) return not_evidence;
    if (!e.build.passed) return make(name, GateStatus::not_checked, "build did not pass");
    if (!recorded)
        return make(name, GateStatus::not_checked, "not recorded for " + e.resource_arch,
                    "the build checkpoint lacks this figure for one of the arms");
    return std::nullopt;
}

GateCondition check_freshness(const GateEvidence &e, const GateThresholds &) {
    const char *name = "freshness";
    const std::pair<const char *, const StageEvidence *> stages[] = {
        {"prepare", &e.prepare}, {"build", &e.build}, {"sanitize", &e.sanitize},
        {"parity", &e.parity},   {"time", &e.time},
    };
    int present = 0;
    std::string stale;
    for (const auto &[stage_name, stage] : stages) {
        if (!stage->present) continue;
        ++present;
        if (!stage->fresh) stale += (stale.empty() ? "" : ", ") + std::string(stage_name);
    }
    if (present == 0) return make(name, GateStatus::not_checked, "no checkpoints", "run the pipeline first");
    if (!stale.empty())
        return make(name, GateStatus::fail, "stale: " + stale,
                    "inputs changed since these stages ran; a stale checkpoint is not evidence");
    return make(name, GateStatus::pass, std::to_string(present) + " checkpoint(s) fresh");
}

GateCondition check_build(const GateEvidence &e, const GateThresholds &) {
    const char *name = "build";
    if (auto not_evidence = unusable(name, "build", e.build, true, e)) return *not_evidence;
    if (!e.build.passed) return make(name, GateStatus::fail, "build failed", e.build.note);
    return make(name, GateStatus::pass, "every variant built");
}

GateCondition check_sanitizer(const GateEvidence &e, const GateThresholds &t) {
    const char *name = "sanitizer";
    const bool required = t.require_sanitizer;
    if (auto not_evidence = unusable(name, "sanitize", e.sanitize, required, e)) return *not_evidence;
    if (e.sanitizer_skipped)
        return make(name, GateStatus::not_checked, "skipped",
                    required ? "require_sanitizer is set" : "not required; does not block", required);
    if (e.sanitizer_errors > 0)
        return make(name, GateStatus::fail, std::to_string(e.sanitizer_errors) + " error(s)", e.sanitize.note,
                    required);
    // A run without errors that still did not pass ended without a summary (tool crash, timeout):
    // no summary is no evidence of a clean kernel.
    if (!e.sanitize.passed) return make(name, GateStatus::fail, "no clean summary", e.sanitize.note, required);
    return make(name, GateStatus::pass, "0 errors", "", required);
}

GateCondition check_parity(const GateEvidence &e, const GateThresholds &) {
    const char *name = "parity";
    if (auto not_evidence = unusable(name, "parity", e.parity, true, e)) return *not_evidence;
    const std::string counts = std::to_string(e.parity_shapes_differing) + " of " +
                               std::to_string(e.parity_shapes_compared) + " shapes differ";
    if (e.parity_mode == "tolerance") {
        std::size_t passed = 0;
        for (const auto &a : e.candidate_accuracy) passed += a.passed;
        const std::string figure = "tolerance: " + counts + " in bytes; " + std::to_string(passed) + " of " +
                                   std::to_string(e.candidate_accuracy.size()) + " shapes meet the accuracy conditions";
        if (e.candidate_accuracy.empty())
            return make(name, GateStatus::not_checked, figure, "the parity checkpoint records no accuracy figures");
        if (!e.parity.passed) return make(name, GateStatus::fail, figure, e.parity.note);
        return make(name, GateStatus::pass, figure);
    }
    if (e.parity_shapes_differing > 0) return make(name, GateStatus::fail, counts, e.parity.note);
    if (!e.parity.passed) return make(name, GateStatus::fail, "parity stage failed", e.parity.note);
    if (e.parity_shapes_compared == 0)
        return make(name, GateStatus::not_checked, "no shapes compared", "an empty parity run proves nothing");
    return make(name, GateStatus::pass, counts);
}

GateCondition check_output_sha(const GateEvidence &e, const GateThresholds &) {
    if (e.parity_mode == "tolerance") {
        const char *name = "output-accuracy";
        if (auto not_evidence = unusable(name, e.real_output_stage_name, e.real_output_stage, true, e))
            return *not_evidence;
        if (!e.real_output_accuracy_passed)
            return make(name, GateStatus::not_checked, "no accuracy of the real output recorded",
                        "the " + e.real_output_stage_name + " stage checks it in tolerance mode");
        return make(name, *e.real_output_accuracy_passed ? GateStatus::pass : GateStatus::fail, e.real_output_accuracy);
    }
    const char *name = "output-sha";
    if (auto not_evidence = unusable(name, e.real_output_stage_name, e.real_output_stage, true, e))
        return *not_evidence;
    if (e.expected_real_output_sha256.empty())
        return make(name, GateStatus::not_checked, "no expected digest",
                    "the manifest sets no expected real-output SHA-256");
    if (e.real_output_sha256.empty())
        return make(name, GateStatus::not_checked, "no digest recorded",
                    "the " + e.real_output_stage_name + " checkpoint holds no real-output SHA-256");
    const std::string actual = lowercase(e.real_output_sha256);
    const std::string expected = lowercase(e.expected_real_output_sha256);
    if (actual != expected)
        return make(name, GateStatus::fail,
                    "sha256 " + digest_prefix(actual) + " != expected " + digest_prefix(expected),
                    "actual " + actual + ", expected " + expected);
    return make(name, GateStatus::pass, "sha256 " + digest_prefix(actual) + " matches");
}

GateCondition check_candidate_p50(const GateEvidence &e, const GateThresholds &t) {
    const char *name = "candidate-p50";
    // The default bound is one workload's time (Wan 480p) on one GPU: over a set it would judge every
    // other shape by that one's time, so there only a bound the user chose applies.
    if (!e.workload_set.empty() && !t.max_candidate_p50_ms)
        return make(name, GateStatus::not_checked, "no bound",
                    "the default bound is one workload's; set [gate] max_candidate_p50_ms or --max-p50-ms to bound "
                    "every shape; does not block",
                    false);
    if (auto not_evidence = timing_unusable(name, e, true)) return *not_evidence;
    if (!e.candidate_p50_ms) return make(name, GateStatus::not_checked, "no candidate p50 recorded");
    const std::string limit = fixed(t.candidate_p50_bound(), 2) + " ms";
    const std::string p50 = "p50 " + fixed(*e.candidate_p50_ms, 3) + " ms";
    if (*e.candidate_p50_ms >= t.candidate_p50_bound())
        return make(name, GateStatus::fail, p50 + " >= " + limit,
                    !t.max_candidate_p50_ms
                        ? "the default bound, measured on the DGX Spark (sm_121a); set [gate] max_candidate_p50_ms for your GPU"
                        : "");
    return make(name, GateStatus::pass, p50 + " < " + limit);
}

// The bound on the ratio interval `ci` (`what` says which): the whole interval must sit below it.
GateCondition ratio_bound_condition(const char *name, const std::string &what, const RatioInterval &ci, double bound) {
    const std::string limit = fixed(bound, 4);
    if (ci.hi < bound) return make(name, GateStatus::pass, what + " " + interval_text(ci) + " entirely < " + limit);
    return make(name, GateStatus::fail, what + " " + interval_text(ci) + " reaches >= " + limit,
                "candidate/baseline, a bootstrap interval over n = " + std::to_string(ci.n) + " rounds");
}

GateCondition check_relative_speed(const GateEvidence &e, const GateThresholds &t) {
    const char *name = "relative-speed";
    if (!t.ratio_upper_bound)
        return make(name, GateStatus::not_checked, "off", "max_ratio_upper = \"off\" in the manifest; does not block", false);
    if (auto not_evidence = timing_unusable(name, e, true)) return *not_evidence;
    if (!e.candidate_vs_baseline) return make(name, GateStatus::not_checked, "no ratio interval recorded");
    // The whole interval must sit below the bound: a median below it with an interval reaching
    // above it is not evidence of the speed-up.
    return ratio_bound_condition(name, "ratio", *e.candidate_vs_baseline, *t.ratio_upper_bound);
}

// A set condition whose bound is off, or whose evidence is not a set's.
std::optional<GateCondition> set_condition_unusable(const char *name, const char *key, const std::optional<double> &bound,
                                                    const GateEvidence &e) {
    if (!bound) return make(name, GateStatus::not_checked, "off", std::string("no ") + key + " configured; does not block", false);
    if (auto not_evidence = timing_unusable(name, e, true)) return not_evidence;
    if (e.workload_set.empty())
        return make(name, GateStatus::not_checked, "the time stage timed one workload, not a set",
                    std::string(key) + " needs a workload set ([workload] set or time --workload-set)");
    return std::nullopt;
}

GateCondition check_geomean_speed(const GateEvidence &e, const GateThresholds &t) {
    const char *name = "geomean-speed";
    if (auto unusable_here = set_condition_unusable(name, "max_geomean_ratio_upper", t.geomean_ratio_upper_bound, e))
        return *unusable_here;
    if (!e.geomean_vs_baseline)
        return make(name, GateStatus::not_checked, "no geometric-mean interval recorded",
                    "the time stage combines the shapes only when every shape has an interval");
    return ratio_bound_condition(name, "geomean over " + std::to_string(e.set_shapes.size()) + " shapes",
                                 *e.geomean_vs_baseline, *t.geomean_ratio_upper_bound);
}

// Every shape's interval below the bound, not only the worst median's: a shape with a lower median and
// a wider interval may reach further.
GateCondition check_worst_shape_speed(const GateEvidence &e, const GateThresholds &t) {
    const char *name = "worst-shape-speed";
    if (auto unusable_here = set_condition_unusable(name, "max_worst_ratio_upper", t.worst_ratio_upper_bound, e))
        return *unusable_here;
    std::string untimed, reaching;
    const GateEvidence::ShapeTiming *worst = nullptr;
    for (const GateEvidence::ShapeTiming &s : e.set_shapes) {
        if (!s.candidate_vs_baseline) {
            untimed += (untimed.empty() ? "" : ", ") + s.shape;
            continue;
        }
        if (s.shape == e.worst_shape) worst = &s;
        if (s.candidate_vs_baseline->hi >= *t.worst_ratio_upper_bound)
            reaching += (reaching.empty() ? "" : ", ") + s.shape + " " + interval_text(*s.candidate_vs_baseline);
    }
    if (!untimed.empty()) return make(name, GateStatus::not_checked, "no ratio interval recorded for " + untimed);
    const std::string limit = fixed(*t.worst_ratio_upper_bound, 4);
    if (!reaching.empty())
        return make(name, GateStatus::fail, "reaching >= " + limit + ": " + reaching,
                    "every shape's candidate/baseline interval must lie entirely below the bound");
    const std::string shown = worst ? "worst " + worst->shape + " " + interval_text(*worst->candidate_vs_baseline)
                                    : std::to_string(e.set_shapes.size()) + " shapes";
    return make(name, GateStatus::pass, shown + "; every shape entirely < " + limit);
}

std::string at_entry(const std::string &entry) { return entry.empty() ? "" : " at " + entry; }
std::string on_shape(const std::string &shape) { return shape.empty() ? "" : " (shape " + shape + ")"; }

GateCondition check_shared_memory(const GateEvidence &e, const GateThresholds &) {
    const char *name = "shared-memory";
    if (e.baseline_launched_smem_bytes && e.candidate_launched_smem_bytes) {
        const std::int64_t base = *e.baseline_launched_smem_bytes, cand = *e.candidate_launched_smem_bytes;
        return make(name, cand > base ? GateStatus::fail : GateStatus::pass,
                    "as the host functions launched on the workload" + on_shape(e.launched_smem_shape) + ": candidate " +
                        std::to_string(cand) + " B vs baseline " + std::to_string(base) +
                        " B of dynamic shared memory per block");
    }
    const auto &base = e.baseline_resources.smem_per_block_bytes;
    const auto &cand = e.candidate_resources.smem_per_block_bytes;
    if (auto not_evidence = resources_unusable(name, e, base && cand)) return *not_evidence;
    const std::string figure = e.resource_arch + ": candidate " + std::to_string(*cand) + " B vs baseline " +
                               std::to_string(*base) + " B per block" + at_entry(e.smem_worst_entry);
    return make(name, *cand > *base ? GateStatus::fail : GateStatus::pass, figure);
}

GateCondition check_warps_per_scheduler(const GateEvidence &e, const GateThresholds &) {
    const char *name = "warps-per-scheduler";
    if (e.baseline_launched_warps_per_scheduler && e.candidate_launched_warps_per_scheduler) {
        const double base = *e.baseline_launched_warps_per_scheduler, cand = *e.candidate_launched_warps_per_scheduler;
        return make(name, cand < base ? GateStatus::fail : GateStatus::pass,
                    "as the host functions launched on the workload" + on_shape(e.launched_warps_shape) +
                        ", by the driver's occupancy: candidate " + compact(cand, 2) + " vs baseline " + compact(base, 2));
    }
    const auto &base = e.baseline_resources.warps_per_scheduler;
    const auto &cand = e.candidate_resources.warps_per_scheduler;
    if (auto not_evidence = resources_unusable(name, e, base && cand)) return *not_evidence;
    const std::string figure =
        e.resource_arch + ": candidate " + compact(*cand, 2) + " vs baseline " + compact(*base, 2);
    return make(name, *cand < *base ? GateStatus::fail : GateStatus::pass, figure);
}

GateCondition check_spills(const GateEvidence &e, const GateThresholds &t) {
    const char *name = "spills";
    const auto &base = e.baseline_resources.spill_bytes;
    const auto &cand = e.candidate_resources.spill_bytes;
    if (auto not_evidence = resources_unusable(name, e, base && cand)) return *not_evidence;
    const std::int64_t growth = *cand - *base;
    std::string figure = e.resource_arch + ": growth " + signed_bytes(growth) + at_entry(e.spill_worst_entry) +
                         " (baseline " + std::to_string(*base) + " B, candidate " + std::to_string(*cand) +
                         " B; limit " + signed_bytes(t.max_spill_growth_bytes) + ")";
    // What the baseline spills by itself tells whether any growth is on top of an already spilling kernel.
    if (e.baseline_max_spill_bytes)
        figure += *e.baseline_max_spill_bytes == 0
                      ? "; the baseline spills nothing"
                      : "; the baseline's own spills: up to " + std::to_string(*e.baseline_max_spill_bytes) + " B" +
                            at_entry(e.baseline_max_spill_entry);
    return make(name, growth > t.max_spill_growth_bytes ? GateStatus::fail : GateStatus::pass, figure);
}

// ---- Plausibility ----

// The plausibility conditions judge one timing: NOT CHECKED (not blocking) on GPUs of several models,
// whose figures are per GPU.
std::optional<GateCondition> plausibility_unusable(const char *name, const GateEvidence &e, bool needs_pass) {
    if (!e.gpu_timings.empty())
        return make(name, GateStatus::not_checked, "not judged on GPUs of several models",
                    "each GPU's figures are its own; does not block", false);
    if (needs_pass) return timing_unusable(name, e, true);
    return unusable(name, "time", e.time, true, e);
}

GateCondition check_tensor_peak(const GateEvidence &e, const GateThresholds &) {
    const char *name = "tensor-peak";
    if (auto not_evidence = plausibility_unusable(name, e, true)) return *not_evidence;
    const TimedPlausibility &p = e.plausibility;
    if (!p.baseline_tops || !p.candidate_tops) return make(name, GateStatus::not_checked, "no throughput recorded");
    if (!p.tensor_peak_tops)
        return make(name, GateStatus::not_checked, "no dense tensor peak for " + e.resource_arch,
                    "data/arch_limits.toml gives no dense_int8_ops_per_sm_clock for it; does not block", false);
    const std::string peak = fixed(*p.tensor_peak_tops, 0) + " TOPS";
    const std::string figure = "candidate " + fixed(*p.candidate_tops, 1) + ", baseline " + fixed(*p.baseline_tops, 1) +
                               " TOPS at p50";
    if (*p.candidate_tops > *p.tensor_peak_tops || *p.baseline_tops > *p.tensor_peak_tops)
        return make(name, GateStatus::fail, figure + " > the dense tensor peak " + peak,
                    "faster than the GPU's dense INT8/FP8 tensor cores at the measured SM clock: the times cannot be "
                    "of the work");
    return make(name, GateStatus::pass, figure + " <= the dense tensor peak " + peak);
}

GateCondition check_plausible_ratio(const GateEvidence &e, const GateThresholds &) {
    const char *name = "plausible-ratio";
    if (auto not_evidence = plausibility_unusable(name, e, true)) return *not_evidence;
    if (!e.candidate_vs_baseline) return make(name, GateStatus::not_checked, "no ratio recorded");
    const std::string figure = "candidate/baseline median " + fixed(e.candidate_vs_baseline->median, 4);
    const std::string limit = fixed(implausible_ratio_below, 1);
    if (e.candidate_vs_baseline->median < implausible_ratio_below)
        return make(name, GateStatus::fail, figure + " < " + limit,
                    "more than twice as fast as the baseline: implausible for a change of schedule; a [[gate.waiver]] "
                    "with a reason accepts it");
    return make(name, GateStatus::pass, figure + " >= " + limit);
}

// Decided on a failed time stage too: a failed re-check is what it names.
GateCondition check_checked_output(const GateEvidence &e, const GateThresholds &) {
    const char *name = "checked-output";
    if (auto not_evidence = plausibility_unusable(name, e, false)) return *not_evidence;
    const TimedPlausibility &p = e.plausibility;
    if (!p.baseline_rechecked || !p.candidate_rechecked)
        return make(name, GateStatus::not_checked, "no re-checked rounds recorded",
                    "timed by a sage2tp that did not re-check the timed outputs; run 'sage2tp time --force'");
    const std::int64_t failed = p.baseline_recheck_failed.value_or(0) + p.candidate_recheck_failed.value_or(0);
    const std::string figure = "re-checked after " + std::to_string(*p.candidate_rechecked) + " rounds (candidate), " +
                               std::to_string(*p.baseline_rechecked) + " (baseline); " + std::to_string(failed) +
                               " failed";
    if (failed > 0 || *p.candidate_rechecked == 0 || *p.baseline_rechecked == 0)
        return make(name, GateStatus::fail, figure,
                    "every timed launch must compute what its first launch on the same inputs did");
    return make(name, GateStatus::pass, figure);
}

// Every condition, in report order. Each is defined once, above; adding one means adding it here.
using ConditionRule = GateCondition (*)(const GateEvidence &, const GateThresholds &);
constexpr ConditionRule condition_rules[] = {
    check_freshness,     check_build,          check_sanitizer,     check_parity,
    check_output_sha,    check_candidate_p50,  check_relative_speed, check_shared_memory,
    check_warps_per_scheduler, check_spills, check_geomean_speed, check_worst_shape_speed,
    check_tensor_peak,   check_plausible_ratio, check_checked_output,
};

// The conditions decided on the real workload's output and speed: over a set, once per shape.
bool per_shape(ConditionRule rule) {
    return rule == check_output_sha || rule == check_candidate_p50 || rule == check_relative_speed ||
           rule == check_tensor_peak || rule == check_plausible_ratio || rule == check_checked_output;
}

// A set condition whose bound is off has nothing to show for one workload.
bool shown(ConditionRule rule, const GateEvidence &e, const GateThresholds &t) {
    if (!e.workload_set.empty()) return true;
    if (rule == check_geomean_speed) return t.geomean_ratio_upper_bound.has_value();
    if (rule == check_worst_shape_speed) return t.worst_ratio_upper_bound.has_value();
    return true;
}

// The evidence as the one-workload rules see one shape of a set.
GateEvidence shape_evidence(const GateEvidence &e, const GateEvidence::ShapeTiming &s) {
    GateEvidence one = e;
    one.real_output_sha256 = s.real_output_sha256;
    one.expected_real_output_sha256 = s.expected_real_output_sha256;
    one.real_output_accuracy_passed = s.real_output_accuracy_passed;
    one.real_output_accuracy = s.real_output_accuracy;
    one.candidate_p50_ms = s.candidate_p50_ms;
    one.candidate_vs_baseline = s.candidate_vs_baseline;
    one.plausibility = s.plausibility;
    return one;
}

// The conditions decided on the speed: on GPUs of several models, once per GPU.
bool per_gpu(ConditionRule rule) { return rule == check_candidate_p50 || rule == check_relative_speed; }

// The evidence as the one-GPU rules see one GPU of several models.
GateEvidence gpu_evidence(const GateEvidence &e, const GateEvidence::GpuTiming &g) {
    GateEvidence one = e;
    one.candidate_p50_ms = g.candidate_p50_ms;
    one.candidate_vs_baseline = g.candidate_vs_baseline;
    one.gpu_timings.clear();
    return one;
}

// `rule`'s condition on `e`, named with `suffix` (" SHAPE" over a set), or one per GPU of several models.
void add_condition(ConditionRule rule, const GateEvidence &e, const GateThresholds &t, const std::string &suffix,
                   std::vector<GateCondition> &conditions) {
    if (!per_gpu(rule) || e.gpu_timings.empty()) {
        GateCondition c = rule(e, t);
        c.name += suffix;
        conditions.push_back(std::move(c));
        return;
    }
    for (const GateEvidence::GpuTiming &g : e.gpu_timings) {
        GateCondition c = rule(gpu_evidence(e, g), t);
        c.name += suffix + " " + g.gpu;
        conditions.push_back(std::move(c));
    }
}

}  // namespace

const char *gate_status_text(GateStatus status) {
    switch (status) {
    case GateStatus::pass: return "PASS";
    case GateStatus::fail: return "FAIL";
    case GateStatus::not_checked: return "NOT CHECKED";
    }
    return "NOT CHECKED";
}

// One condition per shape and variant that the parity stage checked for accuracy, from a fresh checkpoint.
std::vector<GateCondition> accuracy_conditions(const GateEvidence &e) {
    std::vector<GateCondition> conditions;
    if (!e.parity.present || !e.parity.fresh) return conditions;
    for (const auto &[who, shapes] : {std::pair{"baseline accuracy ", &e.baseline_accuracy},
                                      {"accuracy ", &e.candidate_accuracy}})
        for (const GateEvidence::AccuracyShape &a : *shapes)
            conditions.push_back({who + a.shape, a.passed ? GateStatus::pass : GateStatus::fail, a.conditions, "", true, ""});
    return conditions;
}

GateResult evaluate_gate(const GateEvidence &evidence, const GateThresholds &thresholds) {
    GateResult result;
    for (ConditionRule rule : condition_rules) {
        if (per_shape(rule) && !evidence.workload_set.empty()) {
            for (const GateEvidence::ShapeTiming &shape : evidence.set_shapes)
                add_condition(rule, shape_evidence(evidence, shape), thresholds, " " + shape.shape, result.conditions);
            continue;
        }
        if (!shown(rule, evidence, thresholds)) continue;
        add_condition(rule, evidence, thresholds, "", result.conditions);
        if (rule == check_parity)
            for (GateCondition &c : accuracy_conditions(evidence)) result.conditions.push_back(std::move(c));
    }
    for (GateCondition &c : result.conditions)
        for (const GateWaiver &w : thresholds.waivers)
            if (c.name == w.condition || c.name.rfind(w.condition + " ", 0) == 0) c.waiver = w.reason;
    result.passed = std::none_of(result.conditions.begin(), result.conditions.end(),
                                 [](const GateCondition &c) { return c.blocks(); });
    return result;
}

const std::vector<std::string> &gate_condition_names() {
    // The names the rules above give, checked against them by the gate-rules tests.
    static const std::vector<std::string> names{
        "freshness",         "build",          "sanitizer",           "parity",         "output-sha",
        "output-accuracy",   "candidate-p50",  "relative-speed",      "shared-memory",  "warps-per-scheduler",
        "spills",            "geomean-speed",  "worst-shape-speed",   "tensor-peak",    "plausible-ratio",
        "checked-output",    "accuracy",       "baseline accuracy"};
    return names;
}

std::string condition_status_text(const GateCondition &c) { return c.waived() ? "WAIVED" : gate_status_text(c.status); }

std::string condition_figure_text(const GateCondition &c) {
    return c.figure + (c.detail.empty() ? "" : " (" + c.detail + ")") +
           (c.waived() ? "; waived: " + c.waiver : std::string());
}

std::string format_gate_report(const GateResult &result) {
    std::size_t name_width = 0;
    for (const GateCondition &c : result.conditions) name_width = std::max(name_width, c.name.size());

    std::string report;
    std::string failed;
    std::string missing;
    std::string waived;
    for (const GateCondition &c : result.conditions) {
        std::string status = condition_status_text(c);
        status.resize(11, ' ');  // as wide as "NOT CHECKED"
        std::string name = c.name;
        name.resize(name_width, ' ');
        report += status + "  " + name + "  " + condition_figure_text(c) + "\n";
        if (c.waived()) waived += (waived.empty() ? "" : ", ") + c.name;
        else if (c.status == GateStatus::fail) failed += (failed.empty() ? "" : ", ") + c.name;
        else if (c.blocks()) missing += (missing.empty() ? "" : ", ") + c.name;
    }
    report += "verdict: ";
    if (result.passed) return report + "PASS" + (waived.empty() ? "" : " (waived: " + waived + ")") + "\n";
    report += "FAIL (";
    if (!failed.empty()) report += "failed: " + failed;
    if (!missing.empty()) report += std::string(failed.empty() ? "" : "; ") + "required but not checked: " + missing;
    return report + ")\n";
}

std::string thresholds_text(const GateThresholds &t) {
    return "candidate p50 < " + compact(t.candidate_p50_bound(), 3) + " ms" +
           (t.max_candidate_p50_ms ? "" : " (the DGX Spark's default)") + ", " +
           (t.ratio_upper_bound ? "ratio interval < " + compact(*t.ratio_upper_bound, 4) +
                                      (*t.ratio_upper_bound == 1.0 ? " (faster)" : "")
                                : std::string("relative speed off")) +
           ", spill growth <= " + std::to_string(t.max_spill_growth_bytes) + " B, sanitizer " +
           (t.require_sanitizer ? "required" : "not required");
}

}  // namespace s2tp
