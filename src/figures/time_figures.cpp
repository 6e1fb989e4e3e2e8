#include "figures/time_figures.h"

#include "model/ab_timing.h"
#include "figures/figure_fields.h"
#include "support/number_format.h"
#include "support/table_printer.h"

#include <algorithm>
#include <sstream>

namespace s2tp {

using namespace figure_fields;
namespace {

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

ArmTimeFigures ArmTimeFigures::of(const Summary &s, double tops_p50, const ArmConditions &conditions) {
    ArmTimeFigures f;
    f.p10 = s.p10;
    f.p50 = s.p50;
    f.p90 = s.p90;
    f.mean = s.mean;
    f.stdev = s.stdev;
    f.n = static_cast<std::int64_t>(s.n);
    f.tops_p50 = tops_p50;
    f.sm_clock_median_mhz = conditions.clock_median_mhz;
    f.power_median_w = conditions.power_median_w;
    f.temperature_median_c = conditions.temperature_median_c;
    f.power_limited_share = conditions.power_limited_share;
    f.thermal_limited_share = conditions.thermal_limited_share;
    f.sync_boost_share = conditions.sync_boost_share;
    return f;
}

const std::vector<Field<ArmTimeFigures>> &ArmTimeFigures::fields() {
    using A = ArmTimeFigures;
    static const std::vector<Field<A>> table{
        field("p10", &A::p10, "ms"),   field("p50", &A::p50, "ms"),     field("p90", &A::p90, "ms"),
        field("mean", &A::mean, "ms"), field("stdev", &A::stdev, "ms"), field("n", &A::n, "rounds"),
        field("tops_p50", &A::tops_p50, "TOPS"),
        field("sm_clock_median_mhz", &A::sm_clock_median_mhz, "MHz"),
        field("power_median_w", &A::power_median_w, "W"),
        field("temperature_median_c", &A::temperature_median_c, "degrees C"),
        field("power_limited_share", &A::power_limited_share, "of launches"),
        field("thermal_limited_share", &A::thermal_limited_share, "of launches"),
        field("sync_boost_share", &A::sync_boost_share, "of launches"),
        field("launch", &A::launch, "as the host function made it"),
        field("launch_kernel", &A::launch_kernel, "mangled name"),
        field("launch_dynamic_smem_bytes", &A::launch_dynamic_smem_bytes, "bytes"),
        field("launch_warps_per_scheduler", &A::launch_warps_per_scheduler, "warps")};
    return table;
}

toml::table ArmTimeFigures::to_toml() const { return write_fields(fields(), *this); }

ArmTimeFigures ArmTimeFigures::from_toml(const toml::table &t) { return read_fields(fields(), t); }

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

const std::vector<Field<RatioFigures>> &RatioFigures::fields() {
    using R = RatioFigures;
    static const std::vector<Field<R>> table{
        field("median", &R::median, "times the baseline"),
        field("ci_low", &R::ci_low, "times the baseline"),
        field("ci_high", &R::ci_high, "times the baseline"),
        field("half_width", &R::half_width, "fraction of the median"),
        field("resamples", &R::resamples, "count"),
        field("seed", &R::seed, "seed"),
        field("confidence", &R::confidence, "level"),
        field("repeat_medians", &R::repeat_medians, "times the baseline"),
        field("between_repeat_spread", &R::between_repeat_spread, "fraction of the median"),
        field("within_repeat_half_width", &R::within_repeat_half_width, "fraction of the median"),
        field("between_process_sd", &R::between_process_sd, "fraction of the median")};
    return table;
}

toml::table RatioFigures::to_toml() const { return write_fields(fields(), *this); }

RatioFigures RatioFigures::from_toml(const toml::table &t) { return read_fields(fields(), t); }

const std::vector<Field<CandidateTimeFigures>> &CandidateTimeFigures::fields() {
    using C = CandidateTimeFigures;
    static const std::vector<Field<C>> table{
        field("sha256", &C::sha256, "digest"),
        field("matches_baseline", &C::matches_baseline, "output"),
        field("timing", &C::timing, "arm"),
        field("ratio", &C::ratio, "candidate/baseline"),
        field("ncu", &C::ncu, "comparison"),
        field("parity_mode", &C::parity_mode, "mode"),
        field("accuracy", &C::accuracy, "against the reference"),
        field("vs_baseline", &C::vs_baseline, "against the baseline"),
        field("accuracy_passed", &C::accuracy_passed, "verdict"),
        field("accuracy_conditions", &C::accuracy_conditions, "conditions")};
    return table;
}

toml::table CandidateTimeFigures::to_toml() const { return write_fields(fields(), *this); }

CandidateTimeFigures CandidateTimeFigures::from_toml(const std::string &name, const toml::table &t) {
    return named_value_of<CandidateTimeFigures>(t, name);
}

const std::vector<Field<GpuCandidateTiming>> &GpuCandidateTiming::fields() {
    using G = GpuCandidateTiming;
    static const std::vector<Field<G>> table{field("name", &G::name, "candidate"),
                                             field("timing", &G::timing, "arm"),
                                             field("ratio", &G::ratio, "candidate/baseline")};
    return table;
}

const GpuCandidateTiming *GpuTimeResult::candidate(const std::string &wanted) const {
    for (const GpuCandidateTiming &c : candidates)
        if (c.name == wanted) return &c;
    return nullptr;
}

std::string GpuTimeResult::label() const {
    return "GPU " + (index ? std::to_string(*index) : std::string(missing_figure)) + " " + name;
}

const std::vector<Field<GpuTimeResult>> &GpuTimeResult::fields() {
    using G = GpuTimeResult;
    static const std::vector<Field<G>> table{
        field("index", &G::index, "GPU"),           field("name", &G::name, "GPU"),
        field("uuid", &G::uuid, "GPU"),             field("pci_bus_id", &G::pci_bus_id, "GPU"),
        field("baseline", &G::baseline, "arm"),     field("aa", &G::aa, "control/baseline"),
        field("candidates", &G::candidates, "one per candidate"), field("lost", &G::lost, "error")};
    return table;
}

const std::vector<Field<ArmRecheckFigures>> &ArmRecheckFigures::fields() {
    using R = ArmRecheckFigures;
    static const std::vector<Field<R>> table{field("rounds", &R::rounds, "rounds"),
                                             field("failed", &R::failed, "rounds")};
    return table;
}

const std::vector<Field<NcuRunFigures>> &NcuRunFigures::fields() {
    using N = NcuRunFigures;
    static const std::vector<Field<N>> table{field("exit_code", &N::exit_code, "status"),
                                             field("log", &N::log, "path"), field("report", &N::report, "path"),
                                             field("seconds", &N::seconds, "s")};
    return table;
}

const std::vector<Field<NcuFigures>> &NcuFigures::fields() {
    using N = NcuFigures;
    static const std::vector<Field<N>> table{
        field("requested", &N::requested, "option"), field("found", &N::found, "tool"),
        field("seconds", &N::seconds, "s"),          field("seq_len", &N::seq_len, "tokens"),
        named_map("runs", &N::runs, "by variant")};
    return table;
}

toml::table NcuFigures::to_toml() const { return write_fields(fields(), *this); }

NcuFigures NcuFigures::from_toml(const toml::table &t) { return read_fields(fields(), t); }

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

const std::vector<Field<TimeFigures>> &TimeFigures::fields() {
    using T = TimeFigures;
    static const std::vector<Field<T>> table{
        field("workload", &T::workload, "name"),
        field("shape", &T::shape, "shape"),
        field("device", &T::device, "GPU"),
        field("device_name", &T::device_name, "GPU"),
        field("gpus", &T::gpus, "one per GPU"),
        field("gpu_results", &T::gpu_results, "one per GPU, GPUs of several models"),
        field("arch", &T::arch, "arch"),
        field("sha256.baseline", &T::baseline_sha256, "digest"),
        field("sha256.expected", &T::expected_sha256, "digest"),
        field("sha256.match", &T::outputs_match, "outputs"),
        field("sha256.replaced_pin", &T::replaced_pin, "digest"),
        field("sha256.pinned_kernel", &T::pinned_kernel, "kernel"),
        field("sha256.recorded_pin", &T::recorded_pin, "pin"),
        field("baseline_accuracy", &T::baseline_accuracy, "against the reference"),
        field("baseline_accuracy_passed", &T::baseline_accuracy_passed, "verdict"),
        field("baseline_accuracy_conditions", &T::baseline_accuracy_conditions, "conditions"),
        field("baseline", &T::baseline, "arm"),
        field("baseline_control", &T::baseline_control, "arm"),
        field("aa", &T::aa, "control/baseline"),
        named_tables("candidates", "candidate_order", &T::candidates, "by name"),
        field("rounds", &T::rounds, "rounds"),
        field("throttled_rounds", &T::throttled_rounds, "rounds"),
        field("input_sets", &T::input_sets, "sets"),
        named_map("recheck", &T::recheck, "by arm"),
        field("stopped_by", &T::stopped_by, "rule"),
        field("l2_flushed", &T::l2_flushed, "L2"),
        field("footprint_bytes", &T::footprint_bytes, "bytes"),
        field("persisting_l2_max_bytes", &T::persisting_l2_max_bytes, "bytes"),
        field("between_process_basis", &T::between_process_basis, "calibration"),
        field("order_seed", &T::order_seed, "seed"),
        field("warmup_launches", &T::warmup_launches, "launches"),
        field("min_rounds", &T::min_rounds, "rounds"),
        field("repeats", &T::repeats, "processes"),
        field("target_half_width", &T::target_half_width, "fraction of the median"),
        field("budget_seconds", &T::budget_seconds, "s"),
        field("measure_seconds", &T::measure_seconds, "s"),
        field("sm_clock_mhz.min", &T::sm_clock_min_mhz, "MHz"),
        field("sm_clock_mhz.median", &T::sm_clock_median_mhz, "MHz"),
        field("sm_clock_mhz.max", &T::sm_clock_max_mhz, "MHz"),
        field("tensor_peak_tops", &T::tensor_peak_tops, "TOPS"),
        field("ncu", &T::ncu, "profiles"),
        field("summary", &T::summary, "line")};
    return table;
}

toml::table TimeFigures::to_toml() const { return write_fields(fields(), *this); }

TimeFigures TimeFigures::from_toml(const toml::table &t) { return read_fields(fields(), t); }

std::string interval_text(const RatioFigures &r, bool with_half_width) {
    return s2tp::interval_text(r.median, r.ci_low, r.ci_high, r.confidence,
                               with_half_width ? ", half-width " + percent_or_missing(r.half_width) : "");
}

std::string arm_conditions_text(const TimeFigures &f, bool only_if_different) {
    std::vector<std::pair<std::string, const ArmTimeFigures *>> arms;
    if (f.baseline) arms.emplace_back("baseline", &*f.baseline);
    for (const CandidateTimeFigures &c : f.candidates)
        if (c.timing) arms.emplace_back(c.name, &*c.timing);
    std::vector<std::optional<double>> clocks;
    for (const auto &[name, arm] : arms) clocks.push_back(arm->sm_clock_median_mhz);
    // 1%: far above what two arms of one kernel differed by at the power cap (1,813 against 1,814 MHz,
    // upstream's sm90 kernel against itself on an H100).
    const bool different = arms_at_different_clocks(clocks, 0.01);
    if (only_if_different && !different) return "";
    std::string clock_part, limit_part;
    bool limited = false;
    for (const auto &[name, arm] : arms) {
        if (!arm->sm_clock_median_mhz) continue;
        clock_part += (clock_part.empty() ? "" : ", ") + name + " " + fixed(*arm->sm_clock_median_mhz, 0) + " MHz" +
                      (arm->power_median_w ? " at " + fixed(*arm->power_median_w, 0) + " W" : "");
        limit_part += (limit_part.empty() ? "" : ", ") + name + " " +
                      (arm->power_limited_share ? fixed(*arm->power_limited_share * 100, 0) + "%" : missing_figure);
        limited = limited || arm->power_limited_share.value_or(0) > 0;
    }
    if (clock_part.empty()) return "";
    std::string text = (different ? "the arms ran at different SM clocks (median): " : "SM clock (median): ") + clock_part;
    if (limited) text += "; launches held back by the power limit: " + limit_part;
    return text;
}

std::string recheck_text(const TimeFigures &f) {
    if (f.recheck.empty()) return "timed outputs not re-checked (recorded by a sage2tp that did not)";
    std::string arms;
    std::int64_t most = 0;
    const auto add = [&](const std::string &name) {
        const auto found = f.recheck.find(name);
        if (found == f.recheck.end()) return;
        const ArmRecheckFigures &r = found->second;
        most = std::max(most, r.rounds.value_or(0));
        arms += (arms.empty() ? "" : ", ") + name + " " + count_or_missing(r.rounds) +
                (r.failed.value_or(0) > 0 ? " (" + std::to_string(*r.failed) + " failed)" : "");
    };
    add("baseline");
    add("baseline_control");
    for (const CandidateTimeFigures &c : f.candidates) add(c.name);
    return "outputs poisoned before every timed launch, rounds on " + count_or_missing(f.input_sets) +
           " input sets; re-checked after up to " + std::to_string(most) + " rounds: " + arms;
}

std::string time_figures_text(const TimeFigures &f, const std::string &plot) {
    std::ostringstream out;
    out << with_gpu_table("  " + f.workload.value_or(missing_figure) + ": " + f.shape.value_or(missing_figure) +
                              " on " + f.device_name.value_or(missing_figure),
                          f.gpus);
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
    const std::vector<std::string> per_gpu = gpu_result_lines(f);
    if (!per_gpu.empty()) out << "\n  GPUs of several models, a verdict per GPU:";
    for (const std::string &line : per_gpu) out << "\n    " << line;
    const bool timed = f.baseline.has_value() || std::any_of(f.candidates.begin(), f.candidates.end(),
                                                             [](const CandidateTimeFigures &c) { return c.ratio; });
    if (!timed) {
        // A failed re-check can end sampling before there is an interval: what was checked still shows.
        if (!f.recheck.empty()) out << "\n  " << recheck_text(f);
        return out.str() + ncu_text();
    }

    TextTable arms{{{"ARM"},
                    {"P10 ms", Align::right},
                    {"P50 ms", Align::right},
                    {"P90 ms", Align::right},
                    {"MEAN ms", Align::right},
                    {"STDEV ms", Align::right},
                    {"N", Align::right},
                    {"TOPS (p50)", Align::right}},
                   {}};
    const auto row = [&](const std::string &name, const std::optional<ArmTimeFigures> &arm) {
        const ArmTimeFigures a = arm.value_or(ArmTimeFigures{});
        arms.rows.push_back({name, fixed_or_missing(a.p10, 3), fixed_or_missing(a.p50, 3), fixed_or_missing(a.p90, 3),
                             fixed_or_missing(a.mean, 3), fixed_or_missing(a.stdev, 3), count_or_missing(a.n),
                             fixed_or_missing(a.tops_p50, 1)});
    };
    row("baseline", f.baseline);
    for (const CandidateTimeFigures &c : f.candidates) row(c.name, c.timing);
    std::string arm_lines = table_text(arms, TextLayout{"  ", 2});
    arm_lines.pop_back();  // the lines below each start with their own newline
    out << "\n" << arm_lines;
    for (const CandidateTimeFigures &c : f.candidates)
        if (c.ratio) out << "\n  " << c.name << "/baseline " << interval_text(*c.ratio, true) << repeats_text(*c.ratio);
    if (f.aa) out << "\n  A/A control/baseline " << interval_text(*f.aa, true) << repeats_text(*f.aa);
    for (const CandidateTimeFigures &c : f.candidates)
        if (c.ratio && c.ratio->between_process_sd) {
            out << "\n  candidate intervals include a between-process sd of " << fixed(*c.ratio->between_process_sd * 100, 2)
                << "% (" << f.between_process_basis.value_or(missing_figure) << "); --repeat measures it instead";
            break;
        }
    out << "\n  " << count_or_missing(f.rounds) << " rounds";
    if (f.repeats && *f.repeats > 1) out << " in " << *f.repeats << " processes";
    out << ", " << count_or_missing(f.throttled_rounds) << " dropped as throttled";
    out << "\n  " << recheck_text(f);
    out << "; SM clock "
        << fixed_or_missing(f.sm_clock_min_mhz, 0) << " .. " << fixed_or_missing(f.sm_clock_max_mhz, 0)
        << " MHz (median " << fixed_or_missing(f.sm_clock_median_mhz, 0)
        << (f.tensor_peak_tops ? ", dense tensor peak there " + fixed(*f.tensor_peak_tops, 0) + " TOPS" : std::string())
        << "); stopped by "
        << f.stopped_by.value_or(missing_figure) << (f.l2_flushed.value_or(false) ? "; L2 flushed before each launch" : "");
    if (const std::string conditions = arm_conditions_text(f, false); !conditions.empty()) out << "\n  " << conditions;
    for (const CandidateTimeFigures &c : f.candidates)
        if (c.ratio && c.ratio->median) {
            out << "\n  " << speed_in_words(*c.ratio->median, c.name);
        }
    if (!plot.empty()) out << "\n  plot: " << plot;
    return out.str() + ncu_text();
}

std::vector<std::string> gpu_result_lines(const TimeFigures &f) {
    std::vector<std::string> lines;
    for (const GpuTimeResult &g : f.gpu_results) {
        const std::string who = g.label() + (g.uuid.empty() ? "" : " (" + g.uuid + ")");
        if (g.candidates.empty()) {
            lines.push_back(who + ": " + (g.lost.empty() ? "no interval (too few rounds)" : "LOST, no verdict: " + g.lost));
            continue;
        }
        const std::string aa = g.aa ? ", A/A " + fixed_or_missing(g.aa->median, 4) : std::string();
        for (const GpuCandidateTiming &c : g.candidates)
            lines.push_back(who + ": " + c.name + "/baseline " +
                            (c.ratio ? interval_text(*c.ratio, false) : std::string(missing_figure)) + ", p50 " +
                            fixed_or_missing(g.baseline ? g.baseline->p50 : std::nullopt, 3) + " -> " +
                            fixed_or_missing(c.timing ? c.timing->p50 : std::nullopt, 3) + " ms, n = " +
                            count_or_missing(c.timing ? c.timing->n : std::nullopt) + aa +
                            (g.lost.empty() ? "" : "; then LOST: " + g.lost));
    }
    return lines;
}

}  // namespace s2tp
