// The gate thresholds of a manifest that sets no [gate] key: Experiment's defaults, as gate_thresholds
// applies them, so that a test's thresholds are the product's and not a copy of its defaults.
#pragma once

#include "model/experiment_manifest.h"
#include "model/gate_rules.h"
#include "stages/gate_stage.h"

namespace s2tp {

inline GateThresholds default_gate_thresholds() { return gate_thresholds(Experiment{}, {}); }

}  // namespace s2tp
