// The gate stage: the run's checkpoints turned into a verdict per candidate and one overall verdict
// (exit 0 only when every candidate passes). Thresholds come from the run's manifest ([gate]), each of
// which the command line may override within the manifest's own range; the conditions themselves live
// in model/gate_rules.h, the evidence in gate_evidence.h, the figures in gate_figures.h.
//
// The gate is a stage like the others, under the same resume rule: it needs a passed, fresh time
// checkpoint (which in turn means every earlier stage passed, or was skipped on purpose, and is
// fresh). A run that stopped earlier has no verdict to give; `sage2tp status` shows such a partial
// run stage by stage. The gate still evaluates every condition from the checkpoints, so a resource,
// speed or output-digest condition can fail a run whose stages all passed.
#pragma once

#include "model/experiment_manifest.h"
#include "model/gate_rules.h"
#include "pipeline/stage_pipeline.h"

#include <cstdint>
#include <optional>

namespace s2tp {

// What the command line puts in place of the manifest's [gate] values.
struct GateOverrides {
    std::optional<double> max_candidate_p50_ms;
    std::optional<std::int64_t> max_spill_growth_bytes;
    std::optional<double> max_ratio_upper;
    bool max_ratio_off = false;  // --max-ratio off: no relative speed gate, whatever the manifest says
    std::optional<double> max_geomean_ratio_upper, max_worst_ratio_upper;
    std::optional<bool> require_sanitizer;
};

// The manifest's thresholds with the overrides on top.
GateThresholds gate_thresholds(const Experiment &experiment, const GateOverrides &overrides);

// What `sage2tp gate` was asked; subcommands/gate.cpp checks each override against its range.
struct GateRequest {
    GateOverrides overrides;
    bool force = false;
};

// The gate for run_stage: the fingerprint (every earlier checkpoint's digest and the thresholds), the
// evaluation with reports/gate.json, the check that the report is as recorded, and the printer.
StageWork gate_stage_work(StageContext &context, const GateRequest &request, const Reporter &reporter);

}  // namespace s2tp
