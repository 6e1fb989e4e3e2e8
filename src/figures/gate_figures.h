// The gate checkpoint's figures as a struct (sage2tp-checkpoint(5), "Figures of gate"): the
// thresholds applied, one verdict per candidate (keyed by its name) with its conditions, and one
// overall verdict, PASS only when every candidate passes.
//
// Usage:
//   GateFigures figures = GateFigures::of({{"candidate", evaluate_gate(evidence, thresholds)}}, thresholds);
//   checkpoint.figures = figures.to_toml();
//   reporter.say(GateFigures::from_toml(checkpoint.figures).text());
#pragma once

#include "figures/figure_fields.h"
#include "model/gate_rules.h"

#include <toml++/toml.h>

#include <map>
#include <string>
#include <vector>

namespace s2tp {

struct CandidateGate {
    GateResult result;
    std::string summary;  // "PASS", or "FAIL: " and the conditions that block

    static const std::vector<figure_fields::Field<CandidateGate>> &fields();
};

// The field tables of the gate rules' own structs (sage2tp-checkpoint(5) "Figures of gate").
const std::vector<figure_fields::Field<GateThresholds>> &figure_fields_of(const GateThresholds *);
const std::vector<figure_fields::Field<GateCondition>> &figure_fields_of(const GateCondition *);
const std::vector<figure_fields::Field<GateWaiver>> &figure_fields_of(const GateWaiver *);

struct GateFigures {
    GateThresholds thresholds;  // a bound the checkpoint lacks reads back unset
    std::map<std::string, CandidateGate> candidates;
    bool passed = false;  // every candidate passed (and there is at least one)
    std::string summary;  // "PASS", or "FAIL: " and each failing candidate's summary

    static GateFigures of(const std::map<std::string, GateResult> &results, const GateThresholds &thresholds);

    static const std::vector<figure_fields::Field<GateFigures>> &fields();
    toml::table to_toml() const;
    static GateFigures from_toml(const toml::table &figures);

    // The checkpoint's reasons: each failed condition and each required one not checked, by candidate.
    std::vector<std::string> reasons() const;
    // What `sage2tp gate` prints: each candidate's conditions and verdict, then one overall line.
    std::string text() const;
};

bool operator==(const GateCondition &a, const GateCondition &b);
bool operator==(const GateWaiver &a, const GateWaiver &b);
bool operator==(const GateThresholds &a, const GateThresholds &b);
bool operator==(const GateFigures &a, const GateFigures &b);

}  // namespace s2tp
