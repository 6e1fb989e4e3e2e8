// sage2tp time: options and wiring of the time stage (stages/time/stage.h): the baseline, its A/A
// control and every candidate on the run's real workload, interleaved, in one process per repeat; over
// a workload set, every shape so (stages/time/set.h).
#include "stage_options.h"

#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"
#include "stages/time/set.h"
#include "stages/time/stage.h"
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
        ("workload-set", "time over every shape of this workload set (a shipped set's name, or a set file) "
                         "instead of the manifest's workload", cxxopts::value<std::string>(), "NAME|FILE")
        ("pin", "record the baseline's output SHA-256 in the run's pins.toml as its kernel's expected one on "
                "this arch (times again, like --force)")
        ("ncu", "also profile one launch of each variant with Nsight Compute into reports/ (or RUN_NCU=1)");
    add_option(cl, force_option("run"));
    if (!cl.parse()) return 0;
    const Reporter &reporter = cl.reporter();
    TimeRequest request;
    request.devices = selected_devices(cl);
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

    if (cl.has("workload-set") && request.workload_file)
        fail(ExitCode::usage, "--workload-set and --workload each name what to time; give one of them");

    // A set (--workload-set, else the manifest's unless --workload names one shape) is timed shape by
    // shape. One named on the command line is read, and the options it refuses checked, before the run.
    const auto refuse_one_workload_options = [&](const WorkloadSet &set) {
        if (request.pin)
            fail(ExitCode::usage, "time --pin records one workload's pin in the run's pins file; the shapes of the set '" +
                                      set.name + "' are pinned in their set entries' [workload.expected_sha256]");
        if (cl.has("ncu"))
            fail(ExitCode::usage, "time --ncu profiles one workload; over the set '" + set.name +
                                      "', profile one of its shapes with --workload FILE --ncu");
        if (request.ncu)
            reporter.warn("time: RUN_NCU=1 does not apply to a workload set; profile one shape with --workload FILE --ncu");
    };
    std::optional<WorkloadSet> set;
    if (cl.has("workload-set")) {
        set = load_workload_set(workload_set_file(cl.result()["workload-set"].as<std::string>(), fs::current_path()));
        refuse_one_workload_options(*set);
    }
    StageContext context(Stage::time, require_existing_run(cl.selection()));
    if (!set && !request.workload_file && context.experiment().workload_set) {
        set = context.experiment().workload_set;
        refuse_one_workload_options(*set);
    }
    if (set) {
        const TimeSetRequest set_request{std::move(*set), request.overrides, request.repeats, request.force,
                                         request.devices};
        return static_cast<int>(run_stage(context, time_set_stage_work(context, set_request, reporter), reporter));
    }
    return static_cast<int>(run_stage(context, time_stage_work(context, request, reporter), reporter));
}

}  // namespace s2tp
