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

const std::vector<Field<AccuracyFigure>> &AccuracyFigure::fields() {
    using A = AccuracyFigure;
    static const std::vector<Field<A>> table{field("shape", &A::shape, "shape", Presence::always),
                                             field("seed", &A::seed, "seed"),
                                             field("rows", &A::rows, "rows per batch and head"),
                                             field("cosine", &A::cosine, "similarity"),
                                             field("rel_l1", &A::rel_l1, "relative error"),
                                             field("rmse", &A::rmse, "error"),
                                             field("max_abs_error", &A::max_abs_error, "error"),
                                             field("worst_element", &A::worst_element, "index"),
                                             field("nan_count", &A::nan_count, "elements"),
                                             field("inf_count", &A::inf_count, "elements"),
                                             field("reference_non_finite", &A::reference_non_finite, "elements")};
    return table;
}

toml::table AccuracyFigure::to_toml() const { return write_fields(fields(), *this); }

AccuracyFigure AccuracyFigure::from_toml(const toml::table &a) { return read_fields(fields(), a); }

bool AccuracyFigure::operator==(const AccuracyFigure &o) const {
    return shape == o.shape && seed == o.seed && rows == o.rows && same(cosine, o.cosine) && same(rel_l1, o.rel_l1) &&
           same(rmse, o.rmse) && same(max_abs_error, o.max_abs_error) && worst_element == o.worst_element &&
           nan_count == o.nan_count && inf_count == o.inf_count && reference_non_finite == o.reference_non_finite;
}

const std::vector<Field<ParityDifference>> &ParityDifference::fields() {
    using D = ParityDifference;
    static const std::vector<Field<D>> table{field("shape", &D::shape, "shape", Presence::always),
                                             field("seed", &D::seed, "seed"),
                                             field("tensor", &D::tensor, "o | lse", Presence::always),
                                             field("differing_elements", &D::differing_elements, "elements"),
                                             field("elements", &D::elements, "elements"),
                                             field("first_index", &D::first_index, "index", Presence::always),
                                             field("baseline_value", &D::baseline_value, "bits", Presence::always),
                                             field("candidate_value", &D::candidate_value, "bits", Presence::always)};
    return table;
}

const std::vector<Field<ParityOutput>> &ParityOutput::fields() {
    using O = ParityOutput;
    static const std::vector<Field<O>> table{field("shape", &O::shape, "shape", Presence::always),
                                             field("seed", &O::seed, "seed"),
                                             field("sha256", &O::sha256, "digest", Presence::always)};
    return table;
}

const std::vector<Field<AccuracyShapeCheck>> &AccuracyShapeCheck::fields() {
    using C = AccuracyShapeCheck;
    static const std::vector<Field<C>> table{field("shape", &C::shape, "shape", Presence::always),
                                             field("passed", &C::passed, "outcome"),
                                             field("conditions", &C::conditions, "conditions", Presence::always)};
    return table;
}

const std::vector<Field<CandidateParity>> &CandidateParity::fields() {
    using C = CandidateParity;
    static const std::vector<Field<C>> table{
        field("mode", &C::mode, "exact | tolerance"),
        field("shapes_differing", &C::shapes_differing, "shapes"),
        field("differences", &C::differences, "one per differing tensor", Presence::always),
        field("outputs", &C::outputs, "digests", Presence::always),
        field("accuracy", &C::accuracy, "against the reference"),
        field("vs_baseline", &C::vs_baseline, "against the baseline"),
        field("checks", &C::checks, "per shape")};
    return table;
}

const std::vector<Field<ParityFigures>> &ParityFigures::fields() {
    using P = ParityFigures;
    // [baseline] exists when the baseline has outputs or accuracy figures; it then always lists its outputs.
    const auto has_baseline = [](const P &p) { return !p.baseline_outputs.empty() || !p.baseline_accuracy.empty(); };
    static const std::vector<Field<P>> table{
        field("shapes_checked", &P::shapes_checked, "shapes"),
        field("comparisons", &P::comparisons, "shapes x seeds"),
        field("reference_worst_rel_l2", &P::reference_worst_rel_l2, "relative error"),
        field("reference_worst_case", &P::reference_worst_case, "shape and seed"),
        field("reference_limit", &P::reference_limit, "relative error"),
        field("reference_rows", &P::reference_rows, "rows"),
        only_when<P>(field("baseline.outputs", &P::baseline_outputs, "digests", Presence::always), has_baseline),
        only_when<P>(field("baseline.accuracy", &P::baseline_accuracy, "against the reference"), has_baseline),
        only_when<P>(field("baseline.checks", &P::baseline_checks, "per shape"), has_baseline),
        named_map("candidates", &P::candidates, "by name"),
        field("device", &P::device, "GPU"),
        field("gpus", &P::gpus, "one per GPU"),
        field("summary", &P::summary, "line")};
    return table;
}

toml::table ParityFigures::to_toml() const { return write_fields(fields(), *this); }

ParityFigures ParityFigures::from_toml(const toml::table &t) { return read_fields(fields(), t); }

bool ParityFigures::operator==(const ParityFigures &o) const {
    return shapes_checked == o.shapes_checked && comparisons == o.comparisons &&
           reference_worst_rel_l2 == o.reference_worst_rel_l2 && reference_limit == o.reference_limit &&
           reference_worst_case == o.reference_worst_case && baseline_outputs == o.baseline_outputs &&
           baseline_accuracy == o.baseline_accuracy && baseline_checks == o.baseline_checks &&
           reference_rows == o.reference_rows &&
           candidates == o.candidates && device == o.device && gpus == o.gpus && summary == o.summary;
}

std::string ParityFigures::text() const { return with_gpu_table("  " + summary, gpus); }

}  // namespace s2tp
