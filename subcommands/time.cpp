// sage2tp time: options and wiring of the time stage (stages/time_stage.h): the baseline, its A/A
// control and every candidate on the run's real workload, interleaved, in one process per repeat.
#include "subcommands.h"

#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"
#include "stages/time_set.h"
#include "stages/time_stage.h"
#include "support/errors.h"
#include "support/number_format.h"

#include <cmath>
#include <cstdlib>

namespace fs = std::filesystem;

namespace s2tp {

int time_command(const Args &args) {
    CommandLine cl("time", "Time the baseline and every candidate on the real workload, interleaved, with an A/A "
                           "control.", args);
    cl.add_options()
        ("target-half-width", "stop once every candidate's 95% interval half-width (relative) is below this "
                              "(default: the manifest's [time] target_half_width)", cxxopts::value<double>(), "F")
        ("budget", "stop sampling after this many seconds in all, split evenly among the repeats (default: the "
                   "manifest's [time] budget_seconds)", cxxopts::value<double>(), "SECONDS")
        ("min-rounds", "sample at least this many rounds in each repeat (default: the manifest's [time] min_rounds)",
         cxxopts::value<double>(), "N")
        ("repeat", "measure N times, each in a fresh process, and combine them (default: the manifest's [time] "
                   "repeats)", cxxopts::value<double>(), "N")
        ("workload", "time on the workload of this file (a [workload] table, as in data/workloads/) instead of "
                     "the manifest's", cxxopts::value<std::string>(), "FILE")
        ("workload-set", "time over every shape of this workload set (a shipped set's name, or a set file) "
                         "instead of the manifest's workload", cxxopts::value<std::string>(), "NAME|FILE")
        ("pin", "record the baseline's output SHA-256 in the run's manifest as the expected one for this arch "
                "(times again, like --force)")
        ("ncu", "also profile one launch of each variant with Nsight Compute into reports/ (or RUN_NCU=1)")
        ("device", "GPU index within CUDA_VISIBLE_DEVICES", cxxopts::value<int>()->default_value("0"), "N")
        ("force", "run even when the checkpoint is up to date")
        ("repeat-child", "internal: one repeat of a --repeat run, written to FILE", cxxopts::value<std::string>(), "FILE")
        ("order-seed", "internal: the round-order seed of a --repeat-child", cxxopts::value<std::uint64_t>(), "N");
    if (!cl.parse()) return 0;
    const Reporter &reporter = cl.reporter();
    // A repeat's child reads the run its parent holds (no lock, no checkpoint), with the values its
    // parent derived: nothing in its request was typed by a user, so no user range applies to it.
    if (cl.has("repeat-child")) {
        const RepeatChildRequest request = RepeatChildRequest::from_args(cl, require_existing_run(cl.selection()));
        run_repeat_child(request, reporter);
        reporter.emit_json(toml::table{{"command", "time"}, {"status", "measured"},
                                       {"measurement_file", request.measurement_file.string()}});
        return 0;
    }
    if (cl.has("order-seed"))
        fail(ExitCode::usage, "--order-seed is internal to --repeat-child; the order seed is [time] bootstrap_seed");

    const int device_index = cl.result()["device"].as<int>();
    const bool pin = cl.has("pin");
    const char *run_ncu_env = std::getenv("RUN_NCU");
    const bool ncu = cl.has("ncu") || (run_ncu_env && std::string(run_ncu_env) == "1");
    // The ranges of the manifest's [time] table.
    const auto flag = [&](const SettingRange &range) {
        return cl.has(range.flag) ? std::optional<double>(checked_setting(range, cl.result()[range.flag].as<double>()))
                                  : std::nullopt;
    };
    // --pin records into the run's own manifest, which another workload's output does not belong to.
    if (pin && cl.has("workload"))
        fail(ExitCode::usage, "--pin records the manifest's workload output; it cannot be combined with --workload");
    TimeOverrides overrides{flag(time_target_half_width_range), flag(time_budget_seconds_range), std::nullopt,
                            std::nullopt};
    if (const auto rounds = flag(time_min_rounds_range)) overrides.min_rounds = static_cast<std::size_t>(*rounds);
    const std::optional<double> repeat_flag = flag(time_repeats_range);
    const std::optional<fs::path> workload_file =
        cl.has("workload") ? std::optional<fs::path>(fs::absolute(cl.result()["workload"].as<std::string>())) : std::nullopt;

    if (cl.has("workload-set") && workload_file)
        fail(ExitCode::usage, "--workload-set and --workload each name what to time; give one of them");

    // A set (--workload-set, else the manifest's unless --workload names one shape) is timed shape by
    // shape. One named on the command line is read, and the options it refuses checked, before the run.
    const auto refuse_one_workload_options = [&](const WorkloadSet &set) {
        if (pin)
            fail(ExitCode::usage, "time --pin records one workload's pin in the run's pins file; the shapes of the set '" +
                                      set.name + "' are pinned in their set entries' [workload.expected_sha256]");
        if (cl.has("ncu"))
            fail(ExitCode::usage, "time --ncu profiles one workload; over the set '" + set.name +
                                      "', profile one of its shapes with --workload FILE --ncu");
        if (ncu) reporter.warn("time: RUN_NCU=1 does not apply to a workload set; profile one shape with --workload FILE --ncu");
    };
    std::optional<WorkloadSet> set;
    if (cl.has("workload-set")) {
        set = load_workload_set(workload_set_file(cl.result()["workload-set"].as<std::string>(), fs::current_path()));
        refuse_one_workload_options(*set);
    }
    StageContext context(Stage::time, require_existing_run(cl.selection()));
    RunDirectory &run = context.run();
    if (!set && !workload_file && context.experiment().workload_set) {
        set = context.experiment().workload_set;
        refuse_one_workload_options(*set);
    }
    if (set) {
        const std::optional<std::size_t> repeats =
            repeat_flag ? std::optional<std::size_t>(static_cast<std::size_t>(*repeat_flag)) : std::nullopt;
        return static_cast<int>(time_set_command(
            context, TimeSetRequest{std::move(*set), overrides, repeats, cl.has("force"), device_index}, reporter));
    }
    const ResolvedTimeInputs resolved =
        resolve_time_inputs(run, context.states(), context.experiment(), overrides, workload_file);
    const Experiment &experiment = resolved.experiment;
    const BuiltKernels &kernels = resolved.kernels;
    const std::optional<std::string> &expected_sha = resolved.expected_sha256;
    const std::size_t repeats = static_cast<std::size_t>(repeat_flag.value_or(static_cast<double>(experiment.repeats)));

    std::optional<DeviceFacts> device;
    try {
        device = require_gpu("time", device_index);
    } catch (const Error &e) {
        // A run timed on a GPU host and copied back stays up to date here; anything else needs the GPU.
        if (e.code() != ExitCode::missing_tool) throw;
        if (!cl.has("force") && !pin && !ncu) {
            StageWork keep{Stage::time, {}, {}, [&](const Checkpoint &c) { return verify_time_outputs(c, run, expected_sha, kernels.arch); },
                           print_time};
            if (auto kept = keep_intact_checkpoint(context, keep, "no GPU here to time on again", reporter))
                return static_cast<int>(*kept);
        }
        stop_if_no_gpu(Stage::time, run, kernels.arch);
        throw;
    }
    require_kernels_for_device("time", kernels, *device);
    const TimeStageInputs inputs{run, resolved.workload, workload_file, kernels, *device, resolved.settings,
                                 repeats, expected_sha, pin, ncu, experiment.ncu_metrics, experiment.ncu_seq_len,
                                 device_index, time_accuracy(experiment)};
    StageWork work{Stage::time, [&](Fingerprint &f) { add_time_inputs(f, inputs); },
                   [&] { return run_time_stage(inputs, reporter); },
                   [&](const Checkpoint &c) { return verify_time_outputs(c, run, expected_sha, kernels.arch); },
                   print_time};
    return static_cast<int>(execute_stage(context, work, cl.has("force") || pin, reporter));
}

}  // namespace s2tp
