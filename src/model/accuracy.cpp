#include "model/accuracy.h"

#include "support/errors.h"
#include "support/number_format.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

namespace s2tp {

const char *parity_mode_name(ParityMode mode) { return mode == ParityMode::exact ? "exact" : "tolerance"; }

std::optional<ParityMode> parity_mode_from(const std::string &name) {
    if (name == "exact") return ParityMode::exact;
    if (name == "tolerance") return ParityMode::tolerance;
    return std::nullopt;
}

namespace {

std::uint64_t splitmix64(std::uint64_t &state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// NaN is the worst of anything: these pick it over every number.
double lower(double a, double b) { return std::isnan(a) || (!std::isnan(b) && a < b) ? a : b; }
double higher(double a, double b) { return std::isnan(a) || (!std::isnan(b) && a > b) ? a : b; }

}  // namespace

std::vector<std::uint32_t> sample_query_rows(std::int64_t len_q, std::int64_t count, std::uint64_t seed) {
    std::vector<std::uint32_t> rows(static_cast<std::size_t>(len_q));
    std::iota(rows.begin(), rows.end(), 0u);
    if (count >= len_q) return rows;
    // A partial Fisher-Yates shuffle: the first `count` places get distinct rows.
    std::uint64_t state = seed;
    for (std::int64_t i = 0; i < count; ++i) {
        const auto j = i + static_cast<std::int64_t>(splitmix64(state) % static_cast<std::uint64_t>(len_q - i));
        std::swap(rows[static_cast<std::size_t>(i)], rows[static_cast<std::size_t>(j)]);
    }
    rows.resize(static_cast<std::size_t>(count));
    std::sort(rows.begin(), rows.end());
    return rows;
}

Tensor gather_query_rows(const Tensor &output, const AttentionShape &shape, const std::vector<std::uint32_t> &rows) {
    if (output.shape != shape.q_shape())
        fail(ExitCode::internal, "gathering query rows: the output is " + shape_to_string(output.shape) + ", not " +
                                     shape_to_string(shape.q_shape()));
    const auto count = static_cast<std::int64_t>(rows.size());
    Tensor gathered(output.dtype, {shape.batch, shape.heads_q, count, shape.head_dim});
    const std::size_t size = output.element_size();
    std::uint8_t *to = gathered.bytes.data();
    for (std::int64_t b = 0; b < shape.batch; ++b)
        for (std::int64_t h = 0; h < shape.heads_q; ++h)
            for (std::int64_t r = 0; r < count; ++r, to += size * static_cast<std::size_t>(shape.head_dim)) {
                const std::int64_t first = shape.offset(false, b, h, rows[static_cast<std::size_t>(r)], 0);
                std::memcpy(to, output.bytes.data() + static_cast<std::size_t>(first) * size,
                            size * static_cast<std::size_t>(shape.head_dim));
            }
    return gathered;
}

AccuracyMetrics accuracy_metrics(const Tensor &output, const Tensor &reference, const std::vector<std::uint32_t> &rows) {
    if (output.shape != reference.shape || output.shape.size() != 4 ||
        output.shape[2] != static_cast<std::int64_t>(rows.size()))
        fail(ExitCode::internal, "accuracy metrics: output " + shape_to_string(output.shape) + " and reference " +
                                     shape_to_string(reference.shape) + " are not the same [B, H, " +
                                     std::to_string(rows.size()) + ", D] rows");
    AccuracyMetrics m;
    double dot = 0, output_squares = 0, reference_squares = 0, abs_error = 0, abs_reference = 0, error_squares = 0;
    std::int64_t worst = -1;
    for (std::int64_t i = 0; i < output.numel(); ++i) {
        const double o = output.value_at(i), r = reference.value_at(i);
        if (std::isnan(o)) ++m.nan_count;
        else if (std::isinf(o)) ++m.inf_count;
        if (!std::isfinite(r)) ++m.reference_non_finite;
        if (!std::isfinite(o) || !std::isfinite(r)) continue;
        const double error = std::abs(o - r);
        dot += o * r;
        output_squares += o * o;
        reference_squares += r * r;
        abs_error += error;
        abs_reference += std::abs(r);
        error_squares += error * error;
        if (worst < 0 || error > m.max_abs_error) {
            m.max_abs_error = error;
            worst = i;
        }
        ++m.compared;
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    m.cosine = output_squares > 0 && reference_squares > 0 ? dot / std::sqrt(output_squares * reference_squares)
               : output_squares == reference_squares && m.compared > 0 ? 1.0 : nan;
    m.rel_l1 = abs_reference > 0 ? abs_error / abs_reference : (abs_error == 0 && m.compared > 0 ? 0.0 : nan);
    m.rmse = m.compared > 0 ? std::sqrt(error_squares / static_cast<double>(m.compared)) : nan;
    if (m.compared == 0) m.max_abs_error = nan;
    if (worst >= 0) {
        const Shape at = unravel_index(worst, output.shape);
        m.worst_element = "b=" + std::to_string(at[0]) + " h=" + std::to_string(at[1]) +
                          " row=" + std::to_string(rows[static_cast<std::size_t>(at[2])]) + " d=" + std::to_string(at[3]);
    }
    return m;
}

AccuracyMetrics worst_accuracy(const std::vector<AccuracyMetrics> &metrics) {
    if (metrics.empty()) fail(ExitCode::internal, "worst_accuracy of no metrics");
    AccuracyMetrics w = metrics.front();
    for (std::size_t i = 1; i < metrics.size(); ++i) {
        const AccuracyMetrics &m = metrics[i];
        w.cosine = lower(w.cosine, m.cosine);
        w.rel_l1 = higher(w.rel_l1, m.rel_l1);
        w.rmse = higher(w.rmse, m.rmse);
        if (!std::isnan(w.max_abs_error) && (std::isnan(m.max_abs_error) || m.max_abs_error > w.max_abs_error)) {
            w.max_abs_error = m.max_abs_error;
            w.worst_element = m.worst_element;
        }
        w.nan_count = std::max(w.nan_count, m.nan_count);
        w.inf_count = std::max(w.inf_count, m.inf_count);
        w.reference_non_finite = std::max(w.reference_non_finite, m.reference_non_finite);
        w.compared = std::min(w.compared, m.compared);
    }
    return w;
}

namespace {

AccuracyCheck at_least(const std::string &name, double value, double limit) {
    return {name, value >= limit, significant(value, 6) + " >= " + shortest(limit)};  // NaN fails
}
AccuracyCheck at_most(const std::string &name, double value, double limit) {
    return {name, value <= limit, significant(value, 6) + " <= " + shortest(limit)};
}

}  // namespace

std::vector<AccuracyCheck> absolute_accuracy_checks(const AccuracyMetrics &m, const AccuracyLimits &limits) {
    std::vector<AccuracyCheck> checks;
    checks.push_back({"reference finite", m.reference_non_finite == 0,
                      std::to_string(m.reference_non_finite) + " non-finite reference elements"});
    checks.push_back({"no NaN/Inf", m.nan_count == 0 && m.inf_count == 0,
                      std::to_string(m.nan_count) + " NaN, " + std::to_string(m.inf_count) + " Inf"});
    if (limits.min_cosine) checks.push_back(at_least("cosine", m.cosine, *limits.min_cosine));
    if (limits.max_rel_l1) checks.push_back(at_most("rel_l1", m.rel_l1, *limits.max_rel_l1));
    if (limits.max_rmse) checks.push_back(at_most("rmse", m.rmse, *limits.max_rmse));
    if (limits.max_abs_error) checks.push_back(at_most("max_abs_error", m.max_abs_error, *limits.max_abs_error));
    return checks;
}

std::vector<AccuracyCheck> relative_accuracy_checks(const AccuracyMetrics &candidate, const AccuracyMetrics &baseline,
                                                    double factor) {
    const auto relative = [&](const std::string &name, double mine, double base) {
        const double bound = base * factor;
        return AccuracyCheck{name + " vs baseline", mine <= bound,
                             significant(mine, 6) + " <= " + shortest(factor) + " x " + significant(base, 6)};
    };
    return {relative("rel_l1", candidate.rel_l1, baseline.rel_l1), relative("rmse", candidate.rmse, baseline.rmse)};
}

std::string checks_text(const std::vector<AccuracyCheck> &checks) {
    std::string text;
    for (const AccuracyCheck &c : checks)
        text += (text.empty() ? "" : ", ") + std::string(c.passed ? "" : "FAIL ") + c.name + " " + c.figure;
    return text;
}

bool all_passed(const std::vector<AccuracyCheck> &checks) {
    return std::all_of(checks.begin(), checks.end(), [](const AccuracyCheck &c) { return c.passed; });
}

}  // namespace s2tp
