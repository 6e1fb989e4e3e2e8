#include "model/gate_rules.h"
#include "default_thresholds.h"
#include "build_config.h"
#include "figures/gate_figures.h"
#include "scratch_directory.h"
#include "stages/gate_stage.h"
#include "support/file_io.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace s2tp::unit_gate_rules {
namespace {

StageEvidence passed_stage() { return {true, true, true, ""}; }

const std::string good_sha = "3f5a0c9e1b7d2a4c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f";

// Evidence on which every condition passes; each test spoils exactly one thing.
GateEvidence good_evidence() {
    GateEvidence e;
    e.prepare = e.build = e.sanitize = e.parity = e.time = passed_stage();
    e.sanitizer_errors = 0;
    e.parity_shapes_compared = 12;
    e.parity_shapes_differing = 0;
    e.real_output_stage_name = "time";
    e.real_output_stage = passed_stage();
    e.real_output_sha256 = good_sha;
    e.expected_real_output_sha256 = good_sha;
    e.candidate_p50_ms = 203.92;
    RatioInterval ci;
    ci.median = 0.9611;
    ci.lo = 0.9601;
    ci.hi = 0.9626;
    ci.n = 240;
    ci.confidence = 0.95;
    e.candidate_vs_baseline = ci;
    e.resource_arch = "sm_90a";
    e.baseline_resources = {32768, 4.0, 40};
    e.candidate_resources = {32768, 4.0, 40};
    e.plausibility = {2141.0, 396.5, 412.5, 6, 0, 6, 0};
    return e;
}


GateThresholds with_ratio_bound(double bound) {
    GateThresholds t = default_gate_thresholds();
    t.ratio_upper_bound = bound;
    return t;
}

const GateCondition &condition(const GateResult &result, const std::string &name) {
    for (const GateCondition &c : result.conditions)
        if (c.name == name) return c;
    ADD_FAILURE() << "no condition named " << name;
    static const GateCondition none;
    return none;
}

GateStatus status_of(const GateEvidence &e, const std::string &name, const GateThresholds &t = default_gate_thresholds()) {
    return condition(evaluate_gate(e, t), name).status;
}

bool passes(const GateEvidence &e, const GateThresholds &t = default_gate_thresholds()) {
    return evaluate_gate(e, t).passed;
}

TEST(GateRules, GoodEvidencePassesEveryCondition) {
    const GateResult result = evaluate_gate(good_evidence(), with_ratio_bound(0.98));
    EXPECT_EQ(result.conditions.size(), 13u);
    for (const GateCondition &c : result.conditions)
        EXPECT_EQ(c.status, GateStatus::pass) << c.name << ": " << c.figure << " " << c.detail;
    EXPECT_TRUE(result.passed);
}

// ---- Plausibility (issue 39): the cheat reported 968089.2 TOPS, a ratio of 0.0004
TEST(GatePlausibility, AnArmAboveTheDenseTensorPeakFails) {
    GateEvidence e = good_evidence();
    e.plausibility.candidate_tops = 968089.2;
    const GateCondition c = condition(evaluate_gate(e, default_gate_thresholds()), "tensor-peak");
    EXPECT_EQ(c.status, GateStatus::fail);
    EXPECT_NE(c.figure.find("candidate 968089.2, baseline 396.5 TOPS at p50 > the dense tensor peak 2141 TOPS"),
              std::string::npos)
        << c.figure;
    EXPECT_FALSE(passes(e));
    e = good_evidence();
    e.plausibility.baseline_tops = 2141.5;
    EXPECT_EQ(status_of(e, "tensor-peak"), GateStatus::fail) << "the baseline is judged too";
    // No peak for the arch: not checked, and it does not block.
    e = good_evidence();
    e.plausibility.tensor_peak_tops.reset();
    const GateResult unknown = evaluate_gate(e, default_gate_thresholds());
    EXPECT_EQ(condition(unknown, "tensor-peak").status, GateStatus::not_checked);
    EXPECT_FALSE(condition(unknown, "tensor-peak").required);
    EXPECT_TRUE(unknown.passed);
}

TEST(GatePlausibility, ARatioBelowOneHalfFailsAndOneHalfPasses) {
    GateEvidence e = good_evidence();
    e.candidate_vs_baseline = RatioInterval{};
    e.candidate_vs_baseline->median = 0.0004, e.candidate_vs_baseline->lo = 0.0003, e.candidate_vs_baseline->hi = 0.0005;
    const GateCondition c = condition(evaluate_gate(e, default_gate_thresholds()), "plausible-ratio");
    EXPECT_EQ(c.status, GateStatus::fail);
    EXPECT_NE(c.figure.find("candidate/baseline median 0.0004 < 0.5"), std::string::npos) << c.figure;
    e.candidate_vs_baseline->median = 0.5;
    EXPECT_EQ(status_of(e, "plausible-ratio"), GateStatus::pass);
}

TEST(GatePlausibility, EveryTimedLaunchCheckedGoodOrTheGateFails) {
    GateEvidence e = good_evidence();
    e.plausibility.candidate_recheck_failed = 1;
    EXPECT_EQ(status_of(e, "checked-output"), GateStatus::fail);
    // A failed time stage is no evidence for speed, but its failed re-check is still named here.
    e.time.passed = false;
    e.real_output_stage.passed = false;
    EXPECT_EQ(status_of(e, "checked-output"), GateStatus::fail);
    EXPECT_EQ(status_of(e, "tensor-peak"), GateStatus::not_checked);
    e = good_evidence();
    e.plausibility.baseline_rechecked = 0;
    EXPECT_EQ(status_of(e, "checked-output"), GateStatus::fail) << "no re-checked round is no check";
    // A checkpoint of a sage2tp that did not re-check: required, not checked, blocking.
    e = good_evidence();
    e.plausibility.candidate_rechecked.reset();
    const GateResult old = evaluate_gate(e, default_gate_thresholds());
    EXPECT_EQ(condition(old, "checked-output").status, GateStatus::not_checked);
    EXPECT_FALSE(old.passed);
}

TEST(GatePlausibility, DecidedPerShapeOverASetAndNotAcrossGpusOfSeveralModels) {
    GateEvidence e = good_evidence();
    e.workload_set = "wan21-14b";
    GateEvidence::ShapeTiming shape{"t2v-480p", good_sha, good_sha, std::nullopt, "", 203.9, e.candidate_vs_baseline,
                                    e.plausibility};
    e.set_shapes = {shape, shape};
    e.set_shapes[1].shape = "t2v-720p";
    e.set_shapes[1].plausibility.candidate_tops = 9999;
    const GateResult result = evaluate_gate(e, default_gate_thresholds());
    EXPECT_EQ(condition(result, "tensor-peak t2v-480p").status, GateStatus::pass);
    EXPECT_EQ(condition(result, "tensor-peak t2v-720p").status, GateStatus::fail);
    EXPECT_EQ(condition(result, "checked-output t2v-720p").status, GateStatus::pass);
}

// ---- freshness
TEST(GateFreshness, PassFailNotChecked) {
    GateEvidence e = good_evidence();
    EXPECT_EQ(status_of(e, "freshness"), GateStatus::pass);

    e.parity.fresh = false;
    const GateCondition stale = condition(evaluate_gate(e, default_gate_thresholds()), "freshness");
    EXPECT_EQ(stale.status, GateStatus::fail);
    EXPECT_NE(stale.figure.find("parity"), std::string::npos);
    EXPECT_FALSE(passes(e));

    GateEvidence none;
    EXPECT_EQ(status_of(none, "freshness"), GateStatus::not_checked);
    EXPECT_FALSE(passes(none));
}

TEST(GateFreshness, StaleCheckpointIsNotEvidenceForItsConditions) {
    GateEvidence e = good_evidence();
    e.time.fresh = false;
    EXPECT_EQ(status_of(e, "candidate-p50"), GateStatus::not_checked);
    const GateCondition c = condition(evaluate_gate(e, default_gate_thresholds()), "candidate-p50");
    EXPECT_NE(c.figure.find("stale"), std::string::npos);
}

// ---- build
TEST(GateBuild, PassFailNotChecked) {
    GateEvidence e = good_evidence();
    EXPECT_EQ(status_of(e, "build"), GateStatus::pass);

    e.build.passed = false;
    e.build.note = "nvcc exited 1: kernels/attn_pair.cu(212): error";
    const GateCondition failed = condition(evaluate_gate(e, default_gate_thresholds()), "build");
    EXPECT_EQ(failed.status, GateStatus::fail);
    EXPECT_EQ(failed.detail, e.build.note);
    EXPECT_FALSE(passes(e));

    e = good_evidence();
    e.build.present = false;
    EXPECT_EQ(status_of(e, "build"), GateStatus::not_checked);
    EXPECT_FALSE(passes(e));  // required
}

// ---- sanitizer
TEST(GateSanitizer, PassFailNotChecked) {
    GateEvidence e = good_evidence();
    EXPECT_EQ(status_of(e, "sanitizer"), GateStatus::pass);

    e.sanitizer_errors = 3;
    e.sanitize.passed = false;
    const GateCondition failed = condition(evaluate_gate(e, default_gate_thresholds()), "sanitizer");
    EXPECT_EQ(failed.status, GateStatus::fail);
    EXPECT_EQ(failed.figure, "3 error(s)");
    EXPECT_FALSE(passes(e));

    e = good_evidence();
    e.sanitizer_skipped = true;
    EXPECT_EQ(status_of(e, "sanitizer"), GateStatus::not_checked);
}

TEST(GateSanitizer, MissingSummaryFails) {
    GateEvidence e = good_evidence();
    e.sanitize.passed = false;  // tool died before its summary: zero counted errors prove nothing
    e.sanitize.note = "no ERROR SUMMARY line";
    EXPECT_EQ(status_of(e, "sanitizer"), GateStatus::fail);
}

TEST(GateSanitizer, SkippedBlocksOnlyWhenRequired) {
    GateEvidence e = good_evidence();
    e.sanitizer_skipped = true;
    EXPECT_TRUE(passes(e));
    GateThresholds strict = default_gate_thresholds();
    strict.require_sanitizer = true;
    EXPECT_EQ(status_of(e, "sanitizer", strict), GateStatus::not_checked);
    EXPECT_FALSE(passes(e, strict));

    e = good_evidence();
    e.sanitize.present = false;
    EXPECT_TRUE(passes(e));
    EXPECT_FALSE(passes(e, strict));
}

// ---- parity
TEST(GateParity, PassFailNotChecked) {
    GateEvidence e = good_evidence();
    EXPECT_EQ(condition(evaluate_gate(e, default_gate_thresholds()), "parity").figure, "0 of 12 shapes differ");

    e.parity_shapes_differing = 2;
    e.parity.passed = false;
    const GateCondition failed = condition(evaluate_gate(e, default_gate_thresholds()), "parity");
    EXPECT_EQ(failed.status, GateStatus::fail);
    EXPECT_EQ(failed.figure, "2 of 12 shapes differ");
    EXPECT_FALSE(passes(e));

    e = good_evidence();
    e.parity.present = false;
    EXPECT_EQ(status_of(e, "parity"), GateStatus::not_checked);
    EXPECT_FALSE(passes(e));

    e = good_evidence();
    e.parity_shapes_compared = 0;
    EXPECT_EQ(status_of(e, "parity"), GateStatus::not_checked);
    EXPECT_FALSE(passes(e));
}

TEST(GateParity, FailedStageWithoutDifferencesStillFails) {
    GateEvidence e = good_evidence();
    e.parity.passed = false;  // e.g. the candidate crashed on one shape
    EXPECT_EQ(status_of(e, "parity"), GateStatus::fail);
}

// ---- output-sha
TEST(GateOutputSha, PassFailNotChecked) {
    GateEvidence e = good_evidence();
    e.real_output_sha256 = "3F5A0C9E1B7D2A4C6E8F0A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F";  // case-insensitive
    EXPECT_EQ(status_of(e, "output-sha"), GateStatus::pass);

    e.real_output_sha256[63] = '0';
    const GateCondition failed = condition(evaluate_gate(e, default_gate_thresholds()), "output-sha");
    EXPECT_EQ(failed.status, GateStatus::fail);
    EXPECT_NE(failed.detail.find(good_sha), std::string::npos);
    EXPECT_FALSE(passes(e));

    e = good_evidence();
    e.expected_real_output_sha256.clear();
    EXPECT_EQ(status_of(e, "output-sha"), GateStatus::not_checked);
    EXPECT_FALSE(passes(e));

    e = good_evidence();
    e.real_output_sha256.clear();
    EXPECT_EQ(status_of(e, "output-sha"), GateStatus::not_checked);

    e = good_evidence();
    e.real_output_stage.fresh = false;
    EXPECT_EQ(status_of(e, "output-sha"), GateStatus::not_checked);
}

// ---- candidate-p50
TEST(GateCandidateP50, PassFailNotChecked) {
    GateEvidence e = good_evidence();
    EXPECT_EQ(condition(evaluate_gate(e, default_gate_thresholds()), "candidate-p50").figure,
              "p50 203.920 ms < 220.00 ms");

    e.candidate_p50_ms = 220.0;  // "at least the threshold" fails
    EXPECT_EQ(status_of(e, "candidate-p50"), GateStatus::fail);
    EXPECT_FALSE(passes(e));

    GateThresholds looser = default_gate_thresholds();
    looser.max_candidate_p50_ms = 250.0;
    EXPECT_EQ(status_of(e, "candidate-p50", looser), GateStatus::pass);

    e = good_evidence();
    e.time.present = false;
    EXPECT_EQ(status_of(e, "candidate-p50"), GateStatus::not_checked);
    EXPECT_FALSE(passes(e));
}

// Issue 26: the default 220 ms bound comes from the DGX Spark; a failure against it says so, and what to
// set, while a failure against a bound the manifest chose needs no such note.
TEST(GateCandidateP50, AFailureAgainstTheDefaultBoundStatesItsOrigin) {
    GateEvidence e = good_evidence();
    e.candidate_p50_ms = 231.4;
    const GateCondition c = condition(evaluate_gate(e, default_gate_thresholds()), "candidate-p50");
    EXPECT_EQ(c.status, GateStatus::fail);
    EXPECT_NE(c.detail.find("measured on the DGX Spark (sm_121a)"), std::string::npos) << c.detail;
    EXPECT_NE(c.detail.find("set [gate] max_candidate_p50_ms for your GPU"), std::string::npos) << c.detail;

    GateThresholds own = default_gate_thresholds();
    own.max_candidate_p50_ms = 200.0;
    const GateCondition chosen = condition(evaluate_gate(e, own), "candidate-p50");
    EXPECT_EQ(chosen.status, GateStatus::fail);
    EXPECT_EQ(chosen.detail, "");
}

// Issue 26: status shows what "worth shipping" means for the run, the defaults named as such.
// Issue 36 item 9: `gate --max-ratio off` turns the relative speed gate off over a manifest that sets one.
TEST(GateThresholdsText, MaxRatioOffOverridesTheManifestsBound) {
    Experiment experiment;
    experiment.max_ratio_upper = 0.98;
    GateOverrides overrides;
    EXPECT_EQ(gate_thresholds(experiment, overrides).ratio_upper_bound, 0.98);
    overrides.max_ratio_upper = 1.05;
    EXPECT_EQ(gate_thresholds(experiment, overrides).ratio_upper_bound, 1.05);
    overrides.max_ratio_off = true;
    EXPECT_EQ(gate_thresholds(experiment, overrides).ratio_upper_bound, std::nullopt);
}

TEST(GateThresholdsText, NamesEveryBoundAndTheDefaults) {
    EXPECT_EQ(thresholds_text(default_gate_thresholds()),
              "candidate p50 < 220 ms (the DGX Spark's default), ratio interval < 1 (faster), spill growth <= 0 B, "
              "sanitizer not required");
    GateThresholds own = default_gate_thresholds();
    own.max_candidate_p50_ms = 12.5;
    own.ratio_upper_bound.reset();
    own.max_spill_growth_bytes = 64;
    own.require_sanitizer = true;
    EXPECT_EQ(thresholds_text(own), "candidate p50 < 12.5 ms, relative speed off, spill growth <= 64 B, sanitizer required");
}

TEST(GateCandidateP50, FailedTimeStageIsNotEvidence) {
    GateEvidence e = good_evidence();
    e.time.passed = false;
    e.time.note = "A/A interval [1.0041, 1.0093] excludes 1: machine too noisy";
    const GateCondition c = condition(evaluate_gate(e, default_gate_thresholds()), "candidate-p50");
    EXPECT_EQ(c.status, GateStatus::not_checked);
    EXPECT_EQ(c.detail, e.time.note);
    EXPECT_FALSE(passes(e));
}

// ---- relative-speed
TEST(GateRelativeSpeed, PassFailNotChecked) {
    GateEvidence e = good_evidence();
    EXPECT_EQ(status_of(e, "relative-speed", with_ratio_bound(0.98)), GateStatus::pass);

    // Median below the bound but the interval reaching above it: not a proven speed-up.
    e.candidate_vs_baseline->median = 0.975;
    e.candidate_vs_baseline->hi = 0.985;
    EXPECT_EQ(status_of(e, "relative-speed", with_ratio_bound(0.98)), GateStatus::fail);
    EXPECT_FALSE(passes(e, with_ratio_bound(0.98)));

    e = good_evidence();
    e.candidate_vs_baseline.reset();
    EXPECT_EQ(status_of(e, "relative-speed", with_ratio_bound(0.98)), GateStatus::not_checked);
    EXPECT_FALSE(passes(e, with_ratio_bound(0.98)));
}

// A manifest that names no bound still requires the candidate to be faster (issue 26: a slower
// candidate was "worth shipping" when the key was left out); only an explicit "off" lifts it.
TEST(GateRelativeSpeed, OnByDefaultOffOnlyWhenTurnedOff) {
    GateEvidence e = good_evidence();
    e.candidate_vs_baseline->lo = 1.05;  // slower
    e.candidate_vs_baseline->hi = 1.06;
    const GateCondition c = condition(evaluate_gate(e, default_gate_thresholds()), "relative-speed");
    EXPECT_EQ(c.status, GateStatus::fail) << c.figure;
    EXPECT_NE(c.figure.find(">= 1.0000"), std::string::npos) << c.figure;
    EXPECT_FALSE(passes(e));

    GateThresholds off = default_gate_thresholds();
    off.ratio_upper_bound.reset();
    const GateCondition lifted = condition(evaluate_gate(e, off), "relative-speed");
    EXPECT_EQ(lifted.status, GateStatus::not_checked);
    EXPECT_FALSE(lifted.required);
    EXPECT_TRUE(passes(e, off));
}

// ---- shared-memory
TEST(GateSharedMemory, PassFailNotChecked) {
    GateEvidence e = good_evidence();
    EXPECT_EQ(status_of(e, "shared-memory"), GateStatus::pass);

    e.candidate_resources.smem_per_block_bytes = 32769;
    const GateCondition failed = condition(evaluate_gate(e, default_gate_thresholds()), "shared-memory");
    EXPECT_EQ(failed.status, GateStatus::fail);
    EXPECT_EQ(failed.figure, "sm_90a: candidate 32769 B vs baseline 32768 B per block");
    EXPECT_FALSE(passes(e));

    e = good_evidence();
    e.candidate_resources.smem_per_block_bytes = 16384;  // less is fine
    EXPECT_EQ(status_of(e, "shared-memory"), GateStatus::pass);

    e.baseline_resources.smem_per_block_bytes.reset();
    EXPECT_EQ(status_of(e, "shared-memory"), GateStatus::not_checked);
    EXPECT_FALSE(passes(e));
}

// Host calls: a host-side change (here four times the shared memory, as on the H100 with upstream's sm89
// launcher) that build's table cannot see, judged as the host functions launched it.
TEST(GateSharedMemory, TheLaunchesTheHostFunctionsMadeDecideOverBuildsTable) {
    GateEvidence e = good_evidence();
    e.baseline_launched_smem_bytes = 32768;
    e.candidate_launched_smem_bytes = 131072;
    const GateCondition failed = condition(evaluate_gate(e, default_gate_thresholds()), "shared-memory");
    EXPECT_EQ(failed.status, GateStatus::fail);
    EXPECT_EQ(failed.figure, "as the host functions launched on the workload: candidate 131072 B vs baseline 32768 B of "
                             "dynamic shared memory per block");
    e.candidate_launched_smem_bytes = 32768;
    e.candidate_resources.smem_per_block_bytes = 65536;  // the table's estimate, overruled by the launch
    EXPECT_EQ(status_of(e, "shared-memory"), GateStatus::pass);
    e.baseline_launched_smem_bytes.reset();  // a cubin arm: the table decides
    EXPECT_EQ(status_of(e, "shared-memory"), GateStatus::fail);
}

// ---- warps-per-scheduler
// A candidate whose host code launches its own kernel has no entry in build's table; the driver's
// occupancy of the launched kernels (3 blocks of 4 warps against 1 block of 12) decides instead.
TEST(GateWarpsPerScheduler, TheLaunchedKernelsOccupancyDecidesOverBuildsTable) {
    GateEvidence e = good_evidence();
    e.candidate_resources.warps_per_scheduler.reset();  // build's stand-in entry has no launch shape
    e.baseline_launched_warps_per_scheduler = 3.0;
    e.candidate_launched_warps_per_scheduler = 3.0;
    const GateCondition same = condition(evaluate_gate(e, default_gate_thresholds()), "warps-per-scheduler");
    EXPECT_EQ(same.status, GateStatus::pass);
    EXPECT_EQ(same.figure, "as the host functions launched on the workload, by the driver's occupancy: candidate 3 vs "
                           "baseline 3");
    e.launched_warps_shape = "cogvideox-5b-480p";  // over a set: the shape closest to failing, named
    EXPECT_EQ(condition(evaluate_gate(e, default_gate_thresholds()), "warps-per-scheduler").figure,
              "as the host functions launched on the workload (shape cogvideox-5b-480p), by the driver's occupancy: "
              "candidate 3 vs baseline 3");
    e.candidate_launched_warps_per_scheduler = 2.0;
    EXPECT_EQ(status_of(e, "warps-per-scheduler"), GateStatus::fail);
    e.baseline_launched_warps_per_scheduler.reset();  // a cubin arm: the table decides, and it lacks the figure
    EXPECT_EQ(status_of(e, "warps-per-scheduler"), GateStatus::not_checked);
}

TEST(GateWarpsPerScheduler, PassFailNotChecked) {
    GateEvidence e = good_evidence();
    e.candidate_resources.warps_per_scheduler = 4.5;
    EXPECT_EQ(status_of(e, "warps-per-scheduler"), GateStatus::pass);

    e.candidate_resources.warps_per_scheduler = 3.75;
    const GateCondition failed = condition(evaluate_gate(e, default_gate_thresholds()), "warps-per-scheduler");
    EXPECT_EQ(failed.status, GateStatus::fail);
    EXPECT_EQ(failed.figure, "sm_90a: candidate 3.75 vs baseline 4");
    EXPECT_FALSE(passes(e));

    e = good_evidence();
    e.build.passed = false;  // no trustworthy resource figures from a failed build
    EXPECT_EQ(status_of(e, "warps-per-scheduler"), GateStatus::not_checked);
}

// ---- spills
TEST(GateSpills, PassFailNotChecked) {
    GateEvidence e = good_evidence();
    const GateCondition same = condition(evaluate_gate(e, default_gate_thresholds()), "spills");
    EXPECT_EQ(same.status, GateStatus::pass);
    EXPECT_EQ(same.figure, "sm_90a: growth +0 B (baseline 40 B, candidate 40 B; limit +0 B)");

    e.candidate_resources.spill_bytes = 72;
    const GateCondition grown = condition(evaluate_gate(e, default_gate_thresholds()), "spills");
    EXPECT_EQ(grown.status, GateStatus::fail);
    EXPECT_NE(grown.figure.find("growth +32 B"), std::string::npos);
    EXPECT_FALSE(passes(e));

    GateThresholds tolerant = default_gate_thresholds();
    tolerant.max_spill_growth_bytes = 32;  // growth is still reported, but within the limit
    const GateCondition tolerated = condition(evaluate_gate(e, tolerant), "spills");
    EXPECT_EQ(tolerated.status, GateStatus::pass);
    EXPECT_NE(tolerated.figure.find("growth +32 B"), std::string::npos);

    e = good_evidence();
    e.candidate_resources.spill_bytes.reset();
    EXPECT_EQ(status_of(e, "spills"), GateStatus::not_checked);
    EXPECT_FALSE(passes(e));
}

// ---- verdict and report
TEST(GateVerdict, RequiredNotCheckedBlocksOptionalDoesNot) {
    GateEvidence e = good_evidence();
    e.sanitizer_skipped = true;
    const GateResult result = evaluate_gate(e, default_gate_thresholds());
    EXPECT_TRUE(result.passed);  // the sanitizer line is NOT CHECKED but optional

    e.expected_real_output_sha256.clear();
    EXPECT_FALSE(passes(e));
}

TEST(GateVerdict, ReportHasOneLinePerConditionThenTheVerdict) {
    GateEvidence e = good_evidence();
    e.candidate_p50_ms = 231.4;
    e.expected_real_output_sha256.clear();
    const GateResult result = evaluate_gate(e, default_gate_thresholds());
    const std::string report = format_gate_report(result);

    std::size_t lines = 0;
    for (char c : report) lines += c == '\n';
    EXPECT_EQ(lines, result.conditions.size() + 1);
    EXPECT_NE(report.find("FAIL         candidate-p50        p50 231.400 ms >= 220.00 ms (the default bound, measured on "
                          "the DGX Spark (sm_121a); set [gate] max_candidate_p50_ms for your GPU)\n"),
              std::string::npos)
        << report;
    EXPECT_NE(report.find("NOT CHECKED  output-sha           no expected digest"), std::string::npos) << report;
    EXPECT_NE(report.find("PASS         build "), std::string::npos) << report;
    EXPECT_NE(report.find("verdict: FAIL (failed: candidate-p50; required but not checked: output-sha)\n"),
              std::string::npos)
        << report;

    const std::string good = format_gate_report(evaluate_gate(good_evidence(), default_gate_thresholds()));
    const std::string pass_line = "\nverdict: PASS\n";
    EXPECT_EQ(good.substr(good.size() - pass_line.size()), pass_line);
}

TEST(GateVerdict, StatusTexts) {
    EXPECT_STREQ(gate_status_text(GateStatus::pass), "PASS");
    EXPECT_STREQ(gate_status_text(GateStatus::fail), "FAIL");
    EXPECT_STREQ(gate_status_text(GateStatus::not_checked), "NOT CHECKED");
}

// A failed parity stops the pipeline before time: the conditions time feeds name parity as the cause.
TEST(GateRules, ConditionsOfAStageThatNeverRanNameTheFailedStageBeforeIt) {
    GateEvidence e = good_evidence();
    e.parity = {true, true, false, "3 of 12 shapes differ"};
    e.time = StageEvidence{};
    e.real_output_stage = StageEvidence{};
    const GateResult result = evaluate_gate(e, default_gate_thresholds());
    for (const char *name : {"output-sha", "candidate-p50"}) {
        const GateCondition &c = condition(result, name);
        EXPECT_EQ(c.figure, "parity failed, so time did not run") << name;
        EXPECT_EQ(c.detail, "fix what parity reports first") << name;
    }
    // Without an earlier failure, the missing stage itself is named.
    e.parity = passed_stage();
    EXPECT_EQ(condition(evaluate_gate(e, default_gate_thresholds()), "output-sha").figure, "no time checkpoint");
}

TEST(GateRules, SpillAndSharedMemoryFiguresNameTheWorstEntryAndTheBaselinesOwnSpills) {
    GateEvidence e = good_evidence();
    e.candidate_resources.spill_bytes = 72;
    e.spill_worst_entry = "hd128_bf16_causal";
    e.smem_worst_entry = "hd64_f16_nomask";
    e.baseline_max_spill_bytes = 48;
    e.baseline_max_spill_entry = "hd128_f16_causal";
    const GateResult result = evaluate_gate(e, default_gate_thresholds());
    const GateCondition &spills = condition(result, "spills");
    EXPECT_EQ(spills.status, GateStatus::fail);
    EXPECT_NE(spills.figure.find("growth +32 B at hd128_bf16_causal (baseline 40 B, candidate 72 B"), std::string::npos)
        << spills.figure;
    EXPECT_NE(spills.figure.find("the baseline's own spills: up to 48 B at hd128_f16_causal"), std::string::npos)
        << spills.figure;
    EXPECT_NE(condition(result, "shared-memory").figure.find("per block at hd64_f16_nomask"), std::string::npos);
    e.baseline_max_spill_bytes = 0;
    EXPECT_NE(condition(evaluate_gate(e, default_gate_thresholds()), "spills").figure.find("the baseline spills nothing"),
              std::string::npos);
}

}  // namespace
}  // namespace s2tp::unit_gate_rules

namespace s2tp::unit_gate_rules {
namespace {

RatioInterval interval(double median, double lo, double hi) {
    RatioInterval ci;
    ci.median = median;
    ci.lo = lo;
    ci.hi = hi;
    ci.n = 100;
    ci.confidence = 0.95;
    return ci;
}

// Good evidence over a two-shape set: both shapes fast and with the pinned output.
GateEvidence set_evidence() {
    GateEvidence e = good_evidence();
    e.workload_set = "wan21-14b";
    e.set_shapes = {{"t2v-480p", good_sha, good_sha, std::nullopt, "", 203.9, interval(0.96, 0.955, 0.965),
                     e.plausibility},
                    {"t2v-720p", good_sha, good_sha, std::nullopt, "", 1101.0, interval(0.99, 0.985, 0.995),
                     e.plausibility}};
    e.geomean_vs_baseline = interval(0.975, 0.971, 0.979);
    e.worst_shape = "t2v-720p";
    return e;
}

GateThresholds set_bounds(double geomean, double worst) {
    GateThresholds t = default_gate_thresholds();
    t.max_candidate_p50_ms = 2000;
    t.geomean_ratio_upper_bound = geomean;
    t.worst_ratio_upper_bound = worst;
    return t;
}

// ---- GPUs of several models: a verdict per GPU
GateEvidence several_models_evidence(double h100_ratio_hi) {
    GateEvidence e = good_evidence();
    RatioInterval h200 = *e.candidate_vs_baseline;
    RatioInterval h100 = h200;
    h100.median = h100_ratio_hi - 0.002;
    h100.lo = h100_ratio_hi - 0.004;
    h100.hi = h100_ratio_hi;
    e.gpu_timings = {{"GPU 0 NVIDIA H200", 140.0, h200}, {"GPU 1 NVIDIA H100 80GB HBM3", 190.0, h100}};
    return e;
}

TEST(GateSeveralGpuModels, EveryGpuHasItsOwnSpeedConditionsAndAllMustPass) {
    const GateResult both = evaluate_gate(several_models_evidence(0.99), default_gate_thresholds());
    EXPECT_TRUE(both.passed);
    EXPECT_EQ(condition(both, "relative-speed GPU 0 NVIDIA H200").status, GateStatus::pass);
    EXPECT_EQ(condition(both, "relative-speed GPU 1 NVIDIA H100 80GB HBM3").status, GateStatus::pass);
    EXPECT_EQ(condition(both, "candidate-p50 GPU 1 NVIDIA H100 80GB HBM3").status, GateStatus::pass);
    for (const GateCondition &c : both.conditions) EXPECT_NE(c.name, "relative-speed") << "no verdict across GPUs";

    // The H100's interval reaches 1: that GPU fails, and with it the run, which names it.
    const GateResult one_slow = evaluate_gate(several_models_evidence(1.001), default_gate_thresholds());
    EXPECT_FALSE(one_slow.passed);
    EXPECT_EQ(condition(one_slow, "relative-speed GPU 0 NVIDIA H200").status, GateStatus::pass);
    EXPECT_EQ(condition(one_slow, "relative-speed GPU 1 NVIDIA H100 80GB HBM3").status, GateStatus::fail);
    EXPECT_NE(format_gate_report(one_slow).find("failed: relative-speed GPU 1 NVIDIA H100 80GB HBM3"), std::string::npos)
        << format_gate_report(one_slow);
}

TEST(GateSeveralGpuModels, AGpuWithoutARatioBlocks) {
    GateEvidence e = several_models_evidence(0.99);
    e.gpu_timings[1].candidate_vs_baseline.reset();
    e.gpu_timings[1].candidate_p50_ms.reset();
    const GateResult result = evaluate_gate(e, default_gate_thresholds());
    EXPECT_EQ(condition(result, "relative-speed GPU 1 NVIDIA H100 80GB HBM3").status, GateStatus::not_checked);
    EXPECT_FALSE(result.passed);
}

TEST(GateSeveralGpuModels, TheP50BoundHoldsOnEachGpu) {
    GateThresholds t = default_gate_thresholds();
    t.max_candidate_p50_ms = 150;
    const GateResult result = evaluate_gate(several_models_evidence(0.99), t);
    EXPECT_EQ(condition(result, "candidate-p50 GPU 0 NVIDIA H200").status, GateStatus::pass);
    EXPECT_EQ(condition(result, "candidate-p50 GPU 1 NVIDIA H100 80GB HBM3").status, GateStatus::fail);
    EXPECT_FALSE(result.passed);
}

}  // namespace

TEST(GateSet, EveryShapeGetsItsOwnRealOutputAndSpeedConditions) {
    GateEvidence e = set_evidence();
    GateThresholds t = set_bounds(1.0, 1.02);
    t.ratio_upper_bound = 1.0;
    const GateResult result = evaluate_gate(e, t);
    EXPECT_TRUE(result.passed) << format_gate_report(result);
    for (const char *name : {"output-sha t2v-480p", "output-sha t2v-720p", "candidate-p50 t2v-480p",
                             "candidate-p50 t2v-720p", "relative-speed t2v-480p", "relative-speed t2v-720p",
                             "geomean-speed", "worst-shape-speed"})
        EXPECT_EQ(condition(result, name).status, GateStatus::pass) << name;
    // The one-workload conditions are not shown besides the per-shape ones.
    for (const GateCondition &c : result.conditions) EXPECT_NE(c.name, "relative-speed");

    // One shape's output differing, or its p50 above the limit, fails that shape's condition only.
    e.set_shapes[1].real_output_sha256 = std::string(64, 'a');
    e.set_shapes[0].candidate_p50_ms = 2500;
    const GateResult spoiled = evaluate_gate(e, t);
    EXPECT_FALSE(spoiled.passed);
    EXPECT_EQ(condition(spoiled, "output-sha t2v-720p").status, GateStatus::fail);
    EXPECT_EQ(condition(spoiled, "output-sha t2v-480p").status, GateStatus::pass);
    EXPECT_EQ(condition(spoiled, "candidate-p50 t2v-480p").status, GateStatus::fail);
    EXPECT_EQ(condition(spoiled, "candidate-p50 t2v-720p").status, GateStatus::pass);
}

TEST(GateSet, TheDefaultP50BoundJudgesNoShape) {
    // The default bound is the Wan 480p time on the DGX Spark: a 720p shape at five times the work
    // would fail it on any GPU. Over a set it shows as unbounded and does not block.
    GateEvidence e = set_evidence();
    GateThresholds t = default_gate_thresholds();
    ASSERT_FALSE(t.max_candidate_p50_ms) << "no manifest or flag chose a bound";
    ASSERT_EQ(t.candidate_p50_bound(), 220.0);
    const GateResult result = evaluate_gate(e, t);
    for (const char *name : {"candidate-p50 t2v-480p", "candidate-p50 t2v-720p"}) {
        const GateCondition c = condition(result, name);
        EXPECT_EQ(c.status, GateStatus::not_checked) << name;
        EXPECT_FALSE(c.required) << name;
        EXPECT_EQ(c.figure, "no bound") << name;
        EXPECT_NE(c.detail.find("--max-p50-ms"), std::string::npos) << c.detail;
    }
    EXPECT_TRUE(result.passed) << format_gate_report(result);
    // A bound the user chose judges every shape, and fails the slow one.
    t.max_candidate_p50_ms = 1000;
    const GateResult chosen = evaluate_gate(e, t);
    EXPECT_EQ(condition(chosen, "candidate-p50 t2v-480p").status, GateStatus::pass);
    EXPECT_EQ(condition(chosen, "candidate-p50 t2v-720p").status, GateStatus::fail);
    EXPECT_FALSE(chosen.passed);
    // One workload keeps the default bound.
    EXPECT_EQ(status_of(good_evidence(), "candidate-p50"), GateStatus::pass);
}

TEST(GateSet, GeomeanIntervalMustLieEntirelyBelowItsBound) {
    GateEvidence e = set_evidence();
    EXPECT_EQ(status_of(e, "geomean-speed", set_bounds(0.98, 1.02)), GateStatus::pass);
    EXPECT_EQ(status_of(e, "geomean-speed", set_bounds(0.979, 1.02)), GateStatus::fail);  // hi == bound
    EXPECT_EQ(status_of(e, "geomean-speed", set_bounds(0.975, 1.02)), GateStatus::fail);
    e.geomean_vs_baseline.reset();
    const GateResult missing = evaluate_gate(e, set_bounds(0.98, 1.02));
    EXPECT_EQ(condition(missing, "geomean-speed").status, GateStatus::not_checked);
    EXPECT_FALSE(missing.passed);
}

TEST(GateSet, WorstShapeBoundHoldsForEveryShapesInterval) {
    GateEvidence e = set_evidence();
    const GateCondition pass = condition(evaluate_gate(e, set_bounds(1.0, 1.0)), "worst-shape-speed");
    EXPECT_EQ(pass.status, GateStatus::pass);
    EXPECT_NE(pass.figure.find("worst t2v-720p 0.9900"), std::string::npos) << pass.figure;
    EXPECT_EQ(status_of(e, "worst-shape-speed", set_bounds(1.0, 0.99)), GateStatus::fail);
    // A shape with a lower median but a wider interval reaching the bound fails it too, and is named.
    e.set_shapes[0].candidate_vs_baseline = interval(0.97, 0.90, 1.01);
    const GateCondition wide = condition(evaluate_gate(e, set_bounds(1.0, 1.0)), "worst-shape-speed");
    EXPECT_EQ(wide.status, GateStatus::fail);
    EXPECT_NE(wide.figure.find("t2v-480p"), std::string::npos) << wide.figure;
    EXPECT_EQ(wide.figure.find("t2v-720p"), std::string::npos) << wide.figure;
    // A shape without an interval: not checked, and blocking.
    e.set_shapes[0].candidate_vs_baseline.reset();
    EXPECT_EQ(status_of(e, "worst-shape-speed", set_bounds(1.0, 1.0)), GateStatus::not_checked);
    EXPECT_FALSE(passes(e, set_bounds(1.0, 1.0)));
}

TEST(GateSet, SetBoundsAreOffByDefaultAndBlockWhenOneWorkloadWasTimed) {
    // Over a set, an unset bound shows as off and does not block.
    const GateResult off = evaluate_gate(set_evidence(), set_bounds(1.0, 1.0));
    GateThresholds none = default_gate_thresholds();
    none.max_candidate_p50_ms = 2000;
    const GateResult unset = evaluate_gate(set_evidence(), none);
    EXPECT_TRUE(off.passed);
    EXPECT_TRUE(unset.passed) << format_gate_report(unset);
    EXPECT_EQ(condition(unset, "geomean-speed").status, GateStatus::not_checked);
    EXPECT_FALSE(condition(unset, "geomean-speed").required);
    // One workload: nothing shown for an unset bound, NOT CHECKED and blocking for a set one.
    const GateResult single = evaluate_gate(good_evidence(), default_gate_thresholds());
    for (const GateCondition &c : single.conditions) EXPECT_EQ(c.name.find("geomean"), std::string::npos);
    const GateResult asked = evaluate_gate(good_evidence(), set_bounds(1.0, 1.02));
    EXPECT_EQ(condition(asked, "geomean-speed").status, GateStatus::not_checked);
    EXPECT_EQ(condition(asked, "worst-shape-speed").status, GateStatus::not_checked);
    EXPECT_FALSE(asked.passed);
}

// Issue 19: a manifest that writes `max_candidate_p50_ms = 220` chose that bound; only a manifest that
// names none gets the default. The bound is the user's wherever it goes: the gate's conditions (one
// workload and a set), status's thresholds line, the resolved copy later stages read, the gate checkpoint.
TEST(GateCandidateP50, AnExplicit220IsTheUsersBoundNotTheDefault) {
    const std::filesystem::path manifest = std::filesystem::path(S2TP_SOURCE_ROOT) / "data/experiments/temporal-pair.toml";
    const std::string written = "\nmax_candidate_p50_ms = 220.0\n";
    ASSERT_NE(read_text_file(manifest).find(written), std::string::npos) << "the manifest no longer sets 220 explicitly";
    const Experiment chosen = load_experiment(manifest);
    const ScratchDirectory scratch("explicit-p50");
    const std::filesystem::path resolved = scratch / "experiment.toml";
    std::ofstream(resolved) << experiment_to_toml(chosen);
    for (const Experiment &experiment : {chosen, load_experiment(resolved)}) {
        const GateThresholds t = gate_thresholds(experiment, {});
        EXPECT_EQ(thresholds_text(t).find("default"), std::string::npos) << thresholds_text(t);
        EXPECT_EQ(thresholds_text(t).rfind("candidate p50 < 220 ms, ", 0), 0u) << thresholds_text(t);

        GateEvidence slow = good_evidence();
        slow.candidate_p50_ms = 231.4;
        const GateCondition failed = condition(evaluate_gate(slow, t), "candidate-p50");
        EXPECT_EQ(failed.status, GateStatus::fail);
        EXPECT_EQ(failed.detail, "") << "a bound the manifest chose needs no note on its origin";

        const GateResult set = evaluate_gate(set_evidence(), t);  // the 720p shape takes 1101 ms
        EXPECT_EQ(condition(set, "candidate-p50 t2v-480p").status, GateStatus::pass);
        EXPECT_EQ(condition(set, "candidate-p50 t2v-720p").status, GateStatus::fail);
        EXPECT_FALSE(set.passed);

        // The gate checkpoint keeps whose bound it was.
        const GateFigures recorded = GateFigures::from_toml(GateFigures::of({{"c", set}}, t).to_toml());
        EXPECT_EQ(thresholds_text(recorded.thresholds), thresholds_text(t));
    }
    // Without the line, the same manifest's bound is the default, named as such, and judges no shape.
    std::string text = read_text_file(resolved);
    const std::size_t at = text.find("max_candidate_p50_ms = ");
    if (at != std::string::npos) text.erase(at, text.find('\n', at) - at);
    std::ofstream(resolved) << text;
    ASSERT_EQ(read_text_file(resolved).find("max_candidate_p50_ms"), std::string::npos);
    const GateThresholds t = gate_thresholds(load_experiment(resolved), {});
    EXPECT_EQ(thresholds_text(t).rfind("candidate p50 < 220 ms (the DGX Spark's default), ", 0), 0u) << thresholds_text(t);
    EXPECT_EQ(condition(evaluate_gate(set_evidence(), t), "candidate-p50 t2v-720p").status, GateStatus::not_checked);
    const GateFigures recorded = GateFigures::from_toml(GateFigures::of({{"c", evaluate_gate(good_evidence(), t)}}, t).to_toml());
    EXPECT_EQ(thresholds_text(recorded.thresholds), thresholds_text(t));
}

// ---- Waivers: any condition, by its name, with a reason shown beside it
TEST(GateWaivers, AWaivedConditionShowsItsReasonAndDoesNotBlock) {
    GateEvidence e = good_evidence();
    e.candidate_vs_baseline->median = 0.25, e.candidate_vs_baseline->lo = 0.24, e.candidate_vs_baseline->hi = 0.26;
    GateThresholds t = default_gate_thresholds();
    EXPECT_FALSE(evaluate_gate(e, t).passed);
    t.waivers = {{"plausible-ratio", "the candidate skips the masked three quarters"}};
    const GateResult waived = evaluate_gate(e, t);
    EXPECT_TRUE(waived.passed) << format_gate_report(waived);
    const GateCondition &c = condition(waived, "plausible-ratio");
    EXPECT_EQ(c.status, GateStatus::fail) << "the status stays what the rule found";
    EXPECT_TRUE(c.waived());
    EXPECT_FALSE(c.blocks());
    EXPECT_EQ(condition_status_text(c), "WAIVED");
    const std::string report = format_gate_report(waived);
    EXPECT_NE(report.find("WAIVED       plausible-ratio"), std::string::npos) << report;
    EXPECT_NE(report.find("; waived: the candidate skips the masked three quarters"), std::string::npos) << report;
    EXPECT_NE(report.find("verdict: PASS (waived: plausible-ratio)"), std::string::npos) << report;
    // A waiver on a condition that passes changes nothing shown; one names a whole family over a set.
    t.waivers = {{"spills", "known"}};
    EXPECT_EQ(condition_status_text(condition(evaluate_gate(good_evidence(), t), "spills")), "PASS");
    GateEvidence set = set_evidence();
    set.set_shapes[0].candidate_p50_ms = 2500;
    GateThresholds bounds = set_bounds(1.0, 1.02);
    bounds.waivers = {{"candidate-p50", "720p and 480p share a budget"}};
    const GateResult family = evaluate_gate(set, bounds);
    EXPECT_TRUE(condition(family, "candidate-p50 t2v-480p").waived());
    EXPECT_TRUE(family.passed) << format_gate_report(family);
    // Every name a waiver may give is one the rules use.
    for (const GateCondition &condition : evaluate_gate(good_evidence(), with_ratio_bound(0.98)).conditions) {
        const std::vector<std::string> &names = gate_condition_names();
        EXPECT_NE(std::find(names.begin(), names.end(), condition.name), names.end()) << condition.name;
    }
}

}  // namespace s2tp::unit_gate_rules
