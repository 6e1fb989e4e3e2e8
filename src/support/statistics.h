// Statistics for the time stage: per-variant summaries, paired ratios with a bootstrap confidence
// interval, throttled-round rejection and the stopping rule.
//
// Definitions (sage2tp-harness(7) quotes them, so they are part of the contract):
// - Percentile p (a fraction in [0, 1]) of n sorted values x[0..n-1]: linear interpolation between
//   the closest ranks, h = p * (n - 1), result = x[floor(h)] + (h - floor(h)) * (x[floor(h)+1] -
//   x[floor(h)]). This is numpy's default method ("linear"), so numbers can be checked in numpy.
// - Median: the 0.5 percentile (mean of the two middle values for even n).
// - Standard deviation: sample standard deviation with Bessel's correction (divide by n - 1).
// - MAD: median of |x - median(x)|, unscaled (no 1.4826 normal-consistency factor).
// - IQR: p75 - p25.
// - Ratio interval: percentile bootstrap of the median of per-round ratios candidate/baseline.
//   One generator SplitMix64(seed) serves all resamples in order; each resample takes n draws
//   below(n) as indices into the ratios sorted ascending. The interval ends are the percentiles
//   (as above) of the sorted resample medians. Integer-only draws make a recorded seed replay the
//   same resamples on every machine and standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace s2tp {

// All functions below throw Error(ExitCode::internal) on empty input, NaN or a fraction outside
// [0, 1]: their inputs are measurements sage2tp made itself, so bad input is a bug, not a user error.
double percentile(std::vector<double> values, double fraction);
double percentile_of_sorted(const std::vector<double> &sorted, double fraction);  // ascending input
double median(std::vector<double> values);
double mean(const std::vector<double> &values);
double sample_stdev(const std::vector<double> &values);  // needs at least 2 values
double median_absolute_deviation(std::vector<double> values);
double interquartile_range(std::vector<double> values);

struct Summary {
    std::size_t n = 0;
    double min = 0, p10 = 0, p25 = 0, p50 = 0, p75 = 0, p90 = 0, max = 0;
    double mean = 0, stdev = 0, mad = 0, iqr = 0;
};
Summary summarize(const std::vector<double> &values);  // needs at least 2 values (for stdev)

// candidate[i] / baseline[i] for every round. Both must have the same length and hold positive,
// finite times: a zero or negative time means the timer failed, and its ratio would be meaningless.
std::vector<double> paired_ratios(const std::vector<double> &candidate, const std::vector<double> &baseline);

// SplitMix64 (Steele, Lea, Flood 2014; constants from Vigna's reference C code). Chosen because it is
// tiny, passes BigCrush, and is fully specified by integer arithmetic: std:: engines are portable but
// std:: distributions are not, and the bootstrap must reproduce from its recorded seed anywhere.
class SplitMix64 {
public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next();
    // Uniform in [0, bound) without modulo bias (rejects the short top range). bound must be > 0.
    std::uint64_t below(std::uint64_t bound);

private:
    std::uint64_t state_;
};

struct BootstrapOptions {
    std::uint64_t seed = 0;
    std::size_t resamples = 10000;
    double confidence = 0.95;  // two-sided; the interval ends are its (1 -/+ confidence) / 2 percentiles
};

struct RatioInterval {
    double median = 0;          // median of the observed ratios (the point estimate)
    double lo = 0, hi = 0;      // percentile bootstrap interval of that median
    double half_width_rel = 0;  // (hi - lo) / 2 / median
    std::size_t n = 0;          // ratios (rounds) the interval is based on
    std::size_t resamples = 0;
    std::uint64_t seed = 0;
    double confidence = 0;
    bool contains(double value) const { return lo <= value && value <= hi; }
    // Whether the interval reaches into value +- tolerance (contains(value) when the tolerance is 0).
    bool reaches(double value, double tolerance) const { return lo <= value + tolerance && hi >= value - tolerance; }
};

RatioInterval bootstrap_median_interval(const std::vector<double> &ratios, const BootstrapOptions &options);

// The interval in the one spelling of every table and text (number_format.h's interval_text):
// "1.3441 (95% CI 1.3427 .. 1.3451)"; a confidence of 0 is a level the interval does not record.
std::string interval_text(const RatioInterval &ci);

// Where the median of one more process would fall, when the ratios come in groups that vary among
// themselves (one group per process of `time --repeat`: each process has its own allocations, module
// loads and clock state, and its ratios share whatever that placed on them). A plain bootstrap of
// the pooled ratios treats every round as independent and so counts only the within-process
// variation; an interval for the pooled median shrinks as 1/sqrt(groups) and so says where the
// average over many processes lies, not what the next run will show. This two-level bootstrap draws,
// per resample, one group (the between-process level), then that group's own number of ratios from
// it with replacement (the within-process level), and takes their median: the spread of those
// medians is that of a fresh process's median, both levels included (Davison & Hinkley 1997,
// "Bootstrap Methods and their Application", section 3.8, randomizing at both stages). When the groups
// differ more than their rounds scatter, the width follows the spread between groups; when they do
// not, the within-group scatter of one group's rounds. A verdict read off it holds for the next run,
// which is what a gate needs. The point estimate is the pooled median; n counts every ratio. Draws as
// for bootstrap_median_interval: one SplitMix64(seed), integer draws only. With one group this is
// bootstrap_median_interval of that group.
RatioInterval two_level_bootstrap_median_interval(const std::vector<std::vector<double>> &groups,
                                                  const BootstrapOptions &options);

// One shape of a workload set, for the combined interval: its per-round ratios by process (one group for
// a single run, one per process of `time --repeat`) and its weight (its share of the model's attention
// time; any non-negative scale, 0 leaves it out of the mean).
struct WeightedRatios {
    std::vector<std::vector<double>> groups;
    double weight = 1.0;
};

// The weighted geometric mean of the shapes' median ratios, exp(sum w_i ln m_i / sum w_i), where m_i
// is shape i's pooled median, with a percentile bootstrap interval. Each resample redraws every shape's
// rounds within that shape only (the two-level draw of two_level_bootstrap_median_interval when it has
// several groups, else its own number of ratios with replacement), takes each shape's median and
// combines them with the same weights. The shapes themselves are never resampled: the set is what the
// model runs, fixed, and the interval says how well this set's mean is known, not how another set of
// shapes would fare. Draws: one SplitMix64(seed), shapes in order within each resample, integer draws
// only. n counts every ratio. A one-shape set with one group gives bootstrap_median_interval's median;
// its interval differs only in the draw order. Throws Error(internal) for no shapes, an empty group, a
// negative or non-finite weight, or weights that sum to 0.
RatioInterval weighted_geomean_interval(const std::vector<WeightedRatios> &shapes, const BootstrapOptions &options);

// One interleaved round: one timed sample of each arm and the SM clock measured during that sample.
// Clocks may be in any unit, as long as the reference clock passed with them uses the same one.
struct TimedRound {
    double time_a = 0;
    double clock_a = 0;
    double time_b = 0;
    double clock_b = 0;
};

struct KeptRounds {
    std::vector<double> time_a;
    std::vector<double> time_b;
    std::size_t dropped = 0;  // rounds rejected because either sample ran throttled
};

// Keeps a round only if both samples ran at or above threshold_fraction * reference_clock (nvbench
// uses 0.75 of the device's default clock). Rounds are dropped whole, never one sample alone: keeping
// the other arm's sample would pair it with a different round's thermal state and bias the ratio. A
// sample whose clock is NaN cannot be shown unthrottled and drops its round. A threshold of 0 turns
// the check off (as nvbench's --throttle-threshold 0) and keeps every round.
KeptRounds reject_throttled_rounds(const std::vector<TimedRound> &rounds, double reference_clock,
                                   double threshold_fraction = 0.75);

// Sampling may stop once the ratio interval is narrow enough. min_rounds keeps an early lucky run of
// near-identical samples from ending the measurement: below ~20 rounds the 95% bootstrap interval of
// a median is spanned by only a few order statistics and its width says little.
struct StoppingRule {
    double target_half_width_rel = 0.005;
    std::size_t min_rounds = 20;
};
bool interval_precise_enough(const RatioInterval &interval, const StoppingRule &rule);

}  // namespace s2tp
