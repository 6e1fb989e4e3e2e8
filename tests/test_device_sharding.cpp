// The several-GPU rules without a GPU: which GPUs --devices names, how checks are dealt out, when the
// sharded checks pass, and how per-GPU timing runs combine (one model: the GPU as the bootstrap's
// group; mixed models: a verdict per GPU; a lost GPU: never a pass, the others kept).
#include "model/device_sharding.h"

#include "support/errors.h"

#include <functional>

#include <gtest/gtest.h>

using namespace s2tp;

namespace s2tp::unit_device_sharding {

namespace {

// A three-arm run (baseline, control, candidate) whose candidate takes `ratio` times the baseline's time,
// with a small alternating wobble so that every bootstrap has something to resample.
TimingRun synthetic_run(double ratio, std::size_t rounds = 40) {
    TimingRun run;
    for (std::size_t i = 0; i < rounds; ++i) {
        const double wobble = 1.0 + (i % 2 ? 0.001 : -0.001) * static_cast<double>(i % 5);
        InterleavedRound round;
        round.samples = {{1.0 * wobble, 1980}, {1.0 * wobble, 1980}, {ratio * wobble, 1980}};
        run.rounds.push_back(round);
    }
    run.kept_rounds = rounds;
    return run;
}

BootstrapOptions bootstrap() {
    BootstrapOptions options;
    options.resamples = 200;
    return options;
}

ExitCode code_of(const std::function<void()> &body) {
    try {
        body();
    } catch (const Error &e) {
        return e.code();
    }
    return ExitCode::ok;
}

}  // namespace

TEST(DeviceList, AllOrIndicesWithinTheVisibleGpus) {
    EXPECT_EQ(visible_devices(parse_device_list("all"), 4), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(visible_devices(parse_device_list("2,0"), 4), (std::vector<int>{2, 0}));
    EXPECT_EQ(visible_devices(DeviceList::one(1), 2), (std::vector<int>{1}));
    EXPECT_EQ(parse_device_list("2,0").text(), "2,0");
    EXPECT_EQ(parse_device_list("all").text(), "all");
    // A typing mistake is one whatever the host has; a GPU that is not there is a missing device.
    for (const char *bad : {"", "0,", ",1", "0,0", "-1", "a", "0;1", "1 2", "12345"})
        EXPECT_EQ(code_of([&] { parse_device_list(bad); }), ExitCode::usage) << "'" << bad << "'";
    EXPECT_EQ(code_of([] { visible_devices(parse_device_list("all"), 0); }), ExitCode::missing_tool);
    EXPECT_EQ(code_of([] { visible_devices(parse_device_list("4"), 4); }), ExitCode::missing_tool);
    EXPECT_EQ(code_of([] { visible_devices(parse_device_list("0"), 0); }), ExitCode::missing_tool);
    try {
        visible_devices(parse_device_list("0,1"), 1);
        ADD_FAILURE() << "GPU 1 of 1 accepted";
    } catch (const Error &e) {
        EXPECT_EQ(std::string(e.what()), "GPU 1 is not visible here (1 visible: 0..0)");
    }
}

TEST(DeviceList, OnlyErrorsOfTheGpuItselfMarkItLost) {
    EXPECT_EQ(device_error_in("sage2tp: cudaMalloc failed [q]: cudaErrorDevicesUnavailable (busy)"),
              "cudaErrorDevicesUnavailable");
    EXPECT_EQ(device_error_in("x CUDA_ERROR_ECC_UNCORRECTABLE then cudaErrorNoDevice"), "CUDA_ERROR_ECC_UNCORRECTABLE");
    EXPECT_FALSE(device_error_in("cudaErrorIllegalAddress (an illegal memory access was encountered)"));
    EXPECT_FALSE(device_error_in("cudaErrorLaunchFailure (unspecified launch failure)"));
    EXPECT_FALSE(device_error_in(""));
}

TEST(GpuQueues, DealtRoundRobinAndALostGpusQueueMovesToTheOthers) {
    GpuQueues queues(7, {0, 1, 2});
    EXPECT_EQ(queues.take(1), 1u);
    EXPECT_EQ(queues.take(1), 4u);
    EXPECT_EQ(queues.take(1), std::nullopt);
    EXPECT_FALSE(queues.has_work(1));
    EXPECT_TRUE(queues.add(1, 9));  // a failed batch's single stays on its GPU
    EXPECT_EQ(queues.take(1), 9u);
    // GPU 0 holds 0, 3, 6; it takes 0 and is lost: 3 and 6 move, one to each GPU still running.
    EXPECT_EQ(queues.take(0), 0u);
    EXPECT_TRUE(queues.lose(0).empty());
    EXPECT_TRUE(queues.lost(0));
    EXPECT_FALSE(queues.has_work(0));
    EXPECT_EQ(queues.take(1), 3u);
    EXPECT_EQ(queues.take(2), 2u);
    EXPECT_EQ(queues.take(2), 5u);
    EXPECT_EQ(queues.take(2), 6u);
    EXPECT_TRUE(queues.empty());
    // Work for a lost GPU goes to one still running; with every GPU lost, what is left is handed back,
    // to be reported as not run.
    EXPECT_TRUE(queues.add(0, 7));
    EXPECT_TRUE(queues.has_work(1) || queues.has_work(2));
    EXPECT_FALSE(queues.has_work(0));
    EXPECT_TRUE(queues.lose(1).empty());
    EXPECT_TRUE(queues.add(2, 8));
    EXPECT_EQ(queues.lose(2), (std::vector<std::size_t>{7, 8}));
    EXPECT_FALSE(queues.add(2, 10));
    EXPECT_TRUE(queues.empty());
}

// A measurement of one GPU is never run on another: a lost GPU's pinned items are handed back.
TEST(GpuQueues, ALostGpusPinnedItemsAreHandedBack) {
    GpuQueues queues(4, {0, 1}, ItemPlacement::pinned);
    EXPECT_EQ(queues.take(1), 1u);
    EXPECT_EQ(queues.lose(1), (std::vector<std::size_t>{3}));
    EXPECT_FALSE(queues.add(1, 5));
    EXPECT_EQ(queues.take(0), 0u);
    EXPECT_EQ(queues.take(0), 2u);
    EXPECT_TRUE(queues.empty());
}

TEST(DeviceList, ChecksAreDealtRoundRobinEachToOneGpu) {
    EXPECT_EQ(assign_checks(7, {0, 1, 2}), (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
    EXPECT_EQ(assign_checks(2, {3}), (std::vector<int>{3, 3}));
    EXPECT_TRUE(assign_checks(0, {0, 1}).empty());
}

TEST(ShardedChecks, PassOnlyWhenEveryGpuRanAllItsChecksAndNoneWasLost) {
    EXPECT_TRUE(judge_sharded_checks({{0, "H200 a", 3, 3, 0, {}}, {1, "H200 b", 2, 2, 0, {}}}).passed);
    const ShardedVerdict lost = judge_sharded_checks({{0, "H200 a", 3, 3, 0, {}}, {1, "H200 b", 2, 1, 0, "cudaErrorDevicesUnavailable"}});
    EXPECT_FALSE(lost.passed);
    ASSERT_EQ(lost.reasons.size(), 1u);
    EXPECT_NE(lost.reasons[0].find("GPU 1 H200 b was lost after 1 of 2 checks"), std::string::npos) << lost.reasons[0];
    EXPECT_FALSE(judge_sharded_checks({{0, "", 3, 2, 1, {}}}).passed);
    EXPECT_FALSE(judge_sharded_checks({{0, "", 3, 2, 0, {}}}).passed);
    EXPECT_FALSE(judge_sharded_checks({}).passed);
}

TEST(GpuTimings, SameModelCombinesWithTheGpuAsTheGroup) {
    const GpuTimings t = combine_gpu_timings({{0, "NVIDIA H200", "GPU-a", "0000:19:00.0", {synthetic_run(1.30)}, ""},
                                              {1, "NVIDIA H200", "GPU-b", "0000:3b:00.0", {synthetic_run(1.40)}, ""}},
                                             bootstrap());
    ASSERT_TRUE(t.combined);
    const RepeatedRatio &candidate = t.combined->ratios.at(first_candidate_arm);
    ASSERT_EQ(candidate.repeat_medians.size(), 2u) << "each GPU is one group";
    EXPECT_NEAR(candidate.repeat_medians[0], 1.30, 0.01);
    EXPECT_NEAR(candidate.repeat_medians[1], 1.40, 0.01);
    // The two-level interval spans both GPUs' medians: the between-GPU spread counts.
    EXPECT_LT(candidate.interval.lo, 1.31);
    EXPECT_GT(candidate.interval.hi, 1.39);
    EXPECT_EQ(t.per_gpu.size(), 2u);
    EXPECT_TRUE(t.lost.empty());
}

TEST(GpuTimings, MixedModelsGiveOneVerdictPerGpuAndALostGpuIsKeptOut) {
    const GpuTimings mixed = combine_gpu_timings({{0, "NVIDIA H200", "GPU-a", "", {synthetic_run(1.30)}, ""},
                                                  {1, "NVIDIA H100 80GB HBM3", "GPU-b", "", {synthetic_run(1.10)}, ""}},
                                                 bootstrap());
    EXPECT_FALSE(mixed.combined);
    ASSERT_EQ(mixed.per_gpu.size(), 2u);
    EXPECT_NEAR(mixed.per_gpu[1].second.ratios.at(first_candidate_arm).interval.median, 1.10, 0.01);

    const GpuTimings lost = combine_gpu_timings({{0, "NVIDIA H200", "GPU-a", "", {synthetic_run(1.30)}, ""},
                                                 {1, "NVIDIA H200", "GPU-b", "", {}, "cudaErrorLaunchFailure"},
                                                 {2, "NVIDIA H200", "GPU-c", "", {synthetic_run(1.32)}, ""}},
                                                bootstrap());
    EXPECT_EQ(lost.lost, (std::vector<int>{1}));
    ASSERT_TRUE(lost.combined) << "the two GPUs that finished still combine";
    EXPECT_EQ(lost.combined->ratios.at(first_candidate_arm).repeat_medians.size(), 2u);
    // One GPU left: its own verdict, nothing combined.
    EXPECT_FALSE(combine_gpu_timings({{0, "NVIDIA H200", "", "", {synthetic_run(1.3)}, ""},
                                      {1, "NVIDIA H200", "", "", {}, "lost"}},
                                     bootstrap())
                     .combined);
}

TEST(GpuTimings, RepeatsOnEachGpuAreGroupsAndNeverPooledAcrossModels) {
    // Two H200s with two repeats each: four processes, four groups of one interval.
    const GpuTimings same = combine_gpu_timings(
        {{0, "NVIDIA H200", "GPU-a", "", {synthetic_run(1.30), synthetic_run(1.31)}, ""},
         {1, "NVIDIA H200", "GPU-b", "", {synthetic_run(1.40), synthetic_run(1.41)}, ""}},
        bootstrap());
    ASSERT_TRUE(same.combined);
    EXPECT_EQ(same.combined->ratios.at(first_candidate_arm).repeat_medians.size(), 4u);
    ASSERT_EQ(same.per_gpu.size(), 2u);
    EXPECT_EQ(same.per_gpu[1].second.ratios.at(first_candidate_arm).repeat_medians.size(), 2u);
    EXPECT_NEAR(same.per_gpu[1].second.ratios.at(first_candidate_arm).interval.median, 1.405, 0.01);

    // An H100 lost before it measured still makes the run one of two models: no verdict of the H200s
    // stands for it.
    const GpuTimings lost_model = combine_gpu_timings({{0, "NVIDIA H200", "", "", {synthetic_run(1.30)}, ""},
                                                       {1, "NVIDIA H200", "", "", {synthetic_run(1.31)}, ""},
                                                       {2, "NVIDIA H100 80GB HBM3", "", "", {}, "cudaErrorNoDevice"}},
                                                      bootstrap());
    EXPECT_FALSE(lost_model.combined);
    EXPECT_EQ(lost_model.per_gpu.size(), 2u);
    EXPECT_EQ(lost_model.lost, (std::vector<int>{2}));
    EXPECT_TRUE(several_gpu_models({"NVIDIA H200", "NVIDIA H100 80GB HBM3"}));
    EXPECT_FALSE(several_gpu_models({"NVIDIA H200", "NVIDIA H200"}));
    EXPECT_FALSE(several_gpu_models({}));
}

}  // namespace s2tp::unit_device_sharding
