// The sanitize stage's matrix as functions of typed inputs: which checks run (every variant x every
// tool x every sanitizer shape, the baseline first), and how their reports fold into the figures and
// the stage's reasons. A check that did not pass (errors, no summary, a timeout, a failing target) is
// a failed check, never a pass.
//
// Usage:
//   auto plan = plan_sanitize_checks({"baseline", "candidate"}, tools, shape_descriptions);
//   ... run each, collect SanitizeOutcome ...
//   SanitizeFold fold = fold_sanitize_checks(outcomes, plan_shape_count, tool_names, candidates);
#pragma once

#include "formats/sanitizer_report.h"
#include "figures/sanitize_figures.h"

#include <cstddef>
#include <string>
#include <vector>

namespace s2tp {

struct SanitizeCheckPlan {
    std::string variant;
    SanitizerTool tool = SanitizerTool::memcheck;
    std::size_t shape_index = 0;  // into sanitizer_shapes(): `sage2tp exec --sanitize-shape`
    std::string shape;            // its description
    std::string log_name;         // "<variant>-<tool>-shape<index>.log"
};

std::vector<SanitizeCheckPlan> plan_sanitize_checks(const std::vector<std::string> &variants,
                                                    const std::vector<SanitizerTool> &tools,
                                                    const std::vector<std::string> &shapes);

struct SanitizeOutcome {
    SanitizeCheckPlan check;
    SanitizerReport report;
    std::string log;  // run-relative path of its log
};

struct SanitizeFold {
    SanitizeFigures figures;  // without device and seed, which the stage adds
    std::vector<std::string> reasons;
    bool passed = false;
};

// Failed checks quoted one by one in the reasons; the figures list all of them.
constexpr std::size_t kSanitizeReasonsShown = 12;

// `candidates` are the candidate variants' names (every other variant of `outcomes` is the baseline's).
SanitizeFold fold_sanitize_checks(const std::vector<SanitizeOutcome> &outcomes, std::size_t shapes,
                                  const std::vector<std::string> &tools, const std::vector<std::string> &candidates);

}  // namespace s2tp
