#include "figures/set_time_figures.h"

#include "model/timing_calibration.h"

#include "figures/figure_fields.h"
#include "model/ab_timing.h"
#include "support/number_format.h"
#include "support/table_printer.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace s2tp {

using namespace figure_fields;

namespace {


std::string ratio_cell(const std::optional<RatioFigures> &r) {
    return r && r->median ? interval_text(*r, false) : std::string(missing_figure);
}

template <typename Named>
const Named *find_named(const std::vector<Named> &items, const std::string &name) {
    for (const Named &item : items)
        if (item.name == name) return &item;
    return nullptr;
}

}  // namespace

const std::vector<Field<ShapeTimeFigures>> &ShapeTimeFigures::fields() {
    using S = ShapeTimeFigures;
    static const std::vector<Field<S>> table{field("weight", &S::weight, "weight"),
                                             field("source", &S::source, "config"),
                                             field("passed", &S::passed, "outcome"),
                                             field("reasons", &S::reasons, "lines"),
                                             field("figures", &S::figures, "one workload's", Presence::always)};
    return table;
}

toml::table ShapeTimeFigures::to_toml() const { return write_fields(fields(), *this); }

ShapeTimeFigures ShapeTimeFigures::from_toml(const std::string &name, const toml::table &t) {
    return named_value_of<ShapeTimeFigures>(t, name);
}

const std::vector<Field<SetCandidateFigures>> &SetCandidateFigures::fields() {
    using C = SetCandidateFigures;
    static const std::vector<Field<C>> table{field("geomean", &C::geomean, "candidate/baseline"),
                                             field("worst_shape", &C::worst_shape, "shape"),
                                             field("worst", &C::worst, "candidate/baseline")};
    return table;
}

toml::table SetCandidateFigures::to_toml() const { return write_fields(fields(), *this); }

SetCandidateFigures SetCandidateFigures::from_toml(const std::string &name, const toml::table &t) {
    return named_value_of<SetCandidateFigures>(t, name);
}

const ShapeTimeFigures *SetTimeFigures::shape(const std::string &name) const { return find_named(shapes, name); }

const SetCandidateFigures *SetTimeFigures::candidate(const std::string &name) const {
    return find_named(candidates, name);
}

const std::vector<Field<SetTimeFigures>> &SetTimeFigures::fields() {
    using T = SetTimeFigures;
    static const std::vector<Field<T>> table{
        field("workload_set", &T::workload_set, "name"),
        field("description", &T::description, "text"),
        field("device", &T::device, "GPU"),
        field("device_name", &T::device_name, "GPU"),
        field("arch", &T::arch, "arch"),
        field("weighted", &T::weighted, "weights"),
        field("repeats", &T::repeats, "processes"),
        field("budget_seconds", &T::budget_seconds, "s"),
        field("measure_seconds", &T::measure_seconds, "s"),
        named_tables("shapes", "shape_order", &T::shapes, "by name"),
        named_tables("combined", "candidate_order", &T::candidates, "by candidate"),
        field("summary", &T::summary, "line")};
    return table;
}

toml::table SetTimeFigures::to_toml() const { return write_fields(fields(), *this); }

SetTimeFigures SetTimeFigures::from_toml(const toml::table &t) { return read_fields(fields(), t); }

bool SetTimeFigures::holds_set(const toml::table &figures) { return figures.contains("workload_set"); }

SetCandidateFigures combine_shape_ratios(const std::string &candidate, const std::vector<ShapeRatios> &shapes,
                                         const BootstrapOptions &bootstrap) {
    SetCandidateFigures c;
    c.name = candidate;
    const bool all_timed = !shapes.empty() && std::all_of(shapes.begin(), shapes.end(), [](const ShapeRatios &s) {
        return !s.groups.empty() && s.ratio && s.ratio->median &&
               std::none_of(s.groups.begin(), s.groups.end(), [](const auto &g) { return g.empty(); });
    });
    if (!all_timed) return c;
    std::vector<WeightedRatios> weighted;
    for (const ShapeRatios &s : shapes) weighted.push_back({s.groups, s.weight});
    RatioInterval geomean = weighted_geomean_interval(weighted, bootstrap);
    // Each shape was one process whose interval carries the GPU model's between-process component; the
    // shapes of one process share that process's offset, so the geometric mean carries it too.
    const std::optional<double> between = shapes.front().ratio->between_process_sd;
    const bool carried = between && std::all_of(shapes.begin(), shapes.end(), [&](const ShapeRatios &s) {
                             return s.ratio->between_process_sd == between;
                         });
    if (carried) geomean = with_between_process(geomean, *between);
    c.geomean = RatioFigures::of(geomean);
    if (carried) c.geomean->between_process_sd = between;
    // The first of equal medians: the set's order decides a tie, so the answer does not depend on sorting.
    const ShapeRatios *worst = &shapes.front();
    for (const ShapeRatios &s : shapes)
        if (*s.ratio->median > *worst->ratio->median) worst = &s;
    c.worst_shape = worst->shape;
    c.worst = worst->ratio;
    return c;
}

std::string set_time_figures_text(const SetTimeFigures &f) {
    std::ostringstream out;
    out << "  workload set " << f.workload_set.value_or(missing_figure) << ": " << f.shapes.size() << " shapes"
        << (f.weighted.value_or(false) ? ", weighted" : ", equal weights") << " on "
        << f.device_name.value_or(missing_figure);
    // One row per shape, then the combined rows; the numbers right-aligned.
    TextTable table{{{"SHAPE"}, {"WEIGHT", Align::right}, {"BASELINE P50 ms", Align::right}, {"A/A", Align::right}}, {}};
    for (const SetCandidateFigures &c : f.candidates) table.columns.push_back({c.name + "/baseline", Align::right});
    for (const ShapeTimeFigures &s : f.shapes) {
        const TimeFigures &t = s.figures;
        std::vector<std::string> row{s.name + (s.passed == false ? " (failed)" : ""),
                                     s.weight ? compact(*s.weight, 3) : "1",
                                     fixed_or_missing(t.baseline ? t.baseline->p50 : std::nullopt, 3),
                                     fixed_or_missing(t.aa ? t.aa->median : std::nullopt, 4)};
        for (const SetCandidateFigures &combined : f.candidates) {
            const CandidateTimeFigures *c = t.candidate(combined.name);
            row.push_back(ratio_cell(c ? c->ratio : std::nullopt));
        }
        table.rows.push_back(std::move(row));
    }
    std::vector<std::string> geomean{f.weighted.value_or(false) ? "geomean (weighted)" : "geomean", "", "", ""};
    std::vector<std::string> worst{"worst shape", "", "", ""};
    for (const SetCandidateFigures &c : f.candidates) {
        geomean.push_back(ratio_cell(c.geomean));
        worst.push_back(c.worst_shape ? *c.worst_shape + " " + ratio_cell(c.worst) : std::string(missing_figure));
    }
    table.rows.push_back(std::move(geomean));
    table.rows.push_back(std::move(worst));
    std::string lines = table_text(table, TextLayout{"  ", 1, false});
    lines.pop_back();  // the lines follow the heading line, each after a newline
    out << "\n" << lines;
    for (const SetCandidateFigures &c : f.candidates)
        if (c.geomean && c.geomean->median) out << "\n  over the set: " << speed_in_words(*c.geomean->median, c.name);
    for (const ShapeTimeFigures &s : f.shapes)
        for (const std::string &reason : s.reasons) out << "\n  " << s.name << ": " << reason;
    if (f.measure_seconds) out << "\n  " << fixed(*f.measure_seconds, 1) << " s of sampling over the set";
    return out.str();
}

}  // namespace s2tp
