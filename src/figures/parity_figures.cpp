#include "figures/parity_figures.h"

#include "figures/figure_fields.h"

namespace s2tp {

using namespace figure_fields;

bool ParityDifference::operator==(const ParityDifference &o) const {
    return shape == o.shape && seed == o.seed && tensor == o.tensor && differing_elements == o.differing_elements &&
           elements == o.elements && first_index == o.first_index && baseline_value == o.baseline_value &&
           candidate_value == o.candidate_value;
}

namespace {

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
    return t;
}

CandidateParity candidate_from(const toml::table &t) {
    CandidateParity c;
    c.shapes_differing = integer(t, "shapes_differing");
    each_table(t, "differences", [&](const toml::table &d) {
        c.differences.push_back(ParityDifference{string_of(d, "shape"), integer(d, "seed"), string_of(d, "tensor"),
                                                 integer(d, "differing_elements"), integer(d, "elements"),
                                                 string_of(d, "first_index"), string_of(d, "baseline_value"),
                                                 string_of(d, "candidate_value")});
    });
    c.outputs = outputs_from(t);
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
    if (!baseline_outputs.empty()) t.insert("baseline", toml::table{{"outputs", outputs_array(baseline_outputs)}});
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
    if (const toml::table *base = t["baseline"].as_table()) f.baseline_outputs = outputs_from(*base);
    each_named(t, "candidates", [&](const std::string &name, const toml::table &c) { f.candidates.emplace(name, candidate_from(c)); });
    f.device = string_of(t, "device");
    f.summary = string_of(t, "summary");
    return f;
}

bool ParityFigures::operator==(const ParityFigures &o) const {
    return shapes_checked == o.shapes_checked && comparisons == o.comparisons &&
           reference_worst_rel_l2 == o.reference_worst_rel_l2 && reference_limit == o.reference_limit &&
           reference_worst_case == o.reference_worst_case && baseline_outputs == o.baseline_outputs &&
           candidates == o.candidates && device == o.device && summary == o.summary;
}

std::string ParityFigures::text() const { return "  " + summary; }

}  // namespace s2tp
