// The stage bodies as functions of typed inputs, without a GPU or a compiler: the build's resource
// comparison, the sanitize matrix and the parity check's folding of per-shape results.
#include "stages/parity_check.h"
#include "figures/resource_comparison.h"
#include "model/device_sharding.h"
#include "stages/sanitize_matrix.h"

#include "build_config.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_stage_bodies {

namespace {

const KernelAbi &sage2tp_abi() { return kernel_abi("sage2tp", "test_stage_bodies"); }

const ArchLimits &sm90a() {
    static const ArchLimitsTable table = load_arch_limits((fs::path(S2TP_SOURCE_ROOT) / "data/arch_limits.toml").string());
    return resolve_arch(table, "sm_90a");
}

std::string ptxas_entry(const std::string &name, int registers, int spill_stores, int smem) {
    return "ptxas info    : Compiling entry function '" + name + "' for 'sm_90a'\n"
           "ptxas info    : Function properties for " + name + "\n"
           "    0 bytes stack frame, " + std::to_string(spill_stores) + " bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Used " + std::to_string(registers) + " registers, used 1 barriers, " +
           std::to_string(smem) + " bytes smem, 400 bytes cmem[0]\n";
}

EntryResources resources(std::int64_t registers, std::int64_t smem, double warps) {
    EntryResources e;
    e.registers = registers;
    e.spill_store_bytes = 0;
    e.spill_load_bytes = 0;
    e.smem_per_block = smem;
    e.warps_per_scheduler = warps;
    return e;
}

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(ResourceComparison, PtxasEntriesBecomeTheAdaptersEntriesWithOccupancy) {
    const PtxasReport report = parse_ptxas_report(ptxas_entry("s2tp_attn_hd128_bf16_nomask", 128, 0, 1024) +
                                                      ptxas_entry("helper_not_an_entry", 32, 0, 0),
                                                  "baseline.log");
    std::vector<std::string> clashes;
    const EntryTable entries = variant_resources({report}, "baseline", sage2tp_abi(), sm90a(), clashes);
    EXPECT_TRUE(clashes.empty());
    ASSERT_EQ(entries.size(), 1u) << "only the entries the adapter launches";
    const EntryResources &e = entries.begin()->second;
    EXPECT_EQ(e.entry, "s2tp_attn_hd128_bf16_nomask");
    EXPECT_EQ(e.registers, 128);
    ASSERT_TRUE(e.smem_per_block && e.static_smem_bytes && e.dynamic_smem_bytes);
    EXPECT_EQ(*e.smem_per_block, *e.static_smem_bytes + *e.dynamic_smem_bytes);
    ASSERT_TRUE(e.warps_per_scheduler && e.resident_warps);
    EXPECT_DOUBLE_EQ(*e.warps_per_scheduler, *e.resident_warps / 4.0);

    // The same entry in two sources of one variant cannot be told apart.
    variant_resources({report, report}, "baseline", sage2tp_abi(), sm90a(), clashes);
    ASSERT_EQ(clashes.size(), 1u);
    EXPECT_TRUE(contains(clashes[0], "baseline: two entries are")) << clashes[0];
}

TEST(ResourceComparison, EveryCandidateIsComparedWithTheOneBaseline) {
    EntryTable baseline{{"hd128", resources(128, 32768, 4.0)}, {"hd64", resources(96, 16384, 6.0)}};
    EntryTable same = baseline;
    EntryTable grown = baseline;
    grown["hd64"].smem_per_block = 24576;
    grown["hd64"].warps_per_scheduler = 4.0;
    grown["hd128"].registers = 136;
    const ResourceComparison c = compare_resources("sm_90a", "sage2tp", baseline, {{"candidate", same}, {"grown", grown}});
    EXPECT_TRUE(c.reasons.empty());
    ASSERT_EQ(c.candidates.size(), 2u);
    EXPECT_EQ(c.candidates.at("candidate").summary,
              "2 entries, register growth <= 0, spill growth <= 0 B, smem 32768->32768");
    EXPECT_EQ(c.candidates.at("grown").summary,
              "2 entries, register growth <= 8, spill growth <= 0 B, smem 32768->32768, warps/scheduler FELL");
    EXPECT_EQ(c.summary.rfind("sm_90a: candidate: 2 entries", 0), 0u) << c.summary;
    EXPECT_TRUE(contains(c.summary, "; grown: 2 entries")) << c.summary;
    EXPECT_EQ(c.baseline.size(), 2u);
}

TEST(ResourceComparison, MissingEntriesAreReasons) {
    EntryTable baseline{{"hd128", resources(128, 32768, 4.0)}, {"hd64", resources(96, 16384, 6.0)}};
    EntryTable partial{{"hd128", resources(128, 32768, 4.0)}};
    const ResourceComparison c = compare_resources("sm_90a", "sage2tp", baseline, {{"candidate", partial}});
    ASSERT_EQ(c.reasons.size(), 1u);
    EXPECT_EQ(c.reasons[0], "candidate: entry point hd64 is in the baseline but not in the candidate");

    const ResourceComparison none = compare_resources("sm_90a", "sage2tp", {}, {{"candidate", partial}});
    ASSERT_EQ(none.reasons.size(), 1u);
    EXPECT_TRUE(contains(none.reasons[0], "no attention entry point of kernel ABI sage2tp")) << none.reasons[0];
}

TEST(ResourceComparison, AHostCallCandidatesOwnKernelsStandInForTheEntriesItNoLongerHas) {
    const PtxasReport report = parse_ptxas_report(ptxas_entry("s2tp_attn_hd128_bf16_nomask", 128, 0, 1024) +
                                                      ptxas_entry("shared_kv_small", 160, 8, 0) +
                                                      ptxas_entry("shared_kv_large", 168, 0, 2048),
                                                  "candidate.log");
    const std::optional<EntryResources> worst = worst_unrecognized_entry({report}, sage2tp_abi());
    ASSERT_TRUE(worst);
    EXPECT_EQ(worst->registers, 168) << "each figure is the worst over the host code's own kernels";
    EXPECT_EQ(worst->spill_store_bytes, 8);
    EXPECT_EQ(worst->static_smem_bytes, 2048);
    EXPECT_FALSE(worst->smem_per_block || worst->threads_per_block || worst->warps_per_scheduler)
        << "the launch shape is the host function's, unknown to build";
    EXPECT_EQ(worst->entry, "the worst of the host code's 2 other entry points");
    EXPECT_FALSE(worst_unrecognized_entry({parse_ptxas_report(ptxas_entry("s2tp_attn_hd128_bf16_nomask", 128, 0, 0),
                                                              "baseline.log")},
                                          sage2tp_abi()));

    EntryTable baseline{{"hd128", resources(128, 32768, 4.0)}, {"hd64", resources(96, 16384, 6.0)}};
    EntryTable partial{{"hd128", resources(128, 32768, 4.0)}};
    const ResourceComparison c =
        compare_resources("sm_90a", "sage2tp", baseline, {{"candidate", partial}}, {{"candidate", *worst}});
    EXPECT_TRUE(c.reasons.empty()) << c.reasons.front();
    const EntryTable &entries = c.candidates.at("candidate").kernels;
    ASSERT_EQ(entries.count("hd64"), 1u);
    EXPECT_EQ(entries.at("hd64").registers, 168);
    EXPECT_EQ(c.candidates.at("candidate").summary.rfind("2 entries (1 launched by its host code from its own entry points)", 0),
              0u)
        << c.candidates.at("candidate").summary;
    const ResourceAggregates a = aggregate_resources(baseline, entries);
    ASSERT_TRUE(a.spills);
    EXPECT_EQ(a.spills->candidate, 8) << "a stand-in's spills are judged";
    EXPECT_FALSE(a.smem) << "shared memory is the launch's, which time records";
}

TEST(SanitizeMatrix, EveryVariantToolAndShapeIsOneCheck) {
    const auto plan = plan_sanitize_checks({"baseline", "a", "b"}, {SanitizerTool::memcheck, SanitizerTool::racecheck},
                                           {"s0", "s1"});
    ASSERT_EQ(plan.size(), 12u);
    EXPECT_EQ(plan.front().variant, "baseline");
    EXPECT_EQ(plan.front().log_name, "baseline-memcheck-shape0.log");
    EXPECT_EQ(plan.back().variant, "b");
    EXPECT_EQ(plan.back().log_name, "b-racecheck-shape1.log");
    EXPECT_EQ(plan.back().shape_index, 1u);
}

TEST(SanitizeMatrix, ChecksFoldIntoPerVariantCountsAndReasons) {
    const auto plan = plan_sanitize_checks({"baseline", "candidate", "other"}, {SanitizerTool::memcheck}, {"s0"});
    std::vector<SanitizeOutcome> outcomes;
    for (const SanitizeCheckPlan &check : plan) {
        SanitizerReport report;
        report.passed = true;
        report.verdict = "no errors";
        if (check.variant == "other") {
            report.passed = false;
            report.errors = 2;
            report.verdict = "2 errors";
            report.first_error_lines = {"Invalid __global__ read of size 4"};
        }
        outcomes.push_back(SanitizeOutcome{check, report, "logs/sanitize/" + check.log_name});
    }
    const SanitizeFold fold = fold_sanitize_checks(outcomes, 1, {"memcheck"}, {"candidate", "other"});
    EXPECT_FALSE(fold.passed);
    EXPECT_EQ(fold.figures.total_errors, 2);
    EXPECT_EQ(fold.figures.failed_checks, 1);
    EXPECT_EQ(fold.figures.errors_for("candidate"), 0);
    EXPECT_EQ(fold.figures.errors_for("other"), 2);
    EXPECT_EQ(fold.figures.summary, "3 checks (1 shapes x 1 tools x 3 variants), 1 failed, 2 errors");
    ASSERT_EQ(fold.reasons.size(), 1u);
    EXPECT_EQ(fold.reasons[0], "other memcheck on s0: 2 errors; first record: Invalid __global__ read of size 4 "
                               "(log logs/sanitize/other-memcheck-shape0.log)");
    ASSERT_EQ(fold.figures.checks.size(), 3u);
    EXPECT_EQ(fold.figures.checks[2].passed, false);
}

TEST(SanitizeMatrix, ManyFailuresAreQuotedUpToTheLimit) {
    std::vector<SanitizeOutcome> outcomes;
    for (const SanitizeCheckPlan &check :
         plan_sanitize_checks({"baseline", "candidate"}, {SanitizerTool::memcheck}, std::vector<std::string>(10, "s"))) {
        SanitizerReport failed;
        failed.verdict = "no summary";
        outcomes.push_back(SanitizeOutcome{check, failed, check.log_name});
    }
    const SanitizeFold fold = fold_sanitize_checks(outcomes, 10, {"memcheck"}, {"candidate"});
    ASSERT_EQ(fold.reasons.size(), kSanitizeReasonsShown + 1);
    EXPECT_EQ(fold.reasons.back(), "and 8 more failed checks (see figures.checks)");
    EXPECT_EQ(fold.figures.failed_checks, 20);
}

TEST(SanitizeMatrix, OneBatchPerVariantAndToolCoversEveryCheck) {
    const std::vector<SanitizerTool> tools{SanitizerTool::memcheck, SanitizerTool::racecheck};
    const std::vector<std::string> shapes{"s0", "s1", "s2"};
    const auto batches = plan_sanitize_batches({"baseline", "a"}, tools, shapes);
    ASSERT_EQ(batches.size(), 4u);
    EXPECT_EQ(batches[0].variant, "baseline");
    EXPECT_EQ(batches[0].tool, SanitizerTool::memcheck);
    EXPECT_EQ(batches[1].tool, SanitizerTool::racecheck);
    EXPECT_EQ(batches[3].variant, "a");
    EXPECT_EQ(batches[3].log_name, "a-racecheck-batch.log");
    EXPECT_EQ(batches[3].describe(), "a racecheck on 3 shapes");
    // The batches hold exactly the checks of the unbatched plan, in its order.
    const auto plan = plan_sanitize_checks({"baseline", "a"}, tools, shapes);
    std::vector<std::string> batched;
    for (const SanitizeBatchPlan &batch : batches) {
        EXPECT_EQ(batch.shape_indices(), (std::vector<int>{0, 1, 2}));
        for (const SanitizeCheckPlan &check : batch.checks) {
            EXPECT_EQ(check.variant, batch.variant);
            EXPECT_EQ(check.tool, batch.tool);
            batched.push_back(check.log_name);
        }
    }
    ASSERT_EQ(batched.size(), plan.size());
    for (std::size_t i = 0; i < plan.size(); ++i) EXPECT_EQ(batched[i], plan[i].log_name);
}

TEST(SanitizeMatrix, AFailedBatchIsReplannedOneShapePerProcess) {
    const SanitizeBatchPlan batch =
        plan_sanitize_batches({"candidate"}, {SanitizerTool::initcheck}, {"s0", "s1", "s2"}).front();
    const auto singles = split_sanitize_batch(batch);
    ASSERT_EQ(singles.size(), 3u);
    for (std::size_t i = 0; i < singles.size(); ++i) {
        ASSERT_EQ(singles[i].checks.size(), 1u);
        EXPECT_EQ(singles[i].variant, "candidate");
        EXPECT_EQ(singles[i].tool, SanitizerTool::initcheck);
        EXPECT_EQ(singles[i].shape_indices(), std::vector<int>{static_cast<int>(i)});
        EXPECT_EQ(singles[i].log_name, "candidate-initcheck-shape" + std::to_string(i) + ".log");
        EXPECT_EQ(singles[i].log_name, batch.checks[i].log_name);
    }
    EXPECT_EQ(singles[1].describe(), "candidate initcheck on s1");
}

SanitizerReport clean_report() {
    SanitizerReport report;
    report.passed = true;
    report.summary_found = true;
    report.verdict = "no errors";
    return report;
}

SanitizerReport failed_report(std::int64_t errors, const std::string &record) {
    SanitizerReport report;
    report.errors = errors;
    report.summary_found = true;
    report.verdict = std::to_string(errors) + " errors";
    report.first_error_lines = {record};
    return report;
}

TEST(SanitizeMatrix, APassedBatchPassesEachShapeWithTheBatchLog) {
    const auto batches = plan_sanitize_batches({"baseline", "candidate"}, {SanitizerTool::memcheck}, {"s0", "s1"});
    std::vector<SanitizeOutcome> outcomes;
    for (const SanitizeBatchPlan &batch : batches)
        for (SanitizeOutcome &o : batch_outcomes(batch, clean_report(), "logs/sanitize/" + batch.log_name))
            outcomes.push_back(std::move(o));
    const SanitizeFold fold = fold_sanitize_checks(outcomes, 2, {"memcheck"}, {"candidate"});
    EXPECT_TRUE(fold.passed);
    EXPECT_TRUE(fold.reasons.empty());
    ASSERT_EQ(fold.figures.checks.size(), 4u);
    EXPECT_EQ(fold.figures.checks[1].shape, "s1");
    EXPECT_EQ(fold.figures.checks[1].log, "logs/sanitize/baseline-memcheck-batch.log");
    EXPECT_EQ(fold.figures.checks[3].variant, "candidate");
    EXPECT_EQ(fold.figures.checks[3].log, "logs/sanitize/candidate-memcheck-batch.log");
    EXPECT_EQ(fold.figures.checks[3].errors, 0);
    EXPECT_EQ(fold.figures.checks[3].passed, true);
    EXPECT_EQ(fold.figures.errors_for("candidate"), 0);
    EXPECT_EQ(fold.figures.summary, "4 checks (2 shapes x 1 tools x 2 variants), 0 failed, 0 errors");
}

// The candidate's racecheck batch found a race; alone, shape 1 reproduces it and shape 0 is clean.
TEST(SanitizeMatrix, ASplitBatchIsAttributedToItsShapes) {
    const SanitizeBatchPlan batch = plan_sanitize_batches({"candidate"}, {SanitizerTool::racecheck}, {"s0", "s1"}).front();
    const SanitizeSplit split{batch, failed_report(3, "Race reported between Write access"),
                              "logs/sanitize/candidate-racecheck-batch.log", false};
    const auto singles = split_sanitize_batch(batch);
    const std::vector<SanitizeOutcome> outcomes{
        SanitizeOutcome{singles[0].checks[0], clean_report(), "logs/sanitize/" + singles[0].log_name},
        SanitizeOutcome{singles[1].checks[0], failed_report(3, "Race reported between Write access"),
                        "logs/sanitize/" + singles[1].log_name}};
    const SanitizeFold fold = fold_sanitize_checks(outcomes, 2, {"racecheck"}, {"candidate"}, {split});
    EXPECT_FALSE(fold.passed);
    EXPECT_EQ(fold.figures.total_errors, 3) << "the batch's errors are the shape's, not counted twice";
    EXPECT_EQ(fold.figures.failed_checks, 1);
    ASSERT_EQ(fold.reasons.size(), 1u);
    EXPECT_EQ(fold.reasons[0], "candidate racecheck on s1: 3 errors; first record: Race reported between Write access "
                               "(log logs/sanitize/candidate-racecheck-shape1.log)");
    EXPECT_EQ(fold.figures.checks[0].log, "logs/sanitize/candidate-racecheck-shape0.log");
    EXPECT_EQ(fold.figures.summary, "2 checks (2 shapes x 1 tools x 2 variants), 1 failed, 3 errors");
}

// What the batch found stays found, even when no shape alone shows it.
TEST(SanitizeMatrix, ABatchFindingNoShapeReproducesStillFails) {
    const SanitizeBatchPlan batch = plan_sanitize_batches({"baseline"}, {SanitizerTool::initcheck}, {"s0", "s1"}).front();
    std::vector<SanitizeOutcome> outcomes;
    for (const SanitizeBatchPlan &single : split_sanitize_batch(batch))
        outcomes.push_back(SanitizeOutcome{single.checks[0], clean_report(), "logs/sanitize/" + single.log_name});
    SanitizeSplit split{batch, failed_report(1, "Uninitialized __global__ memory read of size 4"),
                        "logs/sanitize/baseline-initcheck-batch.log", false};
    SanitizeFold fold = fold_sanitize_checks(outcomes, 2, {"initcheck"}, {}, {split});
    EXPECT_FALSE(fold.passed);
    EXPECT_EQ(fold.figures.total_errors, 1);
    EXPECT_EQ(fold.figures.baseline.errors, 1);
    EXPECT_EQ(fold.figures.errors_for("candidate"), std::nullopt) << "no such candidate";
    ASSERT_EQ(fold.reasons.size(), 1u);
    EXPECT_EQ(fold.reasons[0], "baseline initcheck on 2 shapes in one process: 1 errors; first record: "
                               "Uninitialized __global__ memory read of size 4 "
                               "(log logs/sanitize/baseline-initcheck-batch.log), which no shape reproduced alone");
    EXPECT_EQ(fold.figures.summary, "2 checks (2 shapes x 1 tools x 1 variants), 0 failed, 1 errors, "
                                    "1 batch finding that no single shape reproduced");

    // A batch that failed without a record (here: exited non-zero) is a finding as well.
    split.report = SanitizerReport{};
    split.report.verdict = "compute-sanitizer exited 5";
    fold = fold_sanitize_checks(outcomes, 2, {"initcheck"}, {}, {split});
    EXPECT_FALSE(fold.passed);

    // Only a batch that ran out of time with no record is settled by its shapes, each run to the end.
    split.timed_out = true;
    fold = fold_sanitize_checks(outcomes, 2, {"initcheck"}, {}, {split});
    EXPECT_TRUE(fold.passed);
    EXPECT_TRUE(fold.reasons.empty());
    split.report = failed_report(2, "Uninitialized __global__ memory read of size 4");
    fold = fold_sanitize_checks(outcomes, 2, {"initcheck"}, {}, {split});
    EXPECT_FALSE(fold.passed) << "records before the timeout still stand";
}

TEST(ParityCheck, ByteDifferenceCountsStoredBytes) {
    Tensor a, b;
    a.dtype = b.dtype = DType::f32;
    a.shape = b.shape = {2, 2};
    const float values[4] = {1.0f, 0.0f, 2.0f, 3.0f};
    const float other[4] = {1.0f, -0.0f, 2.0f, 4.0f};
    a.bytes.resize(sizeof values);
    b.bytes.resize(sizeof other);
    std::memcpy(a.bytes.data(), values, sizeof values);
    std::memcpy(b.bytes.data(), other, sizeof other);
    const ByteDifference d = byte_difference(a, b);
    EXPECT_EQ(d.differing, 2) << "-0 differs from +0 by its bytes";
    EXPECT_EQ(d.first, 1);
    const std::optional<TensorDifference> t = tensor_difference("o", a, b);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->first_index, "[0, 1]");
    EXPECT_EQ(t->baseline_value, "0x00000000 (0)");
    EXPECT_EQ(t->candidate_value, "0x80000000 (-0)");
    EXPECT_FALSE(tensor_difference("o", a, a));
}

TEST(ParityCheck, PerShapeResultsFoldIntoFiguresAndReasonsPerCandidate) {
    std::vector<ParityComparison> comparisons;
    for (const char *shape : {"s0", "s1"})
        for (std::int64_t seed : {1, 2}) {
            ParityComparison c;
            c.shape = shape;
            c.seed = seed;
            c.baseline_o_sha256 = "aa";
            c.reference_rel_l2 = shape == std::string("s1") && seed == 2 ? 0.02 : 0.01;
            c.candidates["same"].o_sha256 = "aa";
            CandidateRun &differs = c.candidates["differs"];
            differs.o_sha256 = "bb";
            if (shape == std::string("s1"))
                differs.differences.push_back(TensorDifference{"o", 3, 64, "[0, 1]", "0x3c00 (1)", "0x3c01 (1.0009766)"});
            comparisons.push_back(c);
        }
    const ParityFold fold = fold_parity(comparisons, 2, 2, 0.05, {"differs", "same"});
    EXPECT_FALSE(fold.passed);
    EXPECT_EQ(fold.figures.shapes_checked, 2);
    EXPECT_EQ(fold.figures.comparisons, 4);
    EXPECT_EQ(fold.figures.candidates.at("same").shapes_differing, 0);
    EXPECT_EQ(fold.figures.candidates.at("differs").shapes_differing, 1) << "one shape, though two seeds differ";
    EXPECT_EQ(fold.figures.candidates.at("differs").differences.size(), 2u);
    EXPECT_EQ(fold.figures.candidates.at("same").outputs.size(), 4u);
    EXPECT_EQ(fold.figures.baseline_outputs.size(), 4u);
    EXPECT_DOUBLE_EQ(*fold.figures.reference_worst_rel_l2, 0.02);
    EXPECT_EQ(fold.figures.reference_worst_case, "s1 seed 2");
    ASSERT_EQ(fold.reasons.size(), 2u);
    EXPECT_EQ(fold.reasons[0], "differs: s1 seed 1: o differs in 3 of 64 elements; first at [0, 1]: baseline 0x3c00 (1), "
                               "candidate 0x3c01 (1.0009766)");
    EXPECT_EQ(fold.figures.summary, "2 shapes x 2 seeds: differs: 1 shapes differ, same: 0 shapes differ; baseline vs "
                                    "float64 reference worst rel-L2 0.02000 (limit 0.05000)");
}

TEST(ParityCheck, UnwrittenOutputsAndAReferenceMissFail) {
    ParityComparison c;
    c.shape = "s0";
    c.seed = 7;
    c.baseline_unwritten = 4;
    c.candidates["candidate"].unwritten = 2;
    c.reference_rel_l2 = std::nan("");
    const ParityFold fold = fold_parity({c}, 1, 1, 0.05, {"candidate"});
    EXPECT_FALSE(fold.passed);
    ASSERT_EQ(fold.reasons.size(), 3u);
    EXPECT_EQ(fold.reasons[0], "s0 seed 7: the baseline left 4 output elements NaN: unwritten (still the NaN poison), or "
                               "computed from shared memory it did not write (filled with NaN before every launch)");
    EXPECT_EQ(fold.reasons[1], "candidate: s0 seed 7: the candidate left 2 output elements NaN: unwritten (still the NaN "
                               "poison), or computed from shared memory it did not write (filled with NaN before every "
                               "launch)");
    EXPECT_TRUE(contains(fold.reasons[2], "rel-L2 away from the float64 reference")) << fold.reasons[2];
    EXPECT_EQ(fold.figures.reference_worst_case, "s0 seed 7") << "NaN counts as the worst";

    ParityComparison clean;
    clean.shape = "s0";
    clean.candidates["candidate"];
    EXPECT_TRUE(fold_parity({clean}, 1, 1, 0.05, {"candidate"}).passed);
}

namespace {

GpuFigures h200(int index) {
    GpuFigures g;
    g.index = index;
    g.name = "NVIDIA H200";
    g.pci_bus_id = "0000:1" + std::to_string(index) + ":00.0";
    return g;
}

SanitizerReport lost_report(int gpu) {
    SanitizerReport report;
    report.verdict = "GPU " + std::to_string(gpu) + " lost during this check: cudaErrorDevicesUnavailable";
    return report;
}

}  // namespace

TEST(SanitizeMatrix, EachLogNamesItsGpu) {
    EXPECT_EQ(log_name_on_gpu("baseline-memcheck-batch.log", 1), "baseline-memcheck-batch-gpu1.log");
    EXPECT_EQ(log_name_on_gpu("a-racecheck-shape3.log", 0), "a-racecheck-shape3-gpu0.log");
}

// Two GPUs: GPU 1 is lost on its first batch; the batch still queued on it moves to GPU 0, which
// passes everything it ran. The stage fails on GPU 1 alone, and GPU 0's results are kept.
TEST(SanitizeMatrix, ALostGpuFailsTheStageAndTheOtherGpusResultsAreKept) {
    const auto batches = plan_sanitize_batches({"baseline", "candidate"},
                                               {SanitizerTool::memcheck, SanitizerTool::racecheck}, {"s0", "s1"});
    ASSERT_EQ(batches.size(), 4u);
    GpuQueues queues(batches.size(), {0, 1});
    std::vector<SanitizeOutcome> outcomes;
    auto run_on = [&](int gpu, const SanitizerReport &report) {
        const std::size_t item = *queues.take(gpu);
        const std::string log = "logs/sanitize/" + log_name_on_gpu(batches[item].log_name, gpu);
        for (SanitizeOutcome &o : batch_outcomes(batches[item], report, log, gpu)) outcomes.push_back(std::move(o));
    };
    run_on(0, clean_report());
    run_on(1, lost_report(1));
    EXPECT_TRUE(queues.lose(1).empty());
    while (queues.has_work(0)) run_on(0, clean_report());
    EXPECT_TRUE(queues.empty());

    std::vector<GpuFigures> gpus{h200(0), h200(1)};
    gpus[1].lost = "cudaErrorDevicesUnavailable (log logs/sanitize/baseline-racecheck-batch-gpu1.log)";
    const SanitizeFold fold = fold_sanitize_checks(outcomes, 2, {"memcheck", "racecheck"}, {"candidate"}, {}, gpus);
    EXPECT_FALSE(fold.passed);
    ASSERT_EQ(fold.figures.gpus.size(), 2u);
    EXPECT_EQ(fold.figures.gpus[0].checks, 6);
    EXPECT_EQ(fold.figures.gpus[0].passed, 6);
    EXPECT_EQ(fold.figures.gpus[1].checks, 2);
    EXPECT_EQ(fold.figures.gpus[1].passed, 0);
    EXPECT_EQ(fold.figures.gpus[1].failed, 2);
    ASSERT_FALSE(fold.reasons.empty());
    EXPECT_NE(fold.reasons.front().find("GPU 1 NVIDIA H200 was lost after 2 of 2 checks: cudaErrorDevicesUnavailable"),
              std::string::npos)
        << fold.reasons.front();
    std::size_t kept = 0;
    for (const SanitizeCheck &check : fold.figures.checks) {
        EXPECT_EQ(check.passed, check.gpu == 0) << check.variant << " " << check.tool << " " << check.shape;
        kept += check.gpu == 0 && check.passed == true;
    }
    EXPECT_EQ(kept, 6u);
    EXPECT_EQ(fold.figures.failed_checks, 2);
    const std::string text = fold.figures.text(false);
    EXPECT_NE(text.find("GPU 0 NVIDIA H200 (0000:10:00.0): ran 6 of 6 checks, 6 passed"), std::string::npos) << text;
    EXPECT_NE(text.find("GPU 1 NVIDIA H200 (0000:11:00.0): ran 2 of 2 checks, 0 passed, 2 failed, LOST: "), std::string::npos)
        << text;
}

// One GPU, lost: what it had not run yet is reported as not run, never as a pass.
TEST(SanitizeMatrix, ChecksNoGpuIsLeftToRunAreNotRunNeverPassed) {
    const auto batches = plan_sanitize_batches({"baseline"}, {SanitizerTool::memcheck, SanitizerTool::initcheck}, {"s0"});
    GpuQueues queues(batches.size(), {0});
    std::vector<SanitizeOutcome> outcomes;
    const std::size_t first = *queues.take(0);
    for (SanitizeOutcome &o : batch_outcomes(batches[first], lost_report(0), "logs/sanitize/x-gpu0.log", 0))
        outcomes.push_back(std::move(o));
    const std::vector<std::size_t> orphans = queues.lose(0);
    ASSERT_EQ(orphans.size(), 1u);
    for (SanitizeOutcome &o : not_run_outcomes(batches[orphans[0]], 0, "cudaErrorDevicesUnavailable", "logs/sanitize/x-gpu0.log"))
        outcomes.push_back(std::move(o));
    std::vector<GpuFigures> gpus{h200(0)};
    gpus[0].lost = "cudaErrorDevicesUnavailable";
    const SanitizeFold fold = fold_sanitize_checks(outcomes, 1, {"memcheck", "initcheck"}, {}, {}, gpus);
    EXPECT_FALSE(fold.passed);
    ASSERT_EQ(fold.figures.checks.size(), 2u);
    EXPECT_EQ(fold.figures.checks[1].passed, false);
    EXPECT_EQ(fold.figures.gpus[0].checks, 2);
    EXPECT_EQ(fold.figures.gpus[0].failed, 1) << "the not-run check is neither passed nor failed by the GPU";
    EXPECT_EQ(fold.figures.gpus[0].ran, 1);
    bool named = false;
    for (const std::string &reason : fold.reasons)
        named |= reason.find("baseline initcheck on s0: not run: GPU 0 lost (cudaErrorDevicesUnavailable)") != std::string::npos;
    EXPECT_TRUE(named);
    EXPECT_NE(fold.reasons.front().find("GPU 0 NVIDIA H200 was lost after 1 of 2 checks"), std::string::npos)
        << fold.reasons.front();
}

}  // namespace s2tp::unit_stage_bodies
