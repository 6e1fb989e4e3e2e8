#include "support/statistics.h"

#include "support/errors.h"
#include "support/number_format.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace s2tp {

namespace {

void require_samples(const std::vector<double> &values, std::size_t at_least, const char *what) {
    if (values.size() < at_least)
        fail(ExitCode::internal, std::string(what) + " needs at least " + std::to_string(at_least) +
                                     " value(s), got " + std::to_string(values.size()));
    for (std::size_t i = 0; i < values.size(); ++i)
        if (std::isnan(values[i]))
            fail(ExitCode::internal, std::string(what) + ": value " + std::to_string(i) + " is NaN");
}

void require_fraction(double fraction, const char *what) {
    if (!(fraction >= 0.0 && fraction <= 1.0))
        fail(ExitCode::internal, std::string(what) + ": fraction " + std::to_string(fraction) +
                                     " is outside [0, 1]");
}

// Median of values[0..n) in place; for even n the mean of the two middle order statistics.
double median_in_place(std::vector<double> &values) {
    const std::size_t n = values.size();
    const auto middle = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
    std::nth_element(values.begin(), middle, values.end());
    const double upper = *middle;
    if (n % 2 == 1) return upper;
    const double lower = *std::max_element(values.begin(), middle);
    return (lower + upper) / 2.0;
}

}  // namespace

double percentile_of_sorted(const std::vector<double> &sorted, double fraction) {
    require_samples(sorted, 1, "percentile");
    require_fraction(fraction, "percentile");
    const double h = fraction * static_cast<double>(sorted.size() - 1);
    const double floor_h = std::floor(h);
    const std::size_t below = static_cast<std::size_t>(floor_h);
    if (below + 1 >= sorted.size()) return sorted.back();
    const double a = sorted[below];
    const double b = sorted[below + 1];
    const double t = h - floor_h;
    // numpy interpolates from the nearer end, so a percentile never leaves [a, b] through rounding.
    return t < 0.5 ? a + (b - a) * t : b - (b - a) * (1.0 - t);
}

double percentile(std::vector<double> values, double fraction) {
    std::sort(values.begin(), values.end());
    return percentile_of_sorted(values, fraction);
}

double median(std::vector<double> values) {
    require_samples(values, 1, "median");
    return median_in_place(values);
}

double mean(const std::vector<double> &values) {
    require_samples(values, 1, "mean");
    double sum = 0.0;
    for (double v : values) sum += v;
    return sum / static_cast<double>(values.size());
}

double sample_stdev(const std::vector<double> &values) {
    require_samples(values, 2, "sample standard deviation");
    // Two passes: subtracting the mean first avoids the cancellation of the sum-of-squares formula,
    // which matters here because timings sit far from zero relative to their spread.
    const double m = mean(values);
    double squares = 0.0;
    for (double v : values) squares += (v - m) * (v - m);
    return std::sqrt(squares / static_cast<double>(values.size() - 1));
}

double median_absolute_deviation(std::vector<double> values) {
    require_samples(values, 1, "MAD");
    const double center = median_in_place(values);
    for (double &v : values) v = std::fabs(v - center);
    return median_in_place(values);
}

double interquartile_range(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return percentile_of_sorted(values, 0.75) - percentile_of_sorted(values, 0.25);
}

Summary summarize(const std::vector<double> &values) {
    require_samples(values, 2, "summary");
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    Summary s;
    s.n = sorted.size();
    s.min = sorted.front();
    s.max = sorted.back();
    s.p10 = percentile_of_sorted(sorted, 0.10);
    s.p25 = percentile_of_sorted(sorted, 0.25);
    s.p50 = percentile_of_sorted(sorted, 0.50);
    s.p75 = percentile_of_sorted(sorted, 0.75);
    s.p90 = percentile_of_sorted(sorted, 0.90);
    s.iqr = s.p75 - s.p25;
    s.mean = mean(sorted);
    s.stdev = sample_stdev(sorted);
    s.mad = median_absolute_deviation(sorted);
    return s;
}

std::vector<double> paired_ratios(const std::vector<double> &candidate, const std::vector<double> &baseline) {
    if (candidate.size() != baseline.size())
        fail(ExitCode::internal, "paired ratios: " + std::to_string(candidate.size()) + " candidate times but " +
                                     std::to_string(baseline.size()) + " baseline times");
    std::vector<double> ratios(candidate.size());
    for (std::size_t i = 0; i < candidate.size(); ++i) {
        const bool usable = std::isfinite(candidate[i]) && std::isfinite(baseline[i]) && candidate[i] > 0.0 &&
                            baseline[i] > 0.0;
        if (!usable)
            fail(ExitCode::internal, "paired ratios: round " + std::to_string(i) + " has candidate time " +
                                         std::to_string(candidate[i]) + " and baseline time " +
                                         std::to_string(baseline[i]) + "; both must be positive and finite");
        ratios[i] = candidate[i] / baseline[i];
    }
    return ratios;
}

std::uint64_t SplitMix64::next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::uint64_t SplitMix64::below(std::uint64_t bound) {
    if (bound == 0) fail(ExitCode::internal, "SplitMix64::below: bound must be positive");
    // 2^64 mod bound values at the bottom of the range would make small results more likely.
    const std::uint64_t reject_under = (0 - bound) % bound;
    for (;;) {
        const std::uint64_t r = next();
        if (r >= reject_under) return r % bound;
    }
}

namespace {

// The percentile interval of the resampled medians around `point`, over `n` ratios.
RatioInterval percentile_interval(double point, std::vector<double> medians, std::size_t n,
                                  const BootstrapOptions &options) {
    std::sort(medians.begin(), medians.end());
    const double tail = (1.0 - options.confidence) / 2.0;
    RatioInterval interval;
    interval.median = point;
    interval.lo = percentile_of_sorted(medians, tail);
    interval.hi = percentile_of_sorted(medians, 1.0 - tail);
    interval.half_width_rel = (interval.hi - interval.lo) / 2.0 / interval.median;
    interval.n = n;
    interval.resamples = options.resamples;
    interval.seed = options.seed;
    interval.confidence = options.confidence;
    return interval;
}

}  // namespace

RatioInterval bootstrap_median_interval(const std::vector<double> &ratios, const BootstrapOptions &options) {
    require_samples(ratios, 1, "bootstrap");
    if (options.resamples < 2)
        fail(ExitCode::internal, "bootstrap needs at least 2 resamples, got " + std::to_string(options.resamples));
    if (!(options.confidence > 0.0 && options.confidence < 1.0))
        fail(ExitCode::internal, "bootstrap confidence " + std::to_string(options.confidence) +
                                     " is outside (0, 1)");

    // A resample is a multiset of the observed values, so its median is found by counting how often
    // each sorted position was drawn and walking to the middle ranks: O(n) per resample, no copying
    // or partial sorting, and the same draws give the same medians as sorting each resample would.
    std::vector<double> sorted = ratios;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    const std::size_t lower_rank = (n - 1) / 2;  // 0-based ranks of the middle order statistics;
    const std::size_t upper_rank = n / 2;        // equal when n is odd
    SplitMix64 rng(options.seed);
    std::vector<std::size_t> draws(n);
    std::vector<double> medians(options.resamples);
    for (double &m : medians) {
        std::fill(draws.begin(), draws.end(), 0);
        for (std::size_t i = 0; i < n; ++i) ++draws[rng.below(n)];
        std::size_t position = 0;
        std::size_t drawn_so_far = draws[0];
        while (drawn_so_far <= lower_rank) drawn_so_far += draws[++position];
        const double lower = sorted[position];
        while (drawn_so_far <= upper_rank) drawn_so_far += draws[++position];
        m = (lower + sorted[position]) / 2.0;
    }
    return percentile_interval(median(ratios), std::move(medians), n, options);
}

KeptRounds reject_throttled_rounds(const std::vector<TimedRound> &rounds, double reference_clock,
                                   double threshold_fraction) {
    if (!(reference_clock > 0.0) || !std::isfinite(reference_clock))
        fail(ExitCode::internal, "throttle rejection: reference clock " + std::to_string(reference_clock) +
                                     " must be positive and finite");
    require_fraction(threshold_fraction, "throttle rejection");
    const bool check_enabled = threshold_fraction > 0.0;
    const double minimum_clock = threshold_fraction * reference_clock;
    // Written as !(clock >= minimum) so that a NaN clock counts as throttled.
    const auto throttled = [&](double clock) { return check_enabled && !(clock >= minimum_clock); };

    KeptRounds kept;
    for (const TimedRound &round : rounds) {
        if (throttled(round.clock_a) || throttled(round.clock_b)) {
            ++kept.dropped;
            continue;
        }
        kept.time_a.push_back(round.time_a);
        kept.time_b.push_back(round.time_b);
    }
    return kept;
}

RatioInterval two_level_bootstrap_median_interval(const std::vector<std::vector<double>> &groups,
                                                  const BootstrapOptions &options) {
    if (groups.empty()) fail(ExitCode::internal, "two-level bootstrap needs at least one group");
    if (groups.size() == 1) return bootstrap_median_interval(groups.front(), options);
    std::vector<double> pooled;
    for (const std::vector<double> &group : groups) {
        require_samples(group, 1, "two-level bootstrap");
        pooled.insert(pooled.end(), group.begin(), group.end());
    }
    if (options.resamples < 2)
        fail(ExitCode::internal, "bootstrap needs at least 2 resamples, got " + std::to_string(options.resamples));
    if (!(options.confidence > 0.0 && options.confidence < 1.0))
        fail(ExitCode::internal, "bootstrap confidence " + std::to_string(options.confidence) + " is outside (0, 1)");

    SplitMix64 rng(options.seed);
    std::vector<double> resample;
    std::vector<double> medians(options.resamples);
    for (double &m : medians) {
        resample.clear();
        const std::vector<double> &chosen = groups[rng.below(groups.size())];
        for (std::size_t i = 0; i < chosen.size(); ++i) resample.push_back(chosen[rng.below(chosen.size())]);
        m = median(resample);
    }
    return percentile_interval(median(pooled), std::move(medians), pooled.size(), options);
}

RatioInterval weighted_geomean_interval(const std::vector<WeightedRatios> &shapes, const BootstrapOptions &options) {
    if (shapes.empty()) fail(ExitCode::internal, "geometric mean: no shapes");
    if (options.resamples < 2)
        fail(ExitCode::internal, "bootstrap needs at least 2 resamples, got " + std::to_string(options.resamples));
    if (!(options.confidence > 0.0 && options.confidence < 1.0))
        fail(ExitCode::internal, "bootstrap confidence " + std::to_string(options.confidence) + " is outside (0, 1)");
    double total_weight = 0;
    std::size_t n = 0;
    std::vector<double> pooled_medians;
    for (const WeightedRatios &shape : shapes) {
        if (!(std::isfinite(shape.weight) && shape.weight >= 0.0))
            fail(ExitCode::internal, "geometric mean: weight " + std::to_string(shape.weight) + " is not a finite number >= 0");
        if (shape.groups.empty()) fail(ExitCode::internal, "geometric mean: a shape without ratios");
        std::vector<double> pooled;
        for (const std::vector<double> &group : shape.groups) {
            require_samples(group, 1, "geometric mean");
            for (double ratio : group)
                if (!(std::isfinite(ratio) && ratio > 0.0))
                    fail(ExitCode::internal, "geometric mean: ratio " + std::to_string(ratio) + " is not positive and finite");
            pooled.insert(pooled.end(), group.begin(), group.end());
        }
        n += pooled.size();
        total_weight += shape.weight;
        pooled_medians.push_back(median(pooled));
    }
    if (!(total_weight > 0.0)) fail(ExitCode::internal, "geometric mean: the weights sum to 0");
    const auto combined = [&](const std::vector<double> &medians) {
        double log_sum = 0;
        for (std::size_t s = 0; s < shapes.size(); ++s)
            if (shapes[s].weight > 0.0) log_sum += shapes[s].weight * std::log(medians[s]);
        return std::exp(log_sum / total_weight);
    };

    SplitMix64 rng(options.seed);
    std::vector<double> resample, shape_medians(shapes.size()), means(options.resamples);
    for (double &m : means) {
        for (std::size_t s = 0; s < shapes.size(); ++s) {
            const std::vector<std::vector<double>> &groups = shapes[s].groups;
            const std::vector<double> &chosen = groups.size() == 1 ? groups.front() : groups[rng.below(groups.size())];
            resample.clear();
            for (std::size_t i = 0; i < chosen.size(); ++i) resample.push_back(chosen[rng.below(chosen.size())]);
            shape_medians[s] = median(resample);
        }
        m = combined(shape_medians);
    }
    return percentile_interval(combined(pooled_medians), std::move(means), n, options);
}

bool interval_precise_enough(const RatioInterval &interval, const StoppingRule &rule) {
    return interval.n >= rule.min_rounds && interval.half_width_rel < rule.target_half_width_rel;
}

std::string interval_text(const RatioInterval &ci) {
    const std::optional<double> level = ci.confidence > 0 ? std::optional<double>(ci.confidence) : std::nullopt;
    return interval_text(ci.median, ci.lo, ci.hi, level);
}

}  // namespace s2tp
