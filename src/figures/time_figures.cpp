#include "figures/time_figures.h"

#include "model/ab_timing.h"
#include "figures/figure_fields.h"
#include "figures/set_time_figures.h"
#include "support/number_format.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace s2tp {
namespace {

using figure_fields::boolean;
using figure_fields::integer;
using figure_fields::put;
using figure_fields::real;
using figure_fields::text;

const toml::table *sub_table(const toml::table &table, const char *key) { return table[key].as_table(); }

std::string percent_or_missing(const std::optional<double> &fraction) {
    return fraction ? fixed(*fraction * 100, 3) + "%" : std::string(missing_figure);
}

std::string count_or_missing(const std::optional<std::int64_t> &count) {
    return count ? std::to_string(*count) : std::string(missing_figure);
}

std::string repeats_text(const RatioFigures &r) {
    if (r.repeat_medians.empty()) return "";
    std::string medians;
    for (double m : r.repeat_medians) medians += (medians.empty() ? "" : " ") + fixed(m, 4);
    return "\n    repeats " + medians + "; between-repeat spread " +
           percent_or_missing(r.between_repeat_spread) +
           ", within-repeat half-width " +
           percent_or_missing(r.within_repeat_half_width);
}

}  // namespace

ArmTimeFigures ArmTimeFigures::of(const Summary &s, double tops_p50) {
    ArmTimeFigures f;
    f.p10 = s.p10;
    f.p50 = s.p50;
    f.p90 = s.p90;
    f.mean = s.mean;
    f.stdev = s.stdev;
    f.n = static_cast<std::int64_t>(s.n);
    f.tops_p50 = tops_p50;
    return f;
}

toml::table ArmTimeFigures::to_toml() const {
    toml::table t;
    put(t, "p10", p10);
    put(t, "p50", p50);
    put(t, "p90", p90);
    put(t, "mean", mean);
    put(t, "stdev", stdev);
    put(t, "n", n);
    put(t, "tops_p50", tops_p50);
    return t;
}

ArmTimeFigures ArmTimeFigures::from_toml(const toml::table &t) {
    ArmTimeFigures f;
    f.p10 = real(t, "p10");
    f.p50 = real(t, "p50");
    f.p90 = real(t, "p90");
    f.mean = real(t, "mean");
    f.stdev = real(t, "stdev");
    f.n = integer(t, "n");
    f.tops_p50 = real(t, "tops_p50");
    return f;
}

RatioFigures RatioFigures::of(const RatioInterval &r) {
    RatioFigures f;
    f.median = r.median;
    f.ci_low = r.lo;
    f.ci_high = r.hi;
    f.half_width = r.half_width_rel;
    f.resamples = static_cast<std::int64_t>(r.resamples);
    f.seed = static_cast<std::int64_t>(r.seed);
    f.confidence = r.confidence;
    return f;
}

std::optional<RatioInterval> RatioFigures::interval() const {
    if (!median || !ci_low || !ci_high) return std::nullopt;
    RatioInterval r;
    r.median = *median;
    r.lo = *ci_low;
    r.hi = *ci_high;
    r.half_width_rel = half_width.value_or((*ci_high - *ci_low) / 2 / *median);
    r.resamples = static_cast<std::size_t>(resamples.value_or(0));
    r.seed = static_cast<std::uint64_t>(seed.value_or(0));
    r.confidence = confidence.value_or(BootstrapOptions{}.confidence);
    return r;
}

toml::table RatioFigures::to_toml() const {
    toml::table t;
    put(t, "median", median);
    put(t, "ci_low", ci_low);
    put(t, "ci_high", ci_high);
    put(t, "half_width", half_width);
    put(t, "resamples", resamples);
    put(t, "seed", seed);
    put(t, "confidence", confidence);
    if (!repeat_medians.empty()) {
        toml::array medians;
        for (double m : repeat_medians) medians.push_back(m);
        t.insert("repeat_medians", medians);
    }
    put(t, "between_repeat_spread", between_repeat_spread);
    put(t, "within_repeat_half_width", within_repeat_half_width);
    return t;
}

RatioFigures RatioFigures::from_toml(const toml::table &t) {
    RatioFigures f;
    f.median = real(t, "median");
    f.ci_low = real(t, "ci_low");
    f.ci_high = real(t, "ci_high");
    f.half_width = real(t, "half_width");
    f.resamples = integer(t, "resamples");
    f.seed = integer(t, "seed");
    f.confidence = real(t, "confidence");
    if (const toml::array *medians = t["repeat_medians"].as_array())
        for (const toml::node &m : *medians)
            if (auto value = m.value<double>()) f.repeat_medians.push_back(*value);
    f.between_repeat_spread = real(t, "between_repeat_spread");
    f.within_repeat_half_width = real(t, "within_repeat_half_width");
    return f;
}

toml::table CandidateTimeFigures::to_toml() const {
    toml::table t;
    put(t, "sha256", sha256);
    put(t, "matches_baseline", matches_baseline);
    if (timing) t.insert("timing", timing->to_toml());
    if (ratio) t.insert("ratio", ratio->to_toml());
    if (ncu) t.insert("ncu", ncu->to_toml());
    put(t, "parity_mode", parity_mode);
    if (accuracy) t.insert("accuracy", accuracy->to_toml());
    if (vs_baseline) t.insert("vs_baseline", vs_baseline->to_toml());
    put(t, "accuracy_passed", accuracy_passed);
    put(t, "accuracy_conditions", accuracy_conditions);
    return t;
}

CandidateTimeFigures CandidateTimeFigures::from_toml(const std::string &name, const toml::table &t) {
    CandidateTimeFigures f;
    f.name = name;
    f.sha256 = text(t, "sha256");
    f.matches_baseline = boolean(t, "matches_baseline");
    if (const toml::table *timing = sub_table(t, "timing")) f.timing = ArmTimeFigures::from_toml(*timing);
    if (const toml::table *ratio = sub_table(t, "ratio")) f.ratio = RatioFigures::from_toml(*ratio);
    if (const toml::table *ncu = sub_table(t, "ncu")) f.ncu = NcuComparison::from_toml(*ncu);
    f.parity_mode = figure_fields::string_of(t, "parity_mode");
    if (const toml::table *a = sub_table(t, "accuracy")) f.accuracy = AccuracyFigure::from_toml(*a);
    if (const toml::table *a = sub_table(t, "vs_baseline")) f.vs_baseline = AccuracyFigure::from_toml(*a);
    f.accuracy_passed = boolean(t, "accuracy_passed");
    f.accuracy_conditions = figure_fields::string_of(t, "accuracy_conditions");
    return f;
}

toml::table NcuFigures::to_toml() const {
    toml::table t;
    put(t, "requested", requested);
    put(t, "found", found);
    put(t, "seconds", seconds);
    put(t, "seq_len", seq_len);
    if (!runs.empty()) {
        toml::table by_variant;
        for (const auto &[variant, run] : runs) {
            toml::table entry;
            put(entry, "exit_code", run.exit_code);
            put(entry, "log", run.log);
            put(entry, "report", run.report);
            put(entry, "seconds", run.seconds);
            by_variant.insert(variant, entry);
        }
        t.insert("runs", by_variant);
    }
    return t;
}

NcuFigures NcuFigures::from_toml(const toml::table &t) {
    NcuFigures f;
    f.requested = boolean(t, "requested");
    f.found = boolean(t, "found");
    f.seconds = real(t, "seconds");
    f.seq_len = integer(t, "seq_len");
    if (const toml::table *runs = sub_table(t, "runs"))
        for (const auto &[variant, node] : *runs) {
            const toml::table *entry = node.as_table();
            if (!entry) continue;
            NcuRunFigures run;
            run.exit_code = integer(*entry, "exit_code");
            run.log = text(*entry, "log");
            run.report = text(*entry, "report");
            run.seconds = real(*entry, "seconds");
            f.runs.emplace(std::string(variant.str()), run);
        }
    return f;
}

const CandidateTimeFigures *TimeFigures::candidate(const std::string &name) const {
    for (const CandidateTimeFigures &c : candidates)
        if (c.name == name) return &c;
    return nullptr;
}

CandidateTimeFigures &TimeFigures::candidate_or_add(const std::string &name) {
    for (CandidateTimeFigures &c : candidates)
        if (c.name == name) return c;
    candidates.push_back(CandidateTimeFigures{});
    candidates.back().name = name;
    return candidates.back();
}

toml::table TimeFigures::to_toml() const {
    toml::table t;
    if (baseline_accuracy) t.insert("baseline_accuracy", baseline_accuracy->to_toml());
    put(t, "baseline_accuracy_passed", baseline_accuracy_passed);
    put(t, "baseline_accuracy_conditions", baseline_accuracy_conditions);
    put(t, "workload", workload);
    put(t, "shape", shape);
    put(t, "device", device);
    put(t, "device_name", device_name);
    put(t, "arch", arch);
    toml::table sha;
    put(sha, "baseline", baseline_sha256);
    put(sha, "expected", expected_sha256);
    put(sha, "match", outputs_match);
    put(sha, "replaced_pin", replaced_pin);
    if (!sha.empty()) t.insert("sha256", sha);
    if (baseline) t.insert("baseline", baseline->to_toml());
    if (baseline_control) t.insert("baseline_control", baseline_control->to_toml());
    if (aa) t.insert("aa", aa->to_toml());
    if (!candidates.empty()) {
        toml::table by_name;
        toml::array order;
        for (const CandidateTimeFigures &c : candidates) {
            by_name.insert(c.name, c.to_toml());
            order.push_back(c.name);
        }
        t.insert("candidates", by_name);
        t.insert("candidate_order", order);
    }
    put(t, "rounds", rounds);
    put(t, "throttled_rounds", throttled_rounds);
    put(t, "stopped_by", stopped_by);
    put(t, "l2_flushed", l2_flushed);
    put(t, "footprint_bytes", footprint_bytes);
    put(t, "order_seed", order_seed);
    put(t, "warmup_launches", warmup_launches);
    put(t, "min_rounds", min_rounds);
    put(t, "repeats", repeats);
    put(t, "target_half_width", target_half_width);
    put(t, "budget_seconds", budget_seconds);
    put(t, "measure_seconds", measure_seconds);
    toml::table clock;
    put(clock, "min", sm_clock_min_mhz);
    put(clock, "median", sm_clock_median_mhz);
    put(clock, "max", sm_clock_max_mhz);
    if (!clock.empty()) t.insert("sm_clock_mhz", clock);
    if (ncu) t.insert("ncu", ncu->to_toml());
    put(t, "summary", summary);
    return t;
}

TimeFigures TimeFigures::from_toml(const toml::table &t) {
    TimeFigures f;
    if (const toml::table *a = sub_table(t, "baseline_accuracy")) f.baseline_accuracy = AccuracyFigure::from_toml(*a);
    f.baseline_accuracy_passed = boolean(t, "baseline_accuracy_passed");
    f.baseline_accuracy_conditions = figure_fields::string_of(t, "baseline_accuracy_conditions");
    f.workload = text(t, "workload");
    f.shape = text(t, "shape");
    f.device = text(t, "device");
    f.device_name = text(t, "device_name");
    f.arch = text(t, "arch");
    if (const toml::table *sha = sub_table(t, "sha256")) {
        f.baseline_sha256 = text(*sha, "baseline");
        f.expected_sha256 = text(*sha, "expected");
        f.outputs_match = boolean(*sha, "match");
        f.replaced_pin = text(*sha, "replaced_pin");
    }
    if (const toml::table *b = sub_table(t, "baseline")) f.baseline = ArmTimeFigures::from_toml(*b);
    if (const toml::table *c = sub_table(t, "baseline_control")) f.baseline_control = ArmTimeFigures::from_toml(*c);
    if (const toml::table *aa = sub_table(t, "aa")) f.aa = RatioFigures::from_toml(*aa);
    if (const toml::table *by_name = sub_table(t, "candidates")) {
        // The recorded order first, then any candidate table it does not name (in key order).
        if (const toml::array *order = t["candidate_order"].as_array())
            for (const toml::node &name : *order)
                if (auto text = name.value<std::string>())
                    if (const toml::table *c = (*by_name)[*text].as_table())
                        f.candidates.push_back(CandidateTimeFigures::from_toml(*text, *c));
        for (const auto &[name, node] : *by_name)
            if (node.as_table() && !f.candidate(std::string(name.str())))
                f.candidates.push_back(CandidateTimeFigures::from_toml(std::string(name.str()), *node.as_table()));
    }
    f.rounds = integer(t, "rounds");
    f.throttled_rounds = integer(t, "throttled_rounds");
    f.stopped_by = text(t, "stopped_by");
    f.l2_flushed = boolean(t, "l2_flushed");
    f.footprint_bytes = integer(t, "footprint_bytes");
    f.order_seed = integer(t, "order_seed");
    f.warmup_launches = integer(t, "warmup_launches");
    f.min_rounds = integer(t, "min_rounds");
    f.repeats = integer(t, "repeats");
    f.target_half_width = real(t, "target_half_width");
    f.budget_seconds = real(t, "budget_seconds");
    f.measure_seconds = real(t, "measure_seconds");
    if (const toml::table *clock = sub_table(t, "sm_clock_mhz")) {
        f.sm_clock_min_mhz = real(*clock, "min");
        f.sm_clock_median_mhz = real(*clock, "median");
        f.sm_clock_max_mhz = real(*clock, "max");
    }
    if (const toml::table *ncu = sub_table(t, "ncu")) f.ncu = NcuFigures::from_toml(*ncu);
    f.summary = text(t, "summary");
    return f;
}

std::string interval_text(const RatioFigures &r, bool with_half_width) {
    const std::string level = r.confidence ? compact(*r.confidence * 100, 1) + "% CI " : std::string("CI ");
    return fixed_or_missing(r.median, 4) + " (" + level + fixed_or_missing(r.ci_low, 4) + " .. " +
           fixed_or_missing(r.ci_high, 4) + (with_half_width ? ", half-width " + percent_or_missing(r.half_width) : "") +
           ")";
}

std::string time_figures_text(const TimeFigures &f, const std::string &plot) {
    std::ostringstream out;
    out << "  " << f.workload.value_or(missing_figure) << ": " << f.shape.value_or(missing_figure) << " on "
        << f.device_name.value_or(missing_figure);
    if (f.baseline_sha256) {
        out << "\n  output sha256 baseline " << *f.baseline_sha256
            << (!f.expected_sha256                       ? " (none pinned)"
                : *f.expected_sha256 == *f.baseline_sha256 ? " = pinned"
                                                           : ", pinned " + *f.expected_sha256);
        for (const CandidateTimeFigures &c : f.candidates)
            if (c.sha256)
                out << "\n    " << c.name << (*c.sha256 == *f.baseline_sha256 ? " = baseline" : " " + *c.sha256);
    }
    const auto ncu_text = [&] {
        std::string text;
        for (const CandidateTimeFigures &c : f.candidates)
            if (c.ncu) text += "\n  Nsight Compute, one launch each, " + c.name + ":\n" + c.ncu->table_text();
        return text;
    };
    const bool timed = f.baseline.has_value() || std::any_of(f.candidates.begin(), f.candidates.end(),
                                                             [](const CandidateTimeFigures &c) { return c.ratio; });
    if (!timed) return out.str() + ncu_text();

    std::size_t width = std::string("  baseline").size() + 2;
    for (const CandidateTimeFigures &c : f.candidates) width = std::max(width, c.name.size() + 4);
    out << "\n" << std::left << std::setw(static_cast<int>(width)) << "  ARM" << std::right << std::setw(10) << "P10 ms"
        << std::setw(10) << "P50 ms" << std::setw(10) << "P90 ms" << std::setw(10) << "MEAN ms" << std::setw(10)
        << "STDEV ms" << std::setw(7) << "N" << std::setw(12) << "TOPS (p50)";
    const auto row = [&](const std::string &name, const std::optional<ArmTimeFigures> &arm) {
        const ArmTimeFigures a = arm.value_or(ArmTimeFigures{});
        out << "\n" << std::left << std::setw(static_cast<int>(width)) << ("  " + name) << std::right << std::setw(10)
            << fixed_or_missing(a.p10, 3) << std::setw(10) << fixed_or_missing(a.p50, 3) << std::setw(10)
            << fixed_or_missing(a.p90, 3) << std::setw(10) << fixed_or_missing(a.mean, 3) << std::setw(10)
            << fixed_or_missing(a.stdev, 3) << std::setw(7) << count_or_missing(a.n) << std::setw(12)
            << fixed_or_missing(a.tops_p50, 1);
    };
    row("baseline", f.baseline);
    for (const CandidateTimeFigures &c : f.candidates) row(c.name, c.timing);
    for (const CandidateTimeFigures &c : f.candidates)
        if (c.ratio) out << "\n  " << c.name << "/baseline " << interval_text(*c.ratio, true) << repeats_text(*c.ratio);
    if (f.aa) out << "\n  A/A control/baseline " << interval_text(*f.aa, true) << repeats_text(*f.aa);
    out << "\n  " << count_or_missing(f.rounds) << " rounds";
    if (f.repeats && *f.repeats > 1) out << " in " << *f.repeats << " processes";
    out << ", " << count_or_missing(f.throttled_rounds) << " dropped as throttled; SM clock "
        << fixed_or_missing(f.sm_clock_min_mhz, 0) << " .. " << fixed_or_missing(f.sm_clock_max_mhz, 0)
        << " MHz (median " << fixed_or_missing(f.sm_clock_median_mhz, 0) << "); stopped by "
        << f.stopped_by.value_or(missing_figure) << (f.l2_flushed.value_or(false) ? "; L2 flushed before each launch" : "");
    for (const CandidateTimeFigures &c : f.candidates)
        if (c.ratio && c.ratio->median) {
            out << "\n  " << speed_in_words(*c.ratio->median, c.name);
        }
    if (!plot.empty()) out << "\n  plot: " << plot;
    return out.str() + ncu_text();
}

void print_time(const Checkpoint &checkpoint, const Reporter &reporter) {
    if (SetTimeFigures::holds_set(checkpoint.figures)) {
        reporter.say(set_time_figures_text(SetTimeFigures::from_toml(checkpoint.figures)));
        return;
    }
    reporter.say(time_figures_text(TimeFigures::from_toml(checkpoint.figures),
                                   checkpoint.artifacts["time_svg"]["path"].value_or(std::string())));
}

}  // namespace s2tp
