// sage2tp time: options and wiring of the time stage (stages/time_stage.h): the baseline, its A/A
// control and every candidate on the run's real workload, interleaved, in one process per repeat.
#include "stage_options.h"

#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"
#include "stages/time_stage.h"
#include "support/errors.h"
#include "support/number_format.h"

#include <cmath>

namespace fs = std::filesystem;

namespace s2tp {

int time_command(const Args &args) {
    CommandLine cl("time", "Time the baseline and every candidate on the real workload, interleaved, with an A/A "
                           "control.", args);
    add_stage_options(cl, Stage::time);
    cl.add_options()
        ("min-rounds", "sample at least this many rounds in each repeat (default: the manifest's [time] min_rounds)",
         cxxopts::value<double>(), "N")
        ("repeat", "measure N times, each in a fresh process, and combine them (default: the manifest's [time] "
                   "repeats)", cxxopts::value<double>(), "N")
        ("workload", "time on the workload of this file (a [workload] table, as in data/workloads/) instead of "
                     "the manifest's", cxxopts::value<std::string>(), "FILE")
        ("pin", "record the baseline's output SHA-256 in the run's manifest as the expected one for this arch "
                "(times again, like --force)")
        ("ncu", "also profile one launch of each variant with Nsight Compute into reports/ (or RUN_NCU=1)")
        ("repeat-child", "internal: one repeat of a --repeat run, written to FILE", cxxopts::value<std::string>(), "FILE")
        ("order-seed", "internal: the round-order seed of a --repeat-child", cxxopts::value<std::uint64_t>(), "N");
    add_option(cl, force_option("run"));
    if (!cl.parse()) return 0;
    const Reporter &reporter = cl.reporter();
    // A repeat's child reads the run its parent holds (no lock, no checkpoint), with the values its
    // parent derived: nothing in its request was typed by a user, so no user range applies to it.
    if (cl.has("repeat-child")) {
        run_repeat_child(RepeatChildRequest::from_args(cl, require_existing_run(cl.selection())), reporter);
        return 0;
    }
    if (cl.has("order-seed"))
        fail(ExitCode::usage, "--order-seed is internal to --repeat-child; the order seed is [time] bootstrap_seed");

    TimeRequest request;
    request.device_index = device_index(cl);
    request.pin = cl.has("pin");
    request.ncu = cl.has("ncu") || ncu_switched_on();
    request.force = cl.has("force");
    // The ranges of the manifest's [time] table.
    const auto flag = [&](const SettingRange &range) {
        return cl.has(range.flag) ? std::optional<double>(checked_setting(range, cl.result()[range.flag].as<double>()))
                                  : std::nullopt;
    };
    // --pin records into the run's own manifest, which another workload's output does not belong to.
    if (request.pin && cl.has("workload"))
        fail(ExitCode::usage, "--pin records the manifest's workload output; it cannot be combined with --workload");
    request.overrides.target_half_width = flag(time_target_half_width_range);
    request.overrides.budget_seconds = flag(time_budget_seconds_range);
    if (const auto rounds = flag(time_min_rounds_range)) request.overrides.min_rounds = static_cast<std::size_t>(*rounds);
    if (const auto repeats = flag(time_repeats_range)) request.repeats = static_cast<std::size_t>(*repeats);
    if (cl.has("workload")) request.workload_file = fs::absolute(cl.result()["workload"].as<std::string>());

    StageContext context(Stage::time, require_existing_run(cl.selection()));
    // Timing one shape of a set and judging the change by it is what sets exist to prevent.
    if (context.experiment().workload_set && !request.workload_file)
        fail(ExitCode::usage, "time: the run's workload is the set '" + context.experiment().workload_set->name +
                                  "', and timing over a set is not built yet; time one of its shapes with --workload FILE");
    return static_cast<int>(run_stage(context, time_stage_work(context, request, reporter), reporter));
}

}  // namespace s2tp
