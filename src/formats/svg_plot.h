// reports/time.svg: the time stage's result as one picture a person can read at a glance. Top panel:
// each arm's sample times (the baseline, its A/A control, every candidate) as a strip of dots over a
// box (p25-p75), whiskers (p10-p90) and a bar at p50. Bottom panel: every candidate/baseline ratio and
// the baseline/baseline (A/A) control, each as its median with its bootstrap interval on one ratio
// axis with a reference line at 1. The page grows with the number of arms.
//
// The output is self-contained SVG 1.1 (no scripts, no external fonts or styles) and deterministic:
// the same input gives the same bytes, so the file can be hashed and diffed like any other artifact.
#pragma once

#include "support/statistics.h"

#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct TimeSeries {
    std::string label;            // e.g. "baseline (Sequential)"
    std::vector<double> times_ms; // kept samples, at least 2
};

struct PlotRatio {
    std::string name;  // the candidate's: the row reads "NAME / baseline", "NAME faster"
    RatioInterval interval;
};

struct TimePlot {
    std::string title;
    std::string subtitle;  // workload, device, rounds and dropped rounds: whatever the caller wants shown
    std::vector<TimeSeries> arms;          // the baseline first, then the others; at least 1
    std::vector<PlotRatio> ratios;         // one per candidate, at least 1
    RatioInterval baseline_vs_baseline;    // the A/A control
    double aa_tolerance = 0;               // the band 1 +- this that the time stage judges the control by
};

std::string render_time_plot_svg(const TimePlot &plot);

// `sage2tp compare`'s picture: one row per labelled ratio interval (median, lo, hi) on one shared
// ratio axis with a reference line at 1; a row without an interval shows its note instead.
struct IntervalRow {
    std::string label;     // bold, e.g. the candidate's name
    std::string sublabel;  // under it, smaller, e.g. the run id
    std::optional<RatioInterval> interval;
    std::string note;      // in the figures column, under the interval (or alone without one)
};

struct IntervalPlot {
    std::string title;
    std::string subtitle;
    std::vector<IntervalRow> rows;
};

std::string render_interval_plot_svg(const IntervalPlot &plot);

// Text made safe for XML character data and attribute values: & < > " ' become entities, and control
// characters XML 1.0 forbids become U+FFFD.
std::string xml_escape(const std::string &text);

}  // namespace s2tp
