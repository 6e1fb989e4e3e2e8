// The typed stage figures (build, sanitize, parity, gate): every struct survives to_toml ->
// from_toml unchanged, a key a checkpoint lacks reads back unset, and every key a struct writes is
// named in sage2tp-checkpoint(5), in that stage's "Figures of" section.
#include "figure_samples.h"

#include "figures/build_figures.h"
#include "figures/figure_fields.h"
#include "figures/gate_figures.h"
#include "figures/parity_figures.h"
#include "figures/prepare_figures.h"
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

namespace s2tp::unit_stage_figures {

namespace {

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
// `shared` are keys of tables the section documents by reference to another's ("as in Figures of parity").
void expect_section_matches(const std::string &stage, std::set<std::string> keys, const std::set<std::string> &shared = {}) {
    const std::string section = man_section(stage);
    ASSERT_FALSE(section.empty()) << "sage2tp-checkpoint(5) has no \"Figures of " << stage << "\" section";
    for (const std::string &key : shared) keys.erase(key);
    for (const std::string &key : keys)
        EXPECT_TRUE(names_key(section, key)) << stage << "'s field tables have the key '" << key
                                             << "', which sage2tp-checkpoint(5) does not name";
    for (const std::string &key : documented_keys(section))
        EXPECT_TRUE(keys.count(key) || shared.count(key)) << "sage2tp-checkpoint(5) documents '" << key << "' under \"Figures of " << stage
                                     << "\", which no field table of " << stage << " has";
}

}  // namespace

TEST(StageFigures, BuildRoundTrips) {
    const BuildFigures f = figure_samples::build();
    EXPECT_TRUE(BuildFigures::from_toml(f.to_toml()) == f);
}

TEST(StageFigures, SanitizeRoundTrips) {
    const SanitizeFigures f = figure_samples::sanitize();
    EXPECT_TRUE(SanitizeFigures::from_toml(f.to_toml()) == f);
}

TEST(StageFigures, ParityRoundTrips) {
    const ParityFigures f = figure_samples::parity();
    EXPECT_TRUE(ParityFigures::from_toml(f.to_toml()) == f);
}

TEST(StageFigures, GateRoundTrips) {
    const GateFigures f = figure_samples::gate();
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
    const BuildFigures f = figure_samples::build();
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
    const std::string text = figure_samples::build().text();
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
    expect_documented("build", figure_samples::build().to_toml(),
                      {"hd128_bf16_nomask", "hd64_f16_causal", "candidate", "wide"});
    expect_documented("sanitize", figure_samples::sanitize().to_toml(), {"candidate"});
    expect_documented("parity", figure_samples::parity().to_toml(), {"candidate", "other"});
    expect_documented("gate", figure_samples::gate().to_toml(), {"candidate", "slow"});
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
                                "between_process_basis", "candidates", "device", "device_name", "footprint_bytes",
                                "l2_flushed",
                                "measure_seconds", "min_rounds", "ncu", "order_seed", "persisting_l2_max_bytes",
                                "repeats", "rounds", "sha256.baseline", "sha256.expected", "sha256.match",
                                "sha256.pinned_kernel", "sha256.recorded_pin", "sha256.replaced_pin", "shape",
                                "sm_clock_mhz.max", "sm_clock_mhz.median", "sm_clock_mhz.min", "stopped_by",
                                "summary", "target_half_width", "throttled_rounds", "warmup_launches", "workload"},
                               {"sha256", "sm_clock_mhz"});
    expect_keys_and_round_trip("arm", f.baseline->to_toml(),
                               [](const toml::table &t) { return ArmTimeFigures::from_toml(t).to_toml(); },
                               {"mean", "n", "p10", "p50", "p90", "power_limited_share", "power_median_w",
                                "sm_clock_median_mhz", "stdev", "sync_boost_share", "temperature_median_c",
                                "thermal_limited_share", "tops_p50"});
    expect_keys_and_round_trip("ratio", f.aa->to_toml(), [](const toml::table &t) { return RatioFigures::from_toml(t).to_toml(); },
                               {"between_process_sd", "between_repeat_spread", "ci_high", "ci_low", "confidence",
                                "half_width", "median", "repeat_medians", "resamples", "seed",
                                "within_repeat_half_width"});
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
              (std::set<std::string>{"max_candidate_p50_ms", "max_candidate_p50_ms_is_default", "max_geomean_ratio_upper", "max_ratio_upper",
                                     "max_spill_growth_bytes", "max_worst_ratio_upper", "require_sanitizer"}));
    EXPECT_EQ(own_keys(*t["candidates"]["slow"].as_table()), (std::set<std::string>{"conditions", "summary", "verdict"}));
    EXPECT_EQ(own_keys(*t["candidates"]["slow"]["conditions"][0].as_table()),
              (std::set<std::string>{"detail", "figure", "name", "required", "status"}));
    EXPECT_TRUE(GateFigures::from_toml(t) == f);
}

TEST(FigureFields, ParitySanitizeAndBuildFiguresWriteEveryKeyAndReadItBack) {
    const toml::table parity = figure_samples::parity().to_toml();
    expect_keys_and_round_trip("parity", parity, [](const toml::table &t) { return ParityFigures::from_toml(t).to_toml(); },
                               {"baseline.accuracy", "baseline.checks", "baseline.outputs", "candidates", "comparisons",
                                "device", "reference_limit", "reference_rows", "reference_worst_case",
                                "reference_worst_rel_l2", "shapes_checked", "summary"},
                               {"baseline"});
    const toml::table &candidate = *parity["candidates"]["candidate"].as_table();
    EXPECT_EQ(own_keys(candidate), (std::set<std::string>{"accuracy", "checks", "differences", "mode", "outputs",
                                                          "shapes_differing", "vs_baseline"}));
    EXPECT_EQ(own_keys(*candidate["differences"][0].as_table()),
              (std::set<std::string>{"baseline_value", "candidate_value", "differing_elements", "elements",
                                     "first_index", "seed", "shape", "tensor"}));
    EXPECT_EQ(own_keys(*candidate["outputs"][0].as_table()), (std::set<std::string>{"seed", "sha256", "shape"}));
    EXPECT_EQ(own_keys(*candidate["checks"][0].as_table()), (std::set<std::string>{"conditions", "passed", "shape"}));
    EXPECT_EQ(own_keys(*candidate["accuracy"][0].as_table()),
              (std::set<std::string>{"cosine", "inf_count", "max_abs_error", "nan_count", "reference_non_finite",
                                     "rel_l1", "rmse", "rows", "seed", "shape", "worst_element"}));

    const toml::table sanitize = figure_samples::sanitize().to_toml();
    expect_keys_and_round_trip("sanitize", sanitize,
                               [](const toml::table &t) { return SanitizeFigures::from_toml(t).to_toml(); },
                               {"baseline", "candidates", "checks", "device", "failed_checks", "gpus", "seed", "summary",
                                "tools", "total_errors"});
    EXPECT_EQ(own_keys(*sanitize["baseline"].as_table()), (std::set<std::string>{"errors", "failed_checks"}));
    EXPECT_EQ(own_keys(*sanitize["checks"][0].as_table()),
              (std::set<std::string>{"errors", "gpu", "log", "passed", "shape", "tool", "variant"}));
    EXPECT_EQ(own_keys(*sanitize["gpus"][0].as_table()),
              (std::set<std::string>{"checks", "driver", "failed", "index", "lost", "name", "passed", "pci_bus_id", "ran",
                                     "sample_clock_mhz", "sm_clock_mhz", "sm_count", "uuid"}));

    const toml::table build = figure_samples::build().to_toml();
    expect_keys_and_round_trip("build", build, [](const toml::table &t) { return BuildFigures::from_toml(t).to_toml(); },
                               {"arch", "baseline.kernels", "candidates", "flags", "jobs", "nvcc_version", "sass",
                                "summary"},
                               {"baseline"});
    EXPECT_EQ(own_keys(*build["candidates"]["wide"].as_table()), (std::set<std::string>{"kernels", "summary"}));
    EXPECT_EQ(own_keys(*build["baseline"]["kernels"]["hd64_f16_causal"].as_table()),
              (std::set<std::string>{"barriers", "blocks_per_sm", "dynamic_smem_bytes", "entry", "limited_by",
                                     "registers", "resident_warps", "smem_per_block", "spill_load_bytes",
                                     "spill_store_bytes", "stack_frame_bytes", "static_smem_bytes",
                                     "threads_per_block", "warps_per_scheduler"}));
}

// An empty struct writes what the stages always write and nothing else (a figure never set is absent).
TEST(FigureFields, EmptyFiguresWriteOnlyTheKeysAlwaysPresent) {
    EXPECT_TRUE(TimeFigures{}.to_toml().empty());
    EXPECT_TRUE(SetTimeFigures{}.to_toml().empty());
    EXPECT_EQ(own_keys(GateFigures{}.to_toml()), (std::set<std::string>{"candidates", "summary", "thresholds", "verdict"}));
    EXPECT_TRUE(ParityFigures{}.to_toml().empty());
    EXPECT_EQ(own_keys(SanitizeFigures{}.to_toml()), (std::set<std::string>{"tools"}));
    EXPECT_EQ(own_keys(BuildFigures{}.to_toml()), (std::set<std::string>{"flags"}));
}

TEST(FigureFields, EveryKeyOfEveryTableIsDocumentedAndNothingDocumentedIsUnknown) {
    std::set<std::string> time_keys = figure_fields::field_keys(TimeFigures::fields());
    time_keys.merge(figure_fields::field_keys(SetTimeFigures::fields()));
    // The time section documents a candidate's accuracy entries "as in Figures of parity".
    expect_section_matches("time", time_keys, figure_fields::field_keys(AccuracyFigure::fields()));
    expect_section_matches("gate", figure_fields::field_keys(GateFigures::fields()));
    expect_section_matches("parity", figure_fields::field_keys(ParityFigures::fields()));
    expect_section_matches("sanitize", figure_fields::field_keys(SanitizeFigures::fields()));
    expect_section_matches("build", figure_fields::field_keys(BuildFigures::fields()));
    expect_section_matches("prepare", figure_fields::field_keys(PrepareFigures::fields()));
}

}  // namespace s2tp::unit_stage_figures
