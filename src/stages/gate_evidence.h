// What the gate knows about a run: the stage checkpoints, as inspect_run found them, turned into the
// GateEvidence that gate_rules decides on. Figures follow the checkpoint figures contract
// (sage2tp-checkpoint(5)); nothing here decides PASS or FAIL.
//
// Reading rules:
//  * A stage with no checkpoint is not present. One whose file exists but is edited, truncated or
//    holds another stage is present and not fresh: an untrusted file is no more evidence than a
//    stale one. Figures are read only from intact checkpoints; the rules ignore them unless fresh.
//  * A figure that a checkpoint does not record stays unset, so its condition is NOT CHECKED: a
//    missing number is never read as zero errors, zero differences or an unchanged resource.
//  * Resources: a kernel source has several entry points (head dim x dtype x mask). Each resource
//    condition is judged on the entry whose candidate fares worst against its own baseline
//    (largest shared-memory growth, largest fall in warps per scheduler, largest spill growth), so
//    a regression in any entry point reaches the gate. An entry lacking a figure leaves that
//    figure unset for the whole kernel.
//  * Real output: the candidate's SHA-256 of the real workload (time stage) is compared with the
//    digest the manifest pins for the built arch when there is one, else with the baseline's own
//    output on the same inputs: the candidate must reproduce it byte for byte.
#pragma once

#include "model/gate_rules.h"
#include "pipeline/stage_pipeline.h"

#include <vector>

namespace s2tp {

// `states` is inspect_run's answer (every stage, in pipeline order); the gate's own state is ignored.
GateEvidence gather_gate_evidence(const std::vector<StageState> &states);

}  // namespace s2tp
