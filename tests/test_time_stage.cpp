// The time stage's stop conditions, each on hand-made output records: unwritten outputs, a
// nondeterministic baseline, a candidate that differs, a pin mismatch, outputs that changed during
// timing, too few rounds; and the measurement file a --repeat child hands its parent.
#include "stages/time_stage.h"

#include "support/errors.h"

#include <gtest/gtest.h>

#include <sstream>

namespace s2tp::unit_time_stage {
namespace {

const std::vector<std::string> arms = arm_names({"wide-v", "same-sm"});

std::vector<OutputDigest> all_equal() { return {{"aa", 0}, {"aa", 0}, {"aa", 0}, {"aa", 0}}; }

bool mentions(const std::vector<std::string> &reasons, const std::string &text) {
    for (const std::string &reason : reasons)
        if (reason.find(text) != std::string::npos) return true;
    return false;
}

TEST(TimeStopConditions, MatchingOutputsPassEveryCheck) {
    EXPECT_TRUE(first_output_failures(arms, all_equal(), std::string("aa"), false, "sm_90a").empty());
    EXPECT_TRUE(first_output_failures(arms, all_equal(), std::nullopt, false, "sm_90a").empty());
    EXPECT_TRUE(changed_output_reasons(arms, all_equal(), all_equal(), "").empty());
}

TEST(TimeStopConditions, UnwrittenOutputsNameTheArmAndTheCount) {
    std::vector<OutputDigest> first = all_equal();
    first[3].nan_count = 128;
    const std::vector<std::string> reasons = unwritten_output_reasons(arms, first);
    ASSERT_EQ(reasons.size(), 1u);
    EXPECT_NE(reasons[0].find("same-sm left 128 output elements unwritten"), std::string::npos) << reasons[0];
    EXPECT_TRUE(mentions(first_output_failures(arms, first, std::nullopt, false, "sm_90a"), "unwritten"));
}

TEST(TimeStopConditions, AControlThatDiffersMeansANondeterministicBaseline) {
    std::vector<OutputDigest> first = all_equal();
    EXPECT_FALSE(nondeterminism_reason(first));
    first[control_arm].sha256 = "ab";
    const auto reason = nondeterminism_reason(first);
    ASSERT_TRUE(reason);
    EXPECT_NE(reason->find("not deterministic"), std::string::npos);
    EXPECT_NE(reason->find("aa then ab"), std::string::npos) << *reason;
}

TEST(TimeStopConditions, EachDifferingCandidateIsNamed) {
    std::vector<OutputDigest> first = all_equal();
    first[2].sha256 = "bb";
    const std::vector<std::string> reasons = candidate_mismatch_reasons(arms, first);
    ASSERT_EQ(reasons.size(), 1u);
    EXPECT_NE(reasons[0].find("wide-v's output differs from the baseline's: sha256 bb vs aa"), std::string::npos)
        << reasons[0];
    first[3].sha256 = "cc";
    EXPECT_EQ(candidate_mismatch_reasons(arms, first).size(), 2u);
}

TEST(TimeStopConditions, APinMismatchFailsUnlessRePinning) {
    EXPECT_FALSE(pin_mismatch_reason("aa", std::nullopt, "sm_90a")) << "nothing pinned: nothing to differ from";
    EXPECT_FALSE(pin_mismatch_reason("aa", std::string("aa"), "sm_90a"));
    const auto reason = pin_mismatch_reason("aa", std::string("ff"), "sm_90a");
    ASSERT_TRUE(reason);
    EXPECT_NE(reason->find("pinned for sm_90a (ff)"), std::string::npos) << *reason;
    EXPECT_FALSE(first_output_failures(arms, all_equal(), std::string("ff"), false, "sm_90a").empty());
    EXPECT_TRUE(first_output_failures(arms, all_equal(), std::string("ff"), true, "sm_90a").empty())
        << "under --pin the earlier pin is replaced, not checked";
}

TEST(TimeStopConditions, AnOutputThatChangedDuringTimingIsNamedWithItsRepeat) {
    std::vector<OutputDigest> after = all_equal();
    after[2].sha256 = "a0";
    const std::vector<std::string> reasons = changed_output_reasons(arms, all_equal(), after, "repeat 3");
    ASSERT_EQ(reasons.size(), 1u);
    EXPECT_NE(reasons[0].find("wide-v launch's output changed during timing in repeat 3"), std::string::npos)
        << reasons[0];
    EXPECT_EQ(changed_output_reasons(arms, all_equal(), {}, "").size(), 1u) << "a missing record is a failure";
}

TEST(TimeStopConditions, TooFewRoundsNeedAHigherBudget) {
    TimingSettings settings;
    settings.min_rounds = 20;
    settings.budget_seconds = 12;
    TimingRun run;
    run.kept_rounds = 19;
    run.rounds.resize(21);
    const auto reason = too_few_rounds_reason(run, settings, "repeat 2");
    ASSERT_TRUE(reason);
    EXPECT_NE(reason->find("only 19 unthrottled rounds (of 21) fit in the budget of 12 s in repeat 2"),
              std::string::npos)
        << *reason;
    // A repeat child's share of the budget is printed as it was, not rounded to a whole second.
    settings.budget_seconds = 0.8;
    EXPECT_NE(too_few_rounds_reason(run, settings, "")->find("the budget of 0.8 s"), std::string::npos);
    settings.budget_seconds = 12;
    run.kept_rounds = 20;
    EXPECT_FALSE(too_few_rounds_reason(run, settings, ""));
}

TEST(TimeRepeats, EachRepeatGetsAnEvenShareOfTheBudgetAndItsOwnOrderSeed) {
    TimingSettings settings;
    settings.budget_seconds = 60;
    settings.order_seed = 100;
    const TimingSettings third = repeat_settings(settings, 5, 2);
    EXPECT_DOUBLE_EQ(third.budget_seconds, 12.0);
    EXPECT_EQ(third.order_seed, 102u);
    EXPECT_EQ(third.min_rounds, settings.min_rounds);
}

// The request a repeat's child gets carries its parent's derived settings: 60 s in 100 repeats is 0.6 s
// each, below --budget's user range, and the child's own seed; the words name the measurement file.
TEST(TimeRepeats, AChildsRequestCarriesTheDerivedBudgetAndSeed) {
    const RunDirectory run("/runs/r");
    TimingSettings settings;
    settings.budget_seconds = 60;
    settings.order_seed = 100;
    settings.min_rounds = 20;
    settings.target_half_width = 0.0005;
    const TimeStageInputs inputs{run, WorkloadSpec{}, std::nullopt, BuiltKernels{}, DeviceFacts{}, settings, 100,
                                 std::nullopt, false, false, {}, 0, 1, {}, {}};
    const RepeatChildRequest request = RepeatChildRequest::of_repeat(inputs, 4, "/runs/r/reports/time-repeat-5.toml");
    EXPECT_DOUBLE_EQ(request.budget_seconds, 0.6);
    EXPECT_EQ(request.order_seed, 104u);
    EXPECT_EQ(request.device_index, 1);
    const std::vector<std::string> expected{"--run", "/runs/r", "--repeat-child", "/runs/r/reports/time-repeat-5.toml",
                                            "--budget", "0.6", "--min-rounds", "20", "--target-half-width", "5e-04",
                                            "--order-seed", "104", "--device", "1"};
    EXPECT_EQ(request.to_argv(), expected);
}

TEST(TimeRepeats, AChildsMeasurementSurvivesItsFile) {
    ArmMeasurement m;
    m.first = {{"aa", 0}, {"aa", 0}, {"aa", 3}};
    m.last = {{"aa", 0}, {"aa", 0}, {"ab", 0}};
    m.footprint_bytes = 1234567;
    m.l2_flushed = true;
    m.timing.stopped_by = StopReason::half_width;
    m.timing.seconds = 4.5;
    for (int i = 0; i < 3; ++i) {
        InterleavedRound round;
        round.order = {2, 0, 1};
        round.samples = {{55.0 + i, 1980}, {55.1, 1980}, {74.0, i == 1 ? 900.0 : 1980.0}};
        round.throttled = i == 1;
        m.timing.rounds.push_back(round);
    }
    std::ostringstream text;
    text << m.to_toml();
    const ArmMeasurement read = ArmMeasurement::from_toml(toml::parse(text.str()), "test");
    EXPECT_EQ(read.first[2].nan_count, 3);
    EXPECT_EQ(read.last[2].sha256, "ab");
    EXPECT_EQ(read.footprint_bytes, 1234567u);
    EXPECT_TRUE(read.l2_flushed);
    EXPECT_EQ(read.timing.stopped_by, StopReason::half_width);
    ASSERT_EQ(read.timing.rounds.size(), 3u);
    EXPECT_EQ(read.timing.kept_rounds, 2u);
    EXPECT_EQ(read.timing.throttled_rounds, 1u);
    EXPECT_EQ(read.timing.rounds[2].order, (RoundOrder{2, 0, 1}));
    EXPECT_DOUBLE_EQ(read.timing.rounds[2][baseline_arm].time_ms, 57.0);
    EXPECT_DOUBLE_EQ(read.timing.rounds[1][2].sm_clock_mhz, 900.0);
}

TEST(TimeRepeats, AMalformedChildFileIsAnInternalError) {
    EXPECT_THROW(ArmMeasurement::from_toml(toml::parse("rounds = []"), "f"), Error);
    EXPECT_THROW(ArmMeasurement::from_toml(toml::parse("first = [{sha256 = 'a'}, {sha256 = 'a'}]\n"
                                                       "[[rounds]]\norder = [0]\ntime_ms = [1.0]\nsm_clock_mhz = [1.0]\n"),
                                           "f"),
                 Error);
}

}  // namespace
}  // namespace s2tp::unit_time_stage
