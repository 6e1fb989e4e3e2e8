#include "formats/svg_plot.h"
#include "support/number_format.h"

#include "support/errors.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

namespace s2tp {

namespace {

// Page geometry in SVG user units (pixels). Both panels share one horizontal plot area so the eye
// can move straight down from the time strips to the ratio intervals.
constexpr double page_width = 1000;
constexpr double label_x = 20;
constexpr double plot_left = 210;
constexpr double plot_right = 700;
constexpr double figures_x = 725;

constexpr double first_time_row_y = 125;  // rows grow down from here, one per arm, then one per ratio
constexpr double time_row_step = 75;
constexpr double ratio_row_step = 60;

constexpr double box_half_height = 14;
constexpr double jitter_half_height = 18;

// One colour per arm, the baseline's first (a colour-blind-safe qualitative palette, seaborn "deep").
constexpr const char *arm_colors[] = {"#4c72b0", "#8172b3", "#dd8452", "#55a868", "#c44e52",
                                      "#937860", "#da8bc3", "#8c8c8c"};
constexpr const char *faster_color = "#2a9d3a";
constexpr const char *slower_color = "#c8302c";
constexpr const char *neutral_color = "#555555";

// Times get five significant digits, enough to tell 212.35 ms from 211.29 ms (0.5%) at any time
// scale; a spread needs only three.
std::string fixed_significant(double value, int digits = 5) {
    const double magnitude = value == 0.0 ? 0.0 : std::floor(std::log10(std::fabs(value)));
    const int decimals = static_cast<int>(std::clamp(digits - 1 - magnitude, 0.0, 9.0));
    return fixed(value, decimals);
}


std::string percent_text(double fraction) { return fixed(fraction * 100.0, 2) + "%"; }

std::string coord(double value) { return fixed(value, 2); }

struct Axis {
    double lo;
    double hi;
    double to_x(double value) const { return plot_left + (value - lo) / (hi - lo) * (plot_right - plot_left); }
};

Axis padded_axis(double lo, double hi, double pad_fraction) {
    const double span = hi - lo;
    const double pad = span > 0 ? span * pad_fraction : std::max(std::fabs(lo) * 0.01, 1e-9);
    return {lo - pad, hi + pad};
}

// A 1, 2 or 5 times a power of ten, giving about six ticks: the steps people read without effort.
double nice_step(double span) {
    const double raw = span / 6.0;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double normalized = raw / magnitude;
    const double factor = normalized < 1.5 ? 1 : normalized < 3 ? 2 : normalized < 7 ? 5 : 10;
    return factor * magnitude;
}

class Svg {
public:
    explicit Svg(double page_height) {
        out_ += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
        out_ += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + coord(page_width) +
                "\" height=\"" + coord(page_height) + "\" viewBox=\"0 0 " + coord(page_width) + " " +
                coord(page_height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    }

    void title(const std::string &text) { out_ += "<title>" + xml_escape(text) + "</title>\n"; }

    void rect(double x, double y, double w, double h, const std::string &attributes) {
        out_ += "<rect x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" width=\"" + coord(w) + "\" height=\"" +
                coord(h) + "\" " + attributes + "/>\n";
    }

    void line(double x1, double y1, double x2, double y2, const std::string &attributes) {
        out_ += "<line x1=\"" + coord(x1) + "\" y1=\"" + coord(y1) + "\" x2=\"" + coord(x2) + "\" y2=\"" +
                coord(y2) + "\" " + attributes + "/>\n";
    }

    void circle(double cx, double cy, double r, const std::string &attributes) {
        out_ += "<circle cx=\"" + coord(cx) + "\" cy=\"" + coord(cy) + "\" r=\"" + coord(r) + "\" " + attributes +
                "/>\n";
    }

    void text(double x, double y, const std::string &content, const std::string &attributes = "") {
        out_ += "<text x=\"" + coord(x) + "\" y=\"" + coord(y) + "\"" + (attributes.empty() ? "" : " ") +
                attributes + ">" + xml_escape(content) + "</text>\n";
    }

    std::string finish() { return out_ + "</svg>\n"; }

private:
    std::string out_;
};

// Every plot's page: a white background, the title (also the document's), and the subtitle under it.
void draw_heading(Svg &svg, double page_height, const std::string &title, const std::string &subtitle) {
    svg.title(title);
    svg.rect(0, 0, page_width, page_height, "fill=\"#ffffff\"");
    svg.text(label_x, 30, title, "font-size=\"18\" font-weight=\"bold\"");
    svg.text(label_x, 52, subtitle, "fill=\"#333333\"");
}

void draw_axis(Svg &svg, const Axis &axis, double y, const std::string &caption) {
    svg.line(plot_left, y, plot_right, y, "stroke=\"#333333\"");
    const double step = nice_step(axis.hi - axis.lo);
    const int decimals = static_cast<int>(std::max(0.0, -std::floor(std::log10(step) + 1e-9)));
    // Ticks are integer multiples of the step, so rounding never accumulates along the axis.
    for (double k = std::ceil(axis.lo / step); k * step <= axis.hi; k += 1) {
        const double x = axis.to_x(k * step);
        svg.line(x, y, x, y + 5, "stroke=\"#333333\"");
        svg.text(x, y + 18, fixed(k * step, decimals), "text-anchor=\"middle\" fill=\"#333333\"");
    }
    svg.text((plot_left + plot_right) / 2, y + 36, caption, "text-anchor=\"middle\"");
}

void draw_time_row(Svg &svg, const Axis &axis, const TimeSeries &series, const Summary &s, double y,
                   const char *color, std::uint64_t jitter_seed) {
    svg.text(label_x, y - 2, series.label, "font-weight=\"bold\"");
    svg.text(label_x, y + 14, "n = " + std::to_string(s.n) + " samples", "fill=\"#555555\"");

    const std::string stroke = std::string("stroke=\"") + color + "\"";
    svg.line(axis.to_x(s.p10), y, axis.to_x(s.p25), y, stroke + " stroke-width=\"1.5\"");
    svg.line(axis.to_x(s.p75), y, axis.to_x(s.p90), y, stroke + " stroke-width=\"1.5\"");
    for (double whisker_end : {s.p10, s.p90})
        svg.line(axis.to_x(whisker_end), y - 8, axis.to_x(whisker_end), y + 8, stroke + " stroke-width=\"1.5\"");
    svg.rect(axis.to_x(s.p25), y - box_half_height, axis.to_x(s.p75) - axis.to_x(s.p25), 2 * box_half_height,
             std::string("fill=\"") + color + "\" fill-opacity=\"0.18\" " + stroke);

    // Vertical jitter only spreads overlapping dots; it comes from our own generator so the file is
    // byte-identical between runs.
    SplitMix64 jitter(jitter_seed);
    for (double t : series.times_ms) {
        const double unit = static_cast<double>(jitter.next() >> 11) * 0x1.0p-53;
        svg.circle(axis.to_x(t), y + (unit * 2 - 1) * jitter_half_height, 2,
                   std::string("fill=\"") + color + "\" fill-opacity=\"0.45\"");
    }
    svg.line(axis.to_x(s.p50), y - box_half_height - 3, axis.to_x(s.p50), y + box_half_height + 3,
             "stroke=\"#111111\" stroke-width=\"3\"");

    svg.text(figures_x, y - 12, "p50 " + fixed_significant(s.p50) + " ms", "font-weight=\"bold\"");
    svg.text(figures_x, y + 4, "p10 " + fixed_significant(s.p10) + " / p90 " + fixed_significant(s.p90) + " ms");
    svg.text(figures_x, y + 20, "mean " + fixed_significant(s.mean) + " / sd " + fixed_significant(s.stdev, 3) + " ms",
             "fill=\"#555555\"");
}

// An interval as a thick line from lo to hi with end ticks, and a dot at the median.
void draw_interval(Svg &svg, const Axis &axis, const RatioInterval &ci, double y, const char *color) {
    const std::string stroke = std::string("stroke=\"") + color + "\" stroke-width=\"3\"";
    svg.line(axis.to_x(ci.lo), y, axis.to_x(ci.hi), y, stroke);
    for (double end : {ci.lo, ci.hi}) svg.line(axis.to_x(end), y - 8, axis.to_x(end), y + 8, stroke);
    svg.circle(axis.to_x(ci.median), y, 5, std::string("fill=\"") + color + "\"");
}

void draw_ratio_row(Svg &svg, const Axis &axis, const std::string &label, const RatioInterval &ci, double y,
                    const char *color, const std::string &reading) {
    svg.text(label_x, y + 4, label, "font-weight=\"bold\"");
    draw_interval(svg, axis, ci, y, color);
    const std::string emphasis = std::string("font-weight=\"bold\" fill=\"") + color + "\"";
    svg.text(figures_x, y - 10, interval_text(ci), emphasis);
    svg.text(figures_x, y + 5, reading, emphasis);
    svg.text(figures_x, y + 20, "\u00b1" + percent_text(ci.half_width_rel) + " half-width, n = " + std::to_string(ci.n),
             "fill=\"#555555\"");
}

void require_finite(double value, const char *what) {
    if (!std::isfinite(value)) fail(ExitCode::internal, std::string("svg plot: ") + what + " is not finite");
}

void require_drawable(const RatioInterval &ci, const char *what) {
    require_finite(ci.lo, what);
    require_finite(ci.hi, what);
    require_finite(ci.median, what);
}

std::string confidence_text(double confidence) { return fixed(confidence * 100.0, 0) + "%"; }

}  // namespace

std::string xml_escape(const std::string &text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
                out += "\xEF\xBF\xBD";  // U+FFFD: XML 1.0 has no way to write these characters at all
            else
                out += c;
        }
    }
    return out;
}

std::string render_time_plot_svg(const TimePlot &plot) {
    if (plot.arms.empty() || plot.ratios.empty())
        fail(ExitCode::internal, "svg plot: needs at least one arm and one ratio");
    std::vector<Summary> summaries;
    double time_lo = 0, time_hi = 0;
    for (const TimeSeries &arm : plot.arms) {
        summaries.push_back(summarize(arm.times_ms));
        require_finite(summaries.back().max, "a sample time");
        require_finite(summaries.back().min, "a sample time");
        time_lo = summaries.size() == 1 ? summaries.back().min : std::min(time_lo, summaries.back().min);
        time_hi = summaries.size() == 1 ? summaries.back().max : std::max(time_hi, summaries.back().max);
    }
    const RatioInterval &aa = plot.baseline_vs_baseline;
    double ratio_lo = std::min(1.0, aa.lo), ratio_hi = std::max(1.0, aa.hi);
    for (const PlotRatio &ratio : plot.ratios) {
        require_drawable(ratio.interval, "a candidate/baseline interval");
        ratio_lo = std::min(ratio_lo, ratio.interval.lo);
        ratio_hi = std::max(ratio_hi, ratio.interval.hi);
    }
    require_drawable(aa, "the A/A interval");

    const double time_axis_y = first_time_row_y + time_row_step * static_cast<double>(plot.arms.size() - 1) + 45;
    const double ratio_title_y = time_axis_y + 61;
    const double first_ratio_row_y = ratio_title_y + 54;
    const double aa_row_y = first_ratio_row_y + ratio_row_step * static_cast<double>(plot.ratios.size());
    const double ratio_axis_y = aa_row_y + 35;
    const double page_height = ratio_axis_y + 90;

    Svg svg(page_height);
    draw_heading(svg, page_height, plot.title, plot.subtitle);

    svg.text(label_x, 84, "Time per launch (lower is better)", "font-size=\"14\" font-weight=\"bold\"");
    const Axis time_axis = padded_axis(time_lo, time_hi, 0.04);
    for (std::size_t i = 0; i < plot.arms.size(); ++i)
        draw_time_row(svg, time_axis, plot.arms[i], summaries[i], first_time_row_y + time_row_step * static_cast<double>(i),
                      arm_colors[i % (sizeof arm_colors / sizeof *arm_colors)], i + 1);
    draw_axis(svg, time_axis, time_axis_y, "time per launch (ms)");

    const RatioInterval &first = plot.ratios.front().interval;
    svg.text(label_x, ratio_title_y,
             "Ratio candidate / baseline: median of per-round ratios, " + confidence_text(first.confidence) +
                 " bootstrap interval",
             "font-size=\"14\" font-weight=\"bold\"");
    const Axis ratio_axis = padded_axis(ratio_lo, ratio_hi, 0.15);
    svg.line(ratio_axis.to_x(1.0), first_ratio_row_y - 22, ratio_axis.to_x(1.0), ratio_axis_y,
             "stroke=\"#888888\" stroke-dasharray=\"4 3\"");
    svg.text(ratio_axis.to_x(1.0), first_ratio_row_y - 26, "1 = no difference", "text-anchor=\"middle\" fill=\"#555555\"");

    for (std::size_t i = 0; i < plot.ratios.size(); ++i) {
        const PlotRatio &ratio = plot.ratios[i];
        const RatioInterval &ab = ratio.interval;
        const char *color = ab.hi < 1.0 ? faster_color : ab.lo > 1.0 ? slower_color : neutral_color;
        const std::string reading = ab.hi < 1.0   ? ratio.name + " faster"
                                    : ab.lo > 1.0 ? ratio.name + " slower"
                                                  : "no clear difference";
        draw_ratio_row(svg, ratio_axis, ratio.name + " / baseline", ab,
                       first_ratio_row_y + ratio_row_step * static_cast<double>(i), color, reading);
    }
    const bool aa_ok = aa.reaches(1.0, plot.aa_tolerance);
    const std::string aa_reading = !aa_ok             ? "excludes 1: machine too noisy"
                                   : aa.contains(1.0) ? "contains 1: control ok"
                                                      : "within 1 +- " + fixed(plot.aa_tolerance * 100, 3) + "%: control ok";
    draw_ratio_row(svg, ratio_axis, "baseline / baseline (A/A)", aa, aa_row_y, aa_ok ? neutral_color : slower_color,
                   aa_reading);
    draw_axis(svg, ratio_axis, ratio_axis_y, "ratio (below 1: candidate faster)");

    svg.text(label_x, ratio_axis_y + 75,
             "Box p25-p75, whiskers p10-p90, black bar p50, dots: samples. Bootstrap: " +
                 std::to_string(first.resamples) + " resamples, seed " + std::to_string(first.seed) + " (A/B), " +
                 std::to_string(aa.resamples) + " resamples, seed " + std::to_string(aa.seed) + " (A/A).",
             "fill=\"#555555\" font-size=\"11\"");
    return svg.finish();
}

namespace {

// The interval plot's rows: 56 units each below an 80-unit heading, then the axis and a footnote.
constexpr double interval_first_row_y = 110;
constexpr double interval_row_step = 56;

}  // namespace

std::string render_interval_plot_svg(const IntervalPlot &plot) {
    double lo = 1.0, hi = 1.0;
    for (const IntervalRow &row : plot.rows)
        if (row.interval) {
            require_drawable(*row.interval, "a ratio interval");
            lo = std::min(lo, row.interval->lo);
            hi = std::max(hi, row.interval->hi);
        }
    const double rows = static_cast<double>(std::max<std::size_t>(plot.rows.size(), 1));
    const double axis_y = interval_first_row_y + (rows - 0.5) * interval_row_step;
    const double height = axis_y + 80;

    Svg svg(height);
    draw_heading(svg, height, plot.title, plot.subtitle);

    const Axis axis = padded_axis(lo, hi, 0.15);
    svg.line(axis.to_x(1.0), interval_first_row_y - 26, axis.to_x(1.0), axis_y,
             "stroke=\"#888888\" stroke-dasharray=\"4 3\"");
    svg.text(axis.to_x(1.0), interval_first_row_y - 30, "1 = no difference", "text-anchor=\"middle\" fill=\"#555555\"");
    for (std::size_t i = 0; i < plot.rows.size(); ++i) {
        const IntervalRow &row = plot.rows[i];
        const double y = interval_first_row_y + static_cast<double>(i) * interval_row_step;
        svg.text(label_x, y, row.label, "font-weight=\"bold\"");
        svg.text(label_x, y + 15, row.sublabel, "fill=\"#555555\" font-size=\"10\"");
        if (!row.interval) {
            svg.text(figures_x, y + 4, row.note, "fill=\"#555555\"");
            continue;
        }
        const RatioInterval &ci = *row.interval;
        const char *color = ci.hi < 1.0 ? faster_color : ci.lo > 1.0 ? slower_color : neutral_color;
        draw_interval(svg, axis, ci, y, color);
        svg.text(figures_x, y - 4, interval_text(ci), std::string("font-weight=\"bold\" fill=\"") + color + "\"");
        svg.text(figures_x, y + 12, row.note, "fill=\"#555555\"");
    }
    draw_axis(svg, axis, axis_y, "ratio over the run's own baseline (below 1: faster)");
    svg.text(label_x, height - 10,
             "Dot: median of the per-round ratios; line: its bootstrap interval, as each run's time stage recorded it.",
             "fill=\"#555555\" font-size=\"11\"");
    return svg.finish();
}

}  // namespace s2tp
