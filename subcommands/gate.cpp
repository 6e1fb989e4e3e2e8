// sage2tp gate: options and wiring of the gate stage (stages/gate_stage.h): a verdict per candidate and
// one overall verdict from the run's checkpoints.
#include "subcommands.h"

#include "pipeline/cli.h"
#include "pipeline/common_options.h"
#include "pipeline/stage_pipeline.h"
#include "stages/gate_stage.h"
#include "support/errors.h"

#include <charconv>
#include <optional>
#include <system_error>

namespace s2tp {

int gate_command(const Args &args) {
    CommandLine cl("gate",
                   "Turn every checkpoint into a verdict per candidate and one overall verdict. Needs a passed, "
                   "fresh time checkpoint; 'sage2tp status' shows a run that stopped earlier.",
                   args);
    cl.add_options()
        ("max-p50-ms", "the candidate's p50 must be below this (default: the manifest's [gate] max_candidate_p50_ms)",
         cxxopts::value<double>(), "MS")
        ("max-spill-growth-bytes", "candidate spill bytes minus the baseline's may be at most this "
                                   "(default: the manifest's max_spill_growth_bytes)",
         cxxopts::value<double>(), "BYTES")
        ("max-ratio", "relative speed gate: the candidate/baseline ratio interval must lie entirely below this, "
                      "or 'off' (default: the manifest's max_ratio_upper; 1.0, faster, when it sets none, and off only "
                      "when it says \"off\")",
         cxxopts::value<std::string>(), "RATIO|off")
        ("max-geomean-ratio", "over a workload set: the geometric-mean ratio interval must lie entirely below this "
                              "(default: the manifest's max_geomean_ratio_upper, else off)",
         cxxopts::value<double>(), "RATIO")
        ("max-worst-ratio", "over a workload set: every shape's ratio interval must lie entirely below this "
                            "(default: the manifest's max_worst_ratio_upper, else off)",
         cxxopts::value<double>(), "RATIO")
        ("require-sanitizer", "a skipped sanitizer fails the gate (=false to allow it; default: the manifest's)",
         cxxopts::value<bool>(), "BOOL");
    add_option(cl, force_option("evaluate"));
    if (!cl.parse()) return 0;
    // The ranges of the manifest's [gate] table.
    const auto flag = [&](const SettingRange &range) {
        return cl.has(range.flag) ? std::optional<double>(checked_setting(range, cl.result()[range.flag].as<double>()))
                                  : std::nullopt;
    };
    GateRequest request;
    GateOverrides &overrides = request.overrides;
    overrides.max_candidate_p50_ms = flag(gate_max_candidate_p50_ms_range);
    if (const auto spill = flag(gate_max_spill_growth_bytes_range))
        overrides.max_spill_growth_bytes = static_cast<std::int64_t>(*spill);
    if (cl.has("max-ratio")) {
        const std::string word = cl.result()["max-ratio"].as<std::string>();
        overrides.max_ratio_off = word == "off";
        if (!overrides.max_ratio_off) {
            double value = 0;
            const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
            if (error != std::errc() || end != word.data() + word.size())
                fail(ExitCode::usage, "--max-ratio '" + word + "': expected a ratio such as 1.0, or off");
            overrides.max_ratio_upper = checked_setting(gate_max_ratio_upper_range, value);
        }
    }
    overrides.max_geomean_ratio_upper = flag(gate_max_geomean_ratio_upper_range);
    overrides.max_worst_ratio_upper = flag(gate_max_worst_ratio_upper_range);
    if (cl.has("require-sanitizer")) overrides.require_sanitizer = cl.result()["require-sanitizer"].as<bool>();

    std::optional<StageContext> opened;
    try {
        opened.emplace(Stage::gate, require_existing_run(cl.selection()));
    } catch (const Error &e) {
        if (e.code() != ExitCode::precondition) throw;
        fail(ExitCode::precondition, std::string(e.what()) + " ('sage2tp status' shows every stage of this run)");
    }
    request.force = cl.has("force");
    return static_cast<int>(run_stage(*opened, gate_stage_work(*opened, request, cl.reporter()), cl.reporter()));
}

}  // namespace s2tp
