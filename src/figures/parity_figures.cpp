#include "figures/parity_figures.h"

#include "figures/figure_fields.h"

#include <cmath>

namespace s2tp {

using namespace figure_fields;

bool ParityDifference::operator==(const ParityDifference &o) const {
    return shape == o.shape && seed == o.seed && tensor == o.tensor && differing_elements == o.differing_elements &&
           elements == o.elements && first_index == o.first_index && baseline_value == o.baseline_value &&
           candidate_value == o.candidate_value;
}

AccuracyFigure AccuracyFigure::of(const std::string &shape, std::int64_t seed, std::int64_t rows, const AccuracyMetrics &m) {
    return {shape, seed, rows, m.cosine, m.rel_l1, m.rmse, m.max_abs_error, m.worst_element,
            m.nan_count, m.inf_count, m.reference_non_finite};
}

namespace {

// NaN == NaN here: a recorded NaN figure reads back as the same figure.
bool same(const std::optional<double> &a, const std::optional<double> &b) {
    return a.has_value() == b.has_value() && (!a || *a == *b || (std::isnan(*a) && std::isnan(*b)));
}

}  // namespace

toml::table AccuracyFigure::to_toml() const {
    toml::table t{{"shape", shape}};
    put(t, "seed", seed);
    put(t, "rows", rows);
    put(t, "cosine", cosine);
    put(t, "rel_l1", rel_l1);
    put(t, "rmse", rmse);
    put(t, "max_abs_error", max_abs_error);
    put(t, "worst_element", worst_element);
    put(t, "nan_count", nan_count);
    put(t, "inf_count", inf_count);
    put(t, "reference_non_finite", reference_non_finite);
    return t;
}

AccuracyFigure AccuracyFigure::from_toml(const toml::table &a) {
    return AccuracyFigure{string_of(a, "shape"), integer(a, "seed"), integer(a, "rows"), real(a, "cosine"),
                          real(a, "rel_l1"), real(a, "rmse"), real(a, "max_abs_error"), string_of(a, "worst_element"),
                          integer(a, "nan_count"), integer(a, "inf_count"), integer(a, "reference_non_finite")};
}

bool AccuracyFigure::operator==(const AccuracyFigure &o) const {
    return shape == o.shape && seed == o.seed && rows == o.rows && same(cosine, o.cosine) && same(rel_l1, o.rel_l1) &&
           same(rmse, o.rmse) && same(max_abs_error, o.max_abs_error) && worst_element == o.worst_element &&
           nan_count == o.nan_count && inf_count == o.inf_count && reference_non_finite == o.reference_non_finite;
}

namespace {

toml::array accuracy_array(const std::vector<AccuracyFigure> &figures) {
    toml::array array;
    for (const AccuracyFigure &a : figures) array.push_back(a.to_toml());
    return array;
}

std::vector<AccuracyFigure> accuracy_from(const toml::table &t, std::string_view key) {
    std::vector<AccuracyFigure> figures;
    each_table(t, key, [&](const toml::table &a) { figures.push_back(AccuracyFigure::from_toml(a)); });
    return figures;
}

toml::array checks_array(const std::vector<AccuracyShapeCheck> &checks) {
    toml::array array;
    for (const AccuracyShapeCheck &c : checks) {
        toml::table t{{"shape", c.shape}, {"conditions", c.conditions}};
        put(t, "passed", c.passed);
        array.push_back(std::move(t));
    }
    return array;
}

std::vector<AccuracyShapeCheck> checks_from(const toml::table &t) {
    std::vector<AccuracyShapeCheck> checks;
    each_table(t, "checks", [&](const toml::table &c) {
        checks.push_back(AccuracyShapeCheck{string_of(c, "shape"), boolean(c, "passed"), string_of(c, "conditions")});
    });
    return checks;
}

// The accuracy arrays of a variant's table, written only when the run checked accuracy.
void put_accuracy(toml::table &t, std::string_view key, const std::vector<AccuracyFigure> &figures) {
    if (!figures.empty()) t.insert(key, accuracy_array(figures));
}

toml::array outputs_array(const std::vector<ParityOutput> &outputs) {
    toml::array array;
    for (const ParityOutput &o : outputs) {
        toml::table t{{"shape", o.shape}, {"sha256", o.sha256}};
        put(t, "seed", o.seed);
        array.push_back(std::move(t));
    }
    return array;
}

std::vector<ParityOutput> outputs_from(const toml::table &t) {
    std::vector<ParityOutput> outputs;
    each_table(t, "outputs", [&](const toml::table &o) {
        outputs.push_back(ParityOutput{string_of(o, "shape"), integer(o, "seed"), string_of(o, "sha256")});
    });
    return outputs;
}

toml::table candidate_table(const CandidateParity &c) {
    toml::table t;
    put(t, "mode", c.mode);
    put(t, "shapes_differing", c.shapes_differing);
    toml::array differences;
    for (const ParityDifference &d : c.differences) {
        toml::table entry{{"shape", d.shape}, {"tensor", d.tensor}, {"first_index", d.first_index},
                          {"baseline_value", d.baseline_value}, {"candidate_value", d.candidate_value}};
        put(entry, "seed", d.seed);
        put(entry, "differing_elements", d.differing_elements);
        put(entry, "elements", d.elements);
        differences.push_back(std::move(entry));
    }
    t.insert("differences", std::move(differences));
    t.insert("outputs", outputs_array(c.outputs));
    put_accuracy(t, "accuracy", c.accuracy);
    put_accuracy(t, "vs_baseline", c.vs_baseline);
    if (!c.checks.empty()) t.insert("checks", checks_array(c.checks));
    return t;
}

CandidateParity candidate_from(const toml::table &t) {
    CandidateParity c;
    c.mode = string_of(t, "mode");
    c.shapes_differing = integer(t, "shapes_differing");
    each_table(t, "differences", [&](const toml::table &d) {
        c.differences.push_back(ParityDifference{string_of(d, "shape"), integer(d, "seed"), string_of(d, "tensor"),
                                                 integer(d, "differing_elements"), integer(d, "elements"),
                                                 string_of(d, "first_index"), string_of(d, "baseline_value"),
                                                 string_of(d, "candidate_value")});
    });
    c.outputs = outputs_from(t);
    c.accuracy = accuracy_from(t, "accuracy");
    c.vs_baseline = accuracy_from(t, "vs_baseline");
    c.checks = checks_from(t);
    return c;
}

}  // namespace

toml::table ParityFigures::to_toml() const {
    toml::table t;
    put(t, "shapes_checked", shapes_checked);
    put(t, "comparisons", comparisons);
    put(t, "reference_worst_rel_l2", reference_worst_rel_l2);
    put(t, "reference_worst_case", reference_worst_case);
    put(t, "reference_limit", reference_limit);
    put(t, "reference_rows", reference_rows);
    if (!baseline_outputs.empty() || !baseline_accuracy.empty()) {
        toml::table base{{"outputs", outputs_array(baseline_outputs)}};
        put_accuracy(base, "accuracy", baseline_accuracy);
        if (!baseline_checks.empty()) base.insert("checks", checks_array(baseline_checks));
        t.insert("baseline", std::move(base));
    }
    if (!candidates.empty()) {
        toml::table named;
        for (const auto &[name, c] : candidates) named.insert(name, candidate_table(c));
        t.insert("candidates", std::move(named));
    }
    put(t, "device", device);
    put(t, "summary", summary);
    return t;
}

ParityFigures ParityFigures::from_toml(const toml::table &t) {
    ParityFigures f;
    f.shapes_checked = integer(t, "shapes_checked");
    f.comparisons = integer(t, "comparisons");
    f.reference_worst_rel_l2 = real(t, "reference_worst_rel_l2");
    f.reference_worst_case = string_of(t, "reference_worst_case");
    f.reference_limit = real(t, "reference_limit");
    f.reference_rows = integer(t, "reference_rows");
    if (const toml::table *base = t["baseline"].as_table()) {
        f.baseline_outputs = outputs_from(*base);
        f.baseline_accuracy = accuracy_from(*base, "accuracy");
        f.baseline_checks = checks_from(*base);
    }
    each_named(t, "candidates", [&](const std::string &name, const toml::table &c) { f.candidates.emplace(name, candidate_from(c)); });
    f.device = string_of(t, "device");
    f.summary = string_of(t, "summary");
    return f;
}

bool ParityFigures::operator==(const ParityFigures &o) const {
    return shapes_checked == o.shapes_checked && comparisons == o.comparisons &&
           reference_worst_rel_l2 == o.reference_worst_rel_l2 && reference_limit == o.reference_limit &&
           reference_worst_case == o.reference_worst_case && baseline_outputs == o.baseline_outputs &&
           baseline_accuracy == o.baseline_accuracy && baseline_checks == o.baseline_checks &&
           reference_rows == o.reference_rows &&
           candidates == o.candidates && device == o.device && summary == o.summary;
}

std::string ParityFigures::text() const { return "  " + summary; }

}  // namespace s2tp
