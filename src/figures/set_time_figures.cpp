#include "figures/set_time_figures.h"

#include "figures/figure_fields.h"
#include "model/ab_timing.h"
#include "support/number_format.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace s2tp {
namespace {

using figure_fields::boolean;
using figure_fields::integer;
using figure_fields::put;
using figure_fields::real;
using figure_fields::strings;
using figure_fields::text;

// "0.9812 [0.9790, 0.9833]", or "-" for a ratio not recorded.
std::string ratio_cell(const std::optional<RatioFigures> &r) {
    if (!r || !r->median) return "-";
    return fixed(*r->median, 4) + " [" + (r->ci_low ? fixed(*r->ci_low, 4) : "-") + ", " +
           (r->ci_high ? fixed(*r->ci_high, 4) : "-") + "]";
}

template <typename Named>
const Named *find_named(const std::vector<Named> &items, const std::string &name) {
    for (const Named &item : items)
        if (item.name == name) return &item;
    return nullptr;
}

// Tables keyed by name plus the order they came in (TOML tables are unordered).
template <typename Named>
void put_named(toml::table &t, const char *key, const char *order_key, const std::vector<Named> &items) {
    if (items.empty()) return;
    toml::table by_name;
    toml::array order;
    for (const Named &item : items) {
        by_name.insert(item.name, item.to_toml());
        order.push_back(item.name);
    }
    t.insert(key, by_name);
    t.insert(order_key, order);
}

template <typename Named>
std::vector<Named> read_named(const toml::table &t, const char *key, const char *order_key) {
    std::vector<Named> items;
    const toml::table *by_name = t[key].as_table();
    if (!by_name) return items;
    for (const std::string &name : strings(t, order_key))
        if (const toml::table *item = (*by_name)[name].as_table()) items.push_back(Named::from_toml(name, *item));
    return items;
}

}  // namespace

toml::table ShapeTimeFigures::to_toml() const {
    toml::table t;
    put(t, "weight", weight);
    put(t, "source", source);
    put(t, "passed", passed);
    if (!reasons.empty()) t.insert("reasons", figure_fields::string_array(reasons));
    t.insert("figures", figures.to_toml());
    return t;
}

ShapeTimeFigures ShapeTimeFigures::from_toml(const std::string &name, const toml::table &t) {
    ShapeTimeFigures s;
    s.name = name;
    s.weight = real(t, "weight");
    s.source = figure_fields::string_of(t, "source");
    s.passed = boolean(t, "passed");
    s.reasons = strings(t, "reasons");
    if (const toml::table *figures = t["figures"].as_table()) s.figures = TimeFigures::from_toml(*figures);
    return s;
}

toml::table SetCandidateFigures::to_toml() const {
    toml::table t;
    if (geomean) t.insert("geomean", geomean->to_toml());
    put(t, "worst_shape", worst_shape);
    if (worst) t.insert("worst", worst->to_toml());
    return t;
}

SetCandidateFigures SetCandidateFigures::from_toml(const std::string &name, const toml::table &t) {
    SetCandidateFigures c;
    c.name = name;
    if (const toml::table *g = t["geomean"].as_table()) c.geomean = RatioFigures::from_toml(*g);
    c.worst_shape = text(t, "worst_shape");
    if (const toml::table *w = t["worst"].as_table()) c.worst = RatioFigures::from_toml(*w);
    return c;
}

const ShapeTimeFigures *SetTimeFigures::shape(const std::string &name) const { return find_named(shapes, name); }

const SetCandidateFigures *SetTimeFigures::candidate(const std::string &name) const {
    return find_named(candidates, name);
}

toml::table SetTimeFigures::to_toml() const {
    toml::table t;
    put(t, "workload_set", workload_set);
    put(t, "description", description);
    put(t, "device", device);
    put(t, "device_name", device_name);
    put(t, "arch", arch);
    put(t, "weighted", weighted);
    put(t, "repeats", repeats);
    put(t, "budget_seconds", budget_seconds);
    put(t, "measure_seconds", measure_seconds);
    put_named(t, "shapes", "shape_order", shapes);
    put_named(t, "combined", "candidate_order", candidates);
    put(t, "summary", summary);
    return t;
}

SetTimeFigures SetTimeFigures::from_toml(const toml::table &t) {
    SetTimeFigures f;
    f.workload_set = text(t, "workload_set");
    f.description = text(t, "description");
    f.device = text(t, "device");
    f.device_name = text(t, "device_name");
    f.arch = text(t, "arch");
    f.weighted = boolean(t, "weighted");
    f.repeats = integer(t, "repeats");
    f.budget_seconds = real(t, "budget_seconds");
    f.measure_seconds = real(t, "measure_seconds");
    f.shapes = read_named<ShapeTimeFigures>(t, "shapes", "shape_order");
    f.candidates = read_named<SetCandidateFigures>(t, "combined", "candidate_order");
    f.summary = text(t, "summary");
    return f;
}

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
    c.geomean = RatioFigures::of(weighted_geomean_interval(weighted, bootstrap));
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
    out << "  workload set " << f.workload_set.value_or("-") << ": " << f.shapes.size() << " shapes"
        << (f.weighted.value_or(false) ? ", weighted" : ", equal weights") << " on " << f.device_name.value_or("-");
    std::vector<std::string> names;
    for (const SetCandidateFigures &c : f.candidates) names.push_back(c.name);
    // The header, one row per shape, then the combined rows, each column as wide as its widest cell.
    std::vector<std::vector<std::string>> rows{{"SHAPE", "WEIGHT", "BASELINE P50 ms", "A/A"}};
    for (const std::string &name : names) rows.front().push_back(name + "/baseline [95% CI]");
    for (const ShapeTimeFigures &s : f.shapes) {
        const TimeFigures &t = s.figures;
        std::vector<std::string> row{s.name + (s.passed == false ? " (failed)" : ""),
                                     s.weight ? compact(*s.weight, 3) : "1",
                                     t.baseline && t.baseline->p50 ? fixed(*t.baseline->p50, 3) : "-",
                                     t.aa && t.aa->median ? fixed(*t.aa->median, 4) : "-"};
        for (const std::string &name : names) {
            const CandidateTimeFigures *c = t.candidate(name);
            row.push_back(ratio_cell(c ? c->ratio : std::nullopt));
        }
        rows.push_back(std::move(row));
    }
    std::vector<std::string> geomean{f.weighted.value_or(false) ? "geomean (weighted)" : "geomean", "", "", ""};
    std::vector<std::string> worst{"worst shape", "", "", ""};
    for (const SetCandidateFigures &c : f.candidates) {
        geomean.push_back(ratio_cell(c.geomean));
        worst.push_back(c.worst_shape ? *c.worst_shape + " " + ratio_cell(c.worst) : "-");
    }
    rows.push_back(std::move(geomean));
    rows.push_back(std::move(worst));
    std::vector<std::size_t> width(rows.front().size(), 0);
    for (const auto &row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    for (const auto &row : rows) {
        out << "\n ";
        for (std::size_t i = 0; i < row.size(); ++i)
            out << " " << (i == 0 ? std::left : std::right) << std::setw(static_cast<int>(width[i])) << row[i];
    }
    out << std::right;
    for (const SetCandidateFigures &c : f.candidates)
        if (c.geomean && c.geomean->median) out << "\n  over the set: " << speed_in_words(*c.geomean->median, c.name);
    for (const ShapeTimeFigures &s : f.shapes)
        for (const std::string &reason : s.reasons) out << "\n  " << s.name << ": " << reason;
    if (f.measure_seconds) out << "\n  " << fixed(*f.measure_seconds, 1) << " s of sampling over the set";
    return out.str();
}

}  // namespace s2tp
