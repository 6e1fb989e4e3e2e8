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
//  * Every checkpoint is read through its typed figures (BuildFigures, SanitizeFigures,
//    ParityFigures, TimeFigures), never by raw keys: a renamed key fails to build, not to check.
//  * One GateEvidence per candidate: the baseline's part of each stage's figures, and that
//    candidate's own part, keyed by its name. A candidate a stage has no figures for is NOT CHECKED
//    there.
//  * Resources: the worst-entry aggregates of BuildFigures (largest shared-memory growth, largest
//    fall in warps per scheduler, largest spill growth over every entry point), so a regression in
//    any entry point reaches the gate; an entry lacking a figure leaves it unset.
//  * Real output: the candidate's SHA-256 of the real workload (time stage) is compared with the
//    digest the manifest pins for the built arch when there is one, else with the baseline's own
//    output on the same inputs: the candidate must reproduce it byte for byte.
#pragma once

#include "model/gate_rules.h"
#include "pipeline/stage_pipeline.h"

#include <map>
#include <string>
#include <vector>

namespace s2tp {

// `states` is inspect_run's answer (every stage, in pipeline order); the gate's own state is ignored.
// `candidates` are the run's candidate names (Experiment::candidates); the answer has one entry each.
std::map<std::string, GateEvidence> gather_gate_evidence(const std::vector<StageState> &states,
                                                         const std::vector<std::string> &candidates);

}  // namespace s2tp
