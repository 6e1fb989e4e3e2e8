// The gate's decision as a pure function: evidence already read from the stage checkpoints, plus
// thresholds from the manifest (or the command line), in; one line per condition and a verdict out.
// Nothing here touches files or devices, so every rule is unit-tested on hand-written evidence and a
// gate decision can be re-derived from the checkpoints alone.
//
// Verdict rule: the gate passes only when no condition FAILs and no *required* condition is NOT
// CHECKED. Missing or stale evidence is never a pass: a stale checkpoint describes inputs that no
// longer exist, so the conditions it feeds report NOT CHECKED and the freshness condition FAILs.
// Required: freshness, build, parity, output-sha, candidate-p50, shared-memory, warps-per-scheduler,
// spills, and relative-speed unless the bound is turned off (it is 1.0, "faster", by default).
//
// Over a workload set (the time stage timed several shapes): output-sha (or output-accuracy),
// candidate-p50 and relative-speed are decided for every shape, each a condition of its own named
// "CONDITION SHAPE", by the same rule as for one workload. Two set conditions follow: geomean-speed (the
// combined geometric-mean ratio's interval entirely below max_geomean_ratio_upper) and worst-shape-speed
// (every shape's interval entirely below max_worst_ratio_upper, the worst shape's shown). Each is
// required when its bound is set and off otherwise; a bound set for a run whose time stage timed one
// workload is NOT CHECKED and blocks: what was asked for was not measured.
//
// Plausibility (issue 39): tensor-peak (no arm's throughput at its p50 above the GPU's dense INT8/FP8
// tensor peak at the measured SM clock), plausible-ratio (the candidate/baseline median at least
// implausible_ratio_below) and checked-output (every re-check of the baseline's and the candidate's
// timed outputs held, and there was one) are required; over a set they are decided per shape, and on
// GPUs of several models they are NOT CHECKED and do not block.
//
// Waivers: the manifest's [[gate.waiver]] tables each name a condition and give a reason. A condition
// they name (or, over a set or several GPUs, every condition of that name with its suffix) that FAILs
// or is NOT CHECKED shows WAIVED with the reason and does not block.
//
// On GPUs of several models (time --devices, the GPUs differing in model): candidate-p50 and
// relative-speed are decided for every GPU, each a condition of its own named "CONDITION GPU N NAME"
// by the same rule as for one GPU: the run passes only when
// every GPU passes, and a GPU lost before it measured has no ratio, so its conditions are NOT CHECKED
// and block. The sanitizer is required only with
// require_sanitizer; otherwise a skipped sanitizer shows NOT CHECKED and does not block.
#pragma once

#include "support/statistics.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct StageEvidence {
    bool present = false;  // the stage's checkpoint exists
    bool fresh = false;    // its recorded input fingerprint equals the current inputs'
    bool passed = false;   // the stage recorded success
    std::string note;      // the stage's own reason when it did not pass, shown as the detail
};

// Resource usage of one arm's entry point for the architecture being gated (registers and therefore
// occupancy differ per architecture, so the caller picks one).
struct ArmResources {
    std::optional<std::int64_t> smem_per_block_bytes;  // static + dynamic
    std::optional<double> warps_per_scheduler;         // theoretical: resident warps per SM / 4
    std::optional<std::int64_t> spill_bytes;           // ptxas spill stores + spill loads
};

// What the plausibility conditions read of one timing (one workload, or one shape of a set).
struct TimedPlausibility {
    std::optional<double> tensor_peak_tops;  // at the median SM clock; unset when the arch's data lacks it
    std::optional<double> baseline_tops, candidate_tops;  // at p50
    // The rounds after which each arm's outputs were re-checked, and the checks that failed; unset when
    // the time stage recorded none (a sage2tp that did not re-check).
    std::optional<std::int64_t> baseline_rechecked, baseline_recheck_failed;
    std::optional<std::int64_t> candidate_rechecked, candidate_recheck_failed;
};

struct GateEvidence {
    StageEvidence prepare, build, sanitize, parity, time;

    bool sanitizer_skipped = false;
    std::int64_t sanitizer_errors = 0;  // errors and hazards over every tool that ran

    std::int64_t parity_shapes_compared = 0;
    std::int64_t parity_shapes_differing = 0;
    // "tolerance": byte differences are allowed, and the accuracy checks below decide instead.
    std::string parity_mode = "exact";
    // The parity stage's accuracy conditions per shape (the worst over its seeds), each shown by the gate:
    // the baseline's absolute limits and the candidate's (with the baseline factor in tolerance mode).
    struct AccuracyShape {
        std::string shape;
        bool passed = false;
        std::string conditions;
    };
    std::vector<AccuracyShape> baseline_accuracy, candidate_accuracy;
    // In tolerance mode the real output is judged by its accuracy on the timed output instead of its
    // SHA-256: the time stage's conditions; unset when it recorded none.
    std::optional<bool> real_output_accuracy_passed;
    std::string real_output_accuracy;

    // The real workload's output digest lives in one stage's checkpoint; the caller copies that
    // stage's evidence here and names it, so the rule does not depend on which stage computes it.
    std::string real_output_stage_name = "time";
    StageEvidence real_output_stage;
    std::string real_output_sha256;           // as recorded; empty if none
    std::string expected_real_output_sha256;  // from the manifest; empty if none

    std::optional<double> candidate_p50_ms;
    std::optional<RatioInterval> candidate_vs_baseline;
    TimedPlausibility plausibility;

    // GPUs of several models: each GPU's candidate p50 and ratio (the two fields above for that GPU
    // alone), each its own verdict; empty when the time stage's GPUs combined or it timed on one.
    struct GpuTiming {
        std::string gpu;  // "GPU 1 NVIDIA H100 80GB HBM3"
        std::optional<double> candidate_p50_ms;
        std::optional<RatioInterval> candidate_vs_baseline;
    };
    std::vector<GpuTiming> gpu_timings;

    // A workload set's timing: each shape's real output and speed (the fields above, as for one
    // workload), and the candidate's figures over the set. workload_set is empty for one workload.
    struct ShapeTiming {
        std::string shape;
        std::string real_output_sha256, expected_real_output_sha256;
        std::optional<bool> real_output_accuracy_passed;
        std::string real_output_accuracy;
        std::optional<double> candidate_p50_ms;
        std::optional<RatioInterval> candidate_vs_baseline;
        TimedPlausibility plausibility;
    };
    std::string workload_set;
    std::vector<ShapeTiming> set_shapes;
    std::optional<RatioInterval> geomean_vs_baseline;
    std::string worst_shape;  // the shape with the highest median ratio, as the time stage found it

    std::string resource_arch;  // e.g. "sm_90a", shown in the resource figures
    ArmResources baseline_resources;
    ArmResources candidate_resources;
    // The entry points the shared-memory and spill figures come from (the worst pair), and the most the
    // baseline spills in any entry by itself; empty/unset when not recorded.
    std::string smem_worst_entry, spill_worst_entry;
    std::optional<std::int64_t> baseline_max_spill_bytes;
    std::string baseline_max_spill_entry;
    // The dynamic shared memory each arm's host function launched with on the workload (time's figures),
    // where both arms are host calls: what shipped code asks for, which build's table, made before any
    // call, cannot know. The shared-memory condition judges these when they are there.
    std::optional<std::int64_t> baseline_launched_smem_bytes, candidate_launched_smem_bytes;
    // Likewise the resident warps per SM scheduler of each arm's launched kernel, from the driver's
    // occupancy calculator at the launch's block and shared memory: what the warps-per-scheduler
    // condition judges when both are there.
    std::optional<double> baseline_launched_warps_per_scheduler, candidate_launched_warps_per_scheduler;
    // Over a workload set: the shape whose launches those are, the one where each condition is closest
    // to failing.
    std::string launched_smem_shape, launched_warps_shape;
};

// A candidate/baseline median below this is implausible for a change of schedule: more than twice as
// fast. A candidate that is meant to be (it skips masked work, say) gets a waiver.
inline constexpr double implausible_ratio_below = 0.5;

// A gate condition the manifest waives ([[gate.waiver]]), with why.
struct GateWaiver {
    std::string condition;  // a condition's name as gate_condition_names lists it
    std::string reason;
};

// The names of the gate's conditions, as a waiver may name them (per shape and per GPU they carry a
// suffix, which a waiver leaves off).
const std::vector<std::string> &gate_condition_names();

// The bounds the gate applies, as gate_thresholds (stages/gate_stage.h) makes them from the manifest and
// the command line; the defaults for what neither sets live in Experiment alone.
struct GateThresholds {
    // The candidate's p50 must be below candidate_p50_bound(): the bound the manifest or --max-p50-ms
    // set, else Experiment's default, one workload's time on the DGX Spark, which bounds no shape of a
    // workload set and whose failure says where it comes from.
    std::optional<double> max_candidate_p50_ms;
    double default_max_candidate_p50_ms = 0;
    double candidate_p50_bound() const { return max_candidate_p50_ms.value_or(default_max_candidate_p50_ms); }
    std::int64_t max_spill_growth_bytes = 0;  // candidate spill bytes minus baseline's, at most this
    std::optional<double> ratio_upper_bound;  // ratio CI must lie entirely below; nullopt: off
    // Over a workload set: the geometric-mean ratio's interval, and every shape's, must lie below these.
    std::optional<double> geomean_ratio_upper_bound, worst_ratio_upper_bound;
    bool require_sanitizer = false;
    std::vector<GateWaiver> waivers;
};

enum class GateStatus { pass, fail, not_checked };
const char *gate_status_text(GateStatus status);  // "PASS", "FAIL", "NOT CHECKED"

struct GateCondition {
    std::string name;
    GateStatus status = GateStatus::not_checked;
    std::string figure;  // the number the decision rests on, with units and the limit
    std::string detail;  // why, when the figure alone does not say
    bool required = true;
    std::string waiver = {};  // the manifest's reason when a waiver names this condition; "" otherwise

    bool waived() const { return !waiver.empty() && status != GateStatus::pass; }
    // The verdict rule for one condition: it FAILed, or it is required and was NOT CHECKED; unless waived.
    bool blocks() const {
        return !waived() && (status == GateStatus::fail || (status == GateStatus::not_checked && required));
    }
};

// How every printer shows a condition: its status ("WAIVED" for a waived one), and its figure with the
// detail and the waiver's reason.
std::string condition_status_text(const GateCondition &condition);
std::string condition_figure_text(const GateCondition &condition);

struct GateResult {
    std::vector<GateCondition> conditions;
    bool passed = false;
};

GateResult evaluate_gate(const GateEvidence &evidence, const GateThresholds &thresholds);

// The thresholds in one line, as status shows them: "candidate p50 < 220 ms (the DGX Spark's default),
// ratio interval < 1 (faster), spill growth <= 0 B, sanitizer not required".
std::string thresholds_text(const GateThresholds &thresholds);

// One line per condition ("STATUS  name  figure (detail)"), then a "verdict:" line that names the
// conditions that failed or were required but not checked.
std::string format_gate_report(const GateResult &result);

}  // namespace s2tp
