// A workload set's time figures (figures/set_time_figures.h) and the set stage's plan
// (stages/time/set.h): combination on hand-made rounds, the checkpoint's round trip, the text, the
// budget plan and the memory refusal. None of it needs a GPU.
#include "build_config.h"
#include "figures/set_time_figures.h"
#include "stages/time/set.h"
#include "support/errors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace s2tp::unit_set_time {
namespace {

// n ratios evenly spread over [median - spread, median + spread]: their median is `median`.
std::vector<double> ratios(double median, double spread, std::size_t n = 41) {
    std::vector<double> r;
    for (std::size_t i = 0; i < n; ++i) r.push_back(median - spread + 2 * spread * static_cast<double>(i) / (n - 1));
    return r;
}

ShapeRatios shape(const std::string &name, double weight, std::vector<std::vector<double>> groups) {
    std::vector<double> pooled;
    for (const auto &g : groups) pooled.insert(pooled.end(), g.begin(), g.end());
    BootstrapOptions options;
    options.resamples = 500;
    return {name, weight, std::move(groups),
            RatioFigures::of(two_level_bootstrap_median_interval({pooled}, options))};
}

BootstrapOptions bootstrap() {
    BootstrapOptions options;
    options.seed = 7;
    options.resamples = 2000;
    return options;
}

TEST(SetTimeFigures, CombinedRatioIsTheWeightedGeometricMeanOfTheShapesMedians) {
    const std::vector<ShapeRatios> shapes{shape("a", 3.0, {ratios(0.90, 0.02)}), shape("b", 1.0, {ratios(1.05, 0.01)})};
    const SetCandidateFigures c = combine_shape_ratios("candidate", shapes, bootstrap());
    ASSERT_TRUE(c.geomean && c.geomean->median && c.geomean->ci_low && c.geomean->ci_high);
    EXPECT_NEAR(*c.geomean->median, std::exp((3 * std::log(0.90) + std::log(1.05)) / 4), 1e-12);
    EXPECT_LT(*c.geomean->ci_low, *c.geomean->median);
    EXPECT_GT(*c.geomean->ci_high, *c.geomean->median);
    // The interval is that of the set's mean, narrower than the wider shape's own interval.
    EXPECT_LT(*c.geomean->ci_high - *c.geomean->ci_low, *shapes[0].ratio->ci_high - *shapes[0].ratio->ci_low);
    EXPECT_EQ(c.worst_shape, "b");
    ASSERT_TRUE(c.worst && c.worst->median);
    EXPECT_DOUBLE_EQ(*c.worst->median, *shapes[1].ratio->median);

    // Equal weights move the mean towards the slower shape.
    const SetCandidateFigures even =
        combine_shape_ratios("candidate", {shape("a", 1.0, {ratios(0.90, 0.02)}), shape("b", 1.0, {ratios(1.05, 0.01)})},
                             bootstrap());
    EXPECT_NEAR(*even.geomean->median, std::sqrt(0.90 * 1.05), 1e-12);
}

TEST(SetTimeFigures, RepeatsEnterAsGroupsAndTheSameSeedGivesTheSameInterval) {
    const std::vector<ShapeRatios> shapes{shape("a", 1.0, {ratios(0.95, 0.01), ratios(0.97, 0.01)}),
                                          shape("b", 1.0, {ratios(0.99, 0.02), ratios(1.00, 0.02)})};
    const SetCandidateFigures first = combine_shape_ratios("c", shapes, bootstrap());
    const SetCandidateFigures again = combine_shape_ratios("c", shapes, bootstrap());
    EXPECT_EQ(first.geomean->ci_low, again.geomean->ci_low);
    EXPECT_EQ(first.geomean->ci_high, again.geomean->ci_high);
    EXPECT_EQ(first.worst_shape, "b");
}

TEST(SetTimeFigures, NoCombinedFiguresUnlessEveryShapeWasTimed) {
    ShapeRatios untimed{"b", 1.0, {}, std::nullopt};
    const SetCandidateFigures c = combine_shape_ratios("c", {shape("a", 1.0, {ratios(0.9, 0.01)}), untimed}, bootstrap());
    EXPECT_EQ(c.name, "c");
    EXPECT_FALSE(c.geomean);
    EXPECT_FALSE(c.worst_shape);
    EXPECT_FALSE(c.worst);
    EXPECT_FALSE(combine_shape_ratios("c", {}, bootstrap()).geomean);
}

SetTimeFigures hand_made_set() {
    SetTimeFigures f;
    f.workload_set = "wan21-14b";
    f.device_name = "NVIDIA H200";
    f.arch = "sm_90a";
    f.weighted = true;
    f.repeats = 1;
    f.budget_seconds = 120;
    f.measure_seconds = 118.5;
    for (const auto &[name, median, weight] : {std::tuple{"t2v-480p", 0.96, 0.6}, {"t2v-720p", 1.01, 0.4}}) {
        ShapeTimeFigures s;
        s.name = name;
        s.weight = weight;
        s.source = "Wan-AI/Wan2.1-T2V-14B config.json";
        s.passed = true;
        s.figures.workload = name;
        s.figures.baseline = ArmTimeFigures{};
        s.figures.baseline->p50 = 200.0;
        CandidateTimeFigures &c = s.figures.candidate_or_add("candidate");
        c.ratio = RatioFigures{};
        c.ratio->median = median;
        c.ratio->ci_low = median - 0.01;
        c.ratio->ci_high = median + 0.01;
        f.shapes.push_back(s);
    }
    SetCandidateFigures c;
    c.name = "candidate";
    c.geomean = RatioFigures{};
    c.geomean->median = 0.9797;
    c.geomean->ci_low = 0.9750;
    c.geomean->ci_high = 0.9850;
    c.worst_shape = "t2v-720p";
    c.worst = f.shapes[1].figures.candidates[0].ratio;
    f.candidates.push_back(c);
    return f;
}

TEST(SetTimeFigures, CheckpointRoundTripKeepsTheShapesOrderAndEveryFigure) {
    const SetTimeFigures f = hand_made_set();
    const toml::table t = f.to_toml();
    EXPECT_TRUE(SetTimeFigures::holds_set(t));
    EXPECT_FALSE(SetTimeFigures::holds_set(f.shapes[0].figures.to_toml()));
    const SetTimeFigures back = SetTimeFigures::from_toml(t);
    ASSERT_EQ(back.shapes.size(), 2u);
    EXPECT_EQ(back.shapes[0].name, "t2v-480p");
    EXPECT_EQ(back.shapes[1].name, "t2v-720p");
    EXPECT_EQ(back.shapes[1].weight, 0.4);
    EXPECT_EQ(back.shapes[1].figures.candidate("candidate")->ratio->median, 1.01);
    ASSERT_NE(back.candidate("candidate"), nullptr);
    EXPECT_EQ(back.candidate("candidate")->geomean->ci_high, 0.9850);
    EXPECT_EQ(back.candidate("candidate")->worst_shape, "t2v-720p");
    EXPECT_EQ(back.to_toml(), t);
    // A figure the checkpoint lacks stays unset.
    toml::table edited = t;
    edited["combined"].as_table()->at("candidate").as_table()->erase("geomean");
    EXPECT_FALSE(SetTimeFigures::from_toml(edited).candidate("candidate")->geomean);
}

TEST(SetTimeFigures, TextHasOneRowPerShapeAndTheCombinedRows) {
    const std::string text = set_time_figures_text(hand_made_set());
    EXPECT_NE(text.find("workload set wan21-14b: 2 shapes, weighted"), std::string::npos) << text;
    EXPECT_NE(text.find("t2v-480p"), std::string::npos) << text;
    EXPECT_NE(text.find("0.9600 (CI 0.9500 .. 0.9700)"), std::string::npos) << text;
    EXPECT_NE(text.find("geomean (weighted)"), std::string::npos) << text;
    EXPECT_NE(text.find("0.9797 (CI 0.9750 .. 0.9850)"), std::string::npos) << text;
    EXPECT_NE(text.find("worst shape"), std::string::npos) << text;
    EXPECT_NE(text.find("t2v-720p 1.0100 (CI 1.0000 .. 1.0200)"), std::string::npos) << text;
}

WorkloadSet two_shape_set() {
    WorkloadSet set;
    set.name = "s";
    for (const auto &[name, len_kv] : {std::pair{"self", 32760}, {"cross", 257}}) {
        SetWorkload w;
        w.workload.name = name;
        w.workload.problem.shape = {1, 40, 40, 32760, len_kv, 128, Layout::nhd};
        set.workloads.push_back(w);
    }
    return set;
}

// A baseline and two candidates (4 arms with the control), each launched through sage2tp's own ABI.
BuiltKernels own_abi_kernels() {
    BuiltKernels kernels;
    kernels.baseline.abi = &kernel_abi("sage2tp", "test");
    kernels.candidates.resize(2, kernels.baseline);
    return kernels;
}

TEST(TimeSetPlan, BudgetSharesFollowTheOperationsWithAFloorAndNeverExceedTheBudget) {
    const std::vector<ShapePlan> plans = plan_shapes(two_shape_set(), own_abi_kernels(), 4, 60.0);
    ASSERT_EQ(plans.size(), 2u);
    const double total = plans[0].budget_seconds + plans[1].budget_seconds;
    EXPECT_LE(total, 60.0 + 1e-9);
    EXPECT_GT(plans[0].budget_seconds, plans[1].budget_seconds);
    EXPECT_GE(plans[1].budget_seconds, 60.0 / 2 / 4 - 1e-9);  // the floor: a quarter of an even split
    EXPECT_EQ(plans[0].cost.arms, 4u);
    const std::string line = shape_plan_line(plans[1], 1, 2);
    EXPECT_EQ(line.rfind("[2/2] cross: peak ", 0), 0u) << line;
    EXPECT_NE(line.find("s of sampling"), std::string::npos) << line;
}

TEST(TimeSetPlan, AShapeThatDoesNotFitIsRefusedWithItsNumbers) {
    const std::vector<ShapePlan> plans = plan_shapes(two_shape_set(), own_abi_kernels(), 4, 60.0);
    EXPECT_TRUE(shape_memory_refusals(plans, std::int64_t{100} << 30, std::int64_t{141} << 30).empty());
    const auto small = static_cast<std::int64_t>(plans[1].cost.peak_bytes + (plans[0].cost.peak_bytes - plans[1].cost.peak_bytes) / 2);
    const std::vector<std::string> refusals = shape_memory_refusals(plans, small, small);
    ASSERT_EQ(refusals.size(), 1u);
    EXPECT_NE(refusals[0].find("self"), std::string::npos) << refusals[0];
    EXPECT_NE(refusals[0].find("GB"), std::string::npos) << refusals[0];
}

// The set the GPU suite times (gpu_pipeline_workload-set) loads, weighted, and fits in a small budget.
TEST(TimeSetPlan, TheGpuSuitesSmallSetLoads) {
    const WorkloadSet set = load_workload_set(std::filesystem::path(S2TP_SOURCE_ROOT) / "tests/data/small-set.toml");
    ASSERT_EQ(set.workloads.size(), 2u);
    EXPECT_TRUE(set.weighted());
    EXPECT_EQ(set.weights(), (std::vector<double>{3.0, 1.0}));
    const std::vector<ShapePlan> plans = plan_shapes(set, own_abi_kernels(), 4, 20.0);
    EXPECT_GT(plans[1].budget_seconds, 2.0);
}

// Several GPUs over a set: one model is timed shape by shape on every GPU; two models are refused,
// naming both, before anything is timed.
TEST(SetTimeGpus, ASetOnGpusOfSeveralModelsIsRefusedNamingThem) {
    auto gpu = [](int index, const char *name) {
        DeviceFacts facts;
        facts.index = index;
        facts.name = name;
        return facts;
    };
    const DeviceFacts h200a = gpu(0, "NVIDIA H200"), h200b = gpu(1, "NVIDIA H200"), h100 = gpu(2, "NVIDIA H100 80GB HBM3");
    EXPECT_NO_THROW(check_set_gpus({h200a, h200b}, "wan21-14b"));
    EXPECT_NO_THROW(check_set_gpus({h200a}, "wan21-14b"));
    try {
        check_set_gpus({h200a, h200b, h100}, "wan21-14b");
        FAIL() << "two models over a set must be refused";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_NE(std::string(e.what()).find("GPU 0 is NVIDIA H200 and GPU 2 is NVIDIA H100 80GB HBM3"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace s2tp::unit_set_time
