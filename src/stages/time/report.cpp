#include "stages/time/report.h"

#include "formats/svg_plot.h"
#include "stages/time/processes.h"
#include "support/file_io.h"
#include "support/number_format.h"

#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {

namespace {

toml::array rounds_array(const std::vector<TimingRun> &repeats, const std::vector<std::string> &arms) {
    toml::array rounds;
    for (std::size_t r = 0; r < repeats.size(); ++r)
        for (std::size_t i = 0; i < repeats[r].rounds.size(); ++i) {
            const InterleavedRound &round = repeats[r].rounds[i];
            toml::array order;
            for (Arm arm : round.order) order.push_back(arms[arm]);
            // The samples by arm name in a table of their own: a candidate may be named like a round's key.
            toml::table samples;
            for (Arm arm = 0; arm < arms.size(); ++arm)
                samples.insert(arms[arm], toml::table{{"time_ms", round[arm].time_ms},
                                                      {"sm_clock_mhz", round[arm].sm_clock_mhz}});
            rounds.push_back(toml::table{{"repeat", static_cast<std::int64_t>(r + 1)},
                                         {"round", static_cast<std::int64_t>(i)},
                                         {"order", order},
                                         {"throttled", round.throttled},
                                         {"samples", samples}});
        }
    return rounds;
}

std::string in_processes(std::size_t repeats) {
    return repeats > 1 ? " in " + std::to_string(repeats) + " processes" : std::string();
}

}  // namespace

fs::path write_time_plot(const TimeStageInputs &in, const TimeFigures &f, const TimingStats &stats,
                         const std::vector<std::string> &arms, const std::vector<TimingRun> &runs, std::size_t kept,
                         double aa_band) {
    TimePlot plot;
    plot.title = "sage2tp time: " + in.workload.name;
    plot.subtitle = *f.shape + " on " + in.device.name + "; " + std::to_string(kept) + " rounds kept" +
                    in_processes(process_count(in)) + ", " + std::to_string(*f.throttled_rounds) + " throttled; stopped by " +
                    *f.stopped_by;
    for (Arm arm = 0; arm < arms.size(); ++arm) {
        std::vector<double> times;
        for (const TimingRun &run : runs) {
            const std::vector<double> t = kept_times(run.rounds, arm);
            times.insert(times.end(), t.begin(), t.end());
        }
        plot.arms.push_back({arms[arm], times});
        if (arm >= first_candidate_arm) plot.ratios.push_back({arms[arm], stats.vs_baseline(arm)});
    }
    plot.baseline_vs_baseline = stats.control_vs_baseline();
    plot.aa_tolerance = aa_band;
    if (plot.ratios.empty()) plot.ratios.push_back({arms[control_arm], plot.baseline_vs_baseline});  // an A/A run
    const fs::path svg = in.run.reports() / (in.report_name + ".svg");
    fs::create_directories(in.run.reports());
    write_file_atomically(svg, render_time_plot_svg(plot));
    return svg;
}

std::string timed_summary(const TimeStageInputs &in, const TimingStats &stats, const std::vector<std::string> &arms,
                          std::size_t kept, bool too_noisy) {
    std::ostringstream summary;
    summary << in.workload.name << ":";
    for (Arm arm = first_candidate_arm; arm < arms.size(); ++arm) {
        summary << (arm > first_candidate_arm ? ";" : "") << " " << arms[arm] << "/baseline "
                << interval_text(stats.vs_baseline(arm)) << ", p50 " << fixed(stats[baseline_arm].p50, 2)
                << " -> " << fixed(stats[arm].p50, 2) << " ms";
    }
    summary << ", A/A " << fixed(stats.control_vs_baseline().median, 4) << (too_noisy ? " (too noisy)" : "") << ", "
            << kept << " rounds" << in_processes(process_count(in));
    return summary.str();
}

fs::path write_json_report(const TimeStageInputs &in, const TimeFigures &f, const std::vector<std::string> &arms,
                           const ArmMeasurement &reference, const std::vector<TimingRun> &runs, bool stable) {
    toml::array arm_list;
    for (const std::string &name : arms) arm_list.push_back(name);
    toml::table report{{"workload", in.workload.name},
                       {"shape", *f.shape},
                       {"problem", in.workload.problem.describe()},
                       {"device", in.device.summary()},
                       {"device_uuid", in.device.uuid},
                       {"reference_sm_clock_mhz", in.device.sm_clock_khz / 1000.0},
                       {"throttle_fraction", in.settings.throttle_fraction},
                       {"l2_flushed", reference.l2_flushed},
                       {"footprint_bytes", static_cast<std::int64_t>(reference.footprint_bytes)},
                       {"warmup_launches", static_cast<std::int64_t>(in.settings.warmup_launches)},
                       {"order_seed", static_cast<std::int64_t>(in.settings.order_seed)},
                       {"repeats", static_cast<std::int64_t>(in.repeats)},
                       {"arms", arm_list},
                       {"stopped_by", *f.stopped_by},
                       {"seconds", *f.measure_seconds},
                       {"rounds", rounds_array(runs, arms)}};
    if (f.baseline) {
        const toml::table figures = f.to_toml();
        for (const char *key : {"baseline", "baseline_control", "aa", "candidates", "sm_clock_mhz"})
            report.insert(std::string("stats_") + key, *figures[key].as_table());
    }
    report.insert("sha256", toml::table{{"baseline", reference.first.at(baseline_arm).sha256}, {"match", stable}});
    const fs::path json = in.run.reports() / (in.report_name + ".json");
    fs::create_directories(in.run.reports());
    std::ostringstream json_text;
    json_text << toml::json_formatter{report} << "\n";
    write_file_atomically(json, json_text.str());
    return json;
}

}  // namespace s2tp
