// Tolerance parity (issue 21): the accuracy metrics and their conditions, the seeded row sample, the host
// gather and the unquantized float64 reference, the fold of tolerance candidates, the manifest's
// [parity] keys and their bad values, and the gate's accuracy conditions.
#include "model/accuracy.h"
#include "default_thresholds.h"
#include "scratch_directory.h"
#include "model/cpu_reference.h"
#include "model/experiment_manifest.h"
#include "model/gate_rules.h"
#include "stages/parity_check.h"
#include "support/errors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_accuracy {

namespace {

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

// [1, 1, R, D] f64 rows from values.
Tensor rows_of(const std::vector<double> &values, std::int64_t rows) {
    Tensor t(DType::f64, {1, 1, rows, static_cast<std::int64_t>(values.size()) / rows});
    for (std::size_t i = 0; i < values.size(); ++i) t.data<double>()[i] = values[i];
    return t;
}

AccuracyMetrics metrics_with(double cosine, double rel_l1, double rmse) {
    AccuracyMetrics m;
    m.cosine = cosine, m.rel_l1 = rel_l1, m.rmse = rmse, m.max_abs_error = rmse * 4;
    m.compared = 100;
    return m;
}

}  // namespace

TEST(SampleQueryRows, EveryRowWhenTheSampleCoversThem) {
    EXPECT_EQ(sample_query_rows(5, 8, 1), (std::vector<std::uint32_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(sample_query_rows(5, 5, 1).size(), 5u);
}

TEST(SampleQueryRows, DistinctAscendingInRangeAndSeeded) {
    const std::vector<std::uint32_t> rows = sample_query_rows(170000, 256, 3);
    ASSERT_EQ(rows.size(), 256u);
    EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
    EXPECT_EQ(std::set<std::uint32_t>(rows.begin(), rows.end()).size(), 256u);
    EXPECT_LT(rows.back(), 170000u);
    EXPECT_GT(rows.back(), 100000u) << "a sample of 256 reaches the long end of the sequence";
    EXPECT_EQ(rows, sample_query_rows(170000, 256, 3));
    EXPECT_NE(rows, sample_query_rows(170000, 256, 4));
}

TEST(AccuracyMetrics, IdenticalOutputsAreExact) {
    const Tensor a = rows_of({1, -2, 3, 4}, 2);
    const AccuracyMetrics m = accuracy_metrics(a, a, {0, 5});
    EXPECT_DOUBLE_EQ(m.cosine, 1.0);
    EXPECT_EQ(m.rel_l1, 0.0);
    EXPECT_EQ(m.rmse, 0.0);
    EXPECT_EQ(m.max_abs_error, 0.0);
    EXPECT_EQ(m.compared, 4);
}

TEST(AccuracyMetrics, FiguresAndTheWorstElement) {
    const Tensor reference = rows_of({1, 0, 0, 2}, 2);
    const Tensor output = rows_of({1, 0, 0.5, 2}, 2);
    const AccuracyMetrics m = accuracy_metrics(output, reference, {3, 9});
    EXPECT_NEAR(m.cosine, 5.0 / std::sqrt(5.25 * 5.0), 1e-15);
    EXPECT_NEAR(m.rel_l1, 0.5 / 3.0, 1e-15);
    EXPECT_NEAR(m.rmse, std::sqrt(0.25 / 4), 1e-15);
    EXPECT_EQ(m.max_abs_error, 0.5);
    EXPECT_EQ(m.worst_element, "b=0 h=0 row=9 d=0") << "the row is the sampled query row, not its index";
}

TEST(AccuracyMetrics, NanAndInfAreCountedAndLeftOutOfTheSums) {
    const Tensor reference = rows_of({1, 2, 3, 4}, 1);
    const Tensor output = rows_of({1, std::nan(""), INFINITY, 4}, 1);
    const AccuracyMetrics m = accuracy_metrics(output, reference, {0});
    EXPECT_EQ(m.nan_count, 1);
    EXPECT_EQ(m.inf_count, 1);
    EXPECT_EQ(m.compared, 2);
    EXPECT_FALSE(all_passed(absolute_accuracy_checks(m, AccuracyLimits{})));
}

TEST(AccuracyChecks, ANanInTheReferenceIsAFailedCheckNeverAPass) {
    const Tensor reference = rows_of({std::nan(""), 2}, 1);
    const AccuracyMetrics m = accuracy_metrics(rows_of({1, 2}, 1), reference, {0});
    EXPECT_EQ(m.reference_non_finite, 1);
    AccuracyLimits limits;
    limits.min_cosine = 0.999;
    const std::vector<AccuracyCheck> checks = absolute_accuracy_checks(m, limits);
    EXPECT_FALSE(all_passed(checks));
    EXPECT_TRUE(contains(checks_text(checks), "FAIL reference finite")) << checks_text(checks);
}

TEST(AccuracyChecks, AbsoluteLimitsShowTheirNumbers) {
    AccuracyLimits limits;
    limits.min_cosine = 0.999;
    limits.max_rel_l1 = 0.05;
    const std::vector<AccuracyCheck> pass = absolute_accuracy_checks(metrics_with(0.9995, 0.03, 0.01), limits);
    EXPECT_TRUE(all_passed(pass));
    EXPECT_EQ(checks_text(pass), "reference finite 0 non-finite reference elements, no NaN/Inf 0 NaN, 0 Inf, "
                                 "cosine 0.9995 >= 0.999, rel_l1 0.03 <= 0.05");
    EXPECT_FALSE(all_passed(absolute_accuracy_checks(metrics_with(0.998, 0.03, 0.01), limits)));
    EXPECT_FALSE(all_passed(absolute_accuracy_checks(metrics_with(0.9995, 0.06, 0.01), limits)));
    EXPECT_FALSE(all_passed(absolute_accuracy_checks(metrics_with(std::nan(""), 0.03, 0.01), limits))) << "NaN fails";
}

TEST(AccuracyChecks, RelativeToTheBaselineByTheFactor) {
    const AccuracyMetrics base = metrics_with(0.9995, 0.030, 0.010);
    EXPECT_TRUE(all_passed(relative_accuracy_checks(metrics_with(0.9995, 0.033, 0.011), base, 1.10)));
    const std::vector<AccuracyCheck> worse = relative_accuracy_checks(metrics_with(0.9995, 0.034, 0.010), base, 1.10);
    EXPECT_FALSE(all_passed(worse));
    EXPECT_EQ(checks_text(worse), "FAIL rel_l1 vs baseline 0.034 <= 1.1 x 0.03, rmse vs baseline 0.01 <= 1.1 x 0.01");
}

TEST(WorstAccuracy, TheWorstOfEachFigureAndNanFirst) {
    AccuracyMetrics a = metrics_with(0.9999, 0.01, 0.02), b = metrics_with(0.999, 0.03, 0.01);
    b.worst_element = "b=0 h=1 row=2 d=3";
    const AccuracyMetrics w = worst_accuracy({a, b});
    EXPECT_EQ(w.cosine, 0.999);
    EXPECT_EQ(w.rel_l1, 0.03);
    EXPECT_EQ(w.rmse, 0.02);
    EXPECT_EQ(w.max_abs_error, 0.08);
    EXPECT_TRUE(std::isnan(worst_accuracy({a, metrics_with(std::nan(""), 0.0, 0.0)}).cosine));
}

TEST(GatherQueryRows, PicksTheRowsOfEveryHeadInBothLayouts) {
    for (Layout layout : {Layout::nhd, Layout::hnd}) {
        AttentionShape shape{2, 3, 3, 5, 5, 64, layout};
        Tensor o(DType::f32, shape.q_shape());
        for (std::int64_t b = 0; b < 2; ++b)
            for (std::int64_t h = 0; h < 3; ++h)
                for (std::int64_t i = 0; i < 5; ++i)
                    for (std::int64_t d = 0; d < 64; ++d)
                        o.data<float>()[shape.offset(false, b, h, i, d)] = static_cast<float>(1000 * b + 100 * h + 10 * i) + d / 100.0f;
        const Tensor rows = gather_query_rows(o, shape, {1, 4});
        ASSERT_EQ(rows.shape, (Shape{2, 3, 2, 64}));
        EXPECT_EQ(rows.value_at(0), o.value_at(shape.offset(false, 0, 0, 1, 0)));
        EXPECT_FLOAT_EQ(static_cast<float>(rows.value_at(((1 * 3 + 2) * 2 + 1) * 64 + 7)), 1000 + 200 + 40 + 0.07f);
    }
}

TEST(UnquantizedReference, OneKeyGivesItsValueAndEqualScoresTheMean) {
    AttentionShape shape{1, 2, 1, 2, 2, 64, Layout::hnd};
    Tensor q(DType::f32, shape.q_shape()), k(DType::f32, shape.kv_shape()), v(DType::f32, shape.kv_shape());
    for (std::int64_t j = 0; j < 2; ++j)
        for (std::int64_t d = 0; d < 64; ++d) v.data<float>()[shape.offset(true, 0, 0, j, d)] = static_cast<float>(j + 1);
    // q = k = 0: every score 0. Causal: row 0 sees key 0 only, row 1 both keys equally.
    const Tensor out = unquantized_reference(shape, q, k, v, 0.125, true, {0, 1});
    EXPECT_EQ(out.value_at(0), 1.0);
    EXPECT_EQ(out.value_at(64), 1.5);
    EXPECT_EQ(out.value_at(2 * 64 + 64), 1.5) << "grouped q head 1 reads kv head 0";
}

TEST(ParityCheck, ToleranceCandidateIsJudgedByAccuracyNotBytes) {
    ParityComparison c;
    c.shape = "s0";
    c.seed = 1;
    c.reference_rows = 8;
    c.reference_rel_l2 = 0.01;
    c.baseline_accuracy = metrics_with(0.9995, 0.030, 0.010);
    CandidateRun &run = c.candidates["fp32"];
    run.o_sha256 = "bb";
    run.differences.push_back(TensorDifference{"o", 3, 64, "[0, 1]", "0x3c00 (1)", "0x3c01 (1.0009766)"});
    run.accuracy = metrics_with(0.9996, 0.031, 0.010);
    run.vs_baseline = metrics_with(0.99999, 0.001, 0.0001);
    AccuracyRules rules;
    rules.modes["fp32"] = ParityMode::tolerance;
    rules.limits.min_cosine = 0.999;
    ParityFold fold = fold_parity({c}, 1, 1, 0.05, {"fp32"}, rules);
    EXPECT_TRUE(fold.passed) << (fold.reasons.empty() ? "" : fold.reasons[0]);
    EXPECT_EQ(fold.figures.candidates.at("fp32").mode, "tolerance");
    EXPECT_EQ(fold.figures.candidates.at("fp32").shapes_differing, 1) << "the differences stay in the figures";
    ASSERT_EQ(fold.figures.candidates.at("fp32").checks.size(), 1u);
    EXPECT_TRUE(contains(fold.figures.candidates.at("fp32").checks[0].conditions, "rel_l1 vs baseline 0.031 <= 1.1 x 0.03"));
    EXPECT_EQ(fold.figures.baseline_accuracy.size(), 1u);
    EXPECT_EQ(fold.figures.candidates.at("fp32").vs_baseline.size(), 1u);

    c.candidates["fp32"].accuracy = metrics_with(0.9996, 0.040, 0.010);
    fold = fold_parity({c}, 1, 1, 0.05, {"fp32"}, rules);
    EXPECT_FALSE(fold.passed);
    ASSERT_EQ(fold.reasons.size(), 1u);
    EXPECT_TRUE(contains(fold.reasons[0], "fp32: s0: ") && contains(fold.reasons[0], "FAIL rel_l1 vs baseline"))
        << fold.reasons[0];

    rules.modes["fp32"] = ParityMode::exact;
    fold = fold_parity({c}, 1, 1, 0.05, {"fp32"}, rules);
    EXPECT_FALSE(fold.passed);
    EXPECT_TRUE(contains(fold.reasons[0], "o differs in 3 of 64")) << "an exact candidate still fails on bytes";
}

TEST(ParityCheck, ABaselineWithANanReferenceFailsTheStage) {
    ParityComparison c;
    c.shape = "long";
    c.cpu_reference_checked = false;
    c.reference_rows = 8;
    c.baseline_accuracy = metrics_with(0.9995, 0.03, 0.01);
    c.baseline_accuracy->reference_non_finite = 2;
    c.candidates["candidate"].accuracy = c.baseline_accuracy;
    c.candidates["candidate"].vs_baseline = metrics_with(1, 0, 0);
    AccuracyRules rules;
    rules.limits.max_rel_l1 = 0.05;
    const ParityFold fold = fold_parity({c}, 1, 1, 0.05, {"candidate"}, rules);
    EXPECT_FALSE(fold.passed);
    EXPECT_TRUE(contains(fold.reasons.at(0), "baseline: long: FAIL reference finite")) << fold.reasons.at(0);
    EXPECT_TRUE(fold.figures.reference_worst_case.empty()) << "no CPU reference for an accuracy-only shape";
}

namespace {

class ToleranceManifest : public ::testing::Test {
protected:
    void SetUp() override {
        std::ofstream(dir_ / "c.patch") << "--- a/kernels/x.cu\n+++ b/kernels/x.cu\n@@ -1 +1 @@\n-a\n+b\n";
    }
    fs::path write(const std::string &parity, const std::string &candidate = "") {
        std::ofstream(dir_ / "m.toml") << "[experiment]\nname = \"t\"\n[source]\nkind = \"embedded\"\n"
                                          "kernel_sources = [\"kernels/x.cu\"]\n[candidate]\npatch = \"c.patch\"\n"
                                       << candidate << "[parity]\n" << parity << "[workload]\nname = \"w\"\nlen_q = 256\n";
        return dir_ / "m.toml";
    }
    std::string error(const std::string &parity, const std::string &candidate = "") {
        try {
            load_experiment(write(parity, candidate));
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage);
            return e.what();
        }
        ADD_FAILURE() << "no error for " << parity;
        return "";
    }
    ScratchDirectory scratch_{"tolerance"};
    const fs::path dir_ = scratch_.path();
};

}  // namespace

TEST_F(ToleranceManifest, ExactByDefaultAndToleranceWithLimits) {
    const Experiment exact = load_experiment(write(""));
    EXPECT_EQ(exact.parity_mode, ParityMode::exact);
    EXPECT_FALSE(exact.checks_accuracy());
    const Experiment e = load_experiment(write("mode = \"tolerance\"\nmin_cosine = 0.999\nmax_rel_l1 = 0.05\n"
                                               "reference_rows = 64\n[[parity.accuracy_shape]]\nlen_q = 170000\n"));
    EXPECT_EQ(e.parity_mode_of("candidate"), ParityMode::tolerance);
    EXPECT_EQ(e.accuracy_limits.min_cosine, 0.999);
    EXPECT_EQ(e.accuracy_limits.baseline_factor, 1.10);
    EXPECT_EQ(e.reference_rows, 64);
    ASSERT_EQ(e.accuracy_shapes.size(), 1u);
    EXPECT_EQ(e.accuracy_shapes[0].shape.len_q, 170000);
    // The resolved copy reads back the same.
    std::ofstream(dir_ / "resolved.toml") << experiment_to_toml(e);
    const Experiment again = load_experiment(dir_ / "resolved.toml");
    EXPECT_EQ(again.parity_mode, ParityMode::tolerance);
    EXPECT_EQ(again.accuracy_limits.max_rel_l1, 0.05);
    EXPECT_EQ(again.accuracy_shapes.size(), 1u);
    EXPECT_EQ(again.reference_rows, 64);
}

TEST_F(ToleranceManifest, PerCandidateMode) {
    const Experiment e = load_experiment(write("min_cosine = 0.999\n", "parity_mode = \"tolerance\"\n"));
    EXPECT_EQ(e.parity_mode, ParityMode::exact);
    EXPECT_EQ(e.parity_mode_of("candidate"), ParityMode::tolerance);
    std::ofstream(dir_ / "resolved.toml") << experiment_to_toml(e);
    EXPECT_EQ(load_experiment(dir_ / "resolved.toml").parity_mode_of("candidate"), ParityMode::tolerance);
}

TEST_F(ToleranceManifest, AnotherLauncherOfTheSameCheckoutIsACandidate) {
    // The SageAttention2 vs 2++ shape: no patch, the same checkout, another kernel source (or adapter).
    const auto manifest = [&](const std::string &candidate) {
        std::ofstream(dir_ / "m.toml") << "[experiment]\nname = \"t\"\n[source]\nkind = \"embedded\"\n"
                                          "kernel_sources = [\"kernels/x.cu\"]\n[candidate]\n" << candidate
                                       << "[workload]\nname = \"w\"\nlen_q = 256\n";
        return dir_ / "m.toml";
    };
    const Experiment e = load_experiment(manifest("[candidate.source]\nkernel_sources = [\"kernels/y.cu\"]\n"));
    EXPECT_EQ(e.candidates.at(0).source.kernel_sources, std::vector<std::string>{"kernels/y.cu"});
    try {
        load_experiment(manifest("[candidate.source]\nkernel_sources = [\"kernels/x.cu\"]\n"));
        ADD_FAILURE() << "the same launcher of the same checkout is the baseline itself";
    } catch (const Error &error) {
        EXPECT_TRUE(contains(error.what(), "is the baseline itself")) << error.what();
    }
}

TEST_F(ToleranceManifest, BadInputNamesTheKey) {
    EXPECT_TRUE(contains(error("mode = \"tolerance\"\n"), "needs at least one limit: min_cosine, max_rel_l1"));
    EXPECT_TRUE(contains(error("", "parity_mode = \"tolerance\"\n"), "needs at least one limit"));
    EXPECT_TRUE(contains(error("[[parity.accuracy_shape]]\nlen_q = 4096\n"), "[[parity.accuracy_shape]] needs at least one limit"));
    EXPECT_TRUE(contains(error("mode = \"tolerance\"\nmin_cosine = 1.5\n"), "key 'min_cosine' = 1.5"));
    EXPECT_TRUE(contains(error("mode = \"tolerance\"\nmax_rel_l1 = -0.1\n"), "key 'max_rel_l1'"));
    EXPECT_TRUE(contains(error("min_cosine = 0.99\nbaseline_factor = 0.5\n"), "key 'baseline_factor'"));
    EXPECT_TRUE(contains(error("min_cosine = 0.99\nreference_rows = 0\n"), "reference_rows"));
    EXPECT_TRUE(contains(error("mode = \"loose\"\n"), "mode"));
}

namespace {

GateEvidence tolerance_evidence() {
    GateEvidence e;
    e.prepare = e.build = e.sanitize = e.parity = e.time = {true, true, true, ""};
    e.real_output_stage = e.time;
    e.parity_shapes_compared = 2;
    e.parity_shapes_differing = 2;
    e.parity_mode = "tolerance";
    e.baseline_accuracy = {{"s0", true, "cosine 0.9995 >= 0.999"}, {"s1", true, "cosine 0.9994 >= 0.999"}};
    e.candidate_accuracy = {{"s0", true, "rel_l1 vs baseline 0.03 <= 1.1 x 0.03"}, {"s1", true, "ok"}};
    e.real_output_accuracy_passed = true;
    e.real_output_accuracy = "cosine 0.9995 >= 0.999";
    return e;
}

const GateCondition *find(const GateResult &r, const std::string &name) {
    for (const GateCondition &c : r.conditions)
        if (c.name == name) return &c;
    return nullptr;
}

}  // namespace

TEST(GateTolerance, ByteDifferencesPassAndEveryShapeShowsItsConditions) {
    const GateResult r = evaluate_gate(tolerance_evidence(), default_gate_thresholds());
    ASSERT_TRUE(find(r, "parity"));
    EXPECT_EQ(find(r, "parity")->status, GateStatus::pass) << find(r, "parity")->figure;
    EXPECT_EQ(find(r, "parity")->figure, "tolerance: 2 of 2 shapes differ in bytes; 2 of 2 shapes meet the accuracy conditions");
    ASSERT_TRUE(find(r, "accuracy s0"));
    EXPECT_EQ(find(r, "accuracy s0")->figure, "rel_l1 vs baseline 0.03 <= 1.1 x 0.03");
    ASSERT_TRUE(find(r, "baseline accuracy s1"));
    ASSERT_TRUE(find(r, "output-accuracy"));
    EXPECT_EQ(find(r, "output-accuracy")->status, GateStatus::pass);
    EXPECT_FALSE(find(r, "output-sha")) << "the real output is judged by accuracy in tolerance mode";
}

TEST(GateTolerance, AFailedShapeOrRealOutputFails) {
    GateEvidence e = tolerance_evidence();
    e.candidate_accuracy[1].passed = false;
    EXPECT_EQ(find(evaluate_gate(e, default_gate_thresholds()), "accuracy s1")->status, GateStatus::fail);
    EXPECT_FALSE(evaluate_gate(e, default_gate_thresholds()).passed);
    e = tolerance_evidence();
    e.real_output_accuracy_passed = false;
    EXPECT_EQ(find(evaluate_gate(e, default_gate_thresholds()), "output-accuracy")->status, GateStatus::fail);
    e = tolerance_evidence();
    e.real_output_accuracy_passed.reset();
    EXPECT_EQ(find(evaluate_gate(e, default_gate_thresholds()), "output-accuracy")->status, GateStatus::not_checked);
    e = tolerance_evidence();
    e.candidate_accuracy.clear();
    EXPECT_EQ(find(evaluate_gate(e, default_gate_thresholds()), "parity")->status, GateStatus::not_checked);
}

}  // namespace s2tp::unit_accuracy
