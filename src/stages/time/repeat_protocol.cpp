#include "stages/time/repeat_protocol.h"

#include "gpu/gpu_runtime.h"
#include "model/device_sharding.h"
#include "pipeline/common_options.h"
#include "stages/time/processes.h"
#include "stages/time/stop_rule.h"
#include "support/errors.h"
#include "support/file_io.h"
#include "support/number_format.h"
#include "support/process_runner.h"
#include "support/statistics.h"
#include "tools/gpu_session/gpu_session.h"

#include <chrono>
#include <cmath>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {

const char *const repeat_child_command = "time-repeat";

namespace {

// One arm's launch in the measurement file; its warps per scheduler only where the driver said.
toml::table launch_table(const ArmLaunch &launch) {
    toml::table t{{"shape", launch.shape}, {"kernel", launch.kernel}, {"dynamic_smem_bytes", launch.dynamic_smem_bytes}};
    if (launch.warps_per_scheduler) t.insert("warps_per_scheduler", *launch.warps_per_scheduler);
    return t;
}

toml::array digests_array(const std::vector<OutputDigest> &digests) {
    toml::array array;
    for (const OutputDigest &d : digests) array.push_back(toml::table{{"sha256", d.sha256}, {"unwritten", d.nan_count}});
    return array;
}

std::vector<OutputDigest> digests_from(const toml::node_view<const toml::node> node) {
    std::vector<OutputDigest> digests;
    if (const toml::array *array = node.as_array())
        for (const toml::node &entry : *array) {
            const toml::table *t = entry.as_table();
            if (!t) continue;
            digests.push_back({(*t)["sha256"].value_or(std::string()), (*t)["unwritten"].value_or<std::int64_t>(0)});
        }
    return digests;
}

}  // namespace

toml::table ArmMeasurement::to_toml() const {
    toml::array rounds;
    for (const InterleavedRound &round : timing.rounds) {
        toml::array order, times, clocks, reasons, watts, celsius;
        for (Arm arm : round.order) order.push_back(static_cast<std::int64_t>(arm));
        // NVML's readings: -1 and NaN where it gave none.
        for (const LaunchSample &sample : round.samples) {
            times.push_back(sample.time_ms);
            clocks.push_back(sample.sm_clock_mhz);
            reasons.push_back(sample.power.clock_reasons ? static_cast<std::int64_t>(*sample.power.clock_reasons) : -1);
            watts.push_back(sample.power.power_w.value_or(std::nan("")));
            celsius.push_back(sample.power.temperature_c.value_or(std::nan("")));
        }
        rounds.push_back(toml::table{{"order", order},
                                     {"time_ms", times},
                                     {"sm_clock_mhz", clocks},
                                     {"clock_reasons", reasons},
                                     {"power_w", watts},
                                     {"temperature_c", celsius},
                                     {"throttled", round.throttled},
                                     {"input_set", static_cast<std::int64_t>(round.input_set)},
                                     {"rechecked", round.rechecked}});
    }
    toml::array recheck_failures;
    for (const RecheckFailure &failure : timing.recheck_failures)
        recheck_failures.push_back(toml::table{{"round", static_cast<std::int64_t>(failure.round)},
                                               {"input_set", static_cast<std::int64_t>(failure.input_set)},
                                               {"arm", static_cast<std::int64_t>(failure.arm)},
                                               {"what", failure.what}});
    toml::array set_failures;
    for (const std::string &reason : input_set_failures) set_failures.push_back(reason);
    toml::array launched;  // an empty table for an arm launched from its cubin
    for (const std::optional<ArmLaunch> &launch : launches)
        launched.push_back(launch ? launch_table(*launch)
                                  : toml::table{});
    toml::array arm_accuracy;
    for (const ArmAccuracy &a : accuracy) {
        toml::table t{{"tolerance", a.tolerance}, {"conditions", a.conditions}};
        if (a.passed) t.insert("passed", *a.passed);
        if (a.reference) t.insert("reference", a.reference->to_toml());
        if (a.vs_baseline) t.insert("vs_baseline", a.vs_baseline->to_toml());
        arm_accuracy.push_back(std::move(t));
    }
    return toml::table{{"first", digests_array(first)},
                       {"input_set_failures", set_failures},
                       {"launches", launched},
                       {"accuracy", arm_accuracy},
                       {"footprint_bytes", static_cast<std::int64_t>(footprint_bytes)},
                       {"l2_flushed", l2_flushed},
                       {"stopped_by", stop_reason_name(timing.stopped_by)},
                       {"stop_checks", static_cast<std::int64_t>(timing.stop_checks)},
                       {"seconds", timing.seconds},
                       {"input_sets", static_cast<std::int64_t>(timing.input_sets)},
                       {"recheck_failures", recheck_failures},
                       {"rounds", rounds}};
}

ArmMeasurement ArmMeasurement::from_toml(const toml::table &t, const std::string &where) {
    ArmMeasurement m;
    m.first = digests_from(t["first"]);
    if (m.first.empty()) fail(ExitCode::internal, where + ": no output record");
    if (const toml::array *reasons = t["input_set_failures"].as_array())
        for (const toml::node &reason : *reasons) m.input_set_failures.push_back(reason.value_or(std::string()));
    if (const toml::array *launched = t["launches"].as_array())
        for (const toml::node &node : *launched) {
            const toml::table *l = node.as_table();
            if (l && l->contains("shape"))
                m.launches.push_back(ArmLaunch{(*l)["shape"].value_or(std::string()), (*l)["kernel"].value_or(std::string()),
                                               (*l)["dynamic_smem_bytes"].value_or<std::int64_t>(0),
                                               (*l)["warps_per_scheduler"].value<double>()});
            else
                m.launches.push_back(std::nullopt);
        }
    if (const toml::array *accuracy = t["accuracy"].as_array())
        for (const toml::node &node : *accuracy) {
            const toml::table *a = node.as_table();
            if (!a) continue;
            ArmAccuracy arm{(*a)["tolerance"].value_or(false), std::nullopt, std::nullopt, (*a)["passed"].value<bool>(),
                            (*a)["conditions"].value_or(std::string())};
            if (const toml::table *r = (*a)["reference"].as_table()) arm.reference = AccuracyFigure::from_toml(*r);
            if (const toml::table *r = (*a)["vs_baseline"].as_table()) arm.vs_baseline = AccuracyFigure::from_toml(*r);
            m.accuracy.push_back(std::move(arm));
        }
    m.footprint_bytes = static_cast<std::size_t>(t["footprint_bytes"].value_or<std::int64_t>(0));
    m.l2_flushed = t["l2_flushed"].value_or(false);
    m.timing.stopped_by = stop_reason_of(t["stopped_by"].value_or(std::string()));
    m.timing.stop_checks = static_cast<std::size_t>(t["stop_checks"].value_or<std::int64_t>(0));
    m.timing.seconds = t["seconds"].value_or(0.0);
    m.timing.input_sets = static_cast<std::size_t>(t["input_sets"].value_or<std::int64_t>(1));
    if (const toml::array *failures = t["recheck_failures"].as_array())
        for (const toml::node &node : *failures) {
            const toml::table *f = node.as_table();
            if (!f) continue;
            m.timing.recheck_failures.push_back({static_cast<std::size_t>((*f)["round"].value_or<std::int64_t>(0)),
                                                 static_cast<std::size_t>((*f)["input_set"].value_or<std::int64_t>(0)),
                                                 static_cast<Arm>((*f)["arm"].value_or<std::int64_t>(0)),
                                                 (*f)["what"].value_or(std::string())});
        }
    if (const toml::array *rounds = t["rounds"].as_array())
        for (const toml::node &node : *rounds) {
            const toml::table *r = node.as_table();
            const toml::array *order = r ? (*r)["order"].as_array() : nullptr;
            const toml::array *times = r ? (*r)["time_ms"].as_array() : nullptr;
            const toml::array *clocks = r ? (*r)["sm_clock_mhz"].as_array() : nullptr;
            if (!order || !times || !clocks || times->size() != m.first.size() || clocks->size() != times->size() ||
                order->size() != times->size())
                fail(ExitCode::internal, where + ": round " + std::to_string(m.timing.rounds.size()) +
                                             " does not hold one sample of each of " + std::to_string(m.first.size()) +
                                             " arms");
            InterleavedRound round;
            for (const toml::node &arm : *order) round.order.push_back(static_cast<Arm>(arm.value_or<std::int64_t>(0)));
            const toml::array *reasons = (*r)["clock_reasons"].as_array();
            const toml::array *watts = (*r)["power_w"].as_array();
            const toml::array *celsius = (*r)["temperature_c"].as_array();
            const auto reading = [](const toml::array *values, std::size_t i) -> std::optional<double> {
                if (!values || i >= values->size()) return std::nullopt;
                const double value = (*values)[i].value_or(std::nan(""));
                return std::isnan(value) ? std::nullopt : std::optional<double>(value);
            };
            for (std::size_t i = 0; i < times->size(); ++i) {
                LaunchSample sample{(*times)[i].value_or(0.0), (*clocks)[i].value_or(0.0), {}};
                const std::int64_t bits = reasons && i < reasons->size() ? (*reasons)[i].value_or<std::int64_t>(-1) : -1;
                if (bits >= 0) sample.power.clock_reasons = static_cast<std::uint64_t>(bits);
                sample.power.power_w = reading(watts, i);
                sample.power.temperature_c = reading(celsius, i);
                round.samples.push_back(sample);
            }
            round.throttled = (*r)["throttled"].value_or(false);
            round.input_set = static_cast<std::size_t>((*r)["input_set"].value_or<std::int64_t>(0));
            round.rechecked = (*r)["rechecked"].value_or(false);
            (round.throttled ? m.timing.throttled_rounds : m.timing.kept_rounds) += 1;
            m.timing.rounds.push_back(std::move(round));
        }
    return m;
}

RepeatChildRequest RepeatChildRequest::of_repeat(const TimeStageInputs &in, std::size_t index,
                                                 const fs::path &measurement_file) {
    const TimingSettings s = process_settings(in, index);
    return {in.run.root(),       measurement_file, in.workload_file,           s.budget_seconds, s.min_rounds,
            s.target_half_width, s.order_seed,     process_device(in, index), in.pin};
}

std::vector<std::string> RepeatChildRequest::to_argv(const fs::path &executable) const {
    std::vector<std::string> argv{executable.string(), repeat_child_command, "--run", run.string(),
                                  "--measurement", measurement_file.string(), "--budget", shortest(budget_seconds),
                                  "--min-rounds", std::to_string(min_rounds), "--target-half-width",
                                  shortest(target_half_width), "--order-seed", std::to_string(order_seed),
                                  "--device", std::to_string(device_index)};
    if (workload_file) {
        argv.push_back("--workload");
        argv.push_back(workload_file->string());
    }
    if (pin) argv.push_back("--pin");
    return argv;
}

void RepeatChildRequest::add_options(CommandLine &cl) {
    cl.add_options()
        ("measurement", "write the measurement to FILE, a new .toml file in the run's reports/",
         cxxopts::value<std::string>(), "FILE")
        ("budget", "sampling budget of this repeat, in seconds", cxxopts::value<double>(), "S")
        ("min-rounds", "rounds to sample at least", cxxopts::value<std::size_t>(), "N")
        ("target-half-width", "stop once every candidate's relative half-width is below this",
         cxxopts::value<double>(), "F")
        ("order-seed", "the seed of this repeat's round orders", cxxopts::value<std::uint64_t>(), "N")
        ("workload", "the workload of this file instead of the manifest's", cxxopts::value<std::string>(), "FILE")
        ("pin", "the parent pins the baseline's output: its pin is no criterion here");
    add_option(cl, device_option);
}

RepeatChildRequest RepeatChildRequest::from_args(const CommandLine &cl, const fs::path &run) {
    const auto &args = cl.result();
    const auto required = [&](const std::string &name) -> const cxxopts::OptionValue & {
        if (!cl.has(name))
            fail(ExitCode::usage, std::string(repeat_child_command) + " needs --" + name + " (it is internal to time --repeat)");
        return args[name];
    };
    RepeatChildRequest request;
    request.run = run;
    request.measurement_file = fs::absolute(required("measurement").as<std::string>()).lexically_normal();
    // The parent names a file of its run's reports/ that it removed first; anything else could be a
    // file of the user's, which the measurement would replace.
    std::error_code ec;
    const fs::path reports = fs::weakly_canonical(RunDirectory(run).reports(), ec);
    if (fs::weakly_canonical(request.measurement_file.parent_path(), ec) != reports ||
        request.measurement_file.extension() != ".toml" ||
        fs::symlink_status(request.measurement_file, ec).type() != fs::file_type::not_found)
        fail(ExitCode::usage, std::string(repeat_child_command) + " --measurement '" + request.measurement_file.string() +
                                  "' is not a new .toml file in " + reports.string() +
                                  ": it is internal to time --repeat, whose parent names one there");
    if (cl.has("workload")) request.workload_file = fs::absolute(args["workload"].as<std::string>());
    request.budget_seconds = required("budget").as<double>();
    request.min_rounds = required("min-rounds").as<std::size_t>();
    request.target_half_width = required("target-half-width").as<double>();
    request.order_seed = required("order-seed").as<std::uint64_t>();
    request.device_index = s2tp::device_index(cl);
    request.pin = cl.has("pin");
    return request;
}

TimeOverrides RepeatChildRequest::overrides() const {
    return {target_half_width, budget_seconds, min_rounds, order_seed};
}

void run_repeat_child(const RepeatChildRequest &request, const Reporter &reporter) {
    const RunDirectory run(request.run);
    const ResolvedTimeInputs in = resolve_time_inputs(run, inspect_run(run), load_experiment(run.manifest()),
                                                      request.overrides(), request.workload_file);
    const DeviceFacts device = require_gpu("time", request.device_index);
    require_kernels_for_device("time", in.kernels, device);
    const MeasureRequest measure{in.workload,        in.kernels,  device, in.settings,
                                 in.expected_sha256, request.pin, time_accuracy(in.experiment)};
    std::ostringstream text;
    text << measure_arms(measure, reporter).to_toml() << "\n";
    write_file_atomically(request.measurement_file, text.str());
}

ArmMeasurement measure_in_child(const TimeStageInputs &in, std::size_t index, const Reporter &reporter,
                                std::mutex *reporting) {
    const auto report = [&](const std::string &line) {
        std::unique_lock<std::mutex> lock;
        if (reporting) lock = std::unique_lock<std::mutex>(*reporting);
        reporter.progress(line);
    };
    const TimingSettings s = process_settings(in, index);
    const std::string stem = process_stem(in, index);
    const fs::path file = in.run.reports() / (stem + ".toml");
    const fs::path log = in.run.logs() / (stem + ".log");
    fs::create_directories(in.run.reports());
    fs::create_directories(in.run.logs());
    std::error_code ec;
    fs::remove(file, ec);
    const std::vector<std::string> argv = RepeatChildRequest::of_repeat(in, index, file).to_argv(current_executable());
    const std::string where = repeat_where(in, index);
    const std::string of_repeats = in.repeats == 1 ? "" : " of " + std::to_string(in.repeats);
    report("time: " + where + (on_several_gpus(in) ? of_repeats + ", " + std::to_string(in.gpus.size()) + " GPUs at once"
                                                   : of_repeats) +
           " in a fresh process, " + sampling_budget_text(s.budget_seconds));
    // Sampling stops at the repeat's budget; the rest is the repeat's start (inputs, modules, checks),
    // which even a host-generated block-24 workload finishes in well under the margin.
    ProcessOptions options;
    options.timeout = std::chrono::seconds(static_cast<long long>(s.budget_seconds) + 900);
    // The child times alone on its GPU, as a single run does: another process's idle context beside the
    // default experiment's single runs moved its ratios by about 0.25 % on an H100.
    release_primary_contexts({process_device(in, index)});
    const ProcessResult ran = run_process(argv, options);
    write_file_atomically(log, ran.out + ran.err);
    if (ran.exit_code != 0 || !fs::is_regular_file(file, ec)) {
        // A device error means the GPU went away (exit 3, the GPU lost); anything else is a failure.
        const std::optional<std::string> device_error = device_error_in(ran.out + ran.err);
        fail(device_error ? ExitCode::missing_tool : ExitCode::internal,
             "time: " + where + " (" + in.run.relative(log) + ") " +
                 (ran.timed_out ? "ran past its " + std::to_string(options.timeout->count()) + " s"
                                : "exited with " + std::to_string(ran.exit_code)) +
                 " and wrote no measurement" + (device_error ? ": the GPU failed with " + *device_error : ""));
    }
    ArmMeasurement m = ArmMeasurement::from_toml(toml::parse_file(file.string()), in.run.relative(file));
    fs::remove(file, ec);
    std::string medians;
    if (m.timing.kept_rounds >= 2)
        for (Arm arm = first_candidate_arm; arm < m.first.size(); ++arm)
            medians += ", " + in.kernels.candidates.at(arm - first_candidate_arm).variant + "/baseline " +
                       fixed(median(kept_ratios(m.timing.rounds, arm)), 4);
    report("  " + where + ": " + std::to_string(m.timing.kept_rounds) + " rounds kept, " +
                      std::to_string(m.timing.throttled_rounds) + " throttled, stopped by " +
                      stop_reason_name(m.timing.stopped_by) + medians);
    return m;
}

}  // namespace s2tp
