// The parity checkpoint's figures as a struct (sage2tp-checkpoint(5), "Figures of parity"): what was
// compared and the baseline against the float64 reference once, then per candidate (keyed by its
// name) the shapes whose bytes differ from the baseline's, every difference and its output digests.
#pragma once

#include "figures/figure_fields.h"
#include "figures/gpu_figures.h"
#include "model/accuracy.h"

#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// One differing tensor of one comparison.
struct ParityDifference {
    std::string shape;
    std::optional<std::int64_t> seed;
    std::string tensor;  // "o" or "lse"
    std::optional<std::int64_t> differing_elements, elements;
    std::string first_index;                      // the multi-index, as text
    std::string baseline_value, candidate_value;  // "0x3c01 (1.0009766)"
    static const std::vector<figure_fields::Field<ParityDifference>> &fields();
    bool operator==(const ParityDifference &o) const;
};

// One variant's O digest for one comparison.
struct ParityOutput {
    std::string shape;
    std::optional<std::int64_t> seed;
    std::string sha256;
    static const std::vector<figure_fields::Field<ParityOutput>> &fields();
    bool operator==(const ParityOutput &o) const { return shape == o.shape && seed == o.seed && sha256 == o.sha256; }
};

// One variant's accuracy on one shape and seed, against the float64 GPU reference (or, as a candidate's
// vs_baseline, against the baseline's output), on the reference's sampled rows (model/accuracy.h).
struct AccuracyFigure {
    std::string shape;
    std::optional<std::int64_t> seed, rows;  // rows: query rows compared per (batch, head)
    std::optional<double> cosine, rel_l1, rmse, max_abs_error;
    std::string worst_element;
    std::optional<std::int64_t> nan_count, inf_count, reference_non_finite;
    static AccuracyFigure of(const std::string &shape, std::int64_t seed, std::int64_t rows, const AccuracyMetrics &m);
    static const std::vector<figure_fields::Field<AccuracyFigure>> &fields();
    toml::table to_toml() const;
    static AccuracyFigure from_toml(const toml::table &table);
    bool operator==(const AccuracyFigure &o) const;
};

// One variant's tolerance conditions on one shape (the worst over its seeds), as the gate shows them.
struct AccuracyShapeCheck {
    std::string shape;
    std::optional<bool> passed;
    std::string conditions;  // checks_text: every condition with its numbers
    static const std::vector<figure_fields::Field<AccuracyShapeCheck>> &fields();
    bool operator==(const AccuracyShapeCheck &o) const {
        return shape == o.shape && passed == o.passed && conditions == o.conditions;
    }
};

struct CandidateParity {
    std::optional<std::int64_t> shapes_differing;
    std::vector<ParityDifference> differences;
    std::vector<ParityOutput> outputs;
    std::vector<AccuracyFigure> accuracy, vs_baseline;
    std::vector<AccuracyShapeCheck> checks;
    std::string mode;  // "exact" or "tolerance"
    static const std::vector<figure_fields::Field<CandidateParity>> &fields();
    bool operator==(const CandidateParity &o) const {
        return mode == o.mode && shapes_differing == o.shapes_differing && differences == o.differences &&
               outputs == o.outputs && accuracy == o.accuracy && vs_baseline == o.vs_baseline && checks == o.checks;
    }
};

struct ParityFigures {
    std::optional<std::int64_t> shapes_checked, comparisons;
    std::optional<double> reference_worst_rel_l2, reference_limit;
    std::string reference_worst_case;
    std::vector<ParityOutput> baseline_outputs;        // [figures.baseline] outputs
    std::vector<AccuracyFigure> baseline_accuracy;     // [figures.baseline] accuracy
    std::vector<AccuracyShapeCheck> baseline_checks;   // [figures.baseline] checks
    std::optional<std::int64_t> reference_rows;
    std::map<std::string, CandidateParity> candidates;  // [figures.candidates.<name>]
    std::string device, summary;    // device: the first GPU's summary line
    std::vector<GpuFigures> gpus;  // every GPU of --devices, in its order; its checks are comparisons

    static const std::vector<figure_fields::Field<ParityFigures>> &fields();
    toml::table to_toml() const;
    static ParityFigures from_toml(const toml::table &figures);
    bool operator==(const ParityFigures &o) const;

    std::string text() const;  // what `sage2tp parity` prints: the summary, and the per-GPU table (shows_gpu_table)
};

}  // namespace s2tp
