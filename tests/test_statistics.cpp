#include "support/statistics.h"

#include "support/errors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace s2tp::unit_statistics {
namespace {

const double pi = std::acos(-1.0);
const std::vector<double> one_to_ten = {7, 3, 10, 1, 5, 9, 2, 8, 6, 4};  // shuffled on purpose

// Expected values are numpy.percentile(x, q) (method "linear"), worked by hand:
// h = q/100 * (n - 1); x[floor h] + frac(h) * (x[floor h + 1] - x[floor h]).
TEST(Percentile, MatchesNumpyLinearOnOneToTen) {
    EXPECT_DOUBLE_EQ(percentile(one_to_ten, 0.10), 1.9);   // h = 0.9
    EXPECT_DOUBLE_EQ(percentile(one_to_ten, 0.25), 3.25);  // h = 2.25
    EXPECT_DOUBLE_EQ(percentile(one_to_ten, 0.50), 5.5);   // h = 4.5
    EXPECT_DOUBLE_EQ(percentile(one_to_ten, 0.75), 7.75);  // h = 6.75
    EXPECT_DOUBLE_EQ(percentile(one_to_ten, 0.90), 9.1);   // h = 8.1
    EXPECT_DOUBLE_EQ(percentile(one_to_ten, 0.0), 1.0);
    EXPECT_DOUBLE_EQ(percentile(one_to_ten, 1.0), 10.0);
}

TEST(Percentile, MatchesNumpyLinearOnUnevenGaps) {
    const std::vector<double> x = {15, 20, 35, 40, 50};
    EXPECT_DOUBLE_EQ(percentile(x, 0.10), 17.0);  // h = 0.4: 15 + 0.4 * 5
    EXPECT_DOUBLE_EQ(percentile(x, 0.40), 29.0);  // h = 1.6: 20 + 0.6 * 15
    EXPECT_DOUBLE_EQ(percentile(x, 0.90), 46.0);  // h = 3.6: 40 + 0.6 * 10
    EXPECT_DOUBLE_EQ(percentile({42.0}, 0.9), 42.0);
}

TEST(Percentile, RejectsEmptyNanAndBadFraction) {
    EXPECT_THROW(percentile({}, 0.5), Error);
    EXPECT_THROW(percentile({1.0, std::nan("")}, 0.5), Error);
    EXPECT_THROW(percentile({1.0, 2.0}, 1.5), Error);
    EXPECT_THROW(percentile({1.0, 2.0}, -0.1), Error);
    try {
        percentile({}, 0.5);
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::internal);
    }
}

TEST(Median, OddAndEvenCounts) {
    EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
    EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
    EXPECT_DOUBLE_EQ(median(one_to_ten), 5.5);
}

TEST(Spread, SampleStdevUsesBessel) {
    // Sum of squared deviations from the mean 5 is 32: population stdev 2, sample stdev sqrt(32/7).
    const std::vector<double> x = {2, 4, 4, 4, 5, 5, 7, 9};
    EXPECT_DOUBLE_EQ(mean(x), 5.0);
    EXPECT_DOUBLE_EQ(sample_stdev(x), std::sqrt(32.0 / 7.0));
    EXPECT_THROW(sample_stdev({1.0}), Error);
}

TEST(Spread, StdevSurvivesLargeOffset) {
    // Timings sit far from zero; a one-pass sum-of-squares formula loses these digits.
    const std::vector<double> x = {1e9 + 1, 1e9 + 2, 1e9 + 3};
    EXPECT_DOUBLE_EQ(sample_stdev(x), 1.0);
}

TEST(Spread, MadIsUnscaledAndRobust) {
    // median 3, |x - 3| = 2 1 0 1 97, median of those = 1.
    EXPECT_DOUBLE_EQ(median_absolute_deviation({1, 2, 3, 4, 100}), 1.0);
    EXPECT_DOUBLE_EQ(interquartile_range(one_to_ten), 4.5);
}

TEST(Summary, CollectsEveryFigure) {
    const Summary s = summarize(one_to_ten);
    EXPECT_EQ(s.n, 10u);
    EXPECT_DOUBLE_EQ(s.min, 1.0);
    EXPECT_DOUBLE_EQ(s.max, 10.0);
    EXPECT_DOUBLE_EQ(s.p10, 1.9);
    EXPECT_DOUBLE_EQ(s.p25, 3.25);
    EXPECT_DOUBLE_EQ(s.p50, 5.5);
    EXPECT_DOUBLE_EQ(s.p75, 7.75);
    EXPECT_DOUBLE_EQ(s.p90, 9.1);
    EXPECT_DOUBLE_EQ(s.mean, 5.5);
    EXPECT_DOUBLE_EQ(s.stdev, std::sqrt(82.5 / 9.0));  // sum of (i - 5.5)^2 for i = 1..10 is 82.5
    EXPECT_DOUBLE_EQ(s.mad, 2.5);                      // |x - 5.5| = 0.5 0.5 1.5 1.5 ... 4.5 4.5
    EXPECT_DOUBLE_EQ(s.iqr, 4.5);
    EXPECT_THROW(summarize({1.0}), Error);
}

TEST(PairedRatios, DividesCandidateByBaselinePerRound) {
    const std::vector<double> r = paired_ratios({2.0, 3.0, 9.0}, {4.0, 3.0, 3.0});
    ASSERT_EQ(r.size(), 3u);
    EXPECT_DOUBLE_EQ(r[0], 0.5);
    EXPECT_DOUBLE_EQ(r[1], 1.0);
    EXPECT_DOUBLE_EQ(r[2], 3.0);
}

TEST(PairedRatios, RejectsMismatchedOrUnusableTimes) {
    EXPECT_THROW(paired_ratios({1.0, 2.0}, {1.0}), Error);
    EXPECT_THROW(paired_ratios({1.0}, {0.0}), Error);
    EXPECT_THROW(paired_ratios({-1.0}, {1.0}), Error);
    EXPECT_THROW(paired_ratios({std::numeric_limits<double>::infinity()}, {1.0}), Error);
}

TEST(SplitMix64, MatchesReferenceVectors) {
    // Outputs of Vigna's splitmix64.c for seeds 0 and 1234567: the recorded seed must replay anywhere.
    SplitMix64 zero(0);
    EXPECT_EQ(zero.next(), 0xe220a8397b1dcdafULL);
    EXPECT_EQ(zero.next(), 0x6e789e6aa1b965f4ULL);
    SplitMix64 seeded(1234567);
    EXPECT_EQ(seeded.next(), 6457827717110365317ULL);
    EXPECT_EQ(seeded.next(), 3203168211198807973ULL);
    EXPECT_EQ(seeded.next(), 9817491932198370423ULL);
}

TEST(SplitMix64, BelowStaysInRangeAndCoversIt) {
    SplitMix64 rng(7);
    std::vector<int> hits(6, 0);
    for (int i = 0; i < 6000; ++i) {
        const std::uint64_t v = rng.below(6);
        ASSERT_LT(v, 6u);
        ++hits[v];
    }
    for (int h : hits) {
        EXPECT_GT(h, 850);  // 1000 expected; a stuck or biased generator falls far outside
        EXPECT_LT(h, 1150);
    }
    EXPECT_THROW(rng.below(0), Error);
}

// Lognormal(mu, sigma) samples from our own generator (Box-Muller), so the test data is the same on
// every machine. Its true median is exp(mu).
std::vector<double> lognormal_sample(std::uint64_t seed, std::size_t n, double mu, double sigma) {
    SplitMix64 rng(seed);
    const auto uniform_open = [&rng] { return (static_cast<double>(rng.next() >> 11) + 0.5) * 0x1.0p-53; };
    std::vector<double> x(n);
    for (double &v : x) {
        const double z = std::sqrt(-2.0 * std::log(uniform_open())) * std::cos(2.0 * pi * uniform_open());
        v = std::exp(mu + sigma * z);
    }
    return x;
}

TEST(Bootstrap, IntervalContainsTrueMedianWithExpectedWidth) {
    const std::size_t n = 2000;
    const double sigma = 0.1;
    const RatioInterval ci = bootstrap_median_interval(lognormal_sample(11, n, 0.0, sigma), {42, 10000, 0.95});
    EXPECT_TRUE(ci.contains(1.0)) << "[" << ci.lo << ", " << ci.hi << "]";
    EXPECT_LE(ci.lo, ci.median);
    EXPECT_GE(ci.hi, ci.median);
    // Asymptotic standard error of a median: 1 / (2 f(m) sqrt(n)), with lognormal density at its
    // median f(1) = 1 / (sigma sqrt(2 pi)). The 95% half-width should be near 1.96 times that.
    const double expected_half_width = 1.96 * sigma * std::sqrt(2.0 * pi) / 2.0 / std::sqrt(double(n));
    EXPECT_GT(ci.half_width_rel, 0.5 * expected_half_width);
    EXPECT_LT(ci.half_width_rel, 2.0 * expected_half_width);
    EXPECT_EQ(ci.n, n);
    EXPECT_EQ(ci.resamples, 10000u);
    EXPECT_EQ(ci.seed, 42u);
}

// Groups (processes) with a between-group effect b ~ N(0, sigma_between) and rounds with a
// within-group scatter e ~ N(0, sigma_within), as ratios exp(b + e): the true median is 1.
std::vector<std::vector<double>> grouped_sample(std::uint64_t seed, std::size_t groups, std::size_t per_group,
                                                double sigma_between, double sigma_within) {
    SplitMix64 rng(seed);
    const auto uniform_open = [&rng] { return (static_cast<double>(rng.next() >> 11) + 0.5) * 0x1.0p-53; };
    const auto normal = [&] { return std::sqrt(-2.0 * std::log(uniform_open())) * std::cos(2.0 * pi * uniform_open()); };
    std::vector<std::vector<double>> sample(groups);
    for (std::vector<double> &group : sample) {
        const double between = sigma_between * normal();
        for (std::size_t i = 0; i < per_group; ++i) group.push_back(std::exp(between + sigma_within * normal()));
    }
    return sample;
}

TEST(TwoLevelBootstrap, WidthFollowsTheBetweenGroupSpreadWhenItDominates) {
    const std::size_t groups = 20, per_group = 100;
    const double sigma_between = 0.01, sigma_within = 0.001;
    const auto sample = grouped_sample(5, groups, per_group, sigma_between, sigma_within);
    const RatioInterval ci = two_level_bootstrap_median_interval(sample, {42, 2000, 0.95});
    // A fresh process's median moves with its own group effect: sigma_between, not sigma_between / sqrt(groups).
    const double expected_half_width = 1.96 * sigma_between;
    EXPECT_GT(ci.half_width_rel, 0.5 * expected_half_width) << ci.lo << " .. " << ci.hi;
    EXPECT_LT(ci.half_width_rel, 2.0 * expected_half_width) << ci.lo << " .. " << ci.hi;
    EXPECT_EQ(ci.n, groups * per_group);
    // A bootstrap of the pooled rounds, blind to the groups, is many times too narrow here.
    std::vector<double> pooled;
    for (const auto &group : sample) pooled.insert(pooled.end(), group.begin(), group.end());
    EXPECT_LT(bootstrap_median_interval(pooled, {42, 2000, 0.95}).half_width_rel, 0.1 * ci.half_width_rel);
    // And it covers the medians of further processes drawn from the same model: 95% nominal.
    const auto fresh = grouped_sample(55, 40, per_group, sigma_between, sigma_within);
    int covered = 0;
    for (const auto &group : fresh) covered += ci.contains(median(group)) ? 1 : 0;
    EXPECT_GE(covered, 34) << "of 40 fresh processes";
}

TEST(TwoLevelBootstrap, WidthFollowsTheWithinGroupScatterWhenItDominates) {
    const std::size_t groups = 20, per_group = 100;
    const double sigma_between = 0.0001, sigma_within = 0.01;
    const RatioInterval ci =
        two_level_bootstrap_median_interval(grouped_sample(6, groups, per_group, sigma_between, sigma_within),
                                            {42, 2000, 0.95});
    // One process's worth of rounds: the standard error of a normal median, 1.2533 sigma / sqrt(n).
    const double expected_half_width = 1.96 * 1.2533 * sigma_within / std::sqrt(double(per_group));
    EXPECT_GT(ci.half_width_rel, 0.5 * expected_half_width) << ci.lo << " .. " << ci.hi;
    EXPECT_LT(ci.half_width_rel, 2.0 * expected_half_width) << ci.lo << " .. " << ci.hi;
    EXPECT_TRUE(ci.contains(1.0)) << ci.lo << " .. " << ci.hi;
}

TEST(TwoLevelBootstrap, OneGroupIsThePlainBootstrapAndEmptyInputIsRejected) {
    const std::vector<double> ratios = lognormal_sample(3, 200, 0.0, 0.05);
    const RatioInterval one = two_level_bootstrap_median_interval({ratios}, {9, 1000, 0.95});
    const RatioInterval plain = bootstrap_median_interval(ratios, {9, 1000, 0.95});
    EXPECT_EQ(one.lo, plain.lo);
    EXPECT_EQ(one.hi, plain.hi);
    EXPECT_THROW(two_level_bootstrap_median_interval({}, {9, 1000, 0.95}), Error);
    EXPECT_THROW(two_level_bootstrap_median_interval({ratios, {}}, {9, 1000, 0.95}), Error);
}

TEST(Bootstrap, CoverageIsCloseToNominal) {
    // Over many independent data sets a 95% interval should miss the true median only rarely; an
    // interval that is too narrow (e.g. resampling without replacement) misses far more often.
    const int data_sets = 60;
    int covered = 0;
    for (int i = 0; i < data_sets; ++i) {
        const RatioInterval ci =
            bootstrap_median_interval(lognormal_sample(1000 + i, 200, 0.0, 0.2), {static_cast<std::uint64_t>(i), 2000, 0.95});
        covered += ci.contains(1.0) ? 1 : 0;
    }
    EXPECT_GE(covered, 52);  // 95% of 60 is 57
    EXPECT_LE(covered, 60);
}

TEST(Bootstrap, WidthShrinksWithSampleSize) {
    const RatioInterval small = bootstrap_median_interval(lognormal_sample(5, 100, 0.0, 0.1), {1, 10000, 0.95});
    const RatioInterval large = bootstrap_median_interval(lognormal_sample(6, 1600, 0.0, 0.1), {1, 10000, 0.95});
    // Width scales as 1/sqrt(n): 16 times the data should give about a quarter of the width.
    EXPECT_GT(small.half_width_rel / large.half_width_rel, 2.0);
    EXPECT_LT(small.half_width_rel / large.half_width_rel, 8.0);
}

TEST(Bootstrap, DeterministicForASeed) {
    const std::vector<double> x = lognormal_sample(3, 301, 0.0, 0.05);
    const RatioInterval a = bootstrap_median_interval(x, {99, 5000, 0.95});
    const RatioInterval b = bootstrap_median_interval(x, {99, 5000, 0.95});
    const RatioInterval other = bootstrap_median_interval(x, {100, 5000, 0.95});
    EXPECT_EQ(a.lo, b.lo);
    EXPECT_EQ(a.hi, b.hi);
    EXPECT_TRUE(a.lo != other.lo || a.hi != other.hi);
}

TEST(Bootstrap, FollowsTheDocumentedResamplingExactly) {
    // A slow, obvious re-implementation of the definition in statistics.h: anyone holding the seed
    // must be able to re-derive the recorded interval bit for bit.
    const std::vector<double> ratios = lognormal_sample(21, 37, 0.0, 0.1);
    std::vector<double> sorted = ratios;
    std::sort(sorted.begin(), sorted.end());
    SplitMix64 rng(77);
    std::vector<double> medians;
    for (int r = 0; r < 500; ++r) {
        std::vector<double> resample;
        for (std::size_t i = 0; i < sorted.size(); ++i) resample.push_back(sorted[rng.below(sorted.size())]);
        medians.push_back(median(resample));
    }
    std::sort(medians.begin(), medians.end());
    const RatioInterval ci = bootstrap_median_interval(ratios, {77, 500, 0.95});
    EXPECT_EQ(ci.lo, percentile_of_sorted(medians, 0.025));
    EXPECT_EQ(ci.hi, percentile_of_sorted(medians, 0.975));
    EXPECT_EQ(ci.median, median(ratios));

    // Even n takes the mean of two middle order statistics; check that path too.
    const std::vector<double> even = {1.0, 1.1, 1.2, 1.3};
    SplitMix64 rng_even(5);
    std::vector<double> even_medians;
    for (int r = 0; r < 200; ++r) {
        std::vector<double> resample;
        for (int i = 0; i < 4; ++i) resample.push_back(even[rng_even.below(4)]);
        even_medians.push_back(median(resample));
    }
    std::sort(even_medians.begin(), even_medians.end());
    const RatioInterval even_ci = bootstrap_median_interval({1.3, 1.0, 1.2, 1.1}, {5, 200, 0.90});
    EXPECT_EQ(even_ci.lo, percentile_of_sorted(even_medians, 0.05));
    EXPECT_EQ(even_ci.hi, percentile_of_sorted(even_medians, 0.95));
}

TEST(Bootstrap, WiderConfidenceGivesWiderInterval) {
    const std::vector<double> x = lognormal_sample(8, 500, 0.0, 0.1);
    const RatioInterval ci90 = bootstrap_median_interval(x, {1, 5000, 0.90});
    const RatioInterval ci99 = bootstrap_median_interval(x, {1, 5000, 0.99});
    EXPECT_LT(ci99.lo, ci90.lo);
    EXPECT_GT(ci99.hi, ci90.hi);
}

TEST(Bootstrap, ConstantRatiosGiveAPointInterval) {
    const RatioInterval ci = bootstrap_median_interval({1.02, 1.02, 1.02, 1.02}, {5, 100, 0.95});
    EXPECT_DOUBLE_EQ(ci.lo, 1.02);
    EXPECT_DOUBLE_EQ(ci.hi, 1.02);
    EXPECT_DOUBLE_EQ(ci.half_width_rel, 0.0);
    EXPECT_FALSE(ci.contains(1.0));
    EXPECT_TRUE(ci.contains(1.02));
}

TEST(Bootstrap, RejectsBadOptions) {
    EXPECT_THROW(bootstrap_median_interval({}, {}), Error);
    EXPECT_THROW(bootstrap_median_interval({1.0}, {0, 1, 0.95}), Error);
    EXPECT_THROW(bootstrap_median_interval({1.0}, {0, 100, 1.0}), Error);
}

TEST(WeightedGeomean, CombinesTheShapesMediansByWeight) {
    // Constant ratios: every resample gives the same medians, so the interval is the point.
    const std::vector<double> twos(30, 2.0), ones(30, 1.0), halves(30, 0.5);
    const RatioInterval even = weighted_geomean_interval({{{twos}, 1.0}, {{halves}, 1.0}}, {7, 500, 0.95});
    EXPECT_DOUBLE_EQ(even.median, 1.0);
    EXPECT_DOUBLE_EQ(even.lo, 1.0);
    EXPECT_DOUBLE_EQ(even.hi, 1.0);
    EXPECT_EQ(even.n, 60u);
    const RatioInterval weighted = weighted_geomean_interval({{{twos}, 3.0}, {{ones}, 1.0}}, {7, 500, 0.95});
    EXPECT_NEAR(weighted.median, std::pow(2.0, 0.75), 1e-12);
    // A weight of 0 leaves the shape out of the mean (it is still measured, and counted in n).
    const RatioInterval without = weighted_geomean_interval({{{twos}, 1.0}, {{halves}, 0.0}}, {7, 500, 0.95});
    EXPECT_DOUBLE_EQ(without.median, 2.0);
    EXPECT_EQ(without.n, 60u);
}

TEST(WeightedGeomean, ResamplesRoundsWithinEachShapeOnly) {
    // Two shapes whose ratios differ by a factor of four but each scatter by 1%: resampling within a
    // shape keeps the interval near the 1% scatter; mixing the shapes' rounds would span most of the 4x.
    const std::vector<double> a = lognormal_sample(21, 60, std::log(2.0), 0.01);
    const std::vector<double> b = lognormal_sample(22, 60, std::log(0.5), 0.01);
    const RatioInterval ci = weighted_geomean_interval({{{a}, 1.0}, {{b}, 1.0}}, {3, 4000, 0.95});
    EXPECT_NEAR(ci.median, std::sqrt(median(a) * median(b)), 1e-12);
    EXPECT_TRUE(ci.contains(1.0)) << "[" << ci.lo << ", " << ci.hi << "]";
    EXPECT_LT(ci.half_width_rel, 0.01);
    EXPECT_GT(ci.half_width_rel, 0.0005);
    // The noisier a shape, the wider the combined interval.
    const std::vector<double> noisy = lognormal_sample(23, 60, std::log(0.5), 0.05);
    EXPECT_GT(weighted_geomean_interval({{{a}, 1.0}, {{noisy}, 1.0}}, {3, 4000, 0.95}).half_width_rel,
              2 * ci.half_width_rel);
}

TEST(WeightedGeomean, CoverageIsCloseToNominal) {
    // Three shapes with true medians 1.2, 0.9 and 1.0 and weights 2, 1, 1: the true weighted geometric
    // mean is exp((2 ln 1.2 + ln 0.9) / 4).
    const double truth = std::exp((2 * std::log(1.2) + std::log(0.9)) / 4);
    const int data_sets = 60;
    int covered = 0;
    for (int i = 0; i < data_sets; ++i) {
        const std::vector<WeightedRatios> shapes{{{lognormal_sample(3000 + i, 80, std::log(1.2), 0.1)}, 2.0},
                                                 {{lognormal_sample(4000 + i, 40, std::log(0.9), 0.2)}, 1.0},
                                                 {{lognormal_sample(5000 + i, 120, 0.0, 0.05)}, 1.0}};
        covered += weighted_geomean_interval(shapes, {static_cast<std::uint64_t>(i), 1000, 0.95}).contains(truth) ? 1 : 0;
    }
    EXPECT_GE(covered, 52);  // 95% of 60 is 57
}

TEST(WeightedGeomean, RepeatsOfAShapeAreDrawnAtBothLevels) {
    // One shape in four processes that disagree by far more than their rounds scatter: the interval
    // follows the spread between processes, as two_level_bootstrap_median_interval's does.
    const auto groups = grouped_sample(31, 4, 50, 0.05, 0.002);
    const RatioInterval combined = weighted_geomean_interval({{groups, 1.0}}, {9, 4000, 0.95});
    const RatioInterval two_level = two_level_bootstrap_median_interval(groups, {9, 4000, 0.95});
    EXPECT_DOUBLE_EQ(combined.median, two_level.median);
    EXPECT_NEAR(combined.half_width_rel, two_level.half_width_rel, 0.25 * two_level.half_width_rel);
    EXPECT_GT(combined.half_width_rel, 0.01);
}

TEST(WeightedGeomean, DeterministicForASeedAndRejectsBadInput) {
    const std::vector<WeightedRatios> shapes{{{lognormal_sample(41, 30, 0.1, 0.1)}, 1.0},
                                             {{lognormal_sample(42, 30, -0.1, 0.1)}, 2.0}};
    const RatioInterval once = weighted_geomean_interval(shapes, {5, 1000, 0.95});
    const RatioInterval again = weighted_geomean_interval(shapes, {5, 1000, 0.95});
    EXPECT_EQ(once.lo, again.lo);
    EXPECT_EQ(once.hi, again.hi);
    EXPECT_NE(once.lo, weighted_geomean_interval(shapes, {6, 1000, 0.95}).lo);
    const auto rejects = [](const std::vector<WeightedRatios> &bad) {
        try {
            weighted_geomean_interval(bad, {1, 100, 0.95});
        } catch (const Error &e) {
            return e.code() == ExitCode::internal;
        }
        return false;
    };
    EXPECT_TRUE(rejects({}));
    EXPECT_TRUE(rejects({{{}, 1.0}}));
    EXPECT_TRUE(rejects({{{{}}, 1.0}}));
    EXPECT_TRUE(rejects({{{{1.0, 1.1}}, -1.0}}));
    EXPECT_TRUE(rejects({{{{1.0, 1.1}}, 0.0}}));
    EXPECT_TRUE(rejects({{{{1.0, 0.0}}, 1.0}}));
    EXPECT_TRUE(rejects({{{{1.0, 1.1}}, std::numeric_limits<double>::quiet_NaN()}}));
}

TEST(ThrottleRejection, DropsRoundsAsPairs) {
    const double reference = 1980.0;  // MHz; the threshold is 0.75 * 1980 = 1485
    const std::vector<TimedRound> rounds = {
        {10.0, 1980.0, 11.0, 1975.0},  // kept
        {12.0, 1400.0, 13.0, 1980.0},  // a throttled: the whole round goes
        {14.0, 1980.0, 15.0, 1484.9},  // b throttled: the whole round goes
        {16.0, 1485.0, 17.0, 1485.0},  // exactly at the threshold: kept
        {18.0, std::nan(""), 19.0, 1980.0},  // unknown clock: cannot be shown unthrottled
    };
    const KeptRounds kept = reject_throttled_rounds(rounds, reference);
    EXPECT_EQ(kept.dropped, 3u);
    EXPECT_EQ(kept.time_a, (std::vector<double>{10.0, 16.0}));
    EXPECT_EQ(kept.time_b, (std::vector<double>{11.0, 17.0}));
}

TEST(ThrottleRejection, ZeroThresholdKeepsEverything) {
    const std::vector<TimedRound> rounds = {{1.0, 100.0, 2.0, std::nan("")}, {3.0, 1980.0, 4.0, 5.0}};
    const KeptRounds kept = reject_throttled_rounds(rounds, 1980.0, 0.0);
    EXPECT_EQ(kept.dropped, 0u);
    EXPECT_EQ(kept.time_a.size(), 2u);
    EXPECT_THROW(reject_throttled_rounds(rounds, 0.0), Error);
    EXPECT_THROW(reject_throttled_rounds(rounds, 1980.0, 1.5), Error);
}

TEST(StoppingRule, NeedsBothPrecisionAndMinimumRounds) {
    RatioInterval ci;
    ci.n = 50;
    ci.half_width_rel = 0.004;
    EXPECT_TRUE(interval_precise_enough(ci, {0.005, 20}));
    ci.half_width_rel = 0.005;  // "under the target" is strict
    EXPECT_FALSE(interval_precise_enough(ci, {0.005, 20}));
    ci.half_width_rel = 0.001;
    ci.n = 19;
    EXPECT_FALSE(interval_precise_enough(ci, {0.005, 20}));
}

}  // namespace
}  // namespace s2tp::unit_statistics
