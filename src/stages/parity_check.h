// The parity check as functions of typed inputs: the bytes of two outputs compared element by
// element, and the per-comparison results (every shape x seed: the baseline, each candidate, the
// baseline against the float64 reference) folded into ParityFigures and the stage's reasons.
//
// Usage:
//   ParityComparison c{shape, seed};  ... fill from the kernels' outputs ...
//   ParityFold fold = fold_parity({c, ...}, problems.size(), seeds.size(), limit, {"candidate"});
#pragma once

#include "formats/tensor.h"
#include "figures/parity_figures.h"
#include "model/accuracy.h"
#include "model/experiment_manifest.h"
#include "pipeline/stage_pipeline.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace s2tp {

struct ByteDifference {
    std::int64_t differing = 0;
    std::int64_t first = -1;  // flat index of the first differing element; -1 when identical
};

// Element by element over the stored bytes (so -0 differs from +0 and NaN payloads count).
ByteDifference byte_difference(const Tensor &baseline, const Tensor &candidate);

// "0x3c01 (1.0009766)": the stored bits and the value they decode to.
std::string element_text(const Tensor &tensor, std::int64_t index);

// A candidate's differing tensor ("o" or "lse") of one comparison.
struct TensorDifference {
    std::string tensor;
    std::int64_t differing = 0, elements = 0;
    std::string first_index, baseline_value, candidate_value;
};

// `tensor`'s difference when any element's bytes differ; the index and values of the first one.
std::optional<TensorDifference> tensor_difference(const std::string &tensor, const Tensor &baseline,
                                                  const Tensor &candidate);

struct CandidateRun {
    std::int64_t unwritten = 0;  // output elements still the NaN poison
    std::string o_sha256;
    std::vector<TensorDifference> differences;
    std::optional<AccuracyMetrics> accuracy;     // against the float64 GPU reference
    std::optional<AccuracyMetrics> vs_baseline;  // against the baseline's output, on the same rows
};

// One shape and seed: the baseline, every candidate, and the baseline against the reference.
struct ParityComparison {
    std::string shape;
    std::int64_t seed = 0;
    std::int64_t baseline_unwritten = 0;
    std::string baseline_o_sha256;
    std::map<std::string, CandidateRun> candidates;
    // The float64 CPU reference on the dequantized inputs; not taken for [[parity.accuracy_shape]]s.
    bool cpu_reference_checked = true;
    double reference_rel_l2 = 0;  // NaN counts as the worst
    std::int64_t reference_non_finite = 0;
    // The GPU reference on the unquantized inputs, when the run checks accuracy.
    std::int64_t reference_rows = 0;
    std::optional<AccuracyMetrics> baseline_accuracy;
};

// How the run judges each candidate beyond bytes: its parity mode (exact when not named) and the
// tolerance limits, which also hold for the baseline whenever accuracy is checked.
struct AccuracyRules {
    std::map<std::string, ParityMode> modes;
    AccuracyLimits limits;
};
// The experiment's: every candidate's mode ([parity] mode or its own parity_mode) and the limits.
AccuracyRules accuracy_rules(const Experiment &experiment);
// What the accuracy checks consume, for a stage's input fingerprint (parity, time).
void add_accuracy_inputs(Fingerprint &fingerprint, const AccuracyRules &rules, std::int64_t reference_rows);

struct ParityFold {
    ParityFigures figures;  // without device, which the stage adds
    std::vector<std::string> reasons;
    bool passed = false;
};

// Failures quoted one by one in the reasons; the figures list every difference.
constexpr std::size_t kParityReasonsShown = 12;

// `comparisons` in the order they ran (shape by shape, seeds within a shape); `candidates` names
// every candidate, each of which every comparison holds.
// A tolerance candidate's byte differences are figures, not failures; its accuracy per shape (the worst
// over the seeds) must meet the absolute limits and the baseline factor. An exact candidate must match
// bytes and meet the absolute limits, as the baseline must.
ParityFold fold_parity(const std::vector<ParityComparison> &comparisons, std::size_t shapes, std::size_t seeds,
                       double reference_limit, const std::vector<std::string> &candidates,
                       const AccuracyRules &accuracy = {});

}  // namespace s2tp
