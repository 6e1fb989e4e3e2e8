// The time stage's stop conditions, each on hand-made output records: unwritten outputs, a
// nondeterministic baseline, a candidate that differs, a pin mismatch, outputs that changed during
// timing, too few rounds; and the measurement file a --repeat child hands its parent.
#include "stages/time/figures.h"
#include "stages/time/processes.h"
#include "stages/time/repeat_protocol.h"
#include "stages/time/stop_rule.h"
#include "stages/time/workload.h"

#include "build_config.h"
#include "request_round_trip.h"
#include "model/experiment_manifest.h"

#include "scratch_directory.h"
#include "support/errors.h"

#include <gtest/gtest.h>

#include <atomic>
#include <sstream>

namespace s2tp::unit_time_stage {
namespace {

const std::vector<std::string> arms = arm_names({"wide-v", "same-sm"});
const PinKey sm89{bare_pin_kernel, "sm_90a"};

std::vector<OutputDigest> all_equal() { return {{"aa", 0}, {"aa", 0}, {"aa", 0}, {"aa", 0}}; }

bool mentions(const std::vector<std::string> &reasons, const std::string &text) {
    for (const std::string &reason : reasons)
        if (reason.find(text) != std::string::npos) return true;
    return false;
}

TEST(TimeStopConditions, MatchingOutputsPassEveryCheck) {
    EXPECT_TRUE(first_output_failures(arms, all_equal(), std::string("aa"), false, sm89).empty());
    EXPECT_TRUE(first_output_failures(arms, all_equal(), std::nullopt, false, sm89).empty());
    EXPECT_TRUE(changed_output_reasons(arms, all_equal(), all_equal(), "").empty());
    EXPECT_TRUE(recheck_failure_reasons(arms, TimingRun{}, "").empty());
}

TEST(TimeStopConditions, UnwrittenOutputsNameTheArmAndTheCount) {
    std::vector<OutputDigest> first = all_equal();
    first[3].nan_count = 128;
    const std::vector<std::string> reasons = unwritten_output_reasons(arms, first);
    ASSERT_EQ(reasons.size(), 1u);
    EXPECT_NE(reasons[0].find("same-sm left 128 output elements unwritten"), std::string::npos) << reasons[0];
    EXPECT_TRUE(mentions(first_output_failures(arms, first, std::nullopt, false, sm89), "unwritten"));
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
    EXPECT_FALSE(pin_mismatch_reason("aa", std::nullopt, sm89)) << "nothing pinned: nothing to differ from";
    EXPECT_FALSE(pin_mismatch_reason("aa", std::string("aa"), sm89));
    const auto reason = pin_mismatch_reason("aa", std::string("ff"), sm89);
    ASSERT_TRUE(reason);
    // Issue 39 item 3: the message names the kernel that ran and the kernel the pin is of.
    EXPECT_NE(reason->find("the baseline, kernel sageattention-sm89 built for sm_90a, gave output sha256 aa, but the "
                           "workload pins ff for kernel sageattention-sm89 on sm_90a"),
              std::string::npos)
        << *reason;
    EXPECT_FALSE(first_output_failures(arms, all_equal(), std::string("ff"), false, sm89).empty());
    EXPECT_TRUE(first_output_failures(arms, all_equal(), std::string("ff"), true, sm89).empty())
        << "under --pin the earlier pin is replaced, not checked";
}

TEST(TimeStopConditions, AFirstOutputThatDiffersInAnotherRepeatIsNamedWithItsRepeat) {
    std::vector<OutputDigest> other = all_equal();
    other[2].sha256 = "a0";
    const std::vector<std::string> reasons = changed_output_reasons(arms, all_equal(), other, "repeat 3");
    ASSERT_EQ(reasons.size(), 1u);
    EXPECT_NE(reasons[0].find("wide-v launch's output in repeat 3 differs from the first measurement's"),
              std::string::npos)
        << reasons[0];
    EXPECT_EQ(changed_output_reasons(arms, all_equal(), {}, "").size(), 1u) << "a missing record is a failure";
}

TEST(TimeStopConditions, AFailedRecheckNamesTheArmTheRoundAndTheInputSet) {
    TimingRun run;
    run.recheck_failures.push_back({16, 2, 3, "left 121555968 output elements unwritten (still the NaN poison)"});
    const std::vector<std::string> reasons = recheck_failure_reasons(arms, run, "repeat 2");
    ASSERT_EQ(reasons.size(), 1u);
    EXPECT_NE(reasons[0].find("the same-sm left 121555968 output elements unwritten (still the NaN poison) in timed "
                              "round 17 on input set 2 in repeat 2"),
              std::string::npos)
        << reasons[0];
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
                                 std::nullopt, false, false, false, {}, 0, 1, {}, {}};
    const RepeatChildRequest request = RepeatChildRequest::of_repeat(inputs, 4, "/runs/r/reports/time-repeat-5.toml");
    EXPECT_DOUBLE_EQ(request.budget_seconds, 0.6);
    EXPECT_EQ(request.order_seed, 104u);
    EXPECT_EQ(request.device_index, 1);
    const std::vector<std::string> expected{"/bin/sage2tp", "time-repeat", "--run", "/runs/r",
                                            "--measurement", "/runs/r/reports/time-repeat-5.toml", "--budget", "0.6",
                                            "--min-rounds", "20", "--target-half-width", "5e-04", "--order-seed", "104",
                                            "--device", "1"};
    EXPECT_EQ(request.to_argv("/bin/sage2tp"), expected);
}

// The words the parent starts a repeat's child with are the ones time-repeat reads back.
TEST(TimeRepeats, WhatTheParentWritesIsWhatTheChildReads) {
    RepeatChildRequest sent{"/runs/r", "/runs/r/reports/time-repeat-2.toml", "/work/shape.toml", 0.6, 20, 0.0005,
                            101, 1, true};
    for (const bool with_workload : {true, false}) {
        if (!with_workload) {
            sent.workload_file.reset();
            sent.pin = false;
        }
        const std::vector<std::string> words = sent.to_argv("/usr/bin/sage2tp");
        // Every field is in the words, so the child read the request sent when it writes the same words.
        EXPECT_EQ(read_back<RepeatChildRequest>(words, repeat_child_command).to_argv("/usr/bin/sage2tp"), words);
    }
}

TEST(TimeRepeats, AChildsMeasurementSurvivesItsFile) {
    ArmMeasurement m;
    m.first = {{"aa", 0}, {"aa", 0}, {"aa", 3}};
    m.input_set_failures = {"the candidate ... (on input set 2 of 3, seed 7)"};
    m.timing.input_sets = 3;
    m.timing.recheck_failures = {{2, 1, 2, "left 5 output elements unwritten"}};
    m.footprint_bytes = 1234567;
    m.l2_flushed = true;
    m.timing.stopped_by = StopReason::half_width;
    m.timing.seconds = 4.5;
    for (int i = 0; i < 3; ++i) {
        InterleavedRound round;
        round.order = {2, 0, 1};
        round.samples = {{55.0 + i, 1980}, {55.1, 1980}, {74.0, i == 1 ? 900.0 : 1980.0}};
        round.throttled = i == 1;
        round.input_set = static_cast<std::size_t>(i);
        round.rechecked = i == 2;
        m.timing.rounds.push_back(round);
    }
    std::ostringstream text;
    text << m.to_toml();
    const ArmMeasurement read = ArmMeasurement::from_toml(toml::parse(text.str()), "test");
    EXPECT_EQ(read.first[2].nan_count, 3);
    EXPECT_EQ(read.input_set_failures, m.input_set_failures);
    EXPECT_EQ(read.timing.input_sets, 3u);
    ASSERT_EQ(read.timing.recheck_failures.size(), 1u);
    EXPECT_EQ(read.timing.recheck_failures[0].round, 2u);
    EXPECT_EQ(read.timing.recheck_failures[0].input_set, 1u);
    EXPECT_EQ(read.timing.recheck_failures[0].arm, 2u);
    EXPECT_EQ(read.timing.recheck_failures[0].what, "left 5 output elements unwritten");
    EXPECT_EQ(read.timing.rounds[2].input_set, 2u);
    EXPECT_TRUE(read.timing.rounds[2].rechecked);
    EXPECT_FALSE(read.timing.rounds[1].rechecked);
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

// ---- Several GPUs: the processes' dealing and the orchestration, with the children's measurements
// made by the test (the real child is `sage2tp time-repeat` on a GPU) ----

DeviceFacts gpu(int index, const std::string &name) {
    DeviceFacts d;
    d.index = index;
    d.name = name;
    d.uuid = "GPU-" + std::to_string(index);
    d.pci_bus_id = "0000:0" + std::to_string(index) + ":00.0";
    return d;
}

TimingSettings several_gpu_settings() {
    TimingSettings settings;
    settings.budget_seconds = 60;
    settings.order_seed = 100;
    settings.min_rounds = 20;
    settings.target_half_width = 0.0005;
    settings.bootstrap.resamples = 200;
    return settings;
}

TimeStageInputs several_gpu_inputs(const RunDirectory &run, std::vector<DeviceFacts> gpus, std::size_t repeats) {
    BuiltKernels kernels;
    kernels.baseline.variant = "baseline";
    kernels.baseline.abi = &kernel_abi("sage2tp", "the test");
    kernels.candidates = {{"wide-v", {}, nullptr, {}}};
    kernels.arch = "sm_90a";
    const DeviceFacts first = gpus.front();
    return TimeStageInputs{run,   WorkloadSpec{}, std::nullopt, kernels, first, several_gpu_settings(), repeats,
                           std::nullopt, false, false, false, {}, 0, first.index, TimeAccuracy{}, std::move(gpus),
                           "time"};
}

// One process's measurement: matching outputs and 40 kept rounds whose candidate/baseline ratio is `ratio`.
ArmMeasurement measured_at(double ratio) {
    ArmMeasurement m;
    m.first = {{"aa", 0}, {"aa", 0}, {"aa", 0}};
    m.timing.input_sets = 3;
    for (std::size_t i = 0; i < 40; ++i) {
        const double wobble = 1.0 + (i % 2 ? 0.001 : -0.001) * static_cast<double>(i % 5);
        InterleavedRound round;
        round.order = {0, 1, 2};
        round.samples = {{1.0 * wobble, 1980}, {1.0 * wobble, 1980}, {ratio * wobble, 1980}};
        round.input_set = i % 3;
        round.rechecked = i % 4 == 3;
        m.timing.rounds.push_back(round);
    }
    m.timing.kept_rounds = 40;
    m.timing.stopped_by = StopReason::budget;
    return m;
}

// 2 GPUs and 3 repeats are 6 processes: the GPUs' processes of one repeat side by side, each GPU's
// repeats sharing the whole budget, each process its own order seed.
TEST(TimeSeveralGpus, EachRepeatIsOneProcessPerGpuWithItsOwnSeed) {
    const RunDirectory run("/runs/r");
    const TimeStageInputs inputs = several_gpu_inputs(run, {gpu(2, "NVIDIA H200"), gpu(5, "NVIDIA H200")}, 3);
    std::vector<int> devices;
    for (std::size_t p = 0; p < 6; ++p) {
        const RepeatChildRequest request = RepeatChildRequest::of_repeat(inputs, p, "/m.toml");
        devices.push_back(request.device_index);
        EXPECT_DOUBLE_EQ(request.budget_seconds, 20.0) << p;
        EXPECT_EQ(request.order_seed, 100u + p);
    }
    EXPECT_EQ(devices, (std::vector<int>{2, 5, 2, 5, 2, 5}));
}

TEST(TimeSeveralGpus, GpusOfSeveralModelsGiveAVerdictEachAndNoRatioAcrossThem) {
    ScratchDirectory dir("several-models");
    const RunDirectory run(dir.path());
    const TimeStageInputs inputs =
        several_gpu_inputs(run, {gpu(0, "NVIDIA H200"), gpu(1, "NVIDIA H100 80GB HBM3")}, 2);
    const TimedWorkload timed = time_workload(inputs, Reporter(false, 0), [](std::size_t p) {
        return measured_at(p % 2 == 0 ? 0.90 : 1.05);
    });
    EXPECT_EQ(timed.result.status, StageStatus::passed) << (timed.result.reasons.empty() ? "" : timed.result.reasons[0]);
    const TimeFigures &f = timed.figures;
    ASSERT_EQ(f.gpu_results.size(), 2u);
    const GpuCandidateTiming *h200 = f.gpu_results[0].candidate("wide-v");
    const GpuCandidateTiming *h100 = f.gpu_results[1].candidate("wide-v");
    ASSERT_TRUE(h200 && h200->ratio && h100 && h100->ratio);
    EXPECT_NEAR(*h200->ratio->median, 0.90, 0.005);
    EXPECT_NEAR(*h100->ratio->median, 1.05, 0.005);
    EXPECT_EQ(h100->ratio->repeat_medians.size(), 2u) << "a GPU's repeats are its groups";
    EXPECT_EQ(f.gpu_results[1].name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(f.gpu_results[1].uuid, "GPU-1");
    // Nothing combined across the two models.
    const CandidateTimeFigures *combined = f.candidate("wide-v");
    ASSERT_TRUE(combined);
    EXPECT_FALSE(combined->ratio);
    EXPECT_FALSE(f.baseline);
    EXPECT_NE(f.summary->find("GPU 1 NVIDIA H100 80GB HBM3"), std::string::npos) << *f.summary;
}

TEST(TimeSeveralGpus, OneModelCombinesEveryProcessAndALostGpuIsNeverAPass) {
    ScratchDirectory dir("lost-gpu");
    const RunDirectory run(dir.path());
    const TimeStageInputs inputs = several_gpu_inputs(run, {gpu(0, "NVIDIA H200"), gpu(1, "NVIDIA H200")}, 3);
    std::atomic<int> children{0};
    const TimedWorkload timed = time_workload(inputs, Reporter(false, 0), [&](std::size_t p) {
        ++children;
        // GPU 1 goes away in the second repeat, as a child that exits 3 with the device's error.
        if (p == 3) fail(ExitCode::missing_tool, "time: GPU 1 repeat 2 exited with 3: cudaErrorDevicesUnavailable");
        return measured_at(0.95);
    });
    EXPECT_EQ(children.load(), 5) << "a lost GPU runs no later repeat";
    EXPECT_EQ(timed.result.status, StageStatus::failed);
    bool named = false;
    for (const std::string &reason : timed.result.reasons) named = named || reason.find("GPU 1 NVIDIA H200") != std::string::npos;
    EXPECT_TRUE(named);
    const TimeFigures &f = timed.figures;
    ASSERT_EQ(f.gpus.size(), 2u);
    EXPECT_EQ(f.gpus[0].ran, 3);
    EXPECT_EQ(f.gpus[1].ran, 1);
    EXPECT_EQ(f.gpus[1].checks, 3);
    EXPECT_NE(f.gpus[1].lost.find("cudaErrorDevicesUnavailable"), std::string::npos);
    EXPECT_TRUE(f.gpu_results.empty());
    // The other GPU's measurements are kept: 4 processes as the combined interval's groups.
    const CandidateTimeFigures *c = f.candidate("wide-v");
    ASSERT_TRUE(c && c->ratio);
    EXPECT_EQ(c->ratio->repeat_medians.size(), 4u);
    EXPECT_EQ(timed.runs.size(), 4u);
}

// A repeat whose re-check failed fails the stage, with a reason naming the arm, the round, the input
// set and the repeat; no later repeat is started, and the figures count every arm's re-checks.
TEST(TimeRepeats, AFailedRecheckFailsTheStageAndIsCountedPerArm) {
    ScratchDirectory dir("recheck-failed");
    const RunDirectory run(dir.path());
    const TimeStageInputs inputs = several_gpu_inputs(run, {gpu(0, "NVIDIA H200")}, 3);
    int children = 0;
    const TimedWorkload timed = time_workload(inputs, Reporter(false, 0), [&](std::size_t p) {
        ++children;
        ArmMeasurement m = measured_at(0.5);
        if (p == 1) {  // stopped by its failed re-check after 4 rounds, fewer than min_rounds
            m.timing.rounds.resize(4);
            m.timing.kept_rounds = 4;
            m.timing.rounds.back().rechecked = true;
            m.timing.recheck_failures.push_back({3, 0, 2, "left 99 output elements unwritten (still the NaN poison)"});
            m.timing.stopped_by = StopReason::recheck_failed;
        }
        return m;
    });
    EXPECT_EQ(children, 2) << "no repeat after the one that failed its re-check";
    EXPECT_EQ(timed.result.status, StageStatus::failed);
    EXPECT_TRUE(mentions(timed.result.reasons, "the wide-v left 99 output elements unwritten (still the NaN poison) in "
                                               "timed round 4 on input set 0 in repeat 2"));
    EXPECT_FALSE(mentions(timed.result.reasons, "raise --budget")) << "the re-check ended it, not the budget";
    const TimeFigures &f = timed.figures;
    EXPECT_EQ(f.input_sets, 3);
    ASSERT_EQ(f.recheck.size(), 3u);
    EXPECT_EQ(f.recheck.at("baseline").rounds, 10 + 1);
    EXPECT_EQ(f.recheck.at("baseline").failed, 0);
    EXPECT_EQ(f.recheck.at("wide-v").rounds, 10 + 1);
    EXPECT_EQ(f.recheck.at("wide-v").failed, 1);
    EXPECT_EQ(f.outputs_match, false);
    EXPECT_NE(time_figures_text(f, "").find("re-checked after up to 11 rounds: baseline 11, baseline_control 11, "
                                            "wide-v 11 (1 failed)"),
              std::string::npos)
        << time_figures_text(f, "");
}

TEST(TimeSeveralGpus, EveryGpuLostIsExitThree) {
    ScratchDirectory dir("all-lost");
    const RunDirectory run(dir.path());
    const TimeStageInputs inputs = several_gpu_inputs(run, {gpu(0, "NVIDIA H200"), gpu(1, "NVIDIA H100")}, 1);
    try {
        time_workload(inputs, Reporter(false, 0), [](std::size_t) -> ArmMeasurement {
            fail(ExitCode::missing_tool, "no CUDA device (cudaErrorNoDevice)");
        });
        FAIL() << "every GPU lost must not give a result";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::missing_tool);
        EXPECT_NE(std::string(e.what()).find("every GPU was lost"), std::string::npos) << e.what();
    }
}

// Issue 39 item 2: a single process's candidate intervals carry the GPU model's between-process
// component; the A/A control's and a run of several processes' do not.
TEST(TimeIntervals, OneProcessWidensItsCandidatesByTheBetweenProcessComponentOnly) {
    const RunDirectory run("/runs/r");
    TimeStageInputs inputs = several_gpu_inputs(run, {gpu(0, "NVIDIA H200")}, 1);
    inputs.gpus.clear();
    inputs.between_process = {0.001, true, "measured"};
    TimingRun one = measured_at(0.95).timing;
    const TimingStats raw = timing_stats({one}, inputs.settings.bootstrap);
    const TimingStats wide = with_between_process(inputs, raw);
    const RatioInterval &before = raw.vs_baseline(first_candidate_arm), &after = wide.vs_baseline(first_candidate_arm);
    EXPECT_DOUBLE_EQ(after.median, before.median);
    EXPECT_LT(after.lo, before.lo);
    EXPECT_GT(after.hi, before.hi);
    EXPECT_GT(after.half_width_rel, 1.959 * 0.001) << "at least the component's own 95% half-width";
    EXPECT_EQ(wide.control_vs_baseline().lo, raw.control_vs_baseline().lo) << "the A/A control is left as measured";
    inputs.repeats = 3;
    EXPECT_EQ(with_between_process(inputs, raw).vs_baseline(first_candidate_arm).lo, before.lo)
        << "several processes measure the component themselves";
}

// Issue 39 item 4: a --repeat child hands its parent NVML's readings with every sample, and a sample
// NVML gave nothing for comes back without them.
TEST(TimeRepeats, AChildsMeasurementCarriesEachLaunchsPowerReadingBack) {
    ArmMeasurement m = measured_at(0.95);
    m.timing.rounds[0].samples[0].power = {clock_event_reason::sw_power_cap | clock_event_reason::sync_boost, 699.5, 61};
    const ArmMeasurement back = ArmMeasurement::from_toml(m.to_toml(), "the test");
    ASSERT_EQ(back.timing.rounds.size(), m.timing.rounds.size());
    const PowerReading &read = back.timing.rounds[0].samples[0].power;
    EXPECT_EQ(read.clock_reasons, clock_event_reason::sw_power_cap | clock_event_reason::sync_boost);
    EXPECT_EQ(read.power_w, 699.5);
    EXPECT_EQ(read.temperature_c, 61);
    const PowerReading &none = back.timing.rounds[0].samples[1].power;
    EXPECT_FALSE(none.clock_reasons || none.power_w || none.temperature_c);
}

// Issue 39 item 3: an exact-mode run of upstream's sm90 kernel with per-warp scales on the shipped Wan
// workload, which pins the sm89 kernel's output and the per-thread sm90 kernel's on sm_90a, not this
// one's. Neither pin is this kernel's, so neither is checked; the first passing run records the kernel's
// own pin, says so, and the others stay as they were.
TEST(TimePins, ABaselineWithNoPinOfItsOwnRecordsOneOnItsFirstPassingRun) {
    ScratchDirectory dir("first-pin");
    const RunDirectory run(dir.path());
    const std::string sm90_sha(64, '5');
    TimeStageInputs inputs = several_gpu_inputs(run, {gpu(0, "NVIDIA H200")}, 2);
    inputs.kernels.baseline.abi = &kernel_abi("sageattention-sm90-accum-f32-fuse-v-scale-per-warp", "the test");
    inputs.workload = load_workload(std::filesystem::path(S2TP_SOURCE_ROOT) / "data/workloads/wan21-14b-block24.toml");
    ASSERT_TRUE(expected_output_sha256(inputs.workload, {bare_pin_kernel, "sm_90a"})) << "the shipped sm89 pin";
    inputs.expected_sha256 = expected_output_sha256(inputs.workload, inputs.kernels.pin_key());
    EXPECT_FALSE(inputs.expected_sha256) << "nothing pins the per-warp sm90 kernel on sm_90a yet";
    inputs.record_first_pin = true;
    const auto measured = [&](std::size_t) {
        ArmMeasurement m = measured_at(0.95);
        for (OutputDigest &d : m.first) d.sha256 = sm90_sha;
        return m;
    };
    const TimedWorkload timed = time_workload(inputs, Reporter(false, 0), measured);
    EXPECT_EQ(timed.result.status, StageStatus::passed) << (timed.result.reasons.empty() ? "" : timed.result.reasons[0]);
    const TimeFigures &f = timed.figures;
    EXPECT_EQ(f.recorded_pin, true);
    EXPECT_EQ(f.pinned_kernel, "sageattention-sm90-accum-f32-fuse-v-scale-per-warp");
    EXPECT_EQ(f.expected_sha256, sm90_sha);
    WorkloadSpec pinned = inputs.workload;
    apply_run_pins(pinned, run.pins());
    EXPECT_EQ(expected_output_sha256(pinned, inputs.kernels.pin_key()), sm90_sha);
    EXPECT_EQ(expected_output_sha256(pinned, {bare_pin_kernel, "sm_90a"}),
              expected_output_sha256(inputs.workload, {bare_pin_kernel, "sm_90a"}));

    // The next run checks against it: another output of the same kernel fails, naming the kernel.
    inputs.expected_sha256 = expected_output_sha256(pinned, inputs.kernels.pin_key());
    inputs.record_first_pin = false;
    const TimedWorkload changed = time_workload(inputs, Reporter(false, 0), [](std::size_t) {
        ArmMeasurement m = measured_at(0.95);
        for (OutputDigest &d : m.first) d.sha256 = std::string(64, '6');
        return m;
    });
    EXPECT_EQ(changed.result.status, StageStatus::failed);
    ASSERT_FALSE(changed.result.reasons.empty());
    EXPECT_NE(changed.result.reasons[0].find("for kernel sageattention-sm90-accum-f32-fuse-v-scale-per-warp on sm_90a"),
              std::string::npos) << changed.result.reasons[0];
}

}  // namespace
}  // namespace s2tp::unit_time_stage
