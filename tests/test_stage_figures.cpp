// The typed stage figures (build, sanitize, parity, gate): every struct survives to_toml ->
// from_toml unchanged, a key a checkpoint lacks reads back unset, and every key a struct writes is
// named in sage2tp-checkpoint(5), in that stage's "Figures of" section.
#include "figure_samples.h"

#include "figures/build_figures.h"
#include "figures/figure_fields.h"
#include "figures/gate_figures.h"
#include "figures/parity_figures.h"
#include "stages/prepare_stage.h"
#include "figures/sanitize_figures.h"
#include "figures/set_time_figures.h"
#include "figures/time_figures.h"

#include "build_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

EntryResources entry(const std::string &name, std::int64_t smem, double warps, std::int64_t spill_store) {
    EntryResources e;
    e.entry = "s2tp_attn_" + name;
    e.registers = 128;
    e.barriers = 1;
    e.stack_frame_bytes = 0;
    e.spill_store_bytes = spill_store;
    e.spill_load_bytes = 0;
    e.static_smem_bytes = smem;
    e.dynamic_smem_bytes = 0;
    e.smem_per_block = smem;
    e.threads_per_block = 128;
    e.blocks_per_sm = 4;
    e.resident_warps = 16;
    e.warps_per_scheduler = warps;
    e.limited_by = "registers";
    return e;
}

BuildFigures sample_build() {
    BuildFigures f;
    f.arch = "sm_90a";
    f.nvcc_version = "release 13.0, V13.0.48 / Build cuda_13.0";
    f.jobs = 2;
    f.flags = {"-O3", "-lineinfo"};
    f.torch_headers = TorchHeadersFigure{"libtorch-dev", {"/usr/include/torch/csrc/api/include", "/usr/include"}};
    f.baseline = {{"hd128_bf16_nomask", entry("hd128_bf16_nomask", 32768, 4.0, 0)},
                  {"hd64_f16_causal", entry("hd64_f16_causal", 16384, 6.0, 0)}};
    f.candidates["candidate"] = CandidateBuild{f.baseline, "2 entries, register growth <= 0"};
    f.candidates["wide"] = CandidateBuild{{{"hd128_bf16_nomask", entry("hd128_bf16_nomask", 65536, 2.0, 16)},
                                           {"hd64_f16_causal", entry("hd64_f16_causal", 16384, 6.0, 0)}},
                                          "2 entries, spill growth <= 16 B"};
    f.summary = "sm_90a: candidate: 2 entries; wide: 2 entries";
    f.sass = toml::table{{"tool", "cuobjdump"}};
    return f;
}

SanitizeFigures sample_sanitize() {
    SanitizeFigures f;
    f.tools = {"memcheck", "racecheck"};
    f.checks = {SanitizeCheck{"baseline", "memcheck", "b1 h2 q64", 0, true, "logs/sanitize/baseline-memcheck-shape0.log"},
                SanitizeCheck{"candidate", "racecheck", "b1 h2 q64", 3, false,
                              "logs/sanitize/candidate-racecheck-shape0.log"}};
    f.total_errors = 3;
    f.failed_checks = 1;
    f.baseline = VariantSanitize{0, 0};
    f.candidates["candidate"] = VariantSanitize{3, 1};
    f.device = "0: NVIDIA H200, sm_90";
    f.seed = 1;
    f.summary = "2 checks (1 shapes x 2 tools x 2 variants), 1 failed, 3 errors";
    return f;
}

ParityFigures sample_parity() {
    ParityFigures f;
    f.shapes_checked = 2;
    f.comparisons = 4;
    f.reference_worst_rel_l2 = 0.0123;
    f.reference_worst_case = "b1 h2 q64 seed 7";
    f.reference_limit = 0.05;
    f.baseline_outputs = {ParityOutput{"b1 h2 q64", 7, std::string(64, 'a')}};
    CandidateParity c;
    c.shapes_differing = 1;
    c.differences = {ParityDifference{"b1 h2 q64", 7, "o", 3, 1024, "[0, 1, 2, 3]", "0x3c01 (1.0009766)", "0x3c00 (1)"}};
    c.outputs = {ParityOutput{"b1 h2 q64", 7, std::string(64, 'b')}};
    AccuracyMetrics m;
    m.cosine = 0.9995, m.rel_l1 = 0.03, m.rmse = 0.002, m.max_abs_error = 0.01, m.worst_element = "b=0 h=1 row=5 d=2";
    c.mode = "tolerance";
    c.accuracy = c.vs_baseline = {AccuracyFigure::of("b1 h2 q64", 7, 64, m)};
    c.checks = {AccuracyShapeCheck{"b1 h2 q64", true, "cosine 0.9995 >= 0.999"}};
    f.baseline_accuracy = c.accuracy;
    f.baseline_checks = c.checks;
    f.reference_rows = 256;
    f.candidates["candidate"] = c;
    f.candidates["other"] = CandidateParity{0, {}, {ParityOutput{"b1 h2 q64", 7, std::string(64, 'a')}}};
    f.device = "0: NVIDIA H200, sm_90";
    f.summary = "2 shapes x 2 seeds: candidate: 1 shapes differ, other: 0 shapes differ; ...";
    return f;
}

GateFigures sample_gate() {
    GateResult passing;
    passing.conditions = {GateCondition{"parity", GateStatus::pass, "0 of 12 shapes differ", "", true}};
    passing.passed = true;
    GateResult failing;
    failing.conditions = {GateCondition{"relative-speed", GateStatus::fail, "ratio 1.34 >= 1.0", "slower", true},
                          GateCondition{"sanitizer", GateStatus::not_checked, "skipped", "RUN_SANITIZER=0", false}};
    GateThresholds thresholds;
    thresholds.ratio_upper_bound = 1.0;
    thresholds.require_sanitizer = true;
    return GateFigures::of({{"candidate", passing}, {"slow", failing}}, thresholds);
}

// Every key of a figures table, at any depth, except the names in `dynamic` (entry and candidate
// names, which are data, not keys of the contract).
void collect_keys(const toml::node &node, const std::set<std::string> &dynamic, std::set<std::string> &keys) {
    if (const toml::table *table = node.as_table()) {
        for (const auto &[key, child] : *table) {
            const std::string name(key.str());
            if (!dynamic.count(name)) keys.insert(name);
            collect_keys(child, dynamic, keys);
        }
    } else if (const toml::array *array = node.as_array()) {
        for (const auto &child : *array) collect_keys(child, dynamic, keys);
    }
}

// The text of sage2tp-checkpoint(5) from ".Ss Figures of <stage>" to the next section.
std::string man_section(const std::string &stage) {
    std::ifstream in(fs::path(S2TP_SOURCE_ROOT) / "man" / "sage2tp-checkpoint.5");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string heading = ".Ss Figures of " + stage + "\n";
    const std::size_t begin = text.find(heading);
    if (begin == std::string::npos) return "";
    const std::size_t end = text.find("\n.S", begin + heading.size());
    return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// "Ic key" followed by a space, a comma or the end of the line.
bool names_key(const std::string &section, const std::string &key) {
    for (std::size_t at = section.find("Ic " + key); at != std::string::npos; at = section.find("Ic " + key, at + 1)) {
        const std::size_t after = at + 3 + key.size();
        if (after >= section.size() || section[after] == ' ' || section[after] == '\n' || section[after] == ',') return true;
    }
    return false;
}

void expect_documented(const std::string &stage, const toml::table &figures, const std::set<std::string> &dynamic) {
    const std::string section = man_section(stage);
    ASSERT_FALSE(section.empty()) << "sage2tp-checkpoint(5) has no \"Figures of " << stage << "\" section";
    std::set<std::string> keys;
    collect_keys(figures, dynamic, keys);
    for (const std::string &key : keys)
        EXPECT_TRUE(names_key(section, key)) << stage << " writes figures key '" << key
                                             << "', which sage2tp-checkpoint(5) does not name";
}

// The keys of a table, one level deep; a sub-table named in `sub_tables` is listed by its keys instead,
// dotted ("sha256.baseline"), as its struct writes them itself.
std::set<std::string> own_keys(const toml::table &table, const std::set<std::string> &sub_tables = {}) {
    std::set<std::string> keys;
    for (const auto &[key, node] : table) {
        const std::string name(key.str());
        if (sub_tables.count(name) && node.is_table())
            for (const auto &[inner, unused] : *node.as_table()) keys.insert(name + "." + std::string(inner.str()));
        else keys.insert(name);
    }
    return keys;
}

std::string serialised(const toml::table &table) {
    std::ostringstream out;
    out << table;
    return out.str();
}

// A figures table with every figure set holds exactly `keys` (so a dropped or renamed key fails here
// as well as in the checkpoints already written), and reads back into a struct that writes the same bytes.
template <typename Read>
void expect_keys_and_round_trip(const char *what, const toml::table &written, Read read,
                                const std::set<std::string> &keys, const std::set<std::string> &sub_tables = {}) {
    EXPECT_EQ(own_keys(written, sub_tables), keys) << what;
    EXPECT_EQ(serialised(read(written)), serialised(written)) << what << " does not read back as written";
}

// Each `Ic word` on the tag lines (".It Ic ...") of a section: the keys the page documents there.
std::set<std::string> documented_keys(const std::string &section) {
    std::set<std::string> keys;
    std::istringstream lines(section);
    static const std::regex word(R"(\bIc ([a-z_][a-z0-9_]*)\b)");
    for (std::string line; std::getline(lines, line);)
        if (line.rfind(".It ", 0) == 0)
            for (std::sregex_iterator it(line.begin(), line.end(), word), end; it != end; ++it) keys.insert((*it)[1]);
    return keys;
}

// The field tables against "Figures of <stage>": every key of every table is named in the section, and
// every key the section's tag lines document is a key of some table.
void expect_section_matches(const std::string &stage, const std::set<std::string> &keys) {
    const std::string section = man_section(stage);
    ASSERT_FALSE(section.empty()) << "sage2tp-checkpoint(5) has no \"Figures of " << stage << "\" section";
    for (const std::string &key : keys)
        EXPECT_TRUE(names_key(section, key)) << stage << "'s field tables have the key '" << key
                                             << "', which sage2tp-checkpoint(5) does not name";
    for (const std::string &key : documented_keys(section))
        EXPECT_TRUE(keys.count(key)) << "sage2tp-checkpoint(5) documents '" << key << "' under \"Figures of " << stage
                                     << "\", which no field table of " << stage << " has";
}

}  // namespace

TEST(StageFigures, BuildRoundTrips) {
    const BuildFigures f = sample_build();
    EXPECT_TRUE(BuildFigures::from_toml(f.to_toml()) == f);
}

TEST(StageFigures, SanitizeRoundTrips) {
    const SanitizeFigures f = sample_sanitize();
    EXPECT_TRUE(SanitizeFigures::from_toml(f.to_toml()) == f);
}

TEST(StageFigures, ParityRoundTrips) {
    const ParityFigures f = sample_parity();
    EXPECT_TRUE(ParityFigures::from_toml(f.to_toml()) == f);
}

TEST(StageFigures, GateRoundTrips) {
    const GateFigures f = sample_gate();
    EXPECT_FALSE(f.passed);
    EXPECT_TRUE(GateFigures::from_toml(f.to_toml()) == f);
}

TEST(StageFigures, MissingKeysReadBackUnset) {
    const BuildFigures build = BuildFigures::from_toml(toml::table{
        {"baseline", toml::table{{"kernels", toml::table{{"hd64", toml::table{{"registers", 96}}}}}}}});
    ASSERT_EQ(build.baseline.count("hd64"), 1u);
    EXPECT_EQ(build.baseline.at("hd64").registers, 96);
    EXPECT_FALSE(build.baseline.at("hd64").smem_per_block);
    EXPECT_FALSE(build.baseline.at("hd64").spill_bytes());
    EXPECT_FALSE(build.jobs);

    const SanitizeFigures sanitize = SanitizeFigures::from_toml(toml::table{{"baseline", toml::table{{"errors", 0}}}});
    EXPECT_FALSE(sanitize.errors_for("candidate")) << "a candidate without an error count is not clean";
    EXPECT_FALSE(sanitize.total_errors);

    const ParityFigures parity = ParityFigures::from_toml(toml::table{{"candidates", toml::table{{"c", toml::table{}}}}});
    ASSERT_EQ(parity.candidates.count("c"), 1u);
    EXPECT_FALSE(parity.candidates.at("c").shapes_differing);
    EXPECT_FALSE(parity.shapes_checked);
}

// The worst-entry aggregates: the entry whose candidate fares worst against its own baseline.
TEST(StageFigures, AggregatesJudgeTheWorstEntry) {
    const BuildFigures f = sample_build();
    const ResourceAggregates same = f.aggregates("candidate");
    ASSERT_TRUE(same.smem && same.spills && same.warps);
    EXPECT_EQ(same.smem->candidate - same.smem->baseline, 0);
    EXPECT_FALSE(same.any_warps_fell);

    const ResourceAggregates wide = f.aggregates("wide");
    ASSERT_TRUE(wide.smem && wide.spills && wide.warps);
    EXPECT_EQ(wide.smem->entry, "hd128_bf16_nomask");
    EXPECT_EQ(wide.smem->candidate, 65536);
    EXPECT_EQ(wide.spills->candidate - wide.spills->baseline, 16);
    EXPECT_DOUBLE_EQ(wide.warps->candidate, 2.0);
    EXPECT_TRUE(wide.any_warps_fell);
    EXPECT_EQ(wide.candidate_max_smem, 65536);
    EXPECT_EQ(wide.baseline_max_spill_bytes, 0);

    EXPECT_FALSE(f.aggregates("unknown").smem);

    // One entry lacking a figure leaves that figure unset for the whole kernel.
    BuildFigures missing = f;
    missing.candidates["wide"].kernels["hd64_f16_causal"].warps_per_scheduler.reset();
    EXPECT_FALSE(missing.aggregates("wide").warps);
    EXPECT_TRUE(missing.aggregates("wide").smem);
}

TEST(StageFigures, BuildPrinterShowsOneTablePerCandidate) {
    const std::string text = sample_build().text();
    EXPECT_EQ(text.rfind("  sm_90a, release 13.0", 0), 0u) << text;
    EXPECT_NE(text.find("ENTRY (baseline -> candidate)"), std::string::npos) << text;
    EXPECT_NE(text.find("ENTRY (baseline -> wide)"), std::string::npos) << text;
    EXPECT_NE(text.find("4.0->2.0  FELL"), std::string::npos) << text;
    EXPECT_EQ(BuildFigures{}.text(), "") << "a failed compile has no table";
}

PrepareFigures sample_prepare() {
    PrepareFigures f;
    f.manifest = "/home/u/m.toml";
    f.overrides.repository = "/home/u/repo";
    f.overrides.commit = "v1";
    f.overrides.candidate_commit = "v2";
    f.overrides.candidate_commits = {{"fast", "feature"}};
    f.source = "git";
    f.commit = std::string(40, 'a');
    f.arch = "sm_90a";
    f.baseline_tree_xxh3 = std::string(32, '1');
    f.support_tree_xxh3 = std::string(32, '2');
    f.candidates = {{"fast", "git", std::string(40, 'b'), "/home/u/fast.patch", std::string(64, 'c'), std::string(32, '3')}};
    f.summary = "git @ aaaaaaaaaaaa; fast: git @ bbbbbbbbbbbb, patch cccccccccccc";
    return f;
}

TEST(StageFigures, EveryKeyIsNamedInTheCheckpointManPage) {
    expect_documented("prepare", sample_prepare().to_toml(), {"fast"});
    expect_documented("build", sample_build().to_toml(),
                      {"hd128_bf16_nomask", "hd64_f16_causal", "candidate", "wide"});
    expect_documented("sanitize", sample_sanitize().to_toml(), {"candidate"});
    expect_documented("parity", sample_parity().to_toml(), {"candidate", "other"});
    expect_documented("gate", sample_gate().to_toml(), {"candidate", "slow"});
}

// A hand-edited or corrupted checkpoint's inf, nan or 1e308 is no figure: it reads back unset, as one
// not recorded (compare exited 5 on a time checkpoint holding one).
TEST(FigureFields, NonFiniteOrHugeFiguresReadBackUnset) {
    const toml::table t{{"inf", std::numeric_limits<double>::infinity()},
                        {"nan", std::nan("")},
                        {"huge", 1e308},
                        {"ratio", 0.9731}};
    EXPECT_FALSE(s2tp::figure_fields::real(t, "inf").has_value());
    EXPECT_FALSE(s2tp::figure_fields::real(t, "nan").has_value());
    EXPECT_FALSE(s2tp::figure_fields::real(t, "huge").has_value());
    EXPECT_EQ(s2tp::figure_fields::real(t, "ratio"), 0.9731);
}

TEST(FigureFields, TimeFiguresWriteEveryKeyAndReadItBack) {
    const TimeFigures f = figure_samples::time();
    expect_keys_and_round_trip("time", f.to_toml(), [](const toml::table &t) { return TimeFigures::from_toml(t).to_toml(); },
                               {"aa", "arch", "baseline", "baseline_accuracy", "baseline_accuracy_conditions",
                                "baseline_accuracy_passed", "baseline_control", "budget_seconds", "candidate_order",
                                "candidates", "device", "device_name", "footprint_bytes", "l2_flushed",
                                "measure_seconds", "min_rounds", "ncu", "order_seed", "repeats", "rounds",
                                "sha256.baseline", "sha256.expected", "sha256.match", "sha256.replaced_pin", "shape",
                                "sm_clock_mhz.max", "sm_clock_mhz.median", "sm_clock_mhz.min", "stopped_by",
                                "summary", "target_half_width", "throttled_rounds", "warmup_launches", "workload"},
                               {"sha256", "sm_clock_mhz"});
    expect_keys_and_round_trip("arm", f.baseline->to_toml(),
                               [](const toml::table &t) { return ArmTimeFigures::from_toml(t).to_toml(); },
                               {"mean", "n", "p10", "p50", "p90", "stdev", "tops_p50"});
    expect_keys_and_round_trip("ratio", f.aa->to_toml(), [](const toml::table &t) { return RatioFigures::from_toml(t).to_toml(); },
                               {"between_repeat_spread", "ci_high", "ci_low", "confidence", "half_width", "median",
                                "repeat_medians", "resamples", "seed", "within_repeat_half_width"});
    expect_keys_and_round_trip(
        "candidate", f.candidates.front().to_toml(),
        [](const toml::table &t) { return CandidateTimeFigures::from_toml("fast", t).to_toml(); },
        {"accuracy", "accuracy_conditions", "accuracy_passed", "matches_baseline", "ncu", "parity_mode", "ratio",
         "sha256", "timing", "vs_baseline"});
    expect_keys_and_round_trip("ncu", f.ncu->to_toml(), [](const toml::table &t) { return NcuFigures::from_toml(t).to_toml(); },
                               {"found", "requested", "runs", "seconds", "seq_len"});
    EXPECT_EQ(own_keys(*f.ncu->to_toml()["runs"]["baseline"].as_table()),
              (std::set<std::string>{"exit_code", "log", "report", "seconds"}));
    // The candidates keep the manifest's order, which their tables do not hold.
    const TimeFigures back = TimeFigures::from_toml(f.to_toml());
    ASSERT_EQ(back.candidates.size(), 2u);
    EXPECT_EQ(back.candidates[0].name, "fast");
    EXPECT_EQ(back.candidates[1].name, "also");
}

TEST(FigureFields, SetTimeFiguresWriteEveryKeyAndReadItBack) {
    const SetTimeFigures f = figure_samples::set_time();
    expect_keys_and_round_trip("set", f.to_toml(), [](const toml::table &t) { return SetTimeFigures::from_toml(t).to_toml(); },
                               {"arch", "budget_seconds", "candidate_order", "combined", "description", "device",
                                "device_name", "measure_seconds", "repeats", "shape_order", "shapes", "summary",
                                "weighted", "workload_set"});
    expect_keys_and_round_trip(
        "shape", f.shapes.back().to_toml(),
        [](const toml::table &t) { return ShapeTimeFigures::from_toml("i2v-480p", t).to_toml(); },
        {"figures", "passed", "reasons", "source", "weight"});
    expect_keys_and_round_trip(
        "combined", f.candidates.front().to_toml(),
        [](const toml::table &t) { return SetCandidateFigures::from_toml("fast", t).to_toml(); },
        {"geomean", "worst", "worst_shape"});
    const SetTimeFigures back = SetTimeFigures::from_toml(f.to_toml());
    ASSERT_EQ(back.shapes.size(), 2u);
    EXPECT_EQ(back.shapes[0].name, "t2v-720p") << "the set's order, not the tables' key order";
}

TEST(FigureFields, GateFiguresWriteEveryKeyAndReadItBack) {
    const GateFigures f = figure_samples::gate();
    const toml::table t = f.to_toml();
    expect_keys_and_round_trip("gate", t, [](const toml::table &t) { return GateFigures::from_toml(t).to_toml(); },
                               {"candidates", "summary", "thresholds", "verdict"});
    EXPECT_EQ(own_keys(*t["thresholds"].as_table()),
              (std::set<std::string>{"max_candidate_p50_ms", "max_geomean_ratio_upper", "max_ratio_upper",
                                     "max_spill_growth_bytes", "max_worst_ratio_upper", "require_sanitizer"}));
    EXPECT_EQ(own_keys(*t["candidates"]["slow"].as_table()), (std::set<std::string>{"conditions", "summary", "verdict"}));
    EXPECT_EQ(own_keys(*t["candidates"]["slow"]["conditions"][0].as_table()),
              (std::set<std::string>{"detail", "figure", "name", "required", "status"}));
    EXPECT_TRUE(GateFigures::from_toml(t) == f);
}

TEST(FigureFields, EveryKeyOfEveryTableIsDocumentedAndNothingDocumentedIsUnknown) {
    std::set<std::string> time_keys = figure_fields::field_keys(TimeFigures::fields());
    time_keys.merge(figure_fields::field_keys(SetTimeFigures::fields()));
    expect_section_matches("time", time_keys);
    expect_section_matches("gate", figure_fields::field_keys(GateFigures::fields()));
}
