#include "stages/gate_evidence.h"

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

void read_sanitize(const Checkpoint &checkpoint, GateEvidence &evidence) {
    evidence.sanitizer_skipped = checkpoint.status == StageStatus::skipped;
    if (evidence.sanitizer_skipped) return;
    if (auto total = checkpoint.figures["total_errors"].value<std::int64_t>()) {
        evidence.sanitizer_errors = *total;
    } else if (evidence.sanitize.passed) {
        // A pass without an error count is not a clean summary.
        evidence.sanitize.passed = false;
        evidence.sanitize.note = "the sanitize checkpoint records no total_errors";
    }
}

void read_parity(const Checkpoint &checkpoint, GateEvidence &evidence) {
    auto checked = checkpoint.figures["shapes_checked"].value<std::int64_t>();
    auto differing = checkpoint.figures["shapes_differing"].value<std::int64_t>();
    // Both or neither: a count of compared shapes without the count of differing ones proves nothing.
    if (checked && differing) {
        evidence.parity_shapes_compared = *checked;
        evidence.parity_shapes_differing = *differing;
    }
}

void read_time(const Checkpoint &checkpoint, GateEvidence &evidence) {
    const toml::table &figures = checkpoint.figures;
    evidence.real_output_sha256 = figures["sha256"]["candidate"].value_or(std::string());
    evidence.expected_real_output_sha256 =
        figures["sha256"]["expected"].value_or(figures["sha256"]["baseline"].value_or(std::string()));
    evidence.candidate_p50_ms = figures["candidate"]["p50"].value<double>();

    auto median = figures["ratio"]["median"].value<double>();
    auto low = figures["ratio"]["ci_low"].value<double>();
    auto high = figures["ratio"]["ci_high"].value<double>();
    if (!median || !low || !high) return;
    RatioInterval interval;
    interval.median = *median;
    interval.lo = *low;
    interval.hi = *high;
    interval.half_width_rel = figures["ratio"]["half_width"].value_or(0.0);
    // One ratio per kept round, and every kept round holds one candidate sample.
    interval.n = static_cast<std::size_t>(figures["candidate"]["n"].value_or<std::int64_t>(0));
    interval.resamples = static_cast<std::size_t>(figures["ratio"]["resamples"].value_or<std::int64_t>(0));
    interval.seed = static_cast<std::uint64_t>(figures["ratio"]["seed"].value_or<std::int64_t>(0));
    // The contract records no confidence level: the time stage uses the bootstrap's default.
    interval.confidence = BootstrapOptions{}.confidence;
    evidence.candidate_vs_baseline = interval;
}

template <typename T>
struct ArmPair {
    T baseline;
    T candidate;
    std::string entry;  // the entry point it is from
};

template <typename T>
using ArmFigure = std::function<std::optional<T>(const toml::table &arm)>;

// Over every entry point, the baseline/candidate pair whose candidate-minus-baseline is worst:
// largest when growth is bad, smallest when a fall is bad. Unset when any entry lacks the figure.
template <typename T>
std::optional<ArmPair<T>> worst_entry(const toml::table &kernels, const ArmFigure<T> &figure, bool growth_is_bad) {
    std::optional<ArmPair<T>> worst;
    for (const auto &[name, node] : kernels) {
        const toml::table *baseline = node.as_table() ? (*node.as_table())["baseline"].as_table() : nullptr;
        const toml::table *candidate = node.as_table() ? (*node.as_table())["candidate"].as_table() : nullptr;
        if (!baseline || !candidate) return std::nullopt;
        std::optional<T> base = figure(*baseline);
        std::optional<T> cand = figure(*candidate);
        if (!base || !cand) return std::nullopt;
        const T change = *cand - *base;
        const bool worse = !worst || (growth_is_bad ? change > worst->candidate - worst->baseline
                                                    : change < worst->candidate - worst->baseline);
        if (worse) worst = ArmPair<T>{*base, *cand, std::string(name.str())};
    }
    return worst;
}

void read_build(const Checkpoint &checkpoint, GateEvidence &evidence) {
    evidence.resource_arch = checkpoint.figures["arch"].value_or(std::string());
    const toml::table *kernels = checkpoint.figures["kernels"].as_table();
    if (!kernels || kernels->empty()) return;

    const ArmFigure<std::int64_t> smem = [](const toml::table &arm) {
        return arm["smem_per_block"].value<std::int64_t>();
    };
    const ArmFigure<double> warps = [](const toml::table &arm) { return arm["warps_per_scheduler"].value<double>(); };
    const ArmFigure<std::int64_t> spills = [](const toml::table &arm) -> std::optional<std::int64_t> {
        auto stores = arm["spill_store_bytes"].value<std::int64_t>();
        auto loads = arm["spill_load_bytes"].value<std::int64_t>();
        if (!stores || !loads) return std::nullopt;
        return *stores + *loads;
    };

    if (auto pair = worst_entry(*kernels, smem, true)) {
        evidence.baseline_resources.smem_per_block_bytes = pair->baseline;
        evidence.candidate_resources.smem_per_block_bytes = pair->candidate;
        evidence.smem_worst_entry = pair->entry;
    }
    if (auto pair = worst_entry(*kernels, warps, false)) {
        evidence.baseline_resources.warps_per_scheduler = pair->baseline;
        evidence.candidate_resources.warps_per_scheduler = pair->candidate;
    }
    if (auto pair = worst_entry(*kernels, spills, true)) {
        evidence.baseline_resources.spill_bytes = pair->baseline;
        evidence.candidate_resources.spill_bytes = pair->candidate;
        evidence.spill_worst_entry = pair->entry;
        // Set only when every entry records it, like the pair above.
        std::int64_t most = -1;
        for (const auto &[name, node] : *kernels) {
            const std::int64_t own = *spills(*(*node.as_table())["baseline"].as_table());
            if (own > most) {
                most = own;
                evidence.baseline_max_spill_entry = std::string(name.str());
            }
        }
        evidence.baseline_max_spill_bytes = most;
    }
}

}  // namespace

GateEvidence gather_gate_evidence(const std::vector<StageState> &states) {
    GateEvidence evidence;
    evidence.prepare = stage_evidence(state_of(states, Stage::prepare));
    evidence.build = stage_evidence(state_of(states, Stage::build));
    evidence.sanitize = stage_evidence(state_of(states, Stage::sanitize));
    evidence.parity = stage_evidence(state_of(states, Stage::parity));
    evidence.time = stage_evidence(state_of(states, Stage::time));
    evidence.real_output_stage_name = stage_name(Stage::time);
    evidence.real_output_stage = evidence.time;

    if (const Checkpoint *build = intact_checkpoint(state_of(states, Stage::build))) read_build(*build, evidence);
    if (const Checkpoint *sanitize = intact_checkpoint(state_of(states, Stage::sanitize)))
        read_sanitize(*sanitize, evidence);
    if (const Checkpoint *parity = intact_checkpoint(state_of(states, Stage::parity))) read_parity(*parity, evidence);
    if (const Checkpoint *time = intact_checkpoint(state_of(states, Stage::time))) read_time(*time, evidence);
    return evidence;
}

}  // namespace s2tp
