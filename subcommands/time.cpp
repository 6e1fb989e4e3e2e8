// sage2tp time: the baseline and the candidate on the run's real workload, in one process on identical
// inputs, interleaved with an A/A control (model/ab_timing.h). The output bytes of both are hashed and
// must match each other (and the pinned SHA-256 for this arch, when one is pinned) before anything is
// timed; reports/time.json keeps every sample and clock, reports/time.svg draws the result.
#include "support/number_format.h"
#include "subcommands.h"
#include "support/file_io.h"

#include "gpu/gpu_input_generator.h"
#include "gpu/launch_timer.h"
#include "gpu/output_checks.h"
#include "pipeline/cli.h"
#include "support/errors.h"
#include "model/experiment_manifest.h"
#include "stages/gpu_stage.h"
#include "support/hashing.h"
#include "stages/ncu_profile.h"
#include "support/process_runner.h"
#include "pipeline/stage_pipeline.h"
#include "formats/svg_plot.h"

#include <array>
#include <cstdlib>
#include <cmath>
#include <iomanip>
#include <memory>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

std::size_t index_of(Launch launch) { return static_cast<std::size_t>(launch); }

// "b1 h40/40 n32760/32760 d128 NHD bf16 non-causal"
std::string shape_text(const AttentionProblem &p) {
    const AttentionShape &s = p.shape;
    return "b" + std::to_string(s.batch) + " h" + std::to_string(s.heads_q) + "/" + std::to_string(s.heads_kv) + " n" +
           std::to_string(s.len_q) + "/" + std::to_string(s.len_kv) + " d" + std::to_string(s.head_dim) + " " +
           layout_name(s.layout) + " " + dtype_name(p.dtype) + " " + (p.causal ? "causal" : "non-causal");
}

struct OutputHashes {
    std::array<std::string, launches_per_round> sha256;
    std::array<std::int64_t, launches_per_round> unwritten{};
};

// Each launch's output SHA-256, with the bytes compared on the GPU (gpu/output_checks.h): the first
// time (count_unwritten) they are recorded and their NaN (the poison of unwritten elements) counted;
// afterwards each is compared with its recorded bytes, since a NaN-free output stays NaN-free as long
// as its bytes do not change. Only an output unlike the ones hashed already is downloaded.
OutputHashes hash_outputs(OutputChecks &checks, const std::array<AttentionOutputs, launches_per_round> &outputs,
                          bool count_unwritten) {
    std::vector<const DeviceBuffer *> buffers;
    for (Launch launch : all_launches) buffers.push_back(&outputs[index_of(launch)].o);
    OutputHashes hashes;
    if (count_unwritten) {
        const std::vector<OutputDigest> digests = checks.record(buffers);
        for (Launch launch : all_launches) {
            hashes.sha256[index_of(launch)] = digests[index_of(launch)].sha256;
            hashes.unwritten[index_of(launch)] = digests[index_of(launch)].nan_count;
        }
    } else {
        const std::vector<std::string> digests = checks.current_sha256(buffers);
        for (Launch launch : all_launches) hashes.sha256[index_of(launch)] = digests[index_of(launch)];
    }
    return hashes;
}

toml::table variant_figures(const Summary &s, const AttentionProblem &problem) {
    return toml::table{{"p10", s.p10},
                       {"p50", s.p50},
                       {"p90", s.p90},
                       {"mean", s.mean},
                       {"stdev", s.stdev},
                       {"n", static_cast<std::int64_t>(s.n)},
                       {"tops_p50", attention_tops(problem, s.p50)}};
}

toml::table sample_table(const LaunchSample &sample) {
    return toml::table{{"time_ms", sample.time_ms}, {"sm_clock_mhz", sample.sm_clock_mhz}};
}

toml::array rounds_array(const TimingRun &run) {
    toml::array rounds;
    for (std::size_t i = 0; i < run.rounds.size(); ++i) {
        const InterleavedRound &round = run.rounds[i];
        toml::array order;
        for (Launch launch : round.order) order.push_back(launch_name(launch));
        toml::table entry{{"round", static_cast<std::int64_t>(i)}, {"order", order}, {"throttled", round.throttled}};
        for (Launch launch : all_launches) entry.insert(launch_name(launch), sample_table(round[launch]));
        rounds.push_back(entry);
    }
    return rounds;
}

void print_time(const Checkpoint &c, const Reporter &reporter) {
    const toml::table &f = c.figures;
    reporter.say("  " + f["workload"].value_or(std::string()) + ": " + f["shape"].value_or(std::string()) + " on " +
                 f["device_name"].value_or(std::string("?")));
    const toml::table *sha = f["sha256"].as_table();
    if (sha) {
        const std::string base = (*sha)["baseline"].value_or(std::string());
        const std::string cand = (*sha)["candidate"].value_or(std::string());
        const std::string expected = (*sha)["expected"].value_or(std::string());
        reporter.say("  output sha256 baseline " + base + (cand == base ? " = candidate" : ", candidate " + cand) +
                     (expected.empty() ? " (none pinned)" : expected == base ? " = pinned" : ", pinned " + expected));
    }
    const auto print_ncu = [&] {
        if (const toml::table *metrics = f["ncu"]["metrics"].as_table())
            reporter.say("  Nsight Compute, one launch each:\n" + NcuComparison::from_toml(*metrics).table_text());
    };
    if (!f["ratio"].as_table()) return print_ncu();
    std::ostringstream table;
    table << std::left << std::setw(11) << "  VARIANT" << std::right << std::setw(10) << "P10 ms" << std::setw(10)
          << "P50 ms" << std::setw(10) << "P90 ms" << std::setw(10) << "MEAN ms" << std::setw(10) << "STDEV ms"
          << std::setw(7) << "N" << std::setw(12) << "TOPS (p50)" << "\n";
    for (const char *variant : {"baseline", "candidate"}) {
        auto v = f[variant];
        table << std::left << std::setw(11) << ("  " + std::string(variant)) << std::right << std::setw(10)
              << fixed(v["p10"].value_or(0.0), 3) << std::setw(10) << fixed(v["p50"].value_or(0.0), 3) << std::setw(10)
              << fixed(v["p90"].value_or(0.0), 3) << std::setw(10) << fixed(v["mean"].value_or(0.0), 3)
              << std::setw(10) << fixed(v["stdev"].value_or(0.0), 3) << std::setw(7)
              << v["n"].value_or<std::int64_t>(0) << std::setw(12) << fixed(v["tops_p50"].value_or(0.0), 1) << "\n";
    }
    reporter.say(table.str() + "  candidate/baseline " + fixed(f["ratio"]["median"].value_or(0.0), 4) + " (95% CI " +
                 fixed(f["ratio"]["ci_low"].value_or(0.0), 4) + " .. " + fixed(f["ratio"]["ci_high"].value_or(0.0), 4) +
                 ", half-width " + fixed(f["ratio"]["half_width"].value_or(0.0) * 100, 3) + "%); A/A " +
                 fixed(f["aa"]["median"].value_or(0.0), 4) + " (" + fixed(f["aa"]["ci_low"].value_or(0.0), 4) + " .. " +
                 fixed(f["aa"]["ci_high"].value_or(0.0), 4) + ")");
    reporter.say("  " + std::to_string(f["rounds"].value_or<std::int64_t>(0)) + " rounds, " +
                 std::to_string(f["throttled_rounds"].value_or<std::int64_t>(0)) + " dropped as throttled; SM clock " +
                 fixed(f["sm_clock_mhz"]["min"].value_or(0.0), 0) + " .. " +
                 fixed(f["sm_clock_mhz"]["max"].value_or(0.0), 0) + " MHz (median " +
                 fixed(f["sm_clock_mhz"]["median"].value_or(0.0), 0) + "); stopped by " +
                 f["stopped_by"].value_or(std::string()) +
                 (f["l2_flushed"].value_or(false) ? "; L2 flushed before each launch" : ""));
    const std::string plot = c.artifacts["time_svg"]["path"].value_or(std::string());
    reporter.say("  " + speed_in_words(f["ratio"]["median"].value_or(0.0)) + (plot.empty() ? "" : "; plot: " + plot));
    print_ncu();
}

}  // namespace

int time_command(const Args &args) {
    CommandLine cl("time", "Time baseline and candidate on the real workload, interleaved, with an A/A control.", args);
    cl.add_options()
        ("target-half-width", "stop once the ratio's 95% interval half-width (relative) is below this "
                              "(default: the manifest's [time] target_half_width)", cxxopts::value<double>(), "F")
        ("budget", "stop sampling after this many seconds (default: the manifest's [time] budget_seconds)",
         cxxopts::value<double>(), "SECONDS")
        ("min-rounds", "sample at least this many rounds (default: the manifest's [time] min_rounds)",
         cxxopts::value<double>(), "N")
        ("workload", "time on the workload of this file (a [workload] table, as in data/workloads/) instead of "
                     "the manifest's", cxxopts::value<std::string>(), "FILE")
        ("pin", "record the baseline's output SHA-256 in the run's manifest as the expected one for this arch "
                "(times again, like --force)")
        ("ncu", "also profile one launch of each variant with Nsight Compute into reports/ (or RUN_NCU=1)")
        ("device", "GPU index within CUDA_VISIBLE_DEVICES", cxxopts::value<int>()->default_value("0"), "N")
        ("force", "run even when the checkpoint is up to date");
    if (!cl.parse()) return 0;
    const Reporter &reporter = cl.reporter();
    const int device_index = cl.result()["device"].as<int>();
    const bool pin = cl.has("pin");
    const char *run_ncu_env = std::getenv("RUN_NCU");
    const bool ncu_requested = cl.has("ncu") || (run_ncu_env && std::string(run_ncu_env) == "1");
    const auto flag_or = [&](const char *name, double fallback) {
        return cl.has(name) ? cl.result()[name].as<double>() : fallback;
    };
    // The ranges of the manifest's [time] table.
    for (const SettingRange &range : {time_target_half_width_range, time_budget_seconds_range, time_min_rounds_range}) {
        const double value = flag_or(range.flag, range.low);
        if (!(value >= range.low && value <= range.high))
            fail(ExitCode::usage, std::string("--") + range.flag + " must be in [" + shortest(range.low) + ", " +
                                      shortest(range.high) + "] (as [time] " + range.key + "), got " + shortest(value));
    }
    if (cl.has("min-rounds")) {
        const double rounds = cl.result()["min-rounds"].as<double>();
        if (rounds != std::floor(rounds)) fail(ExitCode::usage, "--min-rounds must be a whole number, got " + shortest(rounds));
    }
    // --pin records into the run's own manifest, which another workload's output does not belong to.
    if (pin && cl.has("workload"))
        fail(ExitCode::usage, "--pin records the manifest's workload output; it cannot be combined with --workload");

    StageContext context(Stage::time, require_existing_run(cl.selection()));
    RunDirectory &run = context.run();
    const BuiltKernels kernels = built_kernels(context);

    Experiment experiment = context.experiment();
    apply_run_pins(experiment.workload, run.pins());
    const WorkloadSpec workload = cl.has("workload")
                                      ? load_workload(fs::absolute(cl.result()["workload"].as<std::string>()))
                                      : experiment.workload;
    const AttentionProblem &problem = workload.problem;
    const std::optional<std::string> expected_sha = expected_output_sha256(workload, kernels.arch);

    TimingSettings settings;
    settings.target_half_width = flag_or("target-half-width", experiment.target_half_width);
    settings.budget_seconds = flag_or("budget", experiment.budget_seconds);
    settings.min_rounds = static_cast<std::size_t>(flag_or("min-rounds", static_cast<double>(experiment.min_rounds)));
    settings.warmup_launches = static_cast<std::size_t>(experiment.warmup_launches);
    settings.throttle_fraction = experiment.throttle_fraction;
    settings.order_seed = experiment.bootstrap_seed;
    settings.bootstrap.seed = experiment.bootstrap_seed;
    settings.bootstrap.resamples = static_cast<std::size_t>(experiment.bootstrap_resamples);

    std::optional<DeviceFacts> device;
    StageWork work;
    work.stage = Stage::time;
    work.add_inputs = [&](Fingerprint &f) {
        float scale = problem.sm_scale;
        f.add("workload", workload.name).add("problem", problem.describe()).add("sm_scale", &scale, sizeof scale);
        f.add("with_lse", std::int64_t{problem.with_lse});
        if (workload.q_file)
            f.add_file("q", *workload.q_file).add_file("k", *workload.k_file).add_file("v", *workload.v_file);
        else f.add("workload_seed", static_cast<std::int64_t>(workload.seed));
        f.add("target_half_width", &settings.target_half_width, sizeof settings.target_half_width);
        f.add("budget_seconds", &settings.budget_seconds, sizeof settings.budget_seconds);
        f.add("min_rounds", static_cast<std::int64_t>(settings.min_rounds));
        f.add("warmup_launches", static_cast<std::int64_t>(settings.warmup_launches));
        f.add("throttle_fraction", &settings.throttle_fraction, sizeof settings.throttle_fraction);
        f.add("bootstrap_seed", static_cast<std::int64_t>(settings.bootstrap.seed));
        f.add("resamples", static_cast<std::int64_t>(settings.bootstrap.resamples));
        f.add("device_name", device->name).add("device_uuid", device->uuid);
        f.add("ncu", std::int64_t{ncu_requested});
        if (ncu_requested) {
            for (const std::string &metric : experiment.ncu_metrics) f.add("ncu_metric", metric);
            f.add("ncu_seq_len", experiment.ncu_seq_len);
        }
    };
    work.verify_outputs = [&](const Checkpoint &c) -> std::string {
        for (const auto &[name, node] : c.artifacts) {
            const std::string path = node.as_table() ? (*node.as_table())["path"].value_or(std::string()) : "";
            const std::string sha = node.as_table() ? (*node.as_table())["sha256"].value_or(std::string()) : "";
            std::error_code ec;
            if (path.empty() || !fs::is_regular_file(run.resolve(path), ec)) return path + " is missing";
            if (sha256_file(run.resolve(path)) != sha) return path + " changed since it was written";
        }
        // A pin added, changed or removed by hand after the stage ran must be checked again.
        if (c.figures["sha256"]["expected"].value<std::string>() != expected_sha)
            return "the pinned output SHA-256 for " + kernels.arch + " changed";
        return "";
    };
    work.summarize = print_time;
    work.run = [&] {
        StageResult result;
        result.tools.insert("gpu", device->name);
        result.tools.insert("cuda_driver", cuda_version_string(device->driver_version));
        const std::string shape = shape_text(problem);
        result.figures = toml::table{{"workload", workload.name},
                                     {"shape", shape},
                                     {"device", device->summary()},
                                     {"device_name", device->name},
                                     {"arch", kernels.arch}};

        const CubinModule quantize(kernels.quantize);
        // One candidate until time interleaves several ([[candidate]]).
        const BuiltAttention &built_candidate = kernels.candidates.front();
        const CubinModule baseline_module(kernels.baseline.cubin);
        const CubinModule candidate_module(built_candidate.cubin);
        const Kernel baseline = find_attention_kernel(*kernels.baseline.abi, baseline_module, problem);
        const Kernel candidate = find_attention_kernel(*built_candidate.abi, candidate_module, problem);

        reporter.progress("time: " + (workload.q_file ? "loading" : std::string("generating")) + " the inputs of " +
                          workload.name + " (" + shape + ")");
        DeviceQuantizedInputs inputs;
        if (workload.q_file) {
            const GeneratedInputs host = workload_inputs(workload);
            inputs = quantize_on_gpu(quantize, problem, host.q, host.k, host.v);
        } else {
            inputs = quantize_on_gpu(quantize, problem,
                                     generate_inputs_on_gpu(quantize, problem.shape, problem.dtype, workload.seed));
        }
        std::array<AttentionOutputs, launches_per_round> outputs;
        // Packed here, once per launch, by each arm's adapter: the timed region only launches.
        std::array<AttentionLaunch, launches_per_round> launches;
        for (Launch launch : all_launches) {
            outputs[index_of(launch)] = allocate_outputs(problem, launch_name(launch));
            poison_outputs(outputs[index_of(launch)]);
            const KernelAbi &abi = launch == Launch::candidate ? *built_candidate.abi : *kernels.baseline.abi;
            launches[index_of(launch)] = abi.pack(problem, attention_buffers(problem, inputs, outputs[index_of(launch)]));
        }

        // Outputs first: timing a kernel that computes something else would be meaningless.
        for (Launch launch : all_launches)
            launch_attention(launch == Launch::candidate ? candidate : baseline, launches[index_of(launch)]);
        synchronize("time: first launches, " + problem.describe());
        OutputChecks checks(quantize, problem.dtype);
        const OutputHashes first = hash_outputs(checks, outputs, true);
        const std::string &base_sha = first.sha256[index_of(Launch::baseline)];
        const std::string &cand_sha = first.sha256[index_of(Launch::candidate)];
        std::vector<std::string> output_failures;
        for (Launch launch : {Launch::baseline, Launch::candidate})
            if (first.unwritten[index_of(launch)] > 0)
                output_failures.push_back("the " + std::string(launch_name(launch)) + " left " +
                                          std::to_string(first.unwritten[index_of(launch)]) +
                                          " output elements unwritten (still the NaN poison)");
        if (first.sha256[index_of(Launch::baseline_control)] != base_sha)
            output_failures.push_back("the baseline's output differs between two launches on the same inputs "
                                      "(sha256 " + base_sha + " then " + first.sha256[index_of(Launch::baseline_control)] +
                                      "): it is not deterministic");
        if (cand_sha != base_sha)
            output_failures.push_back("the candidate's output differs from the baseline's: sha256 " + cand_sha +
                                      " vs " + base_sha);

        // Under --pin the earlier pin is what gets replaced, not a criterion; the new one is written
        // only once the timed launches have shown the baseline's bytes to be stable.
        if (!pin && expected_sha && base_sha != *expected_sha)
            output_failures.push_back("the baseline's output sha256 " + base_sha + " differs from the one pinned for " +
                                      kernels.arch + " (" + *expected_sha + "); re-pin with 'sage2tp time --pin' if the "
                                      "change is intended");
        const auto sha_figures = [&](const std::optional<std::string> &expected, bool match) {
            toml::table table{{"baseline", base_sha}, {"candidate", cand_sha}, {"match", match}};
            if (expected) table.insert("expected", *expected);
            return table;
        };
        if (!output_failures.empty()) {
            result.status = StageStatus::failed;
            result.reasons = output_failures;
            result.reasons.push_back(std::string("not timed") + (pin ? " and nothing pinned" : "") +
                                     ": the outputs must match before the times mean anything");
            result.figures.insert("sha256", sha_figures(expected_sha, false));
            result.figures.insert("summary", workload.name + ": outputs do not match; not timed");
            return result;
        }

        const std::size_t footprint = attention_footprint_bytes(inputs, outputs[0]);
        const bool flush = needs_l2_flush(footprint, device->l2_bytes);
        std::unique_ptr<L2Flusher> flusher = flush ? std::make_unique<L2Flusher>(*device) : nullptr;
        SmClockProbe clock(quantize);
        settings.reference_clock_mhz = device->sm_clock_khz / 1000.0;
        GpuLaunchTimer timer(baseline, candidate, launches, clock, flusher.get());
        reporter.progress("time: up to " + fixed(settings.budget_seconds, 0) +
                          " s, stopping once the ratio's half-width is below " +
                          fixed(settings.target_half_width * 100, 3) + "% after at least " +
                          std::to_string(settings.min_rounds) + " rounds" +
                          (flush ? "; L2 flushed before every launch" : ""));
        const auto report_progress = [&](const TimingRun &so_far, const RatioInterval &r) {
            const std::string line = "  " + std::to_string(so_far.rounds.size()) + " rounds (" +
                                     std::to_string(so_far.throttled_rounds) + " throttled), " +
                                     fixed(so_far.seconds, 1) + " s: candidate/baseline " + fixed(r.median, 4) +
                                     ", half-width " + fixed(r.half_width_rel * 100, 3) + "%";
            // On a terminal in place, with the budget as the bound of the ETA (sampling may stop sooner).
            if (reporter.live())
                reporter.live_line(line + "; " + elapsed_and_eta(so_far.seconds, so_far.seconds / settings.budget_seconds) +
                                   " at most");
            else
                reporter.progress(line);
        };
        const TimingRun timing = measure_interleaved(timer, settings, {}, report_progress);
        reporter.end_live_line();

        // The timed launches rewrote every output: the bytes must still be the ones checked above.
        const OutputHashes last = hash_outputs(checks, outputs, false);
        for (Launch launch : all_launches)
            if (last.sha256[index_of(launch)] != first.sha256[index_of(launch)])
                result.reasons.push_back("the " + std::string(launch_name(launch)) + " launch's output changed during "
                                         "timing (sha256 " + first.sha256[index_of(launch)] + " then " +
                                         last.sha256[index_of(launch)] + "): not deterministic");
        const bool stable = result.reasons.empty();
        std::optional<std::string> expected = expected_sha, replaced_pin;
        if (pin && stable) {
            replaced_pin = pin_expected_output_sha256(run.pins(), workload, kernels.arch, base_sha);
            if (replaced_pin)
                reporter.warn("time: --pin replaced the earlier pin " + *replaced_pin + " for " + kernels.arch);
            reporter.progress("time: pinned the baseline's output sha256 " + base_sha + " for " + kernels.arch + " in " +
                              run.relative(run.pins()));
            expected = base_sha;
        } else if (pin) {
            result.reasons.push_back("nothing pinned: the outputs changed while being timed");
        }
        result.figures.insert("sha256", sha_figures(expected, stable));
        if (replaced_pin) result.figures["sha256"].as_table()->insert("replaced_pin", *replaced_pin);

        result.figures.insert("rounds", static_cast<std::int64_t>(timing.rounds.size()));
        result.figures.insert("throttled_rounds", static_cast<std::int64_t>(timing.throttled_rounds));
        result.figures.insert("stopped_by", stop_reason_name(timing.stopped_by));
        result.figures.insert("l2_flushed", flush);
        result.figures.insert("footprint_bytes", static_cast<std::int64_t>(footprint));
        result.figures.insert("order_seed", static_cast<std::int64_t>(settings.order_seed));
        result.figures.insert("warmup_launches", static_cast<std::int64_t>(settings.warmup_launches));
        result.figures.insert("min_rounds", static_cast<std::int64_t>(settings.min_rounds));
        result.figures.insert("target_half_width", settings.target_half_width);
        result.figures.insert("budget_seconds", settings.budget_seconds);
        result.figures.insert("measure_seconds", timing.seconds);

        toml::table report{{"workload", workload.name},
                           {"shape", shape},
                           {"problem", problem.describe()},
                           {"device", device->summary()},
                           {"device_uuid", device->uuid},
                           {"reference_sm_clock_mhz", settings.reference_clock_mhz},
                           {"throttle_fraction", settings.throttle_fraction},
                           {"l2_flushed", flush},
                           {"footprint_bytes", static_cast<std::int64_t>(footprint)},
                           {"warmup_launches", static_cast<std::int64_t>(settings.warmup_launches)},
                           {"order_seed", static_cast<std::int64_t>(settings.order_seed)},
                           {"stopped_by", stop_reason_name(timing.stopped_by)},
                           {"seconds", timing.seconds},
                           {"sha256", *result.figures["sha256"].as_table()},
                           {"rounds", rounds_array(timing)}};

        if (timing.kept_rounds < settings.min_rounds) {
            result.reasons.push_back("only " + std::to_string(timing.kept_rounds) + " unthrottled rounds (of " +
                                     std::to_string(timing.rounds.size()) + ") fit in the budget of " +
                                     fixed(settings.budget_seconds, 0) + " s, fewer than min_rounds " +
                                     std::to_string(settings.min_rounds) + ": no interval to trust; raise --budget");
        } else {
            const TimingStats stats = timing_stats(timing, settings.bootstrap);
            const RatioInterval &ab = stats.candidate_vs_baseline;
            const RatioInterval &aa = stats.control_vs_baseline;
            result.figures.insert("baseline", variant_figures(stats[Launch::baseline], problem));
            result.figures.insert("candidate", variant_figures(stats[Launch::candidate], problem));
            result.figures.insert("baseline_control", variant_figures(stats[Launch::baseline_control], problem));
            result.figures.insert("ratio", toml::table{{"median", ab.median},
                                                       {"ci_low", ab.lo},
                                                       {"ci_high", ab.hi},
                                                       {"half_width", ab.half_width_rel},
                                                       {"resamples", static_cast<std::int64_t>(ab.resamples)},
                                                       {"seed", static_cast<std::int64_t>(ab.seed)},
                                                       {"confidence", ab.confidence}});
            result.figures.insert("aa", toml::table{{"median", aa.median},
                                                    {"ci_low", aa.lo},
                                                    {"ci_high", aa.hi},
                                                    {"contains_one", aa.contains(1.0)}});
            result.figures.insert("sm_clock_mhz", toml::table{{"min", stats.clock_min_mhz},
                                                              {"median", stats.clock_median_mhz},
                                                              {"max", stats.clock_max_mhz}});
            if (auto noisy = too_noisy_reason(aa)) result.reasons.push_back(*noisy);
            for (const char *key : {"baseline", "candidate", "baseline_control", "ratio", "aa", "sm_clock_mhz"})
                report.insert(std::string("stats_") + key, *result.figures[key].as_table());

            TimePlot plot;
            plot.title = "sage2tp time: " + workload.name;
            plot.subtitle = shape + " on " + device->name + "; " + std::to_string(timing.kept_rounds) + " rounds kept, " +
                            std::to_string(timing.throttled_rounds) + " throttled; stopped by " +
                            stop_reason_name(timing.stopped_by);
            plot.baseline = {"baseline", kept_times(timing.rounds, Launch::baseline)};
            plot.candidate = {"candidate", kept_times(timing.rounds, Launch::candidate)};
            plot.candidate_vs_baseline = ab;
            plot.baseline_vs_baseline = aa;
            const fs::path svg = run.reports() / "time.svg";
            fs::create_directories(run.reports());
            write_file_atomically(svg, render_time_plot_svg(plot));
            result.artifacts.insert("time_svg", toml::table{{"path", run.relative(svg)}, {"sha256", sha256_file(svg)}});

            std::ostringstream summary;
            summary << workload.name << ": candidate/baseline " << fixed(ab.median, 4) << " [" << fixed(ab.lo, 4) << ", "
                    << fixed(ab.hi, 4) << "], p50 " << fixed(stats[Launch::baseline].p50, 2) << " -> "
                    << fixed(stats[Launch::candidate].p50, 2) << " ms, A/A " << fixed(aa.median, 4)
                    << (aa.contains(1.0) ? "" : " (too noisy)") << ", " << timing.kept_rounds << " rounds";
            result.figures.insert("summary", summary.str());
        }
        if (!result.figures.contains("summary"))
            result.figures.insert("summary", workload.name + ": " + std::to_string(timing.kept_rounds) +
                                                 " unthrottled rounds, too few for an interval");

        const fs::path json = run.reports() / "time.json";
        fs::create_directories(run.reports());
        std::ostringstream json_text;
        json_text << toml::json_formatter{report} << "\n";
        write_file_atomically(json, json_text.str());
        result.artifacts.insert("time_json", toml::table{{"path", run.relative(json)}, {"sha256", sha256_file(json)}});

        if (ncu_requested) {
            NcuProfiles profiles = profile_with_ncu(
                run, {baseline.name(), candidate.name(), experiment.ncu_metrics, experiment.ncu_seq_len, device_index},
                reporter);
            if (profiles.version) result.tools.insert("ncu", *profiles.version);
            for (auto &&[name, artifact] : profiles.artifacts) result.artifacts.insert(name, artifact);
            result.figures.insert("ncu", profiles.figures);
            if (profiles.comparison && !profiles.comparison->largest_changes.empty())
                result.figures.insert_or_assign("summary", result.figures["summary"].value_or(std::string()) +
                                                               "; ncu: " + profiles.comparison->largest_changes_text());
        }

        result.status = result.reasons.empty() ? StageStatus::passed : StageStatus::failed;
        return result;
    };

    try {
        device = require_gpu("time", device_index);
    } catch (const Error &e) {
        // A run timed on a GPU host and copied back stays up to date here; anything else needs the GPU.
        if (e.code() != ExitCode::missing_tool || cl.has("force") || pin || ncu_requested) throw;
        if (auto kept = keep_intact_checkpoint(context, work, "no GPU here to time on again", reporter))
            return static_cast<int>(*kept);
        throw;
    }
    require_kernels_for_device("time", kernels, *device);
    return static_cast<int>(execute_stage(context, work, cl.has("force") || pin, reporter));
}

}  // namespace s2tp
