// The time checkpoint's typed figures: every figure survives to_toml -> from_toml (through TOML text,
// as a checkpoint file holds it), a key the checkpoint lacks stays unset instead of reading as 0, the
// candidates keep the manifest's order, and the printer names each candidate and the repeat spread.
#include "figures/time_figures.h"

#include "build_config.h"
#include "support/file_io.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

namespace s2tp::unit_time_figures {
namespace {

namespace fs = std::filesystem;

ArmTimeFigures arm(double p50) {
    ArmTimeFigures a;
    a.p10 = p50 - 0.5;
    a.p50 = p50;
    a.p90 = p50 + 0.5;
    a.mean = p50 + 0.1;
    a.stdev = 0.25;
    a.n = 40;
    a.tops_p50 = 812.5;
    return a;
}

RatioFigures ratio(double median) {
    RatioFigures r;
    r.median = median;
    r.ci_low = median - 0.002;
    r.ci_high = median + 0.003;
    r.half_width = 0.0025 / median;
    r.resamples = 2000;
    r.seed = 7;
    r.confidence = 0.95;
    return r;
}

TimeFigures full_figures() {
    TimeFigures f;
    f.workload = "wan21-14b-block24";
    f.shape = "b1 h40/40 n32760/32760 d128 NHD bf16 non-causal";
    f.device = "0: NVIDIA H200 (sm_90, 132 SMs)";
    f.device_name = "NVIDIA H200";
    f.arch = "sm_90a";
    f.baseline_sha256 = "aa11";
    f.expected_sha256 = "aa11";
    f.replaced_pin = "bb22";
    f.outputs_match = true;
    f.baseline = arm(55.5);
    f.baseline_control = arm(55.6);
    f.aa = ratio(1.0001);
    f.aa->repeat_medians = {0.9999, 1.0002, 1.0001};
    f.aa->between_repeat_spread = 0.00015;
    f.aa->within_repeat_half_width = 0.0011;
    // Names out of alphabetical order: the manifest's order must survive TOML's sorted tables.
    for (const char *name : {"zeta", "alpha"}) {
        CandidateTimeFigures &c = f.candidate_or_add(name);
        c.sha256 = "aa11";
        c.matches_baseline = true;
        c.timing = arm(std::string(name) == "zeta" ? 74.6 : 60.1);
        c.ratio = ratio(std::string(name) == "zeta" ? 1.3442 : 1.0831);
        c.ratio->repeat_medians = {1.3415, 1.3445};
        c.ratio->between_repeat_spread = 0.0016;
        c.ratio->within_repeat_half_width = 0.0012;
    }
    NcuMetricFigure metric;
    metric.name = "gpu__time_duration.sum";
    metric.unit = "ms";
    metric.baseline = 55.0;
    metric.candidate = 74.0;
    f.candidates[0].ncu = NcuComparison{{metric}, {metric.name}};
    f.rounds = 120;
    f.throttled_rounds = 2;
    f.stopped_by = "half_width";
    f.l2_flushed = false;
    f.footprint_bytes = 1 << 30;
    f.order_seed = 42;
    f.warmup_launches = 3;
    f.min_rounds = 20;
    f.repeats = 3;
    f.target_half_width = 0.005;
    f.budget_seconds = 60;
    f.measure_seconds = 21.5;
    f.sm_clock_min_mhz = 1755;
    f.sm_clock_median_mhz = 1980;
    f.sm_clock_max_mhz = 1980;
    NcuFigures ncu;
    ncu.requested = true;
    ncu.found = true;
    ncu.seconds = 12.5;
    ncu.seq_len = 4096;
    ncu.runs["baseline"] = NcuRunFigures{0, std::string("logs/ncu-baseline.log"),
                                         std::string("reports/ncu-baseline.ncu-rep"), 6.0};
    ncu.runs["zeta"] = NcuRunFigures{1, std::string("logs/ncu-zeta.log"), std::nullopt, 6.5};
    f.ncu = ncu;
    f.summary = "wan21-14b-block24: zeta/baseline 1.3442";
    GpuTimeResult gpu;
    gpu.index = 1;
    gpu.name = "NVIDIA H100 80GB HBM3";
    gpu.uuid = "GPU-5d0c";
    gpu.pci_bus_id = "0000:3b:00.0";
    gpu.baseline = arm(61.0);
    gpu.aa = ratio(1.0002);
    gpu.candidates.push_back({"zeta", arm(80.2), ratio(1.3150)});
    gpu.lost = "cudaErrorDevicesUnavailable";
    f.gpu_results.push_back(gpu);
    return f;
}

// Through TOML text, as a checkpoint file carries the table.
toml::table through_text(const toml::table &table) {
    std::ostringstream text;
    text << table;
    return toml::parse(text.str());
}

TEST(TimeFigures, EveryFigureSurvivesTheRoundTripThroughTomlText) {
    const TimeFigures original = full_figures();
    const toml::table written = original.to_toml();
    const TimeFigures read = TimeFigures::from_toml(through_text(written));
    // Writing what was read gives the same table: nothing was dropped, renamed or reordered.
    EXPECT_EQ(read.to_toml(), written);

    ASSERT_EQ(read.candidates.size(), 2u);
    EXPECT_EQ(read.candidates[0].name, "zeta");
    EXPECT_EQ(read.candidates[1].name, "alpha");
    ASSERT_TRUE(read.candidate("zeta") && read.candidate("zeta")->ratio);
    EXPECT_DOUBLE_EQ(*read.candidate("zeta")->ratio->median, 1.3442);
    EXPECT_EQ(read.candidate("zeta")->ratio->repeat_medians, (std::vector<double>{1.3415, 1.3445}));
    ASSERT_TRUE(read.candidate("zeta")->ncu);
    EXPECT_EQ(read.candidate("zeta")->ncu->largest_changes, std::vector<std::string>{"gpu__time_duration.sum"});
    EXPECT_FALSE(read.candidate("alpha")->ncu);
    EXPECT_EQ(read.candidate("missing"), nullptr);
    EXPECT_EQ(read.replaced_pin, std::optional<std::string>("bb22"));
    ASSERT_TRUE(read.ncu);
    EXPECT_EQ(read.ncu->runs.at("zeta").exit_code, std::optional<std::int64_t>(1));
    EXPECT_FALSE(read.ncu->runs.at("zeta").report);
    EXPECT_EQ(read.repeats, std::optional<std::int64_t>(3));
    ASSERT_EQ(read.gpu_results.size(), 1u);
    EXPECT_EQ(read.gpu_results[0].index, std::optional<std::int64_t>(1));
    EXPECT_EQ(read.gpu_results[0].uuid, "GPU-5d0c");
    EXPECT_EQ(read.gpu_results[0].lost, "cudaErrorDevicesUnavailable");
    ASSERT_TRUE(read.gpu_results[0].candidate("zeta") && read.gpu_results[0].candidate("zeta")->ratio);
    EXPECT_DOUBLE_EQ(*read.gpu_results[0].candidate("zeta")->ratio->median, 1.3150);
    EXPECT_EQ(read.gpu_results[0].candidate("alpha"), nullptr);
}

TEST(TimeFigures, EachGpuOfSeveralModelsHasAVerdictRowNamingIt) {
    TimeFigures f = full_figures();
    GpuTimeResult lost;
    lost.index = 2;
    lost.name = "NVIDIA RTX 4090";
    lost.lost = "cudaErrorNoDevice";
    f.gpu_results.push_back(lost);
    const std::vector<std::string> lines = gpu_result_lines(f);
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_NE(lines[0].find("GPU 1 NVIDIA H100 80GB HBM3 (GPU-5d0c): zeta/baseline 1.3150 (95% CI 1.3130 .. 1.3180)"),
              std::string::npos)
        << lines[0];
    EXPECT_NE(lines[0].find("n = 40"), std::string::npos) << lines[0];
    EXPECT_NE(lines[1].find("GPU 2 NVIDIA RTX 4090: LOST, no verdict: cudaErrorNoDevice"), std::string::npos) << lines[1];
    EXPECT_NE(time_figures_text(f, "").find("a verdict per GPU"), std::string::npos);
    EXPECT_TRUE(gpu_result_lines(TimeFigures{}).empty());
}

TEST(TimeFigures, TheCandidatesAreKeyedByName) {
    const toml::table written = full_figures().to_toml();
    EXPECT_TRUE(written["candidates"]["zeta"]["ratio"]["median"].is_floating_point());
    EXPECT_TRUE(written["candidates"]["alpha"]["timing"]["p50"].is_floating_point());
    EXPECT_EQ(written["sha256"]["baseline"].value_or(std::string()), "aa11");
    EXPECT_TRUE(written["aa"]["repeat_medians"].is_array());
}

TEST(TimeFigures, MissingKeysStayUnsetAndAreNotWritten) {
    // A failed time stage: the outputs differed, nothing was timed.
    const toml::table partial = toml::parse(R"(
        workload = "w"
        [sha256]
        baseline = "aa"
        match = false
        [candidates.candidate]
        sha256 = "bb"
        matches_baseline = false
        [candidates.candidate.ratio]
        median = 1.2
    )");
    const TimeFigures f = TimeFigures::from_toml(partial);
    EXPECT_EQ(f.workload, std::optional<std::string>("w"));
    EXPECT_FALSE(f.shape);
    EXPECT_FALSE(f.expected_sha256);
    EXPECT_EQ(f.outputs_match, std::optional<bool>(false));
    EXPECT_FALSE(f.baseline);
    EXPECT_FALSE(f.aa);
    EXPECT_FALSE(f.rounds);
    EXPECT_FALSE(f.sm_clock_min_mhz);
    ASSERT_EQ(f.candidates.size(), 1u);  // no candidate_order: the tables themselves still count
    const CandidateTimeFigures &c = f.candidates[0];
    EXPECT_EQ(c.matches_baseline, std::optional<bool>(false));
    EXPECT_FALSE(c.timing);
    ASSERT_TRUE(c.ratio);
    EXPECT_TRUE(c.ratio->median);
    EXPECT_FALSE(c.ratio->ci_low);  // not 0
    EXPECT_FALSE(c.ratio->interval());  // an interval needs both ends
    const toml::table rewritten = f.to_toml();
    EXPECT_FALSE(rewritten.contains("rounds"));
    EXPECT_FALSE(rewritten.contains("baseline"));
    EXPECT_FALSE(rewritten["candidates"]["candidate"]["ratio"].as_table()->contains("ci_low"));
}

TEST(TimeFigures, AWrongTypeReadsAsUnsetNotAsZero) {
    const TimeFigures f = TimeFigures::from_toml(toml::parse("rounds = 'many'\n[baseline]\np50 = 'fast'\n"));
    EXPECT_FALSE(f.rounds);
    ASSERT_TRUE(f.baseline);
    EXPECT_FALSE(f.baseline->p50);
}

TEST(TimeFigures, ThePrinterNamesEveryCandidateAndTheRepeatSpread) {
    const std::string text = time_figures_text(full_figures(), "reports/time.svg");
    EXPECT_NE(text.find("zeta/baseline 1.3442"), std::string::npos) << text;
    EXPECT_NE(text.find("alpha/baseline 1.0831"), std::string::npos) << text;
    EXPECT_NE(text.find("between-repeat spread 0.160%, within-repeat half-width 0.120%"), std::string::npos) << text;
    EXPECT_NE(text.find("zeta is 34.4% slower"), std::string::npos) << text;
    EXPECT_NE(text.find("in 3 processes"), std::string::npos) << text;
    EXPECT_NE(text.find("plot: reports/time.svg"), std::string::npos) << text;
    EXPECT_NE(text.find("Nsight Compute, one launch each, zeta"), std::string::npos) << text;
}

// Every key the struct writes (the candidates' and the ncu runs' own names aside) is named in
// sage2tp-checkpoint(5) as ".Ic key", so the documented contract cannot drift from the writer.
void collect_keys(const toml::table &table, std::set<std::string> &keys, bool names_are_data) {
    for (const auto &[key, node] : table) {
        const std::string name(key.str());
        if (!names_are_data) keys.insert(name);
        const bool children_named_by_data = name == "candidates" || name == "runs";
        if (const toml::table *sub = node.as_table()) collect_keys(*sub, keys, !names_are_data && children_named_by_data);
        if (const toml::array *array = node.as_array())
            for (const toml::node &element : *array)
                if (const toml::table *sub = element.as_table()) collect_keys(*sub, keys, false);
    }
}

// Issue 39 item 4: each arm's clock and power in one line, and the summary's warning only when the arms'
// clocks differ by more than 1%.
TEST(TimeFigures, ArmConditionsNameEachArmsClockAndPowerAndSayWhenTheClocksDiffer) {
    TimeFigures f;
    ArmTimeFigures base, fast;
    base.sm_clock_median_mhz = 1770, base.power_median_w = 699.6, base.power_limited_share = 0.98;
    fast.sm_clock_median_mhz = 1962, fast.power_median_w = 640.2, fast.power_limited_share = 0.12;
    f.baseline = base;
    f.candidate_or_add("sm90").timing = fast;
    EXPECT_EQ(arm_conditions_text(f, true),
              "the arms ran at different SM clocks (median): baseline 1770 MHz at 700 W, sm90 1962 MHz at 640 W; "
              "launches held back by the power limit: baseline 98%, sm90 12%");
    f.candidate_or_add("sm90").timing->sm_clock_median_mhz = 1775;
    EXPECT_EQ(arm_conditions_text(f, true), "") << "0.3% apart";
    EXPECT_EQ(arm_conditions_text(f, false).rfind("SM clock (median): baseline 1770 MHz at 700 W, sm90 1775 MHz", 0), 0u)
        << arm_conditions_text(f, false);
    EXPECT_EQ(arm_conditions_text(TimeFigures{}, false), "") << "no clock, no line";
}

TEST(TimeFigures, TheManPageNamesEveryKey) {
    const std::string page = read_text_file(fs::path(S2TP_SOURCE_ROOT) / "man" / "sage2tp-checkpoint.5");
    const std::string section = page.substr(page.find(".Ss Figures of time"),
                                            page.find(".Ss Figures of gate") - page.find(".Ss Figures of time"));
    std::set<std::string> keys;
    collect_keys(full_figures().to_toml(), keys, false);
    EXPECT_GT(keys.size(), 40u);
    for (const std::string &key : keys)
        EXPECT_TRUE(section.find("Ic " + key + "\n") != std::string::npos ||
                    section.find("Ic " + key + " ") != std::string::npos)
            << "sage2tp-checkpoint(5) does not name the time figure '" << key << "'";
}

TEST(TimeFigures, ThePrinterShowsUnknownFiguresAsUnknown) {
    TimeFigures f;
    f.workload = "w";
    f.baseline = ArmTimeFigures{};
    const std::string text = time_figures_text(f, "");
    EXPECT_NE(text.find(" - "), std::string::npos) << text;
    EXPECT_EQ(text.find(" 0.000"), std::string::npos) << text;
}

}  // namespace
}  // namespace s2tp::unit_time_figures
