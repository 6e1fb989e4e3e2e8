#include "formats/svg_plot.h"

#include "support/errors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace s2tp::unit_svg_plot {
namespace {

// A deliberately small well-formedness checker: tags balance and nest, attribute values are quoted,
// and character data holds no raw '<' and no '&' that does not start one of the five XML entities
// or a numeric reference. Returns "" when well-formed, else what is wrong and where.
std::string xml_problem(const std::string &xml) {
    const auto entity_ok = [&xml](std::size_t at) {
        for (const char *entity : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
            if (xml.compare(at, std::string(entity).size(), entity) == 0) return true;
        return xml.compare(at, 2, "&#") == 0 && xml.find(';', at) != std::string::npos;
    };
    std::vector<std::string> open;
    std::size_t i = 0;
    while (i < xml.size()) {
        if (xml[i] == '&' && !entity_ok(i)) return "bare '&' at offset " + std::to_string(i);
        if (xml[i] == '>') return "bare '>' in text at offset " + std::to_string(i);
        if (xml[i] != '<') {
            ++i;
            continue;
        }
        if (xml.compare(i, 5, "<?xml") == 0) {
            const std::size_t end = xml.find("?>", i);
            if (i != 0 || end == std::string::npos) return "misplaced XML declaration";
            i = end + 2;
            continue;
        }
        // Find the tag's end, skipping '>' inside quoted attribute values.
        std::size_t j = i + 1;
        char quote = 0;
        for (; j < xml.size(); ++j) {
            const char c = xml[j];
            if (quote) {
                if (c == quote) quote = 0;
                else if (c == '<') return "'<' inside an attribute at offset " + std::to_string(j);
                else if (c == '&' && !entity_ok(j)) return "bare '&' in an attribute at offset " + std::to_string(j);
            } else if (c == '"' || c == '\'') {
                quote = c;
            } else if (c == '=' && j + 1 < xml.size() && xml[j + 1] != '"' && xml[j + 1] != '\'') {
                return "unquoted attribute at offset " + std::to_string(j);
            } else if (c == '>' || c == '<') {
                break;
            }
        }
        if (j >= xml.size() || xml[j] != '>') return "unterminated tag at offset " + std::to_string(i);
        const std::string tag = xml.substr(i + 1, j - i - 1);
        const bool closing = !tag.empty() && tag[0] == '/';
        const bool self_closing = !tag.empty() && tag.back() == '/';
        const std::string body = closing ? tag.substr(1) : tag;
        const std::string name = body.substr(0, body.find_first_of(" \t\n/"));
        if (name.empty()) return "tag without a name at offset " + std::to_string(i);
        if (closing) {
            if (open.empty() || open.back() != name)
                return "</" + name + "> does not close <" + (open.empty() ? "" : open.back()) + ">";
            open.pop_back();
            if (open.empty() && xml.find('<', j) != std::string::npos) return "content after the root element";
        } else if (!self_closing) {
            open.push_back(name);
        }
        i = j + 1;
    }
    if (!open.empty()) return "<" + open.back() + "> is never closed";
    return "";
}

TEST(XmlChecker, CatchesTheMistakesItIsFor) {
    EXPECT_EQ(xml_problem("<a><b/><c x=\"1\">t</c></a>"), "");
    EXPECT_NE(xml_problem("<a><b></a></b>"), "");
    EXPECT_NE(xml_problem("<a>"), "");
    EXPECT_NE(xml_problem("<a>x < y</a>"), "");
    EXPECT_NE(xml_problem("<a>R&D</a>"), "");
    EXPECT_NE(xml_problem("<a x=1></a>"), "");
    EXPECT_NE(xml_problem("<a x=\"<\"></a>"), "");
}

std::vector<double> times_around(double center, int n) {
    std::vector<double> t;
    for (int i = 0; i < n; ++i) t.push_back(center + 0.01 * center * std::sin(i * 1.7));
    return t;
}

TimePlot example_plot() {
    TimePlot plot;
    plot.title = "Wan2.1 block 24: TemporalPair vs Sequential";
    plot.subtitle = "B=1 H=40 N=32760 D=128, NVIDIA H200, 64 rounds (2 throttled pairs dropped)";
    plot.arms = {{"baseline (Sequential)", times_around(212.0, 64)}, {"candidate (TemporalPair)", times_around(203.0, 64)}};
    plot.ratios = {{"candidate", bootstrap_median_interval(paired_ratios(plot.arms[1].times_ms, plot.arms[0].times_ms),
                                                            {17, 1000, 0.95})}};
    plot.baseline_vs_baseline.median = 1.0004;
    plot.baseline_vs_baseline.lo = 0.9981;
    plot.baseline_vs_baseline.hi = 1.0027;
    plot.baseline_vs_baseline.half_width_rel = 0.0023;
    plot.baseline_vs_baseline.n = 64;
    plot.baseline_vs_baseline.resamples = 1000;
    plot.baseline_vs_baseline.seed = 18;
    plot.baseline_vs_baseline.confidence = 0.95;
    return plot;
}

std::size_t count(const std::string &haystack, const std::string &needle) {
    std::size_t n = 0;
    for (std::size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
    return n;
}

TEST(SvgPlot, IsWellFormedAndSelfContained) {
    const std::string svg = render_time_plot_svg(example_plot());
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
    EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
    EXPECT_EQ(svg.find("<script"), std::string::npos);
    EXPECT_EQ(svg.find("@import"), std::string::npos);
    EXPECT_EQ(svg.find("href"), std::string::npos);  // no external images, fonts or styles
}

TEST(SvgPlot, ShowsTheFiguresAPersonNeeds) {
    const TimePlot plot = example_plot();
    const std::string svg = render_time_plot_svg(plot);
    const Summary base = summarize(plot.arms[0].times_ms);
    const RatioInterval &ab = plot.ratios[0].interval;
    char p50[32];
    std::snprintf(p50, sizeof p50, "p50 %.2f ms", base.p50);  // 5 significant digits at ~212 ms
    EXPECT_NE(svg.find(p50), std::string::npos) << p50;
    char ratio[64];
    std::snprintf(ratio, sizeof ratio, "%.4f (95%% CI %.4f .. %.4f)", ab.median, ab.lo, ab.hi);
    EXPECT_NE(svg.find(ratio), std::string::npos) << ratio;
    EXPECT_NE(svg.find("1.0004 (95% CI 0.9981 .. 1.0027)"), std::string::npos);
    EXPECT_NE(svg.find("candidate faster"), std::string::npos);
    EXPECT_NE(svg.find("contains 1: control ok"), std::string::npos);
    EXPECT_NE(svg.find("time per launch (ms)"), std::string::npos);
    EXPECT_NE(svg.find("n = 64 samples"), std::string::npos);
    EXPECT_NE(svg.find("seed 17 (A/B)"), std::string::npos);
    EXPECT_NE(svg.find("95% bootstrap interval"), std::string::npos);
    // Every sample is drawn: 64 dots per variant plus one median dot per ratio row.
    EXPECT_EQ(count(svg, "<circle"), 64u + 64u + 2u);
}

TEST(SvgPlot, ReadsTheControlByTheTimeStagesBand) {
    // An A/A interval that misses 1 by less than the band the time stage allows is not "too noisy"
    // in the picture either; one that misses the band is.
    TimePlot plot = example_plot();
    plot.baseline_vs_baseline.lo = 1.0001;
    plot.baseline_vs_baseline.median = 1.0002;
    plot.baseline_vs_baseline.hi = 1.0003;
    plot.aa_tolerance = 0.0005;
    EXPECT_NE(render_time_plot_svg(plot).find("within 1 +- 0.050%: control ok"), std::string::npos);
    plot.aa_tolerance = 0.00005;
    EXPECT_NE(render_time_plot_svg(plot).find("excludes 1: machine too noisy"), std::string::npos);
}

TEST(SvgPlot, FlagsANoisyControlAndASlowerCandidate) {
    TimePlot plot = example_plot();
    plot.ratios[0].interval.lo = 1.010;
    plot.ratios[0].interval.median = 1.015;
    plot.ratios[0].interval.hi = 1.020;
    plot.baseline_vs_baseline.lo = 1.004;
    plot.baseline_vs_baseline.hi = 1.009;
    const std::string svg = render_time_plot_svg(plot);
    EXPECT_NE(svg.find("candidate slower"), std::string::npos);
    EXPECT_NE(svg.find("excludes 1: machine too noisy"), std::string::npos);
}

TEST(SvgPlot, ShowsEveryArmAndEveryRatio) {
    TimePlot plot = example_plot();
    plot.arms.insert(plot.arms.begin() + 1, TimeSeries{"baseline_control", times_around(212.1, 64)});
    plot.arms.push_back({"wide-v", times_around(230.0, 64)});
    RatioInterval slower;
    slower.median = 1.085, slower.lo = 1.080, slower.hi = 1.090, slower.half_width_rel = 0.0046, slower.n = 64;
    slower.resamples = 1000, slower.seed = 17, slower.confidence = 0.95;
    plot.ratios.push_back({"wide-v", slower});
    const std::string svg = render_time_plot_svg(plot);
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_EQ(count(svg, "<circle"), 4u * 64u + 3u) << "four strips of dots, three ratio medians";
    for (const char *text : {"baseline_control", "wide-v / baseline", "wide-v slower", "candidate / baseline",
                             "1.0850 (95% CI 1.0800 .. 1.0900)", "baseline / baseline (A/A)"})
        EXPECT_NE(svg.find(text), std::string::npos) << text;
    // The page grows with the rows instead of drawing them over each other (545 for two arms).
    EXPECT_NE(svg.find("height=\"755.00\""), std::string::npos);
}

TEST(SvgPlot, EscapesEveryText) {
    TimePlot plot = example_plot();
    plot.title = "A<B & \"C\" 'D'";
    plot.subtitle = "x > y\x01";
    plot.arms[0].label = "base<script>";
    const std::string svg = render_time_plot_svg(plot);
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_NE(svg.find("A&lt;B &amp; &quot;C&quot; &apos;D&apos;"), std::string::npos);
    EXPECT_NE(svg.find("x &gt; y\xEF\xBF\xBD"), std::string::npos);
    EXPECT_NE(svg.find("base&lt;script&gt;"), std::string::npos);
    EXPECT_EQ(svg.find("<script"), std::string::npos);
}

TEST(SvgPlot, IsDeterministic) {
    EXPECT_EQ(render_time_plot_svg(example_plot()), render_time_plot_svg(example_plot()));
}

TEST(SvgPlot, HandlesIdenticalSamples) {
    TimePlot plot = example_plot();
    plot.arms[0].times_ms = std::vector<double>(10, 5.0);
    plot.arms[1].times_ms = std::vector<double>(10, 5.0);
    const std::string svg = render_time_plot_svg(plot);
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_EQ(svg.find("nan"), std::string::npos);
    EXPECT_EQ(svg.find("inf"), std::string::npos);
}

TEST(SvgPlot, RefusesUndrawableInput) {
    TimePlot plot = example_plot();
    plot.arms[0].times_ms = {1.0};
    EXPECT_THROW(render_time_plot_svg(plot), Error);
    plot = example_plot();
    plot.baseline_vs_baseline.hi = std::nan("");
    EXPECT_THROW(render_time_plot_svg(plot), Error);
}

TEST(XmlEscape, ReplacesMarkupAndForbiddenControls) {
    EXPECT_EQ(xml_escape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
    EXPECT_EQ(xml_escape("tab\tnewline\n"), "tab\tnewline\n");
    EXPECT_EQ(xml_escape(std::string("nul\0x", 5)), "nul\xEF\xBF\xBDx");
    EXPECT_EQ(xml_escape("caf\xC3\xA9"), "caf\xC3\xA9");  // UTF-8 passes through untouched
}

}  // namespace
}  // namespace s2tp::unit_svg_plot
