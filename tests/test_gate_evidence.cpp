// The gate's evidence as read from real checkpoint files: hand-written checkpoints, chained as the
// stage framework chains them, go through inspect_run, gather_gate_evidence and evaluate_gate.
#include "stages/gate_evidence.h"
#include "default_thresholds.h"
#include "scratch_directory.h"
#include "figures/gate_figures.h"
#include "figures/time_figures.h"

#include "formats/checkpoint_store.h"
#include "pipeline/stage_pipeline.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_gate_evidence {

namespace {

const std::string sha_a = std::string(64, 'a');
const std::string sha_b = std::string(64, 'b');
const std::string sha_c = std::string(64, 'c');

toml::table arm(std::int64_t smem, double warps_per_scheduler, std::int64_t spill_store, std::int64_t spill_load) {
    return toml::table{{"registers", 128},
                       {"spill_store_bytes", spill_store},
                       {"spill_load_bytes", spill_load},
                       {"static_smem_bytes", smem},
                       {"dynamic_smem_bytes", 0},
                       {"smem_per_block", smem},
                       {"blocks_per_sm", 4},
                       {"resident_warps", 16},
                       {"warps_per_scheduler", warps_per_scheduler},
                       {"limited_by", "registers"}};
}

// A stage's checkpoint content before it is written: status, figures and reasons.
struct Planned {
    StageStatus status = StageStatus::passed;
    toml::table figures;
    std::vector<std::string> reasons;
};

class GateEvidenceTest : public ::testing::Test {
protected:
    void SetUp() override {
        run_ = std::make_unique<RunDirectory>(root_);

        plan_[Stage::prepare].figures = toml::table{{"summary", "embedded"}};
        plan_[Stage::build].figures = toml::table{
            {"arch", "sm_90a"},
            {"baseline", toml::table{{"kernels", toml::table{{"s2tp_attn_hd128_bf16_nomask", arm(32768, 4.0, 0, 0)},
                                                             {"s2tp_attn_hd64_f16_causal", arm(16384, 6.0, 0, 0)}}}}},
            {"candidates", toml::table{}}};
        plan_[Stage::sanitize].figures = toml::table{{"total_errors", 0}, {"failed_checks", 0},
                                                     {"baseline", toml::table{{"errors", 0}, {"failed_checks", 0}}},
                                                     {"candidates", toml::table{}}};
        plan_[Stage::parity].figures = toml::table{{"shapes_checked", 12}, {"candidates", toml::table{}}};
        plan_[Stage::time].figures = toml::table{
            {"sha256", toml::table{{"baseline", sha_a}, {"match", true}}},
            {"baseline", toml::table{{"p50", 212.4}, {"n", 240}, {"tops_p50", 103.5}}},
            {"tensor_peak_tops", 2141.0},
            {"input_sets", 3},
            {"recheck", toml::table{{"baseline", toml::table{{"rounds", 60}, {"failed", 0}}},
                                    {"baseline_control", toml::table{{"rounds", 60}, {"failed", 0}}}}},
            {"candidates", toml::table{}}};
        add_candidate("candidate", 203.9, 0.9626);
    }

    // A candidate with the baseline's resources, no sanitizer error, no differing shape and the
    // baseline's output, timed at `p50` with a ratio interval reaching `ci_high`.
    void add_candidate(const std::string &name, double p50, double ci_high) {
        candidate_table(Stage::build).insert_or_assign(
            name, toml::table{{"kernels", toml::table{{"s2tp_attn_hd128_bf16_nomask", arm(32768, 4.0, 0, 0)},
                                                      {"s2tp_attn_hd64_f16_causal", arm(16384, 6.0, 0, 0)}}}});
        candidate_table(Stage::sanitize).insert_or_assign(name, toml::table{{"errors", 0}, {"failed_checks", 0}});
        candidate_table(Stage::parity).insert_or_assign(name, toml::table{{"shapes_differing", 0}});
        plan_[Stage::time].figures["recheck"].as_table()->insert_or_assign(
            name, toml::table{{"rounds", 60}, {"failed", 0}});
        candidate_table(Stage::time).insert_or_assign(
            name, toml::table{{"sha256", sha_a},
                              {"timing", toml::table{{"p50", p50}, {"n", 240}, {"tops_p50", 107.8}}},
                              {"ratio", toml::table{{"median", 0.9611}, {"ci_low", 0.9601}, {"ci_high", ci_high},
                                                    {"half_width", 0.0013}, {"resamples", 10000}, {"seed", 20261129}}}});
    }

    // [figures.candidates] of a stage's planned checkpoint.
    toml::table &candidate_table(Stage stage) { return *plan_[stage].figures["candidates"].as_table(); }
    toml::table &candidate_figures(Stage stage, const std::string &name = "candidate") {
        return *candidate_table(stage)[name].as_table();
    }

    // Writes the planned checkpoints of `stages` in order, each chained to the digest of the previous
    // stage's checkpoint currently on disk, exactly as the stage framework does.
    void write(const std::vector<Stage> &stages) {
        for (Stage stage : stages) {
            Checkpoint c;
            c.stage = stage_name(stage);
            c.status = plan_[stage].status;
            c.started_utc = c.finished_utc = "2026-11-29T12:00:00Z";
            c.input_fingerprint = "0123456789abcdef0123456789abcdef";
            c.figures = plan_[stage].figures;
            c.reasons = plan_[stage].reasons;
            if (stage != Stage::prepare) {
                const Stage previous = static_cast<Stage>(static_cast<int>(stage) - 1);
                CheckpointRead read = read_checkpoint(checkpoint_path(*run_, previous));
                if (read.checkpoint) c.previous_digest = read.checkpoint->digest;
            }
            write_checkpoint(checkpoint_path(*run_, stage), c);
        }
    }
    void write_all() { write({Stage::prepare, Stage::build, Stage::sanitize, Stage::parity, Stage::time}); }

    GateEvidence evidence(const std::string &candidate = "candidate") {
        return gather_gate_evidence(inspect_run(*run_), {candidate}).at(candidate);
    }
    GateResult evaluate(const GateThresholds &thresholds = default_gate_thresholds()) {
        return evaluate_gate(evidence(), thresholds);
    }

    toml::table &kernel(const std::string &name, const std::string &variant) {
        toml::table &figures = plan_[Stage::build].figures;
        if (variant == "baseline") return *figures["baseline"]["kernels"][name].as_table();
        return *figures["candidates"][variant]["kernels"][name].as_table();
    }

    ScratchDirectory scratch_{"gate-evidence"};
    const fs::path root_ = scratch_.path();
    std::unique_ptr<RunDirectory> run_;
    std::map<Stage, Planned> plan_;
};

const GateCondition &condition(const GateResult &result, const std::string &name) {
    for (const GateCondition &c : result.conditions)
        if (c.name == name) return c;
    ADD_FAILURE() << "no condition named " << name;
    static const GateCondition none;
    return none;
}

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_F(GateEvidenceTest, AllPassingCheckpointsPass) {
    write_all();
    GateThresholds thresholds = default_gate_thresholds();
    thresholds.ratio_upper_bound = 0.98;
    const GateResult result = evaluate(thresholds);
    for (const GateCondition &c : result.conditions)
        EXPECT_EQ(c.status, GateStatus::pass) << c.name << ": " << c.figure << " " << c.detail;
    EXPECT_TRUE(result.passed);
    EXPECT_TRUE(contains(condition(result, "candidate-p50").figure, "203.9")) << condition(result, "candidate-p50").figure;
    EXPECT_TRUE(contains(condition(result, "parity").figure, "0 of 12")) << condition(result, "parity").figure;
}

TEST_F(GateEvidenceTest, EvidenceCarriesTheRecordedFigures) {
    write_all();
    const GateEvidence e = evidence();
    EXPECT_TRUE(e.prepare.present && e.prepare.fresh && e.prepare.passed);
    EXPECT_TRUE(e.time.present && e.time.fresh && e.time.passed);
    EXPECT_EQ(e.resource_arch, "sm_90a");
    EXPECT_EQ(e.parity_shapes_compared, 12);
    ASSERT_TRUE(e.candidate_p50_ms);
    EXPECT_DOUBLE_EQ(*e.candidate_p50_ms, 203.9);
    ASSERT_TRUE(e.candidate_vs_baseline);
    EXPECT_DOUBLE_EQ(e.candidate_vs_baseline->hi, 0.9626);
    EXPECT_EQ(e.candidate_vs_baseline->n, 240u);
    EXPECT_EQ(e.candidate_vs_baseline->seed, 20261129u);
    // Nothing pinned: the baseline's own real output is the expected one.
    EXPECT_EQ(e.expected_real_output_sha256, sha_a);
}

TEST_F(GateEvidenceTest, FailedBuildFailsTheGateWithItsReason) {
    plan_[Stage::build].status = StageStatus::failed;
    plan_[Stage::build].figures = toml::table{{"arch", "sm_90a"}, {"summary", "sm_90a: compile failed"}};
    plan_[Stage::build].reasons = {"candidate:kernels/attention_entry.cu does not compile (nvcc exit 1): error: x"};
    write({Stage::prepare, Stage::build});
    const GateResult result = evaluate();
    const GateCondition &build = condition(result, "build");
    EXPECT_EQ(build.status, GateStatus::fail);
    EXPECT_TRUE(contains(build.detail, "does not compile")) << build.detail;
    EXPECT_NE(condition(result, "shared-memory").status, GateStatus::pass);
    EXPECT_FALSE(result.passed);
}

TEST_F(GateEvidenceTest, SanitizerErrorsFailWithTheCount) {
    plan_[Stage::sanitize].status = StageStatus::failed;
    plan_[Stage::sanitize].figures.insert_or_assign("total_errors", 3);
    candidate_figures(Stage::sanitize).insert_or_assign("errors", 3);
    plan_[Stage::sanitize].reasons = {"racecheck found 3 hazards in candidate"};
    write_all();
    const GateResult result = evaluate();
    const GateCondition &sanitizer = condition(result, "sanitizer");
    EXPECT_EQ(sanitizer.status, GateStatus::fail);
    EXPECT_TRUE(contains(sanitizer.figure, "3 error")) << sanitizer.figure;
    EXPECT_FALSE(result.passed);
}

TEST_F(GateEvidenceTest, DifferingParityShapeFailsWithTheCount) {
    plan_[Stage::parity].status = StageStatus::failed;
    candidate_figures(Stage::parity).insert_or_assign("shapes_differing", 2);
    write_all();
    const GateResult result = evaluate();
    const GateCondition &parity = condition(result, "parity");
    EXPECT_EQ(parity.status, GateStatus::fail);
    EXPECT_TRUE(contains(parity.figure, "2 of 12")) << parity.figure;
    EXPECT_FALSE(result.passed);
}

TEST_F(GateEvidenceTest, CandidateOutputDifferingFromTheBaselineFails) {
    candidate_figures(Stage::time).insert_or_assign("sha256", sha_b);
    write_all();
    const GateResult result = evaluate();
    const GateCondition &sha = condition(result, "output-sha");
    EXPECT_EQ(sha.status, GateStatus::fail);
    EXPECT_TRUE(contains(sha.figure, "bbbbbbbbbbbb")) << sha.figure;
    EXPECT_TRUE(contains(sha.figure, "aaaaaaaaaaaa")) << sha.figure;
    EXPECT_FALSE(result.passed);
}

TEST_F(GateEvidenceTest, PinnedDigestIsTheExpectedOne) {
    // Candidate equal to the baseline is not enough when the manifest pins another digest.
    plan_[Stage::time].figures["sha256"].as_table()->insert_or_assign("expected", sha_c);
    write_all();
    EXPECT_EQ(condition(evaluate(), "output-sha").status, GateStatus::fail);

    // The pin decides even when the baseline differs from it.
    toml::table &sha = *plan_[Stage::time].figures["sha256"].as_table();
    sha.insert_or_assign("baseline", sha_b);
    candidate_figures(Stage::time).insert_or_assign("sha256", sha_c);
    write({Stage::time});
    EXPECT_EQ(condition(evaluate(), "output-sha").status, GateStatus::pass);
}

TEST_F(GateEvidenceTest, CandidateP50AtTheThresholdFails) {
    candidate_figures(Stage::time)["timing"].as_table()->insert_or_assign("p50", 220.0);
    write_all();
    const GateResult result = evaluate();
    const GateCondition &p50 = condition(result, "candidate-p50");
    EXPECT_EQ(p50.status, GateStatus::fail);
    EXPECT_TRUE(contains(p50.figure, "220.000")) << p50.figure;
    EXPECT_FALSE(result.passed);

    GateThresholds looser = default_gate_thresholds();
    looser.max_candidate_p50_ms = 230;
    EXPECT_EQ(condition(evaluate(looser), "candidate-p50").status, GateStatus::pass);
}

TEST_F(GateEvidenceTest, SharedMemoryGrowthInAnyEntryFails) {
    kernel("s2tp_attn_hd64_f16_causal", "candidate").insert_or_assign("smem_per_block", 24576);
    write_all();
    const GateResult result = evaluate();
    const GateCondition &smem = condition(result, "shared-memory");
    EXPECT_EQ(smem.status, GateStatus::fail);
    // The entry that grew is judged, not the largest block of each arm (32768 both).
    EXPECT_TRUE(contains(smem.figure, "candidate 24576 B vs baseline 16384 B")) << smem.figure;
    EXPECT_FALSE(result.passed);
}

TEST_F(GateEvidenceTest, FallInWarpsPerSchedulerFails) {
    kernel("s2tp_attn_hd128_bf16_nomask", "candidate").insert_or_assign("warps_per_scheduler", 3.0);
    write_all();
    const GateResult result = evaluate();
    const GateCondition &warps = condition(result, "warps-per-scheduler");
    EXPECT_EQ(warps.status, GateStatus::fail);
    EXPECT_TRUE(contains(warps.figure, "candidate 3 vs baseline 4")) << warps.figure;
    EXPECT_FALSE(result.passed);
}

TEST_F(GateEvidenceTest, SpillGrowthAboveTheLimitFails) {
    toml::table &candidate = kernel("s2tp_attn_hd128_bf16_nomask", "candidate");
    candidate.insert_or_assign("spill_store_bytes", 16);
    candidate.insert_or_assign("spill_load_bytes", 8);
    write_all();
    const GateCondition spills = condition(evaluate(), "spills");
    EXPECT_EQ(spills.status, GateStatus::fail);
    EXPECT_TRUE(contains(spills.figure, "+24 B")) << spills.figure;

    GateThresholds allowing = default_gate_thresholds();
    allowing.max_spill_growth_bytes = 32;
    EXPECT_EQ(condition(evaluate(allowing), "spills").status, GateStatus::pass);
}

TEST_F(GateEvidenceTest, RatioIntervalReachingTheBoundFails) {
    candidate_figures(Stage::time)["ratio"].as_table()->insert_or_assign("ci_high", 0.99);
    write_all();
    GateThresholds thresholds = default_gate_thresholds();
    thresholds.ratio_upper_bound = 0.98;
    const GateResult result = evaluate(thresholds);
    const GateCondition &speed = condition(result, "relative-speed");
    EXPECT_EQ(speed.status, GateStatus::fail);
    EXPECT_TRUE(contains(speed.figure, "0.9900")) << speed.figure;
    EXPECT_FALSE(result.passed);
}

TEST_F(GateEvidenceTest, StaleCheckpointsAreNotEvidence) {
    write_all();
    // Re-running build (a new digest) leaves sanitize, parity and time built on the old one.
    plan_[Stage::build].figures.insert_or_assign("jobs", 4);
    write({Stage::build});
    const GateResult result = evaluate();
    const GateCondition &freshness = condition(result, "freshness");
    EXPECT_EQ(freshness.status, GateStatus::fail);
    EXPECT_TRUE(contains(freshness.figure, "parity")) << freshness.figure;
    EXPECT_TRUE(contains(freshness.figure, "time")) << freshness.figure;
    for (const char *fed_by_stale : {"sanitizer", "parity", "output-sha", "candidate-p50"})
        EXPECT_NE(condition(result, fed_by_stale).status, GateStatus::pass) << fed_by_stale;
    EXPECT_FALSE(result.passed);
}

TEST_F(GateEvidenceTest, EditedCheckpointIsNotEvidence) {
    candidate_figures(Stage::parity).insert_or_assign("shapes_differing", 2);
    write_all();
    // Hiding the two differing shapes by hand breaks the checkpoint's digest.
    const fs::path parity = checkpoint_path(*run_, Stage::parity);
    std::string text;
    {
        std::ifstream in(parity);
        text.assign(std::istreambuf_iterator<char>(in), {});
    }
    const std::size_t at = text.find("shapes_differing = 2");
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, 20, "shapes_differing = 0");
    std::ofstream(parity, std::ios::trunc) << text;
    const GateEvidence e = evidence();
    EXPECT_TRUE(e.parity.present);
    EXPECT_FALSE(e.parity.fresh);
    EXPECT_EQ(e.parity_shapes_compared, 0);  // figures of an untrusted file are not read
    const GateResult result = evaluate();
    EXPECT_EQ(condition(result, "freshness").status, GateStatus::fail);
    EXPECT_NE(condition(result, "parity").status, GateStatus::pass);
    EXPECT_FALSE(result.passed);
}

TEST_F(GateEvidenceTest, SkippedSanitizerIsNotCheckedAndBlocksOnlyWhenRequired) {
    plan_[Stage::sanitize].status = StageStatus::skipped;
    plan_[Stage::sanitize].figures = toml::table{{"summary", "skipped"}};
    plan_[Stage::sanitize].reasons = {"RUN_SANITIZER=0"};
    write_all();
    const GateResult result = evaluate();
    EXPECT_EQ(condition(result, "sanitizer").status, GateStatus::not_checked);
    EXPECT_TRUE(result.passed);

    GateThresholds strict = default_gate_thresholds();
    strict.require_sanitizer = true;
    const GateResult required = evaluate(strict);
    EXPECT_EQ(condition(required, "sanitizer").status, GateStatus::not_checked);
    EXPECT_FALSE(required.passed);
}

TEST_F(GateEvidenceTest, MissingTimeCheckpointIsNotCheckedAndFails) {
    write({Stage::prepare, Stage::build, Stage::sanitize, Stage::parity});
    const GateResult result = evaluate();
    for (const char *timed : {"output-sha", "candidate-p50"})
        EXPECT_EQ(condition(result, timed).status, GateStatus::not_checked) << timed;
    EXPECT_FALSE(result.passed);
}

TEST_F(GateEvidenceTest, UnrecordedFiguresAreNeverAPass) {
    candidate_figures(Stage::time)["timing"].as_table()->erase("p50");
    candidate_figures(Stage::parity).erase("shapes_differing");
    candidate_figures(Stage::sanitize).erase("errors");
    kernel("s2tp_attn_hd64_f16_causal", "baseline").erase("warps_per_scheduler");
    write_all();
    const GateResult result = evaluate();
    for (const char *unrecorded : {"candidate-p50", "parity", "sanitizer", "warps-per-scheduler"})
        EXPECT_NE(condition(result, unrecorded).status, GateStatus::pass) << unrecorded;
    EXPECT_EQ(condition(result, "candidate-p50").status, GateStatus::not_checked);
    EXPECT_EQ(condition(result, "warps-per-scheduler").status, GateStatus::not_checked);
    EXPECT_FALSE(result.passed);
}

// Two candidates on one baseline: each gets its own evidence and verdict, and the overall verdict
// (the gate's exit status) passes only when both do.
TEST_F(GateEvidenceTest, EachCandidateGetsItsOwnVerdictAndTheOverallOneNeedsAll) {
    add_candidate("slower", 203.9, 0.9626);
    candidate_figures(Stage::time, "slower")["timing"].as_table()->insert_or_assign("p50", 250.0);
    kernel("s2tp_attn_hd64_f16_causal", "slower").insert_or_assign("smem_per_block", 24576);
    write_all();

    std::map<std::string, GateResult> verdicts;
    for (const auto &[name, e] : gather_gate_evidence(inspect_run(*run_), {"candidate", "slower"}))
        verdicts[name] = evaluate_gate(e, default_gate_thresholds());
    ASSERT_EQ(verdicts.size(), 2u);
    EXPECT_TRUE(verdicts["candidate"].passed);
    EXPECT_FALSE(verdicts["slower"].passed);
    EXPECT_EQ(condition(verdicts["slower"], "candidate-p50").status, GateStatus::fail);
    EXPECT_EQ(condition(verdicts["slower"], "shared-memory").status, GateStatus::fail);
    EXPECT_EQ(condition(verdicts["candidate"], "shared-memory").status, GateStatus::pass);

    const GateFigures figures = GateFigures::of(verdicts, default_gate_thresholds());
    EXPECT_FALSE(figures.passed);  // StageStatus::failed: `sage2tp gate` exits 1
    EXPECT_EQ(figures.summary, "FAIL: slower: candidate-p50, shared-memory");
    const std::string text = figures.text();
    EXPECT_TRUE(contains(text, "candidate candidate:\n")) << text;
    EXPECT_TRUE(contains(text, "candidate slower:\n")) << text;
    EXPECT_TRUE(contains(text, "verdict: PASS\n")) << text;
    EXPECT_TRUE(contains(text, "verdict: FAIL (failed: candidate-p50, shared-memory)\n")) << text;
    EXPECT_TRUE(contains(text, "overall: FAIL (1 of 2 candidates pass)")) << text;
    const std::vector<std::string> reasons = figures.reasons();
    ASSERT_EQ(reasons.size(), 2u);
    EXPECT_EQ(reasons[0].rfind("slower: candidate-p50 failed: ", 0), 0u) << reasons[0];

    // The checkpoint (and --json, and reports/gate.json) lists each candidate.
    const toml::table written = figures.to_toml();
    EXPECT_EQ(written["candidates"]["candidate"]["verdict"].value_or(std::string()), "PASS");
    EXPECT_EQ(written["candidates"]["slower"]["verdict"].value_or(std::string()), "FAIL");
    EXPECT_EQ(written["verdict"].value_or(std::string()), "FAIL");
    EXPECT_TRUE(GateFigures::from_toml(written) == figures);

    verdicts.erase("slower");
    EXPECT_TRUE(GateFigures::of(verdicts, default_gate_thresholds()).passed);
}

// A candidate that no stage has figures for is NOT CHECKED everywhere, never a pass.
TEST_F(GateEvidenceTest, CandidateWithoutFiguresIsNotChecked) {
    write_all();
    const GateResult result = evaluate_gate(evidence("unknown"), default_gate_thresholds());
    for (const char *name : {"parity", "sanitizer", "output-sha", "candidate-p50", "shared-memory", "spills"})
        EXPECT_NE(condition(result, name).status, GateStatus::pass) << name;
    EXPECT_FALSE(result.passed);
}

// GPUs of several models: the time checkpoint's gpu_results, written by TimeFigures' own field table,
// give one speed verdict per GPU; the slower GPU fails the gate and is named.
TEST_F(GateEvidenceTest, GpusOfSeveralModelsAreJudgedEachOnItsOwn) {
    TimeFigures f = TimeFigures::from_toml(plan_[Stage::time].figures);
    f.baseline.reset();
    CandidateTimeFigures &combined = f.candidate_or_add("candidate");
    combined.timing.reset();
    combined.ratio.reset();
    const auto gpu_result = [](std::int64_t index, const std::string &name, double p50, double ci_high) {
        GpuTimeResult g;
        g.index = index;
        g.name = name;
        g.uuid = "GPU-" + std::to_string(index);
        ArmTimeFigures timing;
        timing.p50 = p50;
        timing.n = 120;
        RatioFigures ratio;
        ratio.median = ci_high - 0.002;
        ratio.ci_low = ci_high - 0.004;
        ratio.ci_high = ci_high;
        g.candidates.push_back({"candidate", timing, ratio});
        return g;
    };
    f.gpu_results = {gpu_result(0, "NVIDIA H200", 140.0, 0.96), gpu_result(1, "NVIDIA H100 80GB HBM3", 190.0, 1.01)};
    plan_[Stage::time].figures = f.to_toml();
    write_all();

    const GateEvidence e = evidence();
    ASSERT_EQ(e.gpu_timings.size(), 2u);
    EXPECT_EQ(e.gpu_timings[1].gpu, "GPU 1 NVIDIA H100 80GB HBM3");
    ASSERT_TRUE(e.gpu_timings[1].candidate_vs_baseline);
    EXPECT_DOUBLE_EQ(e.gpu_timings[1].candidate_vs_baseline->hi, 1.01);
    EXPECT_EQ(e.gpu_timings[1].candidate_vs_baseline->n, 120u);
    const GateResult result = evaluate();
    EXPECT_EQ(condition(result, "relative-speed GPU 0 NVIDIA H200").status, GateStatus::pass);
    EXPECT_EQ(condition(result, "relative-speed GPU 1 NVIDIA H100 80GB HBM3").status, GateStatus::fail);
    EXPECT_FALSE(result.passed);
}

}  // namespace s2tp::unit_gate_evidence
