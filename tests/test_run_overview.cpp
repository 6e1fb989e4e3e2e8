// What status says about a run: the next command, a failed stage's first reason and log, a stage being
// run by another process (a real flock held by a forked child), and finding the run from inside it.
#include "figures/gate_figures.h"
#include "default_thresholds.h"
#include "figures/set_time_figures.h"
#include "figures/time_figures.h"
#include "lock_holder.h"
#include "scratch_run.h"
#include "pipeline/run_directory.h"
#include "stages/gate_evidence.h"
#include "views/pull_request_report.h"
#include "views/run_overview.h"
#include "support/errors.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace s2tp::unit_run_overview {
namespace {

namespace fs = std::filesystem;

class RunOverviewTest : public ::testing::Test {
protected:
    // A failed stage records two reasons and its entries' logs, as build does.
    Checkpoint write(Stage stage, StageStatus status) {
        Checkpoint c = scratch.chained(stage, status);
        if (status == StageStatus::failed) {
            c.reasons = {"baseline:kernels/attention_entry.cu does not compile (nvcc exit 1): error: x", "a second reason"};
            c.artifacts.insert("candidate:kernels/quantize.cu",
                               toml::table{{"log", "builds/candidate/quantize.log"}, {"command", "q.cmd"}, {"path", "q.cubin"}});
            c.artifacts.insert("baseline:kernels/attention_entry.cu",
                               toml::table{{"log", "builds/baseline/attention_entry.log"}, {"command", "a.cmd"}});
        }
        return scratch.write(stage, std::move(c));
    }

    // prepare, build, sanitize and parity, passed, each on the one before: what time builds on.
    std::string write_chain_to_parity() {
        scratch.write_chain_to(Stage::parity);
        return scratch.last_digest();
    }

    ScratchRun scratch{"overview"};
    const fs::path &root = scratch.root();
};

TEST_F(RunOverviewTest, AFreshRunSaysToPrepare) {
    RunOverview o = overview_run(RunDirectory(root), "--run " + root.string());
    EXPECT_FALSE(o.running_pid);
    EXPECT_EQ(o.next.rfind("sage2tp prepare --run " + root.string(), 0), 0u) << o.next;
}

TEST_F(RunOverviewTest, APreparedRunSaysToRunAndNamesTheNextStage) {
    write(Stage::prepare, StageStatus::passed);
    RunOverview o = overview_run(RunDirectory(root), "");
    EXPECT_EQ(o.next, "sage2tp run   (or sage2tp build for build alone)");
}

TEST_F(RunOverviewTest, AFailedStageShowsItsFirstReasonAndTheLogOfTheFailedEntry) {
    write(Stage::prepare, StageStatus::passed);
    write(Stage::build, StageStatus::failed);
    RunOverview o = overview_run(RunDirectory(root), "");
    const StageOverview &build = o.stages[static_cast<std::size_t>(Stage::build)];
    EXPECT_EQ(build.status, "failed");
    EXPECT_EQ(build.first_reason.rfind("baseline:kernels/attention_entry.cu does not compile", 0), 0u);
    EXPECT_EQ(build.log, "builds/baseline/attention_entry.log");  // not the compile that made its cubin
    EXPECT_NE(o.next.find("sage2tp build --force"), std::string::npos) << o.next;
    EXPECT_NE(o.next.find("builds/baseline/attention_entry.log"), std::string::npos) << o.next;
}

TEST_F(RunOverviewTest, AStageRunByAnotherProcessShowsItsPid) {
    write(Stage::prepare, StageStatus::passed);
    {
        const LockHolder other(root);
        const pid_t child = other.pid();
        EXPECT_EQ(lock_holder(root), std::optional<long>(child));
        RunOverview o = overview_run(RunDirectory(root), "");
        EXPECT_EQ(o.running_pid, std::optional<long>(child));
        EXPECT_EQ(o.stages[static_cast<std::size_t>(Stage::build)].status, "running (pid " + std::to_string(child) + ")");
        EXPECT_EQ(o.stages[static_cast<std::size_t>(Stage::prepare)].status, "passed");
        EXPECT_EQ(o.next.rfind("wait: pid " + std::to_string(child), 0), 0u) << o.next;
        // status has no view of another process's progress, and does not claim one (issue 26).
        EXPECT_NE(o.next.find("(its own output shows its progress; sage2tp status again when it is done)"),
                  std::string::npos) << o.next;
    }
    EXPECT_FALSE(lock_holder(root));
    // The probe left the lock takeable.
    RunDirectory mine(root);
    EXPECT_NO_THROW(mine.lock());
}

// Issue 26: a stage that stopped for want of a GPU is not recommended again: next says why and how to go
// on; a stage that then writes its checkpoint clears the record.
TEST_F(RunOverviewTest, ARecordedStopGivesItsNextStepInsteadOfTheSameCommand) {
    write(Stage::prepare, StageStatus::passed);
    write(Stage::build, StageStatus::passed);
    RunDirectory run(root);
    record_stop(run, StageStop{Stage::sanitize, "no GPU", "sanitize needs an NVIDIA GPU ...", "copy it to a GPU host",
                               "2026-12-01T00:00:01Z"});
    RunOverview o = overview_run(run, "");
    ASSERT_TRUE(o.stop);
    EXPECT_EQ(o.next, "stopped at sanitize: no GPU; copy it to a GPU host");
    EXPECT_EQ(o.stages[static_cast<std::size_t>(Stage::sanitize)].summary,
              "stopped at sanitize: no GPU (2026-12-01T00:00:01Z)");
    // A stop recorded for another stage than the next one is history.
    record_stop(run, StageStop{Stage::parity, "no GPU", "", "x", ""});
    EXPECT_EQ(overview_run(run, "").next.rfind("sage2tp run", 0), 0u);
}

TEST_F(RunOverviewTest, TheRunIsFoundFromInsideItAndFromItsSubdirectories) {
    fs::create_directories(root / "trees/baseline/kernels");
    EXPECT_EQ(enclosing_run(root), fs::canonical(root));
    EXPECT_EQ(enclosing_run(root / "trees/baseline/kernels"), fs::canonical(root));
    EXPECT_FALSE(enclosing_run(root.parent_path()));
    const fs::path before = fs::current_path();
    fs::current_path(root / "trees/baseline");
    RunSelection selection;
    selection.runs_root = "nowhere";
    EXPECT_EQ(existing_run(selection), fs::canonical(root));
    fs::current_path(before);
}

TEST_F(RunOverviewTest, ReportPrintsTimeAndGateInEachFormat) {
    RunDirectory run(root);
    EXPECT_THROW(pull_request_report(run, "text"), Error);  // no gate checkpoint yet
    Checkpoint time;
    time.stage = "time";
    time.status = StageStatus::passed;
    time.figures = toml::table{{"workload", "w"}, {"shape", "b1 h40"}, {"device_name", "NVIDIA H200"},
                               {"baseline", toml::table{{"p50", 55.439}}},
                               {"candidates", toml::table{{"candidate", toml::table{
                                   {"timing", toml::table{{"p50", 74.534}}},
                                   {"ratio", toml::table{{"median", 1.3441}, {"ci_low", 1.3427}, {"ci_high", 1.3451},
                                                         {"confidence", 0.95}}}}}}},
                               {"aa", toml::table{{"median", 1.0001}}},
                               {"input_sets", 3},
                               {"recheck", toml::table{{"baseline", toml::table{{"rounds", 6}, {"failed", 0}}},
                                                       {"candidate", toml::table{{"rounds", 6}, {"failed", 0}}}}}};
    time.previous_digest = write_chain_to_parity();
    scratch.write(Stage::time, time);
    Checkpoint gate;
    gate.stage = "gate";
    gate.status = StageStatus::failed;
    toml::array conditions;
    conditions.push_back(toml::table{{"name", "relative-speed"}, {"status", "FAIL"}, {"figure", "ratio 1.34 | >= 1.0"}, {"detail", ""}});
    conditions.push_back(toml::table{{"name", "plausible-ratio"}, {"status", "FAIL"}, {"figure", "median 0.3 < 0.5"},
                                     {"detail", ""}, {"waiver", "sparse by design"}});
    gate.figures = toml::table{{"summary", "FAIL: candidate: relative-speed"}, {"verdict", "FAIL"},
                               {"candidates", toml::table{{"candidate", toml::table{{"summary", "FAIL: relative-speed"},
                                                                                    {"verdict", "FAIL"},
                                                                                    {"conditions", conditions}}}}}};
    gate.previous_digest = scratch.last_digest();
    scratch.write(Stage::gate, gate);

    const std::string text = pull_request_report(run, "text");
    // The ratio in words names the candidate, as time's own summary does.
    EXPECT_NE(text.find("candidate is 34.4% slower (1.344x the baseline's time)"), std::string::npos) << text;
    EXPECT_EQ(text.find("the candidate is"), std::string::npos) << text;
    EXPECT_NE(text.find("FAIL: candidate: relative-speed"), std::string::npos) << text;
    EXPECT_NE(text.find("candidate/baseline  1.3441 (95% CI 1.3427 .. 1.3451)"), std::string::npos) << text;
    // The timed outputs' re-checks, and a waived condition with its reason.
    EXPECT_NE(text.find("rounds on 3 input sets; re-checked after up to 6 rounds: baseline 6, candidate 6"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("plausible-ratio      WAIVED  median 0.3 < 0.5; waived: sparse by design"), std::string::npos)
        << text;
    const std::string markdown = pull_request_report(run, "markdown");
    EXPECT_NE(markdown.find("| relative-speed | FAIL | ratio 1.34 \\| >= 1.0 |"), std::string::npos) << markdown;
    EXPECT_NE(markdown.find("| candidate p50 | 74.534 ms |"), std::string::npos) << markdown;
    const std::string csv = pull_request_report(run, "csv");
    EXPECT_EQ(csv.rfind("section,name,status,value\n", 0), 0u) << csv;
    EXPECT_NE(csv.find("gate,relative-speed,FAIL,ratio 1.34 | >= 1.0\n"), std::string::npos) << csv;
    const std::string json = pull_request_report(run, "json");
    EXPECT_NE(json.find("\"status\" : \"FAIL\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"command\" : \"report\""), std::string::npos) << json;
    try {
        pull_request_report(run, "html");
        ADD_FAILURE() << "accepted html";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
    }
    EXPECT_EQ(text.find("stale"), std::string::npos) << text;
}

// A gate verdict on a time checkpoint that has been re-run since is not the run's verdict: the report
// says it is stale, as status and compare do. An interval end the checkpoint does not hold is "-", not 0.
TEST_F(RunOverviewTest, ReportMarksAStaleGateAndAMissingIntervalEnd) {
    RunDirectory run(root);
    const std::string parity = write_chain_to_parity();
    Checkpoint time;
    time.stage = "time";
    time.status = StageStatus::passed;
    time.previous_digest = parity;
    time.started_utc = time.finished_utc = "2026-12-01T00:00:00Z";
    time.figures = toml::table{{"workload", "w"},
                               {"candidates", toml::table{{"candidate", toml::table{
                                   {"ratio", toml::table{{"median", 1.3441}, {"ci_low", 1.3427}, {"confidence", 0.9}}}}}}}};
    scratch.write(Stage::time, time);
    Checkpoint gate;
    gate.stage = "gate";
    gate.status = StageStatus::passed;
    gate.previous_digest = scratch.last_digest();
    gate.figures = toml::table{{"summary", "PASS: every candidate passed"}, {"verdict", "PASS"}};
    scratch.write(Stage::gate, gate);
    std::string text = pull_request_report(run, "text");
    EXPECT_EQ(text.find("stale"), std::string::npos) << text;
    EXPECT_EQ(text.find("0.0000"), std::string::npos) << text;
    EXPECT_NE(text.find("1.3441 (90% CI 1.3427 .. -)"), std::string::npos) << text;  // the level it records

    time.started_utc = time.finished_utc = "2026-12-01T01:00:00Z";  // time --force
    scratch.write(Stage::time, time);
    for (const char *format : {"text", "markdown", "csv", "json"}) {
        text = pull_request_report(run, format);
        EXPECT_NE(text.find("stale: time has been re-run since"), std::string::npos) << format << ": " << text;
    }
}

}  // namespace

namespace {

// A set's time figures as the time stage writes them: two shapes, the temporal pair slower on the second.
s2tp::SetTimeFigures two_shape_set_figures() {
    using namespace s2tp;
    SetTimeFigures f;
    f.workload_set = "wan21-14b";
    f.device_name = "NVIDIA H200";
    f.arch = "sm_90a";
    f.summary = "wan21-14b: candidate/baseline geomean 1.0100 [1.0050, 1.0150], worst t2v-720p 1.0300";
    for (const auto &[name, median] : {std::pair{"t2v-480p", 0.9900}, {"t2v-720p", 1.0300}}) {
        ShapeTimeFigures s;
        s.name = name;
        s.passed = true;
        s.figures.workload = name;
        s.figures.baseline_sha256 = std::string(64, 'b');
        CandidateTimeFigures &c = s.figures.candidate_or_add("candidate");
        c.sha256 = std::string(64, 'b');
        c.timing = ArmTimeFigures{};
        c.timing->p50 = 50.0;
        c.timing->n = 40;
        c.ratio = RatioFigures{};
        c.ratio->median = median;
        c.ratio->ci_low = median - 0.002;
        c.ratio->ci_high = median + 0.002;
        c.ratio->confidence = 0.95;  // as the stage records it: the report prints the level from it
        f.shapes.push_back(s);
    }
    SetCandidateFigures c;
    c.name = "candidate";
    c.geomean = RatioFigures{};
    c.geomean->median = 1.0100;
    c.geomean->ci_low = 1.0050;
    c.geomean->ci_high = 1.0150;
    c.geomean->confidence = 0.95;
    c.worst_shape = "t2v-720p";
    c.worst = f.shapes[1].figures.candidates[0].ratio;
    f.candidates.push_back(c);
    return f;
}

// status and report under a time stage on GPUs of several models: each GPU's own verdict row.
TEST_F(RunOverviewTest, StatusAndReportShowEachGpusVerdictOnGpusOfSeveralModels) {
    TimeFigures f;
    f.workload = "w";
    f.candidate_or_add("candidate");
    GpuTimeResult h100;
    h100.index = 1;
    h100.name = "NVIDIA H100 80GB HBM3";
    RatioFigures ratio;
    ratio.median = 1.0210;
    ratio.ci_low = 1.0190;
    ratio.ci_high = 1.0230;
    h100.candidates.push_back({"candidate", std::nullopt, ratio});
    f.gpu_results.push_back(h100);
    Checkpoint time = scratch.chained(Stage::time, StageStatus::passed);
    time.figures = f.to_toml();
    time.previous_digest = write_chain_to_parity();
    scratch.write(Stage::time, time);

    const RunOverview o = overview_run(RunDirectory(root), "");
    const StageOverview &line = o.stages[static_cast<std::size_t>(Stage::time)];
    ASSERT_EQ(line.gpus.size(), 1u);
    EXPECT_NE(line.gpus[0].find("GPU 1 NVIDIA H100 80GB HBM3: candidate/baseline 1.0210"), std::string::npos)
        << line.gpus[0];
    Checkpoint gate = scratch.chained(Stage::gate, StageStatus::passed);
    gate.figures = GateFigures::of({}, GateThresholds{}).to_toml();
    scratch.write(Stage::gate, gate);
    const std::string report = pull_request_report(RunDirectory(root), "text");
    EXPECT_NE(report.find("GPU 1 NVIDIA H100 80GB HBM3: candidate/baseline 1.0210"), std::string::npos) << report;
}

}  // namespace

// Over a set: the gate reads every shape from the time checkpoint (gate_evidence), decides per shape and
// for the set, and report shows one time row per shape, the combined rows and the per-shape conditions.
TEST_F(RunOverviewTest, ReportAndGateOverASetHaveARowPerShapeAndTheCombinedRows) {
    RunDirectory run(root);
    Checkpoint time;
    time.stage = "time";
    time.status = StageStatus::passed;
    time.figures = two_shape_set_figures().to_toml();
    time.previous_digest = write_chain_to_parity();
    scratch.write(Stage::time, time);

    const GateEvidence evidence = gather_gate_evidence(inspect_run(run), {"candidate"}).at("candidate");
    EXPECT_EQ(evidence.workload_set, "wan21-14b");
    ASSERT_EQ(evidence.set_shapes.size(), 2u);
    EXPECT_EQ(evidence.set_shapes[1].shape, "t2v-720p");
    ASSERT_TRUE(evidence.set_shapes[1].candidate_vs_baseline);
    EXPECT_EQ(evidence.set_shapes[1].candidate_vs_baseline->hi, 1.0320);
    EXPECT_EQ(evidence.set_shapes[1].candidate_vs_baseline->n, 40u);
    EXPECT_EQ(evidence.set_shapes[0].expected_real_output_sha256, std::string(64, 'b'));
    ASSERT_TRUE(evidence.geomean_vs_baseline);
    EXPECT_EQ(evidence.geomean_vs_baseline->n, 80u);
    EXPECT_EQ(evidence.worst_shape, "t2v-720p");

    GateThresholds thresholds = default_gate_thresholds();
    thresholds.ratio_upper_bound = 1.0;
    thresholds.geomean_ratio_upper_bound = 1.0;
    thresholds.worst_ratio_upper_bound = 1.02;
    const GateResult result = evaluate_gate(evidence, thresholds);
    const GateFigures figures = GateFigures::of({{"candidate", result}}, thresholds);
    Checkpoint gate;
    gate.stage = "gate";
    gate.status = figures.passed ? StageStatus::passed : StageStatus::failed;
    gate.figures = figures.to_toml();
    gate.reasons = figures.reasons();
    gate.previous_digest = scratch.last_digest();
    scratch.write(Stage::gate, gate);
    EXPECT_FALSE(figures.passed);

    const std::string text = pull_request_report(run, "text");
    // One table per section, each column as wide as its widest cell: the set's longest row name sets it.
    EXPECT_NE(text.find("\nworkload set                 wan21-14b: 2 shapes\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\nt2v-480p candidate/baseline  0.9900"), std::string::npos) << text;
    EXPECT_NE(text.find("\nGATE CONDITION            STATUS       FIGURE\n"), std::string::npos) << text;
    EXPECT_NE(text.find("t2v-480p candidate/baseline"), std::string::npos) << text;
    EXPECT_NE(text.find("0.9900 (95% CI 0.9880 .. 0.9920)"), std::string::npos) << text;
    EXPECT_NE(text.find("1.0100 (95% CI 1.0050 .. 1.0150)"), std::string::npos) << text;
    EXPECT_NE(text.find("t2v-720p 1.0300 (95% CI 1.0280 .. 1.0320)"), std::string::npos) << text;
    const std::string csv = pull_request_report(run, "csv");
    EXPECT_NE(csv.find("time,geomean candidate/baseline,,1.0100 (95% CI 1.0050 .. 1.0150)\n"), std::string::npos) << csv;
    EXPECT_NE(csv.find("gate,relative-speed t2v-480p,PASS,"), std::string::npos) << csv;
    EXPECT_NE(csv.find("gate,relative-speed t2v-720p,FAIL,"), std::string::npos) << csv;
    EXPECT_NE(csv.find("gate,geomean-speed,FAIL,\"geomean over 2 shapes 1.0100 (95% CI 1.0050 .. 1.0150) reaches >= 1.0000"),
              std::string::npos) << csv;
    EXPECT_NE(csv.find("gate,worst-shape-speed,FAIL,reaching >= 1.0200: t2v-720p 1.0300 (95% CI 1.0280 .. 1.0320)"),
              std::string::npos) << csv;
    const std::string markdown = pull_request_report(run, "markdown");
    EXPECT_NE(markdown.find("| worst shape candidate | t2v-720p 1.0300 (95% CI 1.0280 .. 1.0320) |"), std::string::npos)
        << markdown;
    const std::string json = pull_request_report(run, "json");
    EXPECT_NE(json.find("\"name\" : \"output-sha t2v-720p\""), std::string::npos) << json;
}

}  // namespace s2tp::unit_run_overview
