#include "stages/gate_evidence.h"

#include "figures/build_figures.h"
#include "figures/parity_figures.h"
#include "figures/sanitize_figures.h"
#include "figures/set_time_figures.h"
#include "figures/time_figures.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace s2tp {
namespace {

const StageState *state_of(const std::vector<StageState> &states, Stage stage) {
    for (const StageState &state : states)
        if (state.stage == stage) return &state;
    return nullptr;
}

const Checkpoint *intact_checkpoint(const StageState *state) {
    return state && state->read.checkpoint ? &*state->read.checkpoint : nullptr;
}

// The first of the stage's own reasons, pointing at the rest: the full list stays in its checkpoint.
std::string first_reason(const Checkpoint &checkpoint) {
    if (checkpoint.reasons.empty()) return "";
    std::string note = checkpoint.reasons.front();
    if (checkpoint.reasons.size() > 1)
        note += " (and " + std::to_string(checkpoint.reasons.size() - 1) + " more in its checkpoint)";
    return note;
}

StageEvidence stage_evidence(const StageState *state) {
    StageEvidence evidence;
    if (!state) return evidence;
    evidence.present = state->read.exists;
    evidence.fresh = state->fresh;
    if (const Checkpoint *checkpoint = intact_checkpoint(state)) {
        evidence.passed = checkpoint->status == StageStatus::passed;
        if (!evidence.passed) evidence.note = first_reason(*checkpoint);
    }
    return evidence;
}

void read_sanitize(const Checkpoint &checkpoint, const std::string &candidate, GateEvidence &evidence) {
    evidence.sanitizer_skipped = checkpoint.status == StageStatus::skipped;
    if (evidence.sanitizer_skipped) return;
    if (auto errors = SanitizeFigures::from_toml(checkpoint.figures).errors_for(candidate)) {
        evidence.sanitizer_errors = *errors;
    } else if (evidence.sanitize.passed) {
        // A pass without an error count is not a clean summary.
        evidence.sanitize.passed = false;
        evidence.sanitize.note = "the sanitize checkpoint records no error count for the baseline and " + candidate;
    }
}

void read_parity(const ParityFigures &figures, const std::string &candidate, GateEvidence &evidence) {
    const auto found = figures.candidates.find(candidate);
    // Both or neither: a count of compared shapes without the count of differing ones proves nothing.
    if (figures.shapes_checked && found != figures.candidates.end() && found->second.shapes_differing) {
        evidence.parity_shapes_compared = *figures.shapes_checked;
        evidence.parity_shapes_differing = *found->second.shapes_differing;
    }
    if (found != figures.candidates.end()) {
        if (!found->second.mode.empty()) evidence.parity_mode = found->second.mode;
        for (const AccuracyShapeCheck &c : found->second.checks)
            evidence.candidate_accuracy.push_back({c.shape, c.passed.value_or(false), c.conditions});
    }
    for (const AccuracyShapeCheck &c : figures.baseline_checks)
        evidence.baseline_accuracy.push_back({c.shape, c.passed.value_or(false), c.conditions});
}

// A ratio's interval, its n the candidate's kept rounds: one ratio per kept round, and every kept round
// holds one candidate sample.
std::optional<RatioInterval> ratio_interval(const std::optional<RatioFigures> &ratio,
                                            const std::optional<ArmTimeFigures> &timing) {
    if (!ratio) return std::nullopt;
    std::optional<RatioInterval> interval = ratio->interval();
    if (interval) interval->n = static_cast<std::size_t>(timing ? timing->n.value_or(0) : 0);
    return interval;
}

// GPUs of several models: each GPU's candidate figures, a verdict of its own. A GPU that recorded
// none (lost before it measured, or too few rounds) is there without them.
std::vector<GateEvidence::GpuTiming> gpu_timings(const TimeFigures &figures, const std::string &name) {
    std::vector<GateEvidence::GpuTiming> gpus;
    for (const GpuTimeResult &g : figures.gpu_results) {
        GateEvidence::GpuTiming timing;
        timing.gpu = g.label();
        if (const GpuCandidateTiming *c = g.candidate(name)) {
            if (c->timing) timing.candidate_p50_ms = c->timing->p50;
            timing.candidate_vs_baseline = ratio_interval(c->ratio, c->timing);
        }
        gpus.push_back(std::move(timing));
    }
    return gpus;
}

// The plausibility figures of the baseline and the candidate `name`.
TimedPlausibility plausibility(const TimeFigures &figures, const std::string &name) {
    TimedPlausibility p;
    p.tensor_peak_tops = figures.tensor_peak_tops;
    if (figures.baseline) p.baseline_tops = figures.baseline->tops_p50;
    if (const CandidateTimeFigures *c = figures.candidate(name); c && c->timing) p.candidate_tops = c->timing->tops_p50;
    if (const auto base = figures.recheck.find("baseline"); base != figures.recheck.end()) {
        p.baseline_rechecked = base->second.rounds;
        p.baseline_recheck_failed = base->second.failed;
    }
    if (const auto mine = figures.recheck.find(name); mine != figures.recheck.end()) {
        p.candidate_rechecked = mine->second.rounds;
        p.candidate_recheck_failed = mine->second.failed;
    }
    return p;
}

void read_time(const TimeFigures &figures, const std::string &name, GateEvidence &evidence) {
    evidence.gpu_timings = gpu_timings(figures, name);
    evidence.plausibility = plausibility(figures, name);
    evidence.expected_real_output_sha256 = figures.expected_sha256.value_or(figures.baseline_sha256.value_or(""));
    const CandidateTimeFigures *candidate = figures.candidate(name);
    if (!candidate) return;
    evidence.real_output_accuracy_passed = candidate->accuracy_passed;
    evidence.real_output_accuracy = candidate->accuracy_conditions;
    evidence.real_output_sha256 = candidate->sha256.value_or("");
    if (candidate->timing) evidence.candidate_p50_ms = candidate->timing->p50;
    evidence.candidate_vs_baseline = ratio_interval(candidate->ratio, candidate->timing);
    if (figures.baseline && candidate->timing) {
        evidence.baseline_launched_smem_bytes = figures.baseline->launch_dynamic_smem_bytes;
        evidence.candidate_launched_smem_bytes = candidate->timing->launch_dynamic_smem_bytes;
        evidence.baseline_launched_warps_per_scheduler = figures.baseline->launch_warps_per_scheduler;
        evidence.candidate_launched_warps_per_scheduler = candidate->timing->launch_warps_per_scheduler;
    }
}

// The launches of one shape of a set, where they fare worse for the candidate than those kept so far:
// the most dynamic shared memory gained, the most warps per scheduler lost. A shape's host functions
// may launch differently (another head_dim, another template instance), so each condition judges the
// shape where it is closest to failing, and names it.
void keep_worst_launch(const GateEvidence &shape, const std::string &name, GateEvidence &evidence) {
    // One figure's (baseline, candidate) of this shape replace the kept ones when its candidate - baseline
    // is `worse` than theirs.
    const auto keep = [&](const auto &base, const auto &cand, auto &kept_base, auto &kept_cand, std::string &kept_shape,
                          auto worse) {
        if (!base || !cand) return;
        if (kept_base && !worse(*cand - *base, *kept_cand - *kept_base)) return;
        kept_base = base;
        kept_cand = cand;
        kept_shape = name;
    };
    keep(shape.baseline_launched_smem_bytes, shape.candidate_launched_smem_bytes, evidence.baseline_launched_smem_bytes,
         evidence.candidate_launched_smem_bytes, evidence.launched_smem_shape, std::greater<>());
    keep(shape.baseline_launched_warps_per_scheduler, shape.candidate_launched_warps_per_scheduler,
         evidence.baseline_launched_warps_per_scheduler, evidence.candidate_launched_warps_per_scheduler,
         evidence.launched_warps_shape, std::less<>());
}

// A set's time figures: each shape read as one workload's, then the candidate's figures over the set.
void read_time_set(const SetTimeFigures &figures, const std::string &name, GateEvidence &evidence) {
    evidence.workload_set = figures.workload_set.value_or("");
    for (const ShapeTimeFigures &shape : figures.shapes) {
        GateEvidence one;
        read_time(shape.figures, name, one);
        evidence.set_shapes.push_back({shape.name, one.real_output_sha256, one.expected_real_output_sha256,
                                       one.real_output_accuracy_passed, one.real_output_accuracy,
                                       one.candidate_p50_ms, one.candidate_vs_baseline, one.plausibility});
        keep_worst_launch(one, shape.name, evidence);
    }
    const SetCandidateFigures *candidate = figures.candidate(name);
    if (!candidate) return;
    evidence.worst_shape = candidate->worst_shape.value_or("");
    if (candidate->geomean) {
        evidence.geomean_vs_baseline = candidate->geomean->interval();
        // n counts every ratio over the shapes, as weighted_geomean_interval does.
        if (evidence.geomean_vs_baseline)
            for (const GateEvidence::ShapeTiming &s : evidence.set_shapes)
                evidence.geomean_vs_baseline->n += s.candidate_vs_baseline ? s.candidate_vs_baseline->n : 0;
    }
}

void read_build(const BuildFigures &figures, const std::string &candidate, GateEvidence &evidence) {
    evidence.resource_arch = figures.arch;
    const ResourceAggregates worst = figures.aggregates(candidate);
    if (worst.smem) {
        evidence.baseline_resources.smem_per_block_bytes = worst.smem->baseline;
        evidence.candidate_resources.smem_per_block_bytes = worst.smem->candidate;
        evidence.smem_worst_entry = worst.smem->entry;
    }
    if (worst.warps) {
        evidence.baseline_resources.warps_per_scheduler = worst.warps->baseline;
        evidence.candidate_resources.warps_per_scheduler = worst.warps->candidate;
    }
    if (worst.spills) {
        evidence.baseline_resources.spill_bytes = worst.spills->baseline;
        evidence.candidate_resources.spill_bytes = worst.spills->candidate;
        evidence.spill_worst_entry = worst.spills->entry;
        evidence.baseline_max_spill_bytes = worst.baseline_max_spill_bytes;
        evidence.baseline_max_spill_entry = worst.baseline_max_spill_entry;
    }
}

}  // namespace

std::map<std::string, GateEvidence> gather_gate_evidence(const std::vector<StageState> &states,
                                                         const std::vector<std::string> &candidates) {
    GateEvidence common;
    common.prepare = stage_evidence(state_of(states, Stage::prepare));
    common.build = stage_evidence(state_of(states, Stage::build));
    common.sanitize = stage_evidence(state_of(states, Stage::sanitize));
    common.parity = stage_evidence(state_of(states, Stage::parity));
    common.time = stage_evidence(state_of(states, Stage::time));
    common.real_output_stage_name = stage_name(Stage::time);
    common.real_output_stage = common.time;

    const Checkpoint *build = intact_checkpoint(state_of(states, Stage::build));
    const Checkpoint *sanitize = intact_checkpoint(state_of(states, Stage::sanitize));
    const Checkpoint *parity = intact_checkpoint(state_of(states, Stage::parity));
    const Checkpoint *time = intact_checkpoint(state_of(states, Stage::time));
    const BuildFigures build_figures = build ? BuildFigures::from_toml(build->figures) : BuildFigures{};
    const ParityFigures parity_figures = parity ? ParityFigures::from_toml(parity->figures) : ParityFigures{};
    const bool time_set = time && SetTimeFigures::holds_set(time->figures);
    const TimeFigures time_figures = time && !time_set ? TimeFigures::from_toml(time->figures) : TimeFigures{};
    const SetTimeFigures set_figures = time_set ? SetTimeFigures::from_toml(time->figures) : SetTimeFigures{};

    std::map<std::string, GateEvidence> evidence;
    for (const std::string &name : candidates) {
        GateEvidence &e = evidence[name] = common;
        if (build) read_build(build_figures, name, e);
        if (sanitize) read_sanitize(*sanitize, name, e);
        if (parity) read_parity(parity_figures, name, e);
        if (time_set) read_time_set(set_figures, name, e);
        else if (time) read_time(time_figures, name, e);
    }
    return evidence;
}

}  // namespace s2tp
