// What `sage2tp phases` makes of a phase log (kernels/phase_log.h): per variant and warp, the mean
// cycles per CTA of each step of the schedule, its share of the schedule, and the mean cycles of one
// barrier wait and one copy wait; then, per candidate against the baseline, the step deltas and the
// split of the candidate's extra cycles per CTA into barrier wait, copy wait, compute, copy issue and
// the rest. Pure functions of the log: the launch that fills it is in tools/phase_timing.h.
//
// Usage:
//   s2tp::VariantPhases base = s2tp::summarize_phase_log(log, "baseline", cubin, schedule, ctas);
//   s2tp::PhaseReport report{...};
//   report.variants = {base, cand};
//   report.comparisons = s2tp::compare_with_baseline(report.variants);
//   std::cout << report.table_text();
#pragma once

#include "phase_log.h"

#include <toml++/toml.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

constexpr std::size_t phase_steps = S2TP_PHASE_STEPS;
constexpr std::size_t phase_warps = S2TP_PHASE_LOG_WARPS;

// A step's key in reports/phases.toml ("copy_wait", "barrier", "qk_softmax", "pv", "copy_issue",
// "schedule") and its column label ("copy wait", "barrier", "QK+softmax", "PV", "copy issue", "schedule").
const char *phase_step_key(std::size_t step);
const char *phase_step_label(std::size_t step);

// What an instrumented kernel recorded of its schedule (phase_log.h's s2tp_schedule_record): the name
// the schedule gives itself ("" when not known) and each warp's role.
struct ScheduleRecord {
    std::string name;
    std::array<s2tp_warp_role, phase_warps> warp_roles{};  // every warp on its own unless recorded

    // The record as read back from the device; Error(precondition) naming `cubin` when its name has no
    // terminating NUL or a role is none of phase_log.h's.
    static ScheduleRecord from_device(const s2tp_schedule_record &record, const std::string &cubin);
};

// Each warp's label under its role: "pair A warp 0" and "pair B warp 2" for the two alternating pairs,
// "warp 1" for a warp on its own.
std::vector<std::string> warp_labels(const std::array<s2tp_warp_role, phase_warps> &roles);

struct PhaseStepFigures {
    double cycles_per_cta = 0;       // the step's cycles summed over its occurrences, mean over the logged CTAs
    double occurrences_per_cta = 0;  // how often the step ran, mean over the logged CTAs
    double share = 0;                // of the warp's whole schedule: its cycles over the schedule's
    std::optional<double> cycles_per_occurrence;  // e.g. one barrier wait; nothing when it never ran
};

struct WarpPhases {
    std::size_t warp = 0;
    std::string label;
    std::array<PhaseStepFigures, phase_steps> steps{};
};

struct VariantPhases {
    std::string variant;   // "baseline" or a candidate's name
    std::string cubin;     // the instrumented cubin, run-relative
    std::string schedule;  // "" when not known
    std::int64_t launched_ctas = 0;
    std::int64_t logged_ctas = 0;  // CTAs that added anything to the log (at most S2TP_PHASE_LOG_MAX_CTAS)
    std::vector<WarpPhases> warps;

    // The step's cycles per CTA, averaged over the warps.
    double cycles_per_cta(std::size_t step) const;
};

// Summarises one launch's log, laid out [cta][warp][step] as phase_log.h says (any number of CTAs),
// over the CTAs that logged anything. Error(precondition) naming `cubin` when the whole log is zero: a
// cubin whose sources have no phase stamps logs nothing, and a table of zeros would read as a result.
// Error(internal) when the log's length is not a whole number of CTAs.
VariantPhases summarize_phase_log(const std::vector<s2tp_phase_slot> &log, const std::string &variant,
                                  const std::string &cubin, const ScheduleRecord &schedule, std::int64_t launched_ctas);

// One candidate against the baseline, per CTA and averaged over the warps.
struct PhaseComparison {
    std::string baseline = "baseline", candidate;
    std::array<double, phase_steps> baseline_cycles{}, candidate_cycles{};

    double delta(std::size_t step) const { return candidate_cycles[step] - baseline_cycles[step]; }
    // The candidate's extra cycles per CTA (the whole schedule's delta), and its parts: the steps'
    // deltas, compute being QK+softmax and PV together, and what no step covers (the schedule less its
    // steps), so that the parts add up to the whole.
    double extra_cycles() const { return delta(S2TP_STEP_SCHEDULE); }
    double compute_delta() const { return delta(S2TP_STEP_QK_SOFTMAX) + delta(S2TP_STEP_PV); }
    double untimed_delta() const;
    // "candidate vs baseline: +N cycles per CTA (+x%): barrier wait +a (p% of the extra), ...".
    std::string extra_cycles_text() const;
};

PhaseComparison compare_phases(const VariantPhases &baseline, const VariantPhases &candidate);
// Every candidate (variants after the first) against the baseline (the first).
std::vector<PhaseComparison> compare_with_baseline(const std::vector<VariantPhases> &variants);

struct PhaseReport {
    std::string arch;          // the cubins' target, e.g. "sm_90a"
    std::string device;        // the GPU, one line
    std::string shape;         // the launched problem
    std::string nvcc_version;  // of the instrumented build
    std::vector<VariantPhases> variants;       // baseline first, then the candidates in manifest order
    std::vector<PhaseComparison> comparisons;  // each candidate against the baseline

    toml::table to_toml() const;
    // What to_toml wrote; Error(usage) naming the key when a variant or a comparison lacks its name or
    // a warp has no index below S2TP_PHASE_LOG_WARPS.
    static PhaseReport from_toml(const toml::table &table);
    // Per variant, a table of warps by steps (cycles per CTA with their share of the schedule, and the
    // cycles of one barrier wait and of one copy wait), then per candidate the baseline | candidate |
    // delta table of the steps and the line that splits the extra cycles.
    std::string table_text() const;
};

}  // namespace s2tp
