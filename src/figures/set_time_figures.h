// The figures of a time checkpoint over a workload set (sage2tp-experiment(5) WORKLOAD SETS) as one
// typed struct: what the time stage writes for a set, and what the gate, status, report and compare
// read. A single-workload checkpoint keeps TimeFigures exactly; a set's holds every shape's own
// TimeFigures, unchanged, and per candidate the figures over the set:
//   - the weighted geometric mean of the shapes' median ratios with its bootstrap interval, which
//     resamples rounds within each shape only (weighted_geomean_interval, support/statistics.h);
//   - the worst shape: the one with the highest median ratio, and its own interval.
// Both are left unset unless every shape has an interval: a mean over the shapes that happened to be
// timed, or a worst among them, would claim more than was measured.
//
// The layout in TOML (sage2tp-checkpoint(5)):
//   workload_set, description, device, device_name, arch, summary ...   scalars
//   weighted                      the set gives weights (else every shape weighs 1)
//   [shapes.NAME]                 weight, source, status, reasons, [shapes.NAME.figures] (TimeFigures)
//   shape_order                   the shapes' names in the set's order
//   [combined.CANDIDATE]          [geomean] (a RatioFigures), worst_shape, [worst] (a RatioFigures)
//   candidate_order
//
// Usage:
//   if (SetTimeFigures::holds_set(checkpoint.figures)) {
//       const SetTimeFigures f = SetTimeFigures::from_toml(checkpoint.figures);
//       for (const ShapeTimeFigures &s : f.shapes) use(s.name, s.figures.candidate("c")->ratio);
//   }
#pragma once

#include "figures/time_figures.h"
#include "support/statistics.h"

#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct ShapeTimeFigures {
    std::string name;              // the set entry's name
    std::optional<double> weight;  // as the set gives it; unset when the set gives none
    std::string source;            // the public config the shape is taken from
    std::optional<bool> passed;    // the shape's own outcome (its checks and its rounds)
    std::vector<std::string> reasons;
    TimeFigures figures;           // the single-workload figures of this shape

    static const std::vector<Field<ShapeTimeFigures>> &fields();
    toml::table to_toml() const;
    static ShapeTimeFigures from_toml(const std::string &name, const toml::table &table);
};

struct SetCandidateFigures {
    std::string name;
    std::optional<RatioFigures> geomean;     // the combined ratio over the shapes
    std::optional<std::string> worst_shape;  // the shape with the highest median ratio
    std::optional<RatioFigures> worst;       // that shape's own interval

    static const std::vector<Field<SetCandidateFigures>> &fields();
    toml::table to_toml() const;
    static SetCandidateFigures from_toml(const std::string &name, const toml::table &table);
};

struct SetTimeFigures {
    std::optional<std::string> workload_set, description, device, device_name, arch, summary;
    std::optional<bool> weighted;
    std::optional<std::int64_t> repeats;                      // processes per shape
    std::optional<double> budget_seconds, measure_seconds;    // the stage's, summed over the shapes
    std::vector<ShapeTimeFigures> shapes;                     // in the set's order
    std::vector<SetCandidateFigures> candidates;              // in the manifest's order

    const ShapeTimeFigures *shape(const std::string &name) const;
    const SetCandidateFigures *candidate(const std::string &name) const;

    static const std::vector<Field<SetTimeFigures>> &fields();
    toml::table to_toml() const;
    static SetTimeFigures from_toml(const toml::table &figures);
    // Whether a time checkpoint's figures are a set's (else they are one workload's TimeFigures).
    static bool holds_set(const toml::table &figures);
};

// One shape's evidence for the combination: its weight, its per-round ratios of one candidate by
// process (one group per repeat) and the interval the shape's own figures give them. No groups, or a
// ratio without an interval, mark a shape that was not timed.
struct ShapeRatios {
    std::string shape;
    double weight = 1.0;
    std::vector<std::vector<double>> groups;
    std::optional<RatioFigures> ratio;
};

// The candidate's figures over the set (see the file comment): the geometric mean with the same
// weights as the set, its interval from `bootstrap`, and the worst shape; both unset unless every shape
// was timed.
SetCandidateFigures combine_shape_ratios(const std::string &candidate, const std::vector<ShapeRatios> &shapes,
                                         const BootstrapOptions &bootstrap);

// The human summary: one row per shape (weight, the baseline's p50, the A/A median and each candidate's
// ratio interval), the combined row and the worst shape per candidate, and each shape's reasons.
std::string set_time_figures_text(const SetTimeFigures &figures);

}  // namespace s2tp
