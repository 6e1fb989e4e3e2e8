#include "model/ab_timing.h"

#include "support/errors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace s2tp::unit_ab_timing {
namespace {

// The fixed three-arm run most tests use: baseline, control, one candidate.
constexpr std::size_t three_arms = 3;
constexpr Arm candidate_arm = first_candidate_arm;

// ---- Round order ----

TEST(RoundOrder, SameSeedSameSequenceOtherSeedOtherSequence) {
    for (std::size_t arms = 2; arms <= 6; ++arms) {
        RoundOrderGenerator a(42, arms), b(42, arms), c(43, arms);
        bool differs = false;
        for (int round = 0; round < 600; ++round) {
            const RoundOrder from_a = a.next();
            EXPECT_EQ(from_a, b.next()) << arms << " arms, round " << round;
            differs = differs || from_a != c.next();
        }
        // Two arms have only two orders, which both seeds alternate; a seed decides only which comes first.
        if (arms > 2) {
            EXPECT_TRUE(differs) << arms << " arms: seeds 42 and 43 gave the same 600 orders";
        }
    }
}

TEST(RoundOrder, ThreeArmsEveryBlockOfSixHoldsEachOrderOnce) {
    for (std::uint64_t seed = 0; seed < 25; ++seed) {
        RoundOrderGenerator orders(seed, three_arms);
        ASSERT_EQ(orders.block_size(), 6u);
        for (int block = 0; block < 40; ++block) {
            std::set<RoundOrder> seen;
            for (int i = 0; i < 6; ++i) seen.insert(orders.next());
            EXPECT_EQ(seen.size(), 6u) << "seed " << seed << ", block " << block;
        }
    }
}

TEST(RoundOrder, EveryOrderHoldsEveryArmOnce) {
    for (std::size_t arms = 2; arms <= 8; ++arms) {
        RoundOrderGenerator orders(7, arms);
        for (int round = 0; round < 200; ++round) {
            const RoundOrder order = orders.next();
            ASSERT_EQ(order.size(), arms);
            std::set<Arm> distinct(order.begin(), order.end());
            ASSERT_EQ(distinct.size(), arms) << arms << " arms, round " << round << ": an order repeats an arm";
            ASSERT_LT(*distinct.rbegin(), arms);
        }
    }
}

TEST(RoundOrder, EachArmTakesEachPositionEquallyOftenInEveryBlock) {
    for (std::size_t arms = 2; arms <= 6; ++arms)
        for (std::uint64_t seed : {0ull, 1ull, 20261129ull}) {
            RoundOrderGenerator orders(seed, arms);
            for (int block = 0; block < 30; ++block) {
                std::map<std::pair<Arm, std::size_t>, int> count;
                for (std::size_t round = 0; round < orders.block_size(); ++round) {
                    const RoundOrder order = orders.next();
                    for (std::size_t position = 0; position < order.size(); ++position) ++count[{order[position], position}];
                }
                for (Arm arm = 0; arm < arms; ++arm)
                    for (std::size_t position = 0; position < arms; ++position)
                        ASSERT_EQ((count[{arm, position}]), 2)
                            << arms << " arms, seed " << seed << ", block " << block << ": arm " << arm
                            << " at position " << position;
            }
        }
}

TEST(RoundOrder, TheFirstArmChangesEveryRoundAcrossBlocks) {
    for (std::size_t arms = 2; arms <= 6; ++arms)
        for (std::uint64_t seed = 0; seed < 50; ++seed) {
            RoundOrderGenerator orders(seed, arms);
            Arm previous_first = orders.next()[0];
            for (int round = 1; round < 120; ++round) {
                const Arm first = orders.next()[0];
                ASSERT_NE(first, previous_first) << arms << " arms, seed " << seed << ", round " << round;
                previous_first = first;
            }
        }
}

TEST(RoundOrder, RejectsArmCountsOutsideTwoToEight) {
    EXPECT_THROW(RoundOrderGenerator(1, 1), Error);
    EXPECT_THROW(RoundOrderGenerator(1, 9), Error);
    EXPECT_NO_THROW(RoundOrderGenerator(1, 8));
    EXPECT_EQ(arm_names({"x", "y"}), (std::vector<std::string>{"baseline", "baseline_control", "x", "y"}));
    EXPECT_EQ(stop_rule_arms(2), std::vector<Arm>{control_arm});
    EXPECT_EQ(stop_rule_arms(4), (std::vector<Arm>{2, 3}));
}

// ---- Throttled rounds ----

InterleavedRound round_of(double baseline_mhz, double control_mhz, double candidate_mhz) {
    InterleavedRound round;
    round.order = {baseline_arm, control_arm, candidate_arm};
    round.samples = {{50.0, baseline_mhz}, {50.0, control_mhz}, {70.0, candidate_mhz}};
    return round;
}

TEST(RoundThrottled, AnySlowSampleThrottlesTheWholeRound) {
    const double reference = 1980.0, fraction = 0.75;  // threshold 1485 MHz
    EXPECT_FALSE(round_throttled(round_of(1980, 1975, 1990), reference, fraction));
    EXPECT_FALSE(round_throttled(round_of(1485, 1485, 1485), reference, fraction)) << "at the threshold is not below it";
    EXPECT_TRUE(round_throttled(round_of(1980, 1980, 1484), reference, fraction));
    EXPECT_TRUE(round_throttled(round_of(1980, 900, 1980), reference, fraction));
    EXPECT_TRUE(round_throttled(round_of(std::nan(""), 1980, 1980), reference, fraction)) << "a NaN clock proves nothing";
    EXPECT_FALSE(round_throttled(round_of(300, 300, std::nan("")), reference, 0.0)) << "threshold 0 turns the check off";
    EXPECT_THROW(round_throttled(round_of(1980, 1980, 1980), 0.0, fraction), Error);
}

// ---- The loop, driven by synthetic timers ----

// A timer with fixed per-arm base times, a per-round multiplicative noise drawn from a seed, an
// optional slowdown of whatever launch runs first in a round, and chosen samples that run throttled.
// Its wall clock advances by every sample's time plus 1 ms of overhead per timed launch.
class SyntheticTimer : public LaunchTimer {
public:
    std::vector<double> base_ms = {55.0, 55.0, 74.0};
    double noise = 0.0;                  // relative spread of each sample, uniform in [-noise, noise]
    double first_position_penalty = 0.0;  // relative slowdown of the first launch of each round
    std::set<std::size_t> throttled_samples;  // indices of timed calls that report a low clock
    double throttled_time_ms = 1000.0;        // what a throttled sample reports as its time
    std::vector<std::pair<bool, Arm>> calls;  // (timed?, arm) in call order
    std::vector<std::size_t> call_sets;       // the input set of each call
    double seconds = 0.0;
    std::size_t sets = 3;
    // A planted cheat: the candidate computes its first `honest_launches` timed launches, then nothing.
    std::optional<std::size_t> honest_launches;
    std::size_t rechecks = 0;

    std::size_t arms() const override { return base_ms.size(); }
    std::size_t input_sets() const override { return sets; }
    void use_input_set(std::size_t set) override {
        ASSERT_LT(set, sets);
        set_ = set;
    }
    void warm_up(Arm arm) override {
        calls.emplace_back(false, arm);
        call_sets.push_back(set_);
    }
    std::vector<RecheckFailure> recheck() override {
        ++rechecks;
        if (!honest_launches || candidate_launches_ <= *honest_launches) return {};
        RecheckFailure failure;
        failure.arm = first_candidate_arm;
        failure.what = "left 7 output elements unwritten";
        return {failure};
    }

    LaunchSample timed(Arm arm) override {
        const std::size_t index = timed_calls_++;
        calls.emplace_back(true, arm);
        call_sets.push_back(set_);
        if (arm == first_candidate_arm) ++candidate_launches_;
        const bool first_in_round = index % base_ms.size() == 0;
        double time = base_ms[arm] * (1.0 + (first_in_round ? first_position_penalty : 0.0));
        if (noise > 0.0) time *= 1.0 + noise * (2.0 * static_cast<double>(random_.below(1u << 20)) / (1u << 20) - 1.0);
        LaunchSample sample{time, 1980.0};
        if (throttled_samples.count(index)) sample = {throttled_time_ms, 600.0};
        seconds += sample.time_ms / 1000.0 + 0.001;
        return sample;
    }

    std::function<double()> clock() {
        return [this] { return seconds; };
    }

private:
    std::size_t timed_calls_ = 0, candidate_launches_ = 0, set_ = 0;
    SplitMix64 random_{7};
};

TimingSettings settings_for_tests() {
    TimingSettings s;
    s.warmup_launches = 2;
    s.min_rounds = 20;
    s.target_half_width = 0.005;
    s.budget_seconds = 60;
    s.reference_clock_mhz = 1980;
    s.throttle_fraction = 0.75;
    s.order_seed = 99;
    s.bootstrap.seed = 20261129;
    s.bootstrap.resamples = 2000;
    return s;
}

TEST(MeasureInterleaved, WarmsUpEveryLaunchThenFollowsTheSeededOrders) {
    SyntheticTimer timer;
    const TimingSettings settings = settings_for_tests();
    const TimingRun run = measure_interleaved(timer, settings, timer.clock());

    const std::size_t warmups = settings.warmup_launches * three_arms;
    ASSERT_GE(timer.calls.size(), warmups);
    std::map<Arm, int> warmed;
    for (std::size_t i = 0; i < warmups; ++i) {
        EXPECT_FALSE(timer.calls[i].first) << "call " << i << " should be a warm-up";
        ++warmed[timer.calls[i].second];
    }
    for (Arm arm = 0; arm < three_arms; ++arm) EXPECT_EQ(warmed[arm], 2) << "arm " << arm;

    RoundOrderGenerator expected(settings.order_seed, three_arms);
    std::size_t call = warmups;
    for (const InterleavedRound &round : run.rounds) {
        const RoundOrder order = expected.next();
        EXPECT_EQ(round.order, order);
        for (Arm arm : order) {
            ASSERT_LT(call, timer.calls.size());
            EXPECT_TRUE(timer.calls[call].first);
            EXPECT_EQ(timer.calls[call].second, arm);
            ++call;
        }
    }
    EXPECT_EQ(call, timer.calls.size()) << "every timed launch belongs to a recorded round";
}

// ---- Re-checked rounds and rotated input sets ----

TEST(RecheckPlan, NeverTheSameSetTwiceInARowAndAboutTheAskedShareRechecked) {
    RecheckPlan plan(99, 3, 0.25), same(99, 3, 0.25), other(100, 3, 0.25);
    std::size_t previous = 99, rechecked = 0;
    std::map<std::size_t, int> per_set;
    bool differs = false;
    for (int i = 0; i < 4000; ++i) {
        const RecheckPlan::Round round = plan.next(), again = same.next(), elsewhere = other.next();
        EXPECT_EQ(round.input_set, again.input_set);
        EXPECT_EQ(round.rechecked, again.rechecked);
        differs = differs || round.input_set != elsewhere.input_set || round.rechecked != elsewhere.rechecked;
        ASSERT_LT(round.input_set, 3u);
        ASSERT_NE(round.input_set, previous) << "round " << i << " reads the set of the round before it";
        previous = round.input_set;
        ++per_set[round.input_set];
        rechecked += round.rechecked;
    }
    EXPECT_TRUE(differs) << "another seed, another plan";
    for (std::size_t set = 0; set < 3; ++set) EXPECT_NEAR(per_set[set], 4000 / 3, 150) << "set " << set;
    EXPECT_NEAR(static_cast<double>(rechecked) / 4000, 0.25, 0.03);
    RecheckPlan one_set(1, 1, 1.0);
    for (int i = 0; i < 10; ++i) {
        const RecheckPlan::Round round = one_set.next();
        EXPECT_EQ(round.input_set, 0u);
        EXPECT_TRUE(round.rechecked);
    }
    EXPECT_THROW(RecheckPlan(1, 0, 0.5), Error);
    EXPECT_THROW(RecheckPlan(1, 3, 1.5), Error);
    EXPECT_EQ(input_set_seed(20261129, 0), 20261129u) << "set 0 is the workload's own, so the pins hold for it";
    EXPECT_NE(input_set_seed(20261129, 1), input_set_seed(20261129, 2));
}

TEST(MeasureInterleaved, EachRoundReadsItsPlannedSetAndTheLastRoundIsAlwaysRechecked) {
    SyntheticTimer timer;
    TimingSettings settings = settings_for_tests();
    settings.recheck_fraction = 0.0;  // the plan draws none: the last round is checked all the same
    const TimingRun run = measure_interleaved(timer, settings, timer.clock());
    EXPECT_EQ(run.input_sets, 3u);
    EXPECT_TRUE(run.recheck_failures.empty());
    ASSERT_FALSE(run.rounds.empty());
    EXPECT_EQ(run.rechecked_rounds(), 1u);
    EXPECT_TRUE(run.rounds.back().rechecked);
    EXPECT_EQ(timer.rechecks, 1u);
    // Warm-up passes rotate over the sets; every timed launch of a round reads the round's set, which
    // is never the previous round's, as the seeded plan says.
    EXPECT_EQ(timer.call_sets[0], 0u);
    EXPECT_EQ(timer.call_sets[three_arms], 1u);
    RecheckPlan plan(settings.order_seed, 3, 0.0);
    std::size_t call = settings.warmup_launches * three_arms;
    for (std::size_t r = 0; r < run.rounds.size(); ++r) {
        EXPECT_EQ(run.rounds[r].input_set, plan.next().input_set) << "round " << r;
        if (r > 0) {
            EXPECT_NE(run.rounds[r].input_set, run.rounds[r - 1].input_set) << "round " << r;
        }
        for (std::size_t i = 0; i < three_arms; ++i, ++call) EXPECT_EQ(timer.call_sets.at(call), run.rounds[r].input_set);
    }

    SyntheticTimer every;
    settings.recheck_fraction = 1.0;
    const TimingRun all = measure_interleaved(every, settings, every.clock());
    EXPECT_EQ(all.rechecked_rounds(), all.rounds.size());
    EXPECT_EQ(every.rechecks, all.rounds.size()) << "the last round is not checked twice";
}

// The cheat: a candidate that computes its first launches and then returns at once. Its first
// outputs are right; a re-checked round finds what it left, and sampling stops there.
TEST(MeasureInterleaved, ACandidateThatStopsComputingFailsTheFirstRecheckAfter) {
    SyntheticTimer timer;
    timer.honest_launches = 10;
    TimingSettings settings = settings_for_tests();
    settings.recheck_fraction = 0.25;
    const TimingRun run = measure_interleaved(timer, settings, timer.clock());
    EXPECT_EQ(run.stopped_by, StopReason::recheck_failed);
    ASSERT_EQ(run.recheck_failures.size(), 1u);
    const RecheckFailure &failure = run.recheck_failures.front();
    EXPECT_EQ(failure.arm, first_candidate_arm);
    EXPECT_EQ(failure.round, run.rounds.size() - 1) << "sampling stops at the round that failed";
    EXPECT_GE(failure.round, 10u) << "its first 10 launches were honest";
    EXPECT_EQ(failure.input_set, run.rounds.back().input_set);
    EXPECT_TRUE(run.rounds.back().rechecked);
    EXPECT_STREQ(stop_reason_name(StopReason::recheck_failed), "recheck_failed");
    EXPECT_EQ(stop_reason_of("recheck_failed"), StopReason::recheck_failed);
    EXPECT_EQ(stop_reason_of("half_width"), StopReason::half_width);
    EXPECT_EQ(stop_reason_of("budget"), StopReason::budget);

    // Even when the plan re-checks no round, the last one catches it.
    SyntheticTimer late;
    late.honest_launches = 10;
    settings.recheck_fraction = 0.0;
    const TimingRun caught = measure_interleaved(late, settings, late.clock());
    EXPECT_EQ(caught.stopped_by, StopReason::recheck_failed);
    ASSERT_EQ(caught.recheck_failures.size(), 1u);
    EXPECT_EQ(caught.recheck_failures.front().round, caught.rounds.size() - 1);
}

TEST(MeasureInterleaved, NoiselessSamplesStopAtTheFirstCheckAfterMinRounds) {
    SyntheticTimer timer;
    const TimingRun run = measure_interleaved(timer, settings_for_tests(), timer.clock());
    EXPECT_EQ(run.stopped_by, StopReason::half_width);
    // min_rounds is 20 and an order block of three arms is 6 rounds: the first check ends block 4.
    EXPECT_EQ(run.kept_rounds, 24u) << "a perfectly precise ratio still waits for min_rounds and a whole block";
    EXPECT_EQ(run.stop_checks, 1u);
    EXPECT_EQ(run.throttled_rounds, 0u);
}

TEST(MeasureInterleaved, StopsWhenTheHalfWidthFallsUnderTheTarget) {
    SyntheticTimer timer;
    timer.noise = 0.02;  // about 1.2% relative stdev per sample: needs many more than 20 rounds
    TimingSettings settings = settings_for_tests();
    settings.budget_seconds = 3600;
    std::vector<std::size_t> checked_at;
    double last_reported_half_width = 1.0;
    const TimingRun run = measure_interleaved(timer, settings, timer.clock(),
                                              [&](const TimingRun &so_far, const RatioInterval &interval) {
                                                  checked_at.push_back(so_far.kept_rounds);
                                                  last_reported_half_width = interval.half_width_rel;
                                              });
    ASSERT_EQ(run.stopped_by, StopReason::half_width);
    EXPECT_GT(run.kept_rounds, 20u);
    EXPECT_GT(run.stop_checks, 1u);
    ASSERT_EQ(checked_at.size(), run.stop_checks) << "progress is reported at every check";
    // Every check ends an order block (6 rounds for three arms): the first one after min_rounds, then the
    // first one after next_stop_check of the previous check.
    const std::size_t block = RoundOrderGenerator(1, 3).block_size();
    const auto first_block_end_from = [&](std::size_t rounds) { return (rounds + block - 1) / block * block; };
    EXPECT_EQ(checked_at.front(), first_block_end_from(20));
    for (std::size_t i = 1; i < checked_at.size(); ++i)
        EXPECT_EQ(checked_at[i], first_block_end_from(next_stop_check(checked_at[i - 1]))) << "check " << i;
    EXPECT_EQ(checked_at.back(), run.kept_rounds);
    EXPECT_LT(last_reported_half_width, settings.target_half_width);
    const RatioInterval final_interval =
        bootstrap_median_interval(kept_ratios(run.rounds, candidate_arm), settings.bootstrap);
    EXPECT_LT(final_interval.half_width_rel, settings.target_half_width);
    EXPECT_NEAR(final_interval.median, 74.0 / 55.0, 0.01);
}

TEST(MeasureInterleaved, StopsAtTheBudgetWhenTheRatioStaysWide) {
    SyntheticTimer timer;
    timer.noise = 0.3;
    TimingSettings settings = settings_for_tests();
    settings.budget_seconds = 10;  // ~185 ms per round: about 54 rounds
    const TimingRun run = measure_interleaved(timer, settings, timer.clock());
    EXPECT_EQ(run.stopped_by, StopReason::budget);
    EXPECT_GE(run.seconds, 10.0);
    EXPECT_LT(run.seconds, 10.0 + 0.5) << "the budget ends sampling within one round";
    EXPECT_GT(run.kept_rounds, 40u);
}

TEST(MeasureInterleaved, ABudgetShorterThanMinRoundsStillStops) {
    SyntheticTimer timer;
    TimingSettings settings = settings_for_tests();
    settings.budget_seconds = 1;
    const TimingRun run = measure_interleaved(timer, settings, timer.clock());
    EXPECT_EQ(run.stopped_by, StopReason::budget);
    EXPECT_LT(run.kept_rounds, settings.min_rounds);
    EXPECT_EQ(run.stop_checks, 0u);
}

TEST(MeasureInterleaved, ThrottledRoundsAreDroppedWholeAndCounted) {
    SyntheticTimer timer;
    // Timed call 3k+j is launch j of round k (in that round's order): throttle one launch in rounds
    // 2, 5 and 11, a different position each time.
    timer.throttled_samples = {2 * 3 + 0, 5 * 3 + 1, 11 * 3 + 2};
    const TimingRun run = measure_interleaved(timer, settings_for_tests(), timer.clock());
    EXPECT_EQ(run.throttled_rounds, 3u);
    // 20 kept rounds reached in round 23; the check waits for the end of its order block, round 24.
    EXPECT_EQ(run.kept_rounds, 21u);
    ASSERT_EQ(run.rounds.size(), 24u);
    for (std::size_t i = 0; i < run.rounds.size(); ++i)
        EXPECT_EQ(run.rounds[i].throttled, i == 2 || i == 5 || i == 11) << "round " << i;

    // None of the throttled rounds' samples (not even their normal-clock ones) reach the statistics.
    for (Arm arm = 0; arm < three_arms; ++arm) {
        const std::vector<double> kept = kept_times(run.rounds, arm);
        ASSERT_EQ(kept.size(), 21u);
        for (double t : kept) EXPECT_EQ(t, timer.base_ms[arm]);
    }
    const TimingStats stats = timing_stats({run}, settings_for_tests().bootstrap);
    EXPECT_EQ(stats[candidate_arm].n, 21u);
    EXPECT_DOUBLE_EQ(stats[candidate_arm].max, 74.0);
    EXPECT_DOUBLE_EQ(stats.vs_baseline(candidate_arm).median, 74.0 / 55.0);
    // The clock figures show what the card did, throttled samples included.
    EXPECT_DOUBLE_EQ(stats.clock_min_mhz, 600.0);
    EXPECT_DOUBLE_EQ(stats.clock_max_mhz, 1980.0);
    EXPECT_DOUBLE_EQ(stats.clock_median_mhz, 1980.0);
}

TEST(MeasureInterleaved, APositionEffectCancelsOutOfTheAaControl) {
    // Identical kernels, but whatever runs first in a round is 5% slower. Because the two baseline
    // launches are placed independently and every position is balanced, the A/A and A/B medians stay 1.
    SyntheticTimer timer;
    timer.base_ms = {55.0, 55.0, 55.0};
    timer.first_position_penalty = 0.05;
    TimingSettings settings = settings_for_tests();
    settings.min_rounds = 60;
    settings.budget_seconds = 60;
    const TimingRun run = measure_interleaved(timer, settings, timer.clock());
    const TimingStats stats = timing_stats({run}, settings.bootstrap);
    EXPECT_DOUBLE_EQ(stats.control_vs_baseline().median, 1.0);
    EXPECT_DOUBLE_EQ(stats.vs_baseline(candidate_arm).median, 1.0);
    EXPECT_FALSE(too_noisy_reason(stats.control_vs_baseline(), aa_tolerance(settings.target_half_width, 55.0)).has_value());
}

TEST(MeasureInterleaved, RejectsSettingsThatCannotWork) {
    SyntheticTimer timer;
    TimingSettings settings = settings_for_tests();
    settings.reference_clock_mhz = 0;
    EXPECT_THROW(measure_interleaved(timer, settings, timer.clock()), Error);
    settings = settings_for_tests();
    settings.min_rounds = 1;
    EXPECT_THROW(measure_interleaved(timer, settings, timer.clock()), Error);
}

TEST(MeasureInterleaved, EveryCandidateGetsItsRatioAndTheStopRuleWaitsForTheWidest) {
    // Two candidates: a quiet one and a noisy one; sampling goes on until the noisy one is precise.
    class TwoCandidates : public SyntheticTimer {
    public:
        LaunchSample timed(Arm arm) override {
            LaunchSample sample = SyntheticTimer::timed(arm);
            if (arm == 3) sample.time_ms *= 1.0 + 0.03 * (2.0 * static_cast<double>(noise_.below(1u << 20)) / (1u << 20) - 1.0);
            return sample;
        }
        SplitMix64 noise_{11};
    } timer;
    timer.base_ms = {55.0, 55.0, 74.0, 60.0};
    TimingSettings settings = settings_for_tests();
    settings.budget_seconds = 3600;
    const TimingRun run = measure_interleaved(timer, settings, timer.clock());
    ASSERT_EQ(run.stopped_by, StopReason::half_width);
    EXPECT_GT(run.kept_rounds, 20u) << "the quiet candidate alone would have stopped at 20";
    for (const InterleavedRound &round : run.rounds) ASSERT_EQ(round.samples.size(), 4u);
    const TimingStats stats = timing_stats({run}, settings.bootstrap);
    EXPECT_DOUBLE_EQ(stats.vs_baseline(2).median, 74.0 / 55.0);
    EXPECT_NEAR(stats.vs_baseline(3).median, 60.0 / 55.0, 0.01);
    EXPECT_LT(stats.vs_baseline(3).half_width_rel, settings.target_half_width);
    EXPECT_FALSE(stats.ratios[2].between_repeat_spread) << "one process has no between-repeat spread";
}

TEST(MeasureInterleaved, AnAaRunOfTwoArmsStopsOnTheControlsInterval) {
    SyntheticTimer timer;
    timer.base_ms = {55.0, 55.0};
    const TimingRun run = measure_interleaved(timer, settings_for_tests(), timer.clock());
    EXPECT_EQ(run.stopped_by, StopReason::half_width);
    EXPECT_EQ(run.kept_rounds, 20u);
    const TimingStats stats = timing_stats({run}, settings_for_tests().bootstrap);
    ASSERT_EQ(stats.arms.size(), 2u);
    EXPECT_DOUBLE_EQ(stats.control_vs_baseline().median, 1.0);
}

TEST(TimingStats, RepeatsAreCombinedWithTheTwoLevelBootstrap) {
    // Five "processes" whose candidate runs 1% faster or slower than the others: the combined interval
    // must be far wider than any one repeat's, and the spread and within-width are reported apart.
    std::vector<TimingRun> repeats;
    const std::vector<double> shift = {1.00, 1.01, 0.99, 1.005, 0.995};
    for (double factor : shift) {
        SyntheticTimer timer;
        timer.base_ms = {55.0, 55.0, 74.0 * factor};
        timer.noise = 0.002;
        repeats.push_back(measure_interleaved(timer, settings_for_tests(), timer.clock()));
    }
    const TimingStats stats = timing_stats(repeats, settings_for_tests().bootstrap);
    const RepeatedRatio &candidate = stats.ratios[candidate_arm];
    ASSERT_EQ(candidate.repeat_medians.size(), 5u);
    ASSERT_TRUE(candidate.between_repeat_spread && candidate.within_repeat_half_width);
    EXPECT_NEAR(*candidate.between_repeat_spread, 0.0079, 0.002);  // stdev of the five shifts
    EXPECT_LT(*candidate.within_repeat_half_width, 0.003);
    EXPECT_GT(candidate.interval.half_width_rel, 2.0 * *candidate.within_repeat_half_width);
    EXPECT_EQ(stats[candidate_arm].n, 5 * repeats[0].kept_rounds);
    ASSERT_TRUE(stats.ratios[control_arm].between_repeat_spread) << "the A/A control gets the same treatment";
}

// Issue 39 item 4: each arm's clock, power and temperature medians and the shares of its launches that
// NVML said were power- or heat-limited, over its kept rounds; the rounds dropped as throttled and the
// launches NVML gave no reading for count in none of them.
TEST(TimingStats, EachArmsClockPowerAndLimitSharesComeFromItsKeptLaunches) {
    TimingRun run;
    const auto sample = [](double mhz, std::optional<std::uint64_t> reasons, double watts) {
        LaunchSample s{50.0, mhz, {}};
        s.power.clock_reasons = reasons;
        s.power.power_w = watts;
        s.power.temperature_c = 60;
        return s;
    };
    for (int i = 0; i < 4; ++i) {
        InterleavedRound round;
        round.order = {baseline_arm, control_arm, candidate_arm};
        // The baseline is power-capped in every launch, the candidate in one of the three it was read in.
        round.samples = {sample(1770, clock_event_reason::sw_power_cap, 700), sample(1770, 0x4, 699),
                         sample(1962, i == 0 ? std::optional<std::uint64_t>(clock_event_reason::sw_power_cap)
                                             : (i == 3 ? std::nullopt : std::optional<std::uint64_t>(0)),
                                640)};
        run.rounds.push_back(round);
    }
    InterleavedRound throttled = run.rounds.front();
    throttled.throttled = true;
    throttled.samples[candidate_arm] = sample(900, clock_event_reason::hw_thermal, 300);
    run.rounds.push_back(throttled);
    run.kept_rounds = 4;
    run.throttled_rounds = 1;
    const TimingStats stats = timing_stats({run}, settings_for_tests().bootstrap);
    ASSERT_EQ(stats.conditions.size(), 3u);
    const ArmConditions &base = stats.conditions[baseline_arm], &cand = stats.conditions[candidate_arm];
    EXPECT_EQ(base.clock_median_mhz, 1770);
    EXPECT_EQ(base.power_median_w, 700);
    EXPECT_EQ(base.power_limited_share, 1.0);
    EXPECT_EQ(cand.clock_median_mhz, 1962) << "the throttled round's 900 MHz is not the candidate's";
    EXPECT_EQ(cand.power_median_w, 640);
    EXPECT_EQ(cand.temperature_median_c, 60);
    ASSERT_TRUE(cand.power_limited_share);
    EXPECT_DOUBLE_EQ(*cand.power_limited_share, 1.0 / 3) << "of the three launches NVML read";
    EXPECT_EQ(cand.thermal_limited_share, 0.0);
    EXPECT_TRUE(arms_at_different_clocks({base.clock_median_mhz, stats.conditions[control_arm].clock_median_mhz,
                                          cand.clock_median_mhz},
                                         0.01));
    EXPECT_FALSE(arms_at_different_clocks({base.clock_median_mhz, stats.conditions[control_arm].clock_median_mhz}, 0.01));
    EXPECT_EQ(clock_event_reason_names(clock_event_reason::sw_power_cap | clock_event_reason::sync_boost),
              "power cap, sync boost");
    EXPECT_EQ(clock_event_reason_names(0), "none");
}

TEST(StopCheck, CadenceGrowsWithTheKeptRounds) {
    EXPECT_EQ(next_stop_check(20), 25u);
    EXPECT_EQ(next_stop_check(49), 54u);
    EXPECT_EQ(next_stop_check(100), 110u);
    EXPECT_EQ(next_stop_check(2000), 2200u);
}

// ---- A/A verdict ----

TEST(TooNoisy, AnIntervalWhollyOutsideTheToleranceBandFailsTheMachine) {
    const double tolerance = aa_tolerance(0.005, 55.0);
    EXPECT_DOUBLE_EQ(tolerance, 0.0005) << "a tenth of the default target half-width";
    RatioInterval quiet;
    quiet.median = 1.0004, quiet.lo = 0.9991, quiet.hi = 1.0012, quiet.n = 80, quiet.confidence = 0.95;
    EXPECT_FALSE(too_noisy_reason(quiet, tolerance).has_value());

    RatioInterval noisy = quiet;
    noisy.median = 1.0210, noisy.lo = 1.0150, noisy.hi = 1.0290;
    const auto reason = too_noisy_reason(noisy, tolerance);
    ASSERT_TRUE(reason.has_value());
    EXPECT_NE(reason->find("too noisy"), std::string::npos) << *reason;
    EXPECT_NE(reason->find("1.0150 .. 1.0290"), std::string::npos) << *reason;
    EXPECT_NE(reason->find("95%"), std::string::npos) << *reason;
    EXPECT_NE(reason->find("1 +- 0.050%"), std::string::npos) << *reason;

    RatioInterval below = quiet;
    below.median = 0.997, below.lo = 0.996, below.hi = 0.9994;
    EXPECT_TRUE(too_noisy_reason(below, tolerance).has_value()) << "0.06% below 1 is outside the band";
    // The two A/A intervals an H200 gave with four arms: they miss 1 by 0.01%, well inside the band.
    RatioInterval slightly_below = quiet;
    slightly_below.median = 0.9995, slightly_below.lo = 0.9980, slightly_below.hi = 0.9999;
    EXPECT_FALSE(too_noisy_reason(slightly_below, tolerance).has_value());
    RatioInterval slightly_above = quiet;
    slightly_above.median = 1.0001, slightly_above.lo = 1.00001, slightly_above.hi = 1.0003;
    EXPECT_FALSE(too_noisy_reason(slightly_above, tolerance).has_value());
    RatioInterval touching = quiet;
    touching.lo = 1.0 + tolerance;
    EXPECT_FALSE(too_noisy_reason(touching, tolerance).has_value()) << "an interval ending at the band's edge reaches it";
}

// A kernel of a few microseconds is timed to one event tick: the band never gets finer than that.
TEST(TooNoisy, TheBandIsNeverFinerThanOneEventTickOfTheBaseline) {
    EXPECT_DOUBLE_EQ(aa_tolerance(0.005, 0.016), kEventResolutionMs / 0.016);  // 3.1 % at 16 us
    EXPECT_DOUBLE_EQ(aa_tolerance(0.005, 0.5), 0.001);                          // one tick at 0.5 ms
    EXPECT_DOUBLE_EQ(aa_tolerance(0.005, 0.0), 0.0005);
    // The A/A an H200 gave for the 16 us shape of the GPU suite's small set: inside a tick there, and
    // far outside the band of a 55 ms kernel.
    RatioInterval tiny;
    tiny.median = 0.9938, tiny.lo = 0.9898, tiny.hi = 0.9959, tiny.n = 176, tiny.confidence = 0.95;
    EXPECT_FALSE(too_noisy_reason(tiny, aa_tolerance(0.005, 0.016)).has_value());
    EXPECT_TRUE(too_noisy_reason(tiny, aa_tolerance(0.005, 55.0)).has_value());
}

TEST(TooNoisy, ASystematicallySlowerControlIsCaught) {
    SyntheticTimer timer;
    timer.base_ms = {55.0, 56.1, 74.0};  // the "same" kernel 2% slower in its second slot
    const TimingSettings settings = settings_for_tests();
    const TimingStats stats = timing_stats({measure_interleaved(timer, settings, timer.clock())}, settings.bootstrap);
    EXPECT_DOUBLE_EQ(stats.control_vs_baseline().median, 56.1 / 55.0);
    EXPECT_TRUE(too_noisy_reason(stats.control_vs_baseline(), aa_tolerance(settings.target_half_width, 55.0)).has_value());
}

// ---- Throughput and the L2 decision ----

AttentionProblem block24(bool causal) {
    AttentionProblem p;
    p.shape.batch = 1, p.shape.heads_q = 40, p.shape.heads_kv = 40;
    p.shape.len_q = p.shape.len_kv = 32760, p.shape.head_dim = 128;
    p.causal = causal;
    p.sm_scale = 0.08838834764831845f;
    return p;
}

TEST(AttentionTops, FourBHNNDOverTheTime) {
    // 4 * 40 * 32760^2 * 128 = 2.19792e13 operations; at 55.46 ms that is 396.3 TOPS.
    const double operations = 4.0 * 40 * 32760.0 * 32760.0 * 128;
    EXPECT_DOUBLE_EQ(attention_tops(block24(false), 55.46), operations / 0.05546 / 1e12);
    EXPECT_NEAR(attention_tops(block24(false), 55.46), 396.31, 0.01);
    EXPECT_DOUBLE_EQ(attention_tops(block24(true), 55.46), attention_tops(block24(false), 55.46) / 2);
    AttentionProblem cross = block24(false);
    cross.shape.len_kv = 1024, cross.shape.batch = 2, cross.shape.head_dim = 64;
    EXPECT_DOUBLE_EQ(attention_tops(cross, 2.0), 4.0 * 2 * 40 * 32760.0 * 1024 * 64 / 0.002 / 1e12);
    EXPECT_THROW(attention_tops(block24(false), 0.0), Error);
}

TEST(L2Flush, OnlyWhenTheWorkingSetCouldStayInL2) {
    const std::int64_t l2 = 62914560;  // H200: 60 MiB
    EXPECT_TRUE(needs_l2_flush(1u << 20, l2));
    EXPECT_TRUE(needs_l2_flush(2 * 62914560 - 1, l2));
    EXPECT_FALSE(needs_l2_flush(2 * 62914560, l2));
    // Block 24: q, k int8 and v fp8 of 1*32760*40*128 bytes each, plus a bf16 output twice that size.
    const std::size_t elements = 32760ull * 40 * 128;
    EXPECT_FALSE(needs_l2_flush(3 * elements + 2 * elements, l2));
    EXPECT_THROW(needs_l2_flush(1, 0), Error);
}

}  // namespace
}  // namespace s2tp::unit_ab_timing

namespace s2tp::unit_ab_timing {
namespace {

TEST(SpeedInWords, SaysHowMuchFasterOrSlowerTheCandidateIs) {
    EXPECT_EQ(speed_in_words(1.346), "the candidate is 34.6% slower (1.346x the baseline's time)");
    EXPECT_EQ(speed_in_words(0.88), "the candidate is 12.0% faster (0.880x the baseline's time)");
    EXPECT_EQ(speed_in_words(1.0004), "the candidate is as fast as the baseline (1.000x the baseline's time)");
    EXPECT_EQ(speed_in_words(0.9996), "the candidate is as fast as the baseline (1.000x the baseline's time)");
    EXPECT_EQ(speed_in_words(1.2, "wide-v"), "wide-v is 20.0% slower (1.200x the baseline's time)");
}

}  // namespace
}  // namespace s2tp::unit_ab_timing
