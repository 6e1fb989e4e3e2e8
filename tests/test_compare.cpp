// `sage2tp compare` on hand-written run directories: two runs with a chain of real checkpoints (one with
// two candidates, one with no time checkpoint), a stale and an untrusted time checkpoint, the three
// table formats, the JSON object and the SVG; then the binary itself: its output, the SVG it writes and
// its usage errors.
#include "cli_fixture.h"
#include "default_thresholds.h"
#include "scratch_run.h"

#include "formats/checkpoint_store.h"
#include "pipeline/stage_pipeline.h"
#include "figures/gate_figures.h"
#include "views/run_comparison.h"
#include "views/run_regression.h"
#include "figures/set_time_figures.h"
#include "figures/time_figures.h"
#include "support/errors.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <tuple>

namespace s2tp {
namespace {

namespace fs = std::filesystem;

ArmTimeFigures arm(double p50) {
    ArmTimeFigures a;
    a.p50 = p50;
    a.n = 40;
    return a;
}

RatioFigures ratio(double median, double lo, double hi) {
    RatioFigures r;
    r.median = median;
    r.ci_low = lo;
    r.ci_high = hi;
    r.confidence = 0.9;  // not the default 0.95: the tables print the level the figure records
    return r;
}

toml::table two_candidate_time() {
    TimeFigures f;
    f.workload = "wan21-14b-block24";
    f.arch = "sm_90a";
    f.device_name = "NVIDIA H200";
    f.sm_clock_min_mhz = 1755;
    f.sm_clock_median_mhz = 1980;
    f.sm_clock_max_mhz = 1980;
    f.baseline = arm(55.512);
    f.aa = ratio(1.0002, 0.9991, 1.0013);
    CandidateTimeFigures &pair = f.candidate_or_add("temporal-pair");
    pair.timing = arm(74.613);
    pair.ratio = ratio(1.3441, 1.3427, 1.3451);
    CandidateTimeFigures &second = f.candidate_or_add("second-v-buffer");
    second.timing = arm(54.901);
    second.ratio = ratio(0.9890, 0.9871, 0.9912);
    return f.to_toml();
}

// The gate as the gate stage writes it: temporal-pair fails on shared memory, second-v-buffer passes.
GateFigures two_candidate_gate() {
    GateResult fails, passes;
    fails.conditions = {GateCondition{"shared-memory", GateStatus::fail, "+16384 B per block", "", true}};
    passes.conditions = {GateCondition{"shared-memory", GateStatus::pass, "+0 B per block", "", true}};
    passes.passed = true;
    return GateFigures::of({{"temporal-pair", fails}, {"second-v-buffer", passes}}, default_gate_thresholds());
}

class CompareTest : public ::testing::Test {
protected:
    void SetUp() override {
        // Run one: two candidates, timed and gated.
        ChainedRun timed(runs_ / "tp-two");
        timed.write_chain_to(Stage::parity);
        timed.write(Stage::time, StageStatus::passed, two_candidate_time());
        const GateFigures gate = two_candidate_gate();
        timed.write(Stage::gate, StageStatus::failed, gate.to_toml(), gate.reasons());
        // Run two: built and checked, never timed or gated.
        ChainedRun untimed(runs_ / "tp-untimed");
        untimed.write_chain_to(Stage::parity);
    }
    std::vector<ComparedRun> both() { return {compare_run(runs_ / "tp-two"), compare_run(runs_ / "tp-untimed")}; }

    ScratchDirectory scratch_{"compare"};
    const fs::path dir_ = scratch_.path(), runs_ = dir_ / "sage2tp-runs";
};

std::vector<std::string> lines_of(const std::string &text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

TEST_F(CompareTest, ReadsEveryCandidateFromTheTimeCheckpointInTheManifestsOrder) {
    const ComparedRun run = compare_run(runs_ / "tp-two");
    EXPECT_EQ(run.id, "tp-two");
    EXPECT_EQ(run.time.state, "ok");
    EXPECT_EQ(run.gate.state, "failed");
    EXPECT_EQ(run.gate.note, "temporal-pair: shared-memory failed: +16384 B per block");
    ASSERT_EQ(run.candidates.size(), 2u);
    EXPECT_EQ(run.candidates[0].name, "temporal-pair");
    EXPECT_EQ(run.candidates[1].name, "second-v-buffer");
    ASSERT_TRUE(run.candidates[1].ratio);
    EXPECT_DOUBLE_EQ(run.candidates[1].ratio->hi, 0.9912);
    EXPECT_EQ(run.workload, "wan21-14b-block24");
    EXPECT_EQ(run.sm_clock_min_mhz, 1755);
    EXPECT_EQ(run.candidates[0].verdict, "FAIL");
    EXPECT_EQ(run.candidates[1].verdict, "PASS");
    EXPECT_EQ(run.gate_summary, "FAIL: temporal-pair: shared-memory");
}

TEST_F(CompareTest, AGateThatNamesACandidateTheTimeCheckpointDoesNotAddsItsRow) {
    ChainedRun run(runs_ / "tp-gated");
    run.write_chain_to(Stage::parity);
    TimeFigures time;
    time.candidate_or_add("temporal-pair").ratio = ratio(1.3441, 1.3427, 1.3451);
    run.write(Stage::time, StageStatus::passed, time.to_toml());
    const GateFigures gate = two_candidate_gate();
    run.write(Stage::gate, StageStatus::failed, gate.to_toml(), gate.reasons());
    const ComparedRun compared = compare_run(run.root());
    ASSERT_EQ(compared.candidates.size(), 2u);
    EXPECT_EQ(compared.candidates[0].name, "temporal-pair");
    EXPECT_EQ(compared.candidates[1].name, "second-v-buffer");
    EXPECT_FALSE(compared.candidates[1].ratio);
    EXPECT_EQ(compared.candidates[1].verdict, "PASS");
    EXPECT_FALSE(compared.baseline_p50_ms) << "a figure the time checkpoint does not record stays unset";
}

TEST_F(CompareTest, AMissingTimeCheckpointShowsAsMissingNeverAsZeros) {
    const ComparedRun run = compare_run(runs_ / "tp-untimed");
    EXPECT_EQ(run.time.state, "missing");
    EXPECT_EQ(run.gate.state, "missing");
    EXPECT_TRUE(run.candidates.empty());
    EXPECT_FALSE(run.baseline_p50_ms);
    const std::string text = comparison_table({run}, "text");
    EXPECT_EQ(text.find("0.000"), std::string::npos) << text;
    const std::vector<std::string> lines = lines_of(text);
    ASSERT_GE(lines.size(), 2u);
    EXPECT_NE(lines[1].find("tp-untimed  -"), std::string::npos) << text;
    EXPECT_NE(lines[1].find("missing  missing"), std::string::npos) << text;
}

// Issue 36 item 9: a run whose build failed says so, not only that its time checkpoint is missing.
TEST_F(CompareTest, ARunThatFailedBeforeTimeNamesTheStage) {
    ChainedRun broken(runs_ / "tp-broken");
    broken.write(Stage::prepare, StageStatus::passed);
    broken.write(Stage::build, StageStatus::failed, {}, {"nvcc failed on candidate:kernels/k.cu"});
    const ComparedRun run = compare_run(runs_ / "tp-broken");
    EXPECT_EQ(run.time.state, "missing");
    EXPECT_EQ(run.time.note, "build failed: nvcc failed on candidate:kernels/k.cu");
    EXPECT_EQ(run.gate.note, run.time.note);
    EXPECT_NE(comparison_table({run}, "text").find("tp-broken: time missing: build failed"), std::string::npos);
    ChainedRun unbuilt(runs_ / "tp-unbuilt");
    unbuilt.write(Stage::prepare, StageStatus::passed);
    EXPECT_EQ(compare_run(runs_ / "tp-unbuilt").time.note, "build not run");
    EXPECT_EQ(compare_run(runs_ / "tp-untimed").time.note, "") << "every stage before time stands";
}

TEST_F(CompareTest, AStaleTimeCheckpointGivesNoFigures) {
    ChainedRun run(runs_ / "tp-stale");
    run.write_chain_to(Stage::parity);
    run.write(Stage::time, StageStatus::passed, two_candidate_time());
    // parity re-run after time: the time checkpoint describes inputs that no longer exist.
    CheckpointRead parity = read_checkpoint(run.root() / "checkpoints/04-parity.toml");
    ASSERT_TRUE(parity.checkpoint);
    parity.checkpoint->finished_utc = "2026-12-01T01:00:00Z";
    write_checkpoint(run.root() / "checkpoints/04-parity.toml", *parity.checkpoint);
    const ComparedRun compared = compare_run(run.root());
    EXPECT_EQ(compared.time.state, "stale");
    EXPECT_EQ(compared.time.note, "stale: parity has been re-run since");
    EXPECT_TRUE(compared.candidates.empty());
    EXPECT_FALSE(compared.aa);
}

TEST_F(CompareTest, AnEditedTimeCheckpointIsUntrusted) {
    const fs::path time = runs_ / "tp-two/checkpoints/05-time.toml";
    std::string text = slurp(time);
    text.replace(text.find("1.3441"), 6, "0.5000");
    std::ofstream(time) << text;
    const ComparedRun run = compare_run(runs_ / "tp-two");
    EXPECT_EQ(run.time.state, "untrusted");
    EXPECT_NE(run.time.note.find("not trusted"), std::string::npos) << run.time.note;
    EXPECT_EQ(run.gate.state, "stale");  // it built on a time checkpoint that is no longer evidence
    EXPECT_EQ(comparison_table({run}, "csv").find("0.5"), std::string::npos);
}

TEST_F(CompareTest, TextHasOneRowPerCandidateAndTheNotesBelow) {
    const std::vector<std::string> lines = lines_of(comparison_table(both(), "text"));
    ASSERT_EQ(lines.size(), 1u + 3u + 1u) << comparison_table(both(), "text");  // header, rows, the gate's note
    EXPECT_EQ(lines[0].rfind("RUN", 0), 0u);
    EXPECT_NE(lines[0].find("RATIO"), std::string::npos);
    EXPECT_EQ(lines[0].find("95%"), std::string::npos) << "the level is the figure's, in each cell";
    EXPECT_NE(lines[1].find("temporal-pair"), std::string::npos);
    EXPECT_NE(lines[1].find("1.3441 (90% CI 1.3427 .. 1.3451)"), std::string::npos) << lines[1];
    EXPECT_NE(lines[1].find("1980 (1755-1980)"), std::string::npos) << lines[1];
    EXPECT_NE(lines[1].find("55.512"), std::string::npos) << lines[1];
    EXPECT_NE(lines[1].find("74.613"), std::string::npos) << lines[1];
    EXPECT_NE(lines[2].find("second-v-buffer"), std::string::npos);
    EXPECT_NE(lines[2].find("0.9890 (90% CI 0.9871 .. 0.9912)"), std::string::npos) << lines[2];
    // Columns line up: every row's ratio starts where the header's does.
    EXPECT_EQ(lines[1].find("1.3441"), lines[0].find("RATIO"));
    EXPECT_EQ(lines[2].find("0.9890"), lines[0].find("RATIO"));
    EXPECT_EQ(lines[1].substr(lines[1].size() - 6), "  FAIL");
    EXPECT_EQ(lines[2].substr(lines[2].size() - 6), "  PASS");
    EXPECT_EQ(lines[4], "  tp-two: gate FAIL: temporal-pair: shared-memory");
}

TEST_F(CompareTest, MarkdownIsOneTableWithAHeaderAndADelimiterRow) {
    const std::string md = comparison_table(both(), "markdown");
    const std::vector<std::string> lines = lines_of(md);
    ASSERT_GE(lines.size(), 7u) << md;
    EXPECT_EQ(lines[0], "### sage2tp compare: 2 runs");
    EXPECT_EQ(lines[2].rfind("| run | candidate | workload |", 0), 0u) << lines[2];
    // Two runs: the column "change" of the second run's rows against the first's.
    EXPECT_EQ(lines[3], "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (std::size_t i = 2; i < 7; ++i)
        EXPECT_EQ(std::count(lines[i].begin(), lines[i].end(), '|'), 14) << lines[i];
    EXPECT_NE(lines[4].find("| tp-two | temporal-pair | wan21-14b-block24 | sm_90a | NVIDIA H200 |"), std::string::npos)
        << lines[4];
    EXPECT_NE(lines[6].find("| tp-untimed | - |"), std::string::npos) << lines[6];
    EXPECT_NE(lines[4].find("| ok | FAIL |"), std::string::npos) << lines[4];
    EXPECT_NE(md.find("\n\n- tp-two: gate FAIL: temporal-pair: shared-memory\n"), std::string::npos) << md;
}

TEST_F(CompareTest, CsvKeepsEveryNumberInItsOwnColumnAndEveryStateInItsRow) {
    const std::vector<std::string> lines = lines_of(comparison_table(both(), "csv"));
    ASSERT_EQ(lines.size(), 4u);
    const auto fields = [](const std::string &line) {
        std::vector<std::string> out;
        std::string field;
        std::istringstream in(line);
        while (std::getline(in, field, ',')) out.push_back(field);
        if (!line.empty() && line.back() == ',') out.push_back("");
        return out;
    };
    const std::vector<std::string> header = fields(lines[0]);
    ASSERT_EQ(header.size(), 23u);  // with the four change columns of two runs
    EXPECT_EQ(header[14], "change_median");
    EXPECT_EQ(header[17], "change_class");
    for (std::size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(fields(lines[i]).size(), header.size()) << lines[i];
    const std::vector<std::string> second = fields(lines[2]);
    EXPECT_EQ(second[2], "second-v-buffer");
    EXPECT_EQ(second[10], "54.901");
    EXPECT_EQ(second[11], "0.989");
    EXPECT_EQ(second[13], "0.9912");
    EXPECT_EQ(second[21], "ok");
    EXPECT_EQ(second[22], "PASS");
    const std::vector<std::string> untimed = fields(lines[3]);
    EXPECT_EQ(untimed[0], "tp-untimed");
    EXPECT_EQ(untimed[9], "");  // no baseline p50: empty, not 0
    EXPECT_EQ(untimed[21], "missing");
}

TEST_F(CompareTest, JsonLeavesOutWhatNoCheckpointRecorded) {
    const toml::table json = comparison_json(both());
    const toml::array *runs = json["runs"].as_array();
    ASSERT_TRUE(runs && runs->size() == 2);
    const toml::table &timed = *(*runs)[0].as_table();
    EXPECT_EQ(timed["candidates"][1]["name"].value_or(std::string()), "second-v-buffer");
    EXPECT_EQ(timed["candidates"][1]["ratio"]["ci_low"].value_or(0.0), 0.9871);
    EXPECT_EQ(timed["candidates"][1]["verdict"].value_or(std::string()), "PASS");
    EXPECT_EQ(timed["gate"]["summary"].value_or(std::string()), "FAIL: temporal-pair: shared-memory");
    const toml::table &untimed = *(*runs)[1].as_table();
    EXPECT_EQ(untimed["time"]["state"].value_or(std::string()), "missing");
    EXPECT_FALSE(untimed.contains("baseline_p50_ms"));
    EXPECT_FALSE(untimed.contains("aa"));
}

TEST_F(CompareTest, SvgHasAnIntervalPerTimedCandidateAndSaysWhyTheOthersHaveNone) {
    const std::string svg = comparison_svg(both());
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
    EXPECT_NE(svg.find("sage2tp compare: 2 runs, 2 candidates"), std::string::npos);
    EXPECT_NE(svg.find(">temporal-pair</text>"), std::string::npos);
    EXPECT_NE(svg.find(">1.3441 (90% CI 1.3427 .. 1.3451)</text>"), std::string::npos);
    EXPECT_NE(svg.find(">0.9890 (90% CI 0.9871 .. 0.9912)</text>"), std::string::npos);
    EXPECT_NE(svg.find("no interval: time missing"), std::string::npos);
    EXPECT_NE(svg.find("1 = no difference"), std::string::npos);
    EXPECT_NE(svg.find("#2a9d3a"), std::string::npos);  // the faster candidate
    EXPECT_NE(svg.find("#c8302c"), std::string::npos);  // the slower one
    EXPECT_EQ(svg, comparison_svg(both())) << "the same runs must give the same bytes";
}

// A run timed over a workload set: per candidate one row per shape (the set's name and the shape in the
// workload column, the shape's p50 and interval), then the geometric-mean row; every row carries the
// candidate's verdict; the JSON names the shape; the SVG has every shape's interval.
TEST_F(CompareTest, ASetRunHasARowPerShapeAndTheCombinedRow) {
    SetTimeFigures f;
    f.workload_set = "video-dits";
    f.arch = "sm_90a";
    f.device_name = "NVIDIA H200";
    for (const auto &[name, median] : {std::pair{"hunyuan-544p", 1.1200}, {"cogvideox-5b", 0.9700}}) {
        ShapeTimeFigures s;
        s.name = name;
        CandidateTimeFigures &c = s.figures.candidate_or_add("temporal-pair");
        c.timing = arm(median * 40);
        c.ratio = ratio(median, median - 0.01, median + 0.01);
        f.shapes.push_back(s);
    }
    SetCandidateFigures combined;
    combined.name = "temporal-pair";
    combined.geomean = ratio(1.0423, 1.0350, 1.0500);
    combined.worst_shape = "hunyuan-544p";
    f.candidates.push_back(combined);
    ChainedRun set(runs_ / "tp-set");
    set.write_chain_to(Stage::parity);
    set.write(Stage::time, StageStatus::passed, f.to_toml());
    const GateFigures gate = two_candidate_gate();
    set.write(Stage::gate, StageStatus::failed, gate.to_toml(), gate.reasons());

    const ComparedRun run = compare_run(runs_ / "tp-set");
    EXPECT_EQ(run.workload, "video-dits");
    ASSERT_EQ(run.candidates.size(), 4u);  // three rows of temporal-pair, and second-v-buffer from the gate
    EXPECT_EQ(run.candidates[0].shape, "hunyuan-544p");
    EXPECT_EQ(run.candidates[1].shape, "cogvideox-5b");
    EXPECT_EQ(run.candidates[2].shape, "geomean");
    ASSERT_TRUE(run.candidates[2].ratio);
    EXPECT_EQ(run.candidates[2].ratio->median, 1.0423);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(run.candidates[i].verdict, "FAIL") << i;

    const std::string text = comparison_table({run}, "text");
    EXPECT_NE(text.find("video-dits hunyuan-544p"), std::string::npos) << text;
    EXPECT_NE(text.find("1.1200 (90% CI 1.1100 .. 1.1300)"), std::string::npos) << text;
    EXPECT_NE(text.find("video-dits geomean"), std::string::npos) << text;
    EXPECT_NE(text.find("1.0423 (90% CI 1.0350 .. 1.0500)"), std::string::npos) << text;
    const std::string csv = comparison_table({run}, "csv");
    EXPECT_NE(csv.find(",video-dits cogvideox-5b,sm_90a,"), std::string::npos) << csv;
    std::ostringstream json;
    json << toml::json_formatter{comparison_json({run})};
    EXPECT_NE(json.str().find("\"shape\" : \"geomean\""), std::string::npos) << json.str();
    const std::string svg = comparison_svg({run});
    EXPECT_NE(svg.find("sage2tp compare: 1 run, 2 candidates"), std::string::npos) << svg;
    EXPECT_NE(svg.find("tp-set hunyuan-544p"), std::string::npos) << svg;
    EXPECT_NE(svg.find(">0.9700 (90% CI 0.9600 .. 0.9800)</text>"), std::string::npos) << svg;
    EXPECT_NE(svg.find(">1.0423 (90% CI 1.0350 .. 1.0500)</text>"), std::string::npos) << svg;
}

// A time checkpoint of GPUs of several models (one verdict per GPU) and one of two H200s combined.
toml::table several_model_time() {
    TimeFigures f;
    f.workload = "wan21-14b-block24";
    f.arch = "sm_90a";
    f.device_name = "NVIDIA H200";
    f.candidate_or_add("temporal-pair");
    for (const auto &[index, name, p50, median] :
         {std::tuple{0, "NVIDIA H200", 24.5, 0.9410}, std::tuple{1, "NVIDIA H100 80GB HBM3", 31.25, 1.0210}}) {
        GpuTimeResult g;
        g.index = index;
        g.name = name;
        g.uuid = "GPU-" + std::to_string(index);
        g.baseline = arm(p50 + 1.5);
        g.aa = ratio(1.0001, 0.9995, 1.0007);
        g.candidates.push_back({"temporal-pair", arm(p50), ratio(median, median - 0.002, median + 0.002)});
        f.gpu_results.push_back(g);
        DeviceFacts device;
        device.index = index;
        device.name = name;
        GpuFigures table = GpuFigures::of(device);
        table.checks = 1;
        table.ran = 1;
        f.gpus.push_back(table);
    }
    return f.to_toml();
}

TEST_F(CompareTest, GpusOfSeveralModelsGiveARowPerGpuAndThePerGpuTable) {
    ChainedRun run(runs_ / "tp-gpus");
    run.write_chain_to(Stage::parity);
    run.write(Stage::time, StageStatus::passed, several_model_time());
    const ComparedRun compared = compare_run(runs_ / "tp-gpus");
    ASSERT_EQ(compared.candidates.size(), 2u);
    EXPECT_EQ(compared.candidates[0].gpu, "GPU 0 NVIDIA H200");
    EXPECT_EQ(compared.candidates[1].gpu, "GPU 1 NVIDIA H100 80GB HBM3");
    ASSERT_TRUE(compared.candidates[1].ratio);
    EXPECT_DOUBLE_EQ(compared.candidates[1].ratio->median, 1.0210);
    EXPECT_DOUBLE_EQ(*compared.candidates[1].gpu_baseline_p50_ms, 32.75);
    ASSERT_EQ(compared.gpu_lines.size(), 2u);

    const std::string text = comparison_table({compared}, "text");
    bool h100_row = false;
    for (const std::string &line : lines_of(text))
        h100_row = h100_row || (line.find("GPU 1 NVIDIA H100 80GB HBM3") != std::string::npos &&
                                line.find("1.0210") != std::string::npos && line.find("32.750") != std::string::npos);
    EXPECT_TRUE(h100_row) << text;
    EXPECT_NE(text.find("tp-gpus: time per GPU:"), std::string::npos) << text;
    EXPECT_NE(comparison_table({compared}, "csv").find("GPU 1 NVIDIA H100 80GB HBM3"), std::string::npos);
    const toml::table json = comparison_json({compared});
    const toml::table &entry = *json["runs"][0].as_table();
    EXPECT_EQ(entry["candidates"][1]["gpu"].value_or(std::string()), "GPU 1 NVIDIA H100 80GB HBM3");
    EXPECT_EQ(entry["gpus"].as_array()->size(), 2u);
    EXPECT_NE(comparison_svg({compared}).find("1 candidate"), std::string::npos) << "two GPUs' rows, one candidate";
    // One GPU model: the rows stay one per candidate, and the table of GPUs follows.
    EXPECT_TRUE(compare_run(runs_ / "tp-two").gpu_lines.empty());
}

TEST_F(CompareTest, RunsAreSelectedByDirectoryOrRunId) {
    RunSelection selection;
    selection.runs_root = runs_;
    const std::vector<fs::path> roots = select_compared_runs({"tp-untimed", (runs_ / "tp-two").string()}, selection);
    ASSERT_EQ(roots.size(), 2u);
    EXPECT_EQ(roots[0], runs_ / "tp-untimed");
    EXPECT_EQ(roots[1], runs_ / "tp-two");
    const auto code = [&](const std::vector<std::string> &words) {
        try {
            select_compared_runs(words, selection);
        } catch (const Error &e) {
            return e.code();
        }
        return ExitCode::ok;
    };
    EXPECT_EQ(code({"no/such/dir"}), ExitCode::usage);
    EXPECT_EQ(code({"no-such-run"}), ExitCode::precondition);
    EXPECT_EQ(code({runs_.string()}), ExitCode::precondition);  // a directory that is not a run
}

TEST_F(CompareTest, AnUnknownFormatIsAUsageError) {
    try {
        comparison_table(both(), "json");
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
    }
}

// ---- across commits (views/run_regression.h) ----

// A run of one candidate whose ratio is `r`, timed and nothing else.
void write_timed_run(const fs::path &root, const std::optional<RatioFigures> &r) {
    ChainedRun run(root);
    run.write_chain_to(Stage::parity);
    TimeFigures f;
    f.baseline = arm(55.5);
    CandidateTimeFigures &pair = f.candidate_or_add("temporal-pair");
    pair.timing = arm(74.6);
    pair.ratio = r;
    run.write(Stage::time, StageStatus::passed, f.to_toml());
}

ChangeClass class_against(const fs::path &dir, const RatioFigures &base, const std::optional<RatioFigures> &now,
                          double band = default_change_band) {
    write_timed_run(dir / "base", base);
    write_timed_run(dir / "now", now);
    const std::vector<CandidateChange> changes =
        classify_changes({compare_run(dir / "base"), compare_run(dir / "now")}, band);
    EXPECT_EQ(changes.size(), 1u);
    return changes.empty() ? ChangeClass::unknown : changes.front().verdict;
}

// Issue 39 item 6: SLOW and FAST only beyond the band and beyond the noise, SAME otherwise, UNKNOWN
// without a ratio on either side.
TEST_F(CompareTest, ALaterRunsRatioIsClassifiedAgainstTheFirstRunsBeyondBandAndNoise) {
    const RatioFigures base = ratio(1.00, 0.99, 1.01);
    EXPECT_EQ(class_against(dir_ / "slow", base, ratio(1.05, 1.04, 1.06)), ChangeClass::slow);
    EXPECT_EQ(class_against(dir_ / "fast", base, ratio(0.95, 0.94, 0.96)), ChangeClass::fast);
    EXPECT_EQ(class_against(dir_ / "in-band", base, ratio(1.015, 1.014, 1.016)), ChangeClass::same)
        << "1.5% is within the 2% band";
    EXPECT_EQ(class_against(dir_ / "noisy", base, ratio(1.05, 0.98, 1.12)), ChangeClass::same)
        << "beyond the band, but its interval reaches below 1";
    EXPECT_EQ(class_against(dir_ / "narrow-band", base, ratio(1.015, 1.014, 1.016), 0.01), ChangeClass::slow);
    EXPECT_EQ(class_against(dir_ / "untimed", base, std::nullopt), ChangeClass::unknown);
}

TEST_F(CompareTest, TheChangeIntervalIsTheWidestTheTwoIntervalsAllowAndEveryTableShowsIt) {
    write_timed_run(dir_ / "base", ratio(1.00, 0.99, 1.01));
    write_timed_run(dir_ / "now", ratio(1.05, 1.04, 1.06));
    std::vector<ComparedRun> runs{compare_run(dir_ / "base"), compare_run(dir_ / "now")};
    const std::vector<CandidateChange> changes = classify_changes(runs, default_change_band);
    ASSERT_EQ(changes.size(), 1u);
    ASSERT_TRUE(changes[0].change);
    EXPECT_DOUBLE_EQ(changes[0].change->median, 1.05);
    EXPECT_DOUBLE_EQ(changes[0].change->lo, 1.04 / 1.01);
    EXPECT_DOUBLE_EQ(changes[0].change->hi, 1.06 / 0.99);
    EXPECT_DOUBLE_EQ(changes[0].change->confidence, 0.9 * 0.9) << "both 90% intervals hold together 81% of the time";
    attach_changes(runs, changes);
    const std::string text = comparison_table(runs, "text");
    EXPECT_NE(text.find("CHANGE"), std::string::npos) << text;
    EXPECT_NE(text.find("base"), std::string::npos) << text;
    EXPECT_NE(text.find("+5.0% SLOW"), std::string::npos) << text;
    const std::vector<std::string> csv = lines_of(comparison_table(runs, "csv"));
    ASSERT_EQ(csv.size(), 3u);
    EXPECT_NE(csv[0].find("ratio_ci_high,change_median,change_ci_low,change_ci_high,change_class,aa_median"),
              std::string::npos) << csv[0];
    EXPECT_NE(csv[2].find(",1.05,"), std::string::npos) << csv[2];
    EXPECT_NE(csv[2].find(",SLOW,"), std::string::npos) << csv[2];
    const toml::table json = comparison_json(runs);
    EXPECT_EQ(json["runs"][1]["candidates"][0]["change_class"].value_or(std::string()), "SLOW");
    EXPECT_DOUBLE_EQ(json["runs"][1]["candidates"][0]["change"]["median"].value_or(0.0), 1.05);
    EXPECT_EQ(lines_of(comparison_table({runs[0]}, "text"))[0].find("CHANGE"), std::string::npos)
        << "one run has nothing to compare against";
}

// ---- the binary ----

class CompareCli : public CompareTest {
protected:
    void SetUp() override {
        ASSERT_FALSE(sage2tp_binary().empty()) << "SAGE2TP_BIN is not set";
        CompareTest::SetUp();
    }
    ProcessResult sage2tp(const std::vector<std::string> &args) { return run_sage2tp(args, dir_); }
};

// Issue 26: stdout carries the table alone, safe to redirect; the SVG only with --svg, its line on stderr.
TEST_F(CompareCli, PrintsTheTableAloneAndWritesAnSvgOnlyWhenAsked) {
    ProcessResult r = sage2tp({"compare", "tp-two", "tp-untimed"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, comparison_table(both(), "text"));
    EXPECT_FALSE(fs::exists(dir_ / "sage2tp-compare.svg")) << "an SVG nobody asked for";

    r = sage2tp({"compare", "--format", "csv", "--svg", "c.svg", "tp-two", "tp-untimed"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, comparison_table(both(), "csv"));
    EXPECT_NE(r.err.find("svg: c.svg"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(dir_ / "c.svg"), comparison_svg(both()));

    std::ofstream(dir_ / "file") << "not a directory";
    r = sage2tp({"compare", "--svg", "file/c.svg", "tp-two"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("file"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << "nothing is printed when the SVG cannot be written";
    fs::create_directories(dir_ / "a-directory");
    r = sage2tp({"compare", "--svg", "a-directory", "tp-two"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("will not write 'a-directory': it exists and is a directory"), std::string::npos) << r.err;
    r = sage2tp({"compare", "--format", "csv", "--svg", "out/c.svg", "-q", "tp-two", "tp-untimed"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, comparison_table(both(), "csv"));
    EXPECT_TRUE(fs::is_regular_file(dir_ / "out/c.svg"));

    r = sage2tp({"compare", "--format", "csv", "--output", "table.csv", "tp-two", "tp-untimed"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(slurp(dir_ / "table.csv"), comparison_table(both(), "csv"));

    r = sage2tp({"compare", "--json", "--format", "markdown", "tp-two"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\"command\" : \"compare\""), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("### sage2tp compare: 1 run"), std::string::npos) << r.err;
}

TEST_F(CompareCli, ShowsTheRowsOfEachGpuOfSeveralModels) {
    ChainedRun run(runs_ / "tp-gpus");
    run.write_chain_to(Stage::parity);
    run.write(Stage::time, StageStatus::passed, several_model_time());
    const ProcessResult r = sage2tp({"compare", "tp-two", "tp-gpus"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<ComparedRun> runs{compare_run(runs_ / "tp-two"), compare_run(runs_ / "tp-gpus")};
    attach_changes(runs, classify_changes(runs, default_change_band));
    EXPECT_EQ(r.out, comparison_table(runs, "text"));
    EXPECT_NE(r.out.find("GPU 1 NVIDIA H100 80GB HBM3"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("1.0210"), std::string::npos) << r.out;
}

// report's own JSON and the global --json are one object, the same one.
TEST_F(CompareCli, ReportUnderJsonPrintsOneObject) {
    const std::string run = (runs_ / "tp-two").string();
    const ProcessResult r = sage2tp({"report", "--json", "--run", run});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(top_level_json_values(r.out), 1u) << r.out;
    EXPECT_NE(r.out.find("\"command\" : \"report\""), std::string::npos) << r.out;
    EXPECT_EQ(r.out, sage2tp({"report", "--format", "json", "--run", run}).out);
}

// Issue 26: a glob over the runs root names latest too; it is the run it points to, listed once.
TEST_F(CompareCli, LatestIsNotARunOfItsOwn) {
    fs::create_directory_symlink("tp-two", runs_ / "latest");
    const ProcessResult r = sage2tp({"compare", "--format", "csv", (runs_ / "latest").string(), (runs_ / "tp-two").string(),
                                     (runs_ / "tp-untimed").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("latest"), std::string::npos) << r.out;
    EXPECT_EQ(r.out, comparison_table(both(), "csv"));
}

// Issue 36 item 9: a run and its copy (carried back from a GPU host) are two rows that say which is which.
TEST_F(CompareCli, ACopiedRunIsNamedApartFromItsOriginal) {
    fs::create_directories(dir_ / "gpu-host");
    fs::copy(runs_ / "tp-two", dir_ / "gpu-host/tp-two", fs::copy_options::recursive);
    const ProcessResult r = sage2tp({"compare", "--format", "csv", "tp-two", "gpu-host/tp-two"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::size_t original = 0, copy = 0;
    for (const std::string &line : lines_of(r.out)) {
        original += line.rfind("sage2tp-runs/tp-two,", 0) == 0;
        copy += line.rfind("gpu-host/tp-two,", 0) == 0;
        EXPECT_NE(line.rfind("tp-two,", 0), 0u) << "a row that does not say which run:\n" << r.out;
    }
    EXPECT_EQ(original, 2u) << r.out;  // one row per candidate
    EXPECT_EQ(copy, 2u) << r.out;
}

TEST_F(CompareCli, WithoutARunItComparesTheLatestRun) {
    ProcessResult r = sage2tp({"compare"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("sage2tp prepare"), std::string::npos) << r.err;
    fs::create_directory_symlink("tp-two", runs_ / "latest");
    r = sage2tp({"compare", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("tp-two"), std::string::npos) << r.out;
}

TEST_F(CompareCli, UsageErrorsExitTwoAndMissingRunsFour) {
    ProcessResult r = sage2tp({"compare", "--format", "json", "tp-two"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("expected text, markdown or csv"), std::string::npos) << r.err;
    r = sage2tp({"compare", "--svg", "", "tp-two"});
    EXPECT_EQ(r.exit_code, 2);
    r = sage2tp({"compare", "--no-such-option"});
    EXPECT_EQ(r.exit_code, 2);
    r = sage2tp({"compare", "bad/id"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("neither a run directory nor a run id"), std::string::npos) << r.err;
    r = sage2tp({"compare", "tp-two", "tp-gone"});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("no run 'tp-gone'"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "sage2tp-compare.svg")) << "a failed compare writes nothing";
    r = sage2tp({"compare", "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("sage2tp compare"), std::string::npos);
}

// Issue 39 item 6: CI fails a commit whose candidate became slower, and only then.
TEST_F(CompareCli, FailOnSlowExitsOneNamingTheSlowCandidate) {
    write_timed_run(runs_ / "release", ratio(1.00, 0.99, 1.01));
    write_timed_run(runs_ / "head-slow", ratio(1.05, 1.04, 1.06));
    write_timed_run(runs_ / "head-same", ratio(1.003, 0.995, 1.011));
    ProcessResult r = sage2tp({"compare", "--fail-on", "slow", "release", "head-slow"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.out.find("+5.0% SLOW"), std::string::npos) << "the table is printed all the same: " << r.out;
    EXPECT_NE(r.err.find("head-slow: temporal-pair is SLOW: its ratio changed +5.00% against release"),
              std::string::npos) << r.err;
    r = sage2tp({"compare", "--fail-on", "slow", "release", "head-same"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("SAME"), std::string::npos) << r.out;
    r = sage2tp({"compare", "--fail-on", "slow", "--band", "0.1", "release", "head-slow"});
    EXPECT_EQ(r.exit_code, 0) << "+5% is within a 10% band: " << r.err;
    r = sage2tp({"compare", "release", "head-slow"});
    EXPECT_EQ(r.exit_code, 0) << "without --fail-on the class is only shown";
    r = sage2tp({"compare", "--fail-on", "slow", "release", "tp-untimed"});
    EXPECT_EQ(r.exit_code, 0) << "a run naming no candidate has nothing to classify: " << r.err;
    r = sage2tp({"compare", "--fail-on", "slow", "release", "tp-two"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("tp-two: second-v-buffer is UNKNOWN against release: release has no candidate second-v-buffer"),
              std::string::npos) << "no evidence is no pass: " << r.err;
    r = sage2tp({"compare", "--json", "--fail-on", "slow", "release", "head-slow"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.out.find("\"change_class\" : \"SLOW\""), std::string::npos) << r.out;

    r = sage2tp({"compare", "--fail-on", "slow", "release"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("needs two runs or more"), std::string::npos) << r.err;
    r = sage2tp({"compare", "--fail-on", "fast", "release", "head-slow"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--fail-on 'fast': expected slow"), std::string::npos) << r.err;
    for (const char *band : {"0", "1", "-0.1", "1e9"}) {
        r = sage2tp({"compare", "--band", band, "release", "head-slow"});
        EXPECT_EQ(r.exit_code, 2) << band;
        EXPECT_NE(r.err.find("--band must be in (0, 1)"), std::string::npos) << band << ": " << r.err;
    }
}

// Issue 26: report takes --output FILE as compare does: the report there, nothing on stdout, and a path
// that is not a regular file refused with nothing written.
TEST_F(CompareCli, ReportWritesToOutput) {
    const std::string run = (runs_ / "tp-two").string();
    const ProcessResult printed = sage2tp({"report", "--format", "csv", "--run", run});
    ASSERT_EQ(printed.exit_code, 0) << printed.err;
    ASSERT_FALSE(printed.out.empty());
    ProcessResult r = sage2tp({"report", "--format", "csv", "--run", run, "--output", "report.csv"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(slurp(dir_ / "report.csv"), printed.out);
    fs::create_directories(dir_ / "a-directory");
    r = sage2tp({"report", "--run", run, "--output", "a-directory"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("will not write 'a-directory': it exists and is a directory"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace s2tp
