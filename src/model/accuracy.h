// Accuracy of an attention output against a float64 reference, the figures SageAttention's papers report
// (cosine similarity, relative L1, RMSE) plus the largest absolute error and where it is, NaN and Inf
// counts; the seeded sample of query rows the reference is computed on; and the tolerance conditions
// (absolute limits, and a candidate's error relative to the baseline's) as pure functions.
//
// Usage:
//   std::vector<std::uint32_t> rows = s2tp::sample_query_rows(len_q, 256, seed);
//   s2tp::AccuracyMetrics m = s2tp::accuracy_metrics(output_rows, reference_rows, rows);  // [B, H, R, D]
//   for (const s2tp::AccuracyCheck &c : s2tp::absolute_accuracy_checks(m, limits)) ... c.passed, c.figure
#pragma once

#include "formats/tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// [parity] mode: "exact" (every output byte equal to the baseline's) or "tolerance" (the accuracy
// conditions below).
enum class ParityMode { exact, tolerance };
const char *parity_mode_name(ParityMode mode);
std::optional<ParityMode> parity_mode_from(const std::string &name);

// The [parity] tolerance limits (sage2tp-experiment(5)); an unset limit is not checked. Finite
// reference and outputs without NaN or Inf are always required.
struct AccuracyLimits {
    std::optional<double> min_cosine, max_rel_l1, max_rmse, max_abs_error;
    double baseline_factor = 1.10;  // a candidate's rel-L1 and RMSE at most this times the baseline's
    bool any() const { return min_cosine || max_rel_l1 || max_rmse || max_abs_error; }
};

// Query rows sampled per (batch, head) for the reference when len_q exceeds the count.
inline constexpr std::int64_t default_reference_rows = 256;

// `count` distinct rows of [0, len_q), ascending, drawn by a SplitMix64 stream from `seed` (the same on
// every platform); every row when count >= len_q.
std::vector<std::uint32_t> sample_query_rows(std::int64_t len_q, std::int64_t count, std::uint64_t seed);

// The rows `rows` of every (batch, q head) of an output shaped shape.q_shape() in the shape's layout, as
// [B, Hq, R, D] in the output's dtype, bits unchanged (gpu/gpu_reference.h does the same on the GPU).
Tensor gather_query_rows(const Tensor &output, const AttentionShape &shape, const std::vector<std::uint32_t> &rows);

struct AccuracyMetrics {
    double cosine = 0, rel_l1 = 0, rmse = 0, max_abs_error = 0;
    std::int64_t nan_count = 0, inf_count = 0;  // in the output
    std::int64_t reference_non_finite = 0;      // in the reference: a failed check, never a pass
    std::int64_t compared = 0;                  // elements where both are finite (the sums' terms)
    std::string worst_element;                  // "b=0 h=3 row=1234 d=17": the largest |output - reference|
};

// `output` and `reference` hold the same [B, H, R, D] rows (any floating dtypes), `rows` the query row of
// each r. Sums run over the elements where both are finite, in one order, in double.
// cosine = <o, r> / (|o| |r|); rel_l1 = sum |o - r| / sum |r|; rmse = sqrt(mean (o - r)^2).
// Error(internal) when the shapes disagree.
AccuracyMetrics accuracy_metrics(const Tensor &output, const Tensor &reference, const std::vector<std::uint32_t> &rows);

// The worst of several (seeds of one shape): lowest cosine, highest rel-L1, RMSE and max error (with its
// element), the largest counts. NaN counts as the worst.
AccuracyMetrics worst_accuracy(const std::vector<AccuracyMetrics> &metrics);

struct AccuracyCheck {
    std::string name;    // "cosine", "rel_l1", "finite", "rel_l1 vs baseline", ...
    bool passed = false;
    std::string figure;  // "0.999512 >= 0.999"
};

// The reference is finite, the output has no NaN or Inf, and every limit set in `limits` holds.
std::vector<AccuracyCheck> absolute_accuracy_checks(const AccuracyMetrics &metrics, const AccuracyLimits &limits);
// The candidate's rel-L1 and RMSE against the reference are at most `factor` times the baseline's.
std::vector<AccuracyCheck> relative_accuracy_checks(const AccuracyMetrics &candidate, const AccuracyMetrics &baseline,
                                                    double factor);
// "cosine 0.999512 >= 0.999, rel_l1 ..., " the checks in one line; failed ones marked "FAIL".
std::string checks_text(const std::vector<AccuracyCheck> &checks);
bool all_passed(const std::vector<AccuracyCheck> &checks);

}  // namespace s2tp
