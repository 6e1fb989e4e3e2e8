#include "stages/sanitize_stage.h"

#include "tools/gpu_session/exec_request.h"

#include "pipeline/common_options.h"

#include "formats/sanitizer_report.h"
#include "model/experiment_manifest.h"
#include "figures/build_figures.h"
#include "model/shape_sets.h"
#include "tools/gpu_session/gpu_session.h"
#include "tools/kernel_build.h"
#include "figures/sanitize_figures.h"
#include "stages/sanitize_matrix.h"
#include "model/device_sharding.h"
#include "figures/gpu_figures.h"
#include "support/cuda_tools.h"
#include "support/errors.h"
#include "support/file_io.h"
#include "support/number_format.h"
#include "support/process_runner.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

// One seed for every sanitizer shape: what a check covers is the code path, not the values.
constexpr std::uint64_t kSanitizeSeed = 1;

// "Version 2025.3.1.0 (build 36400806) (public-release)" from `compute-sanitizer --version`.
std::string sanitizer_version(const fs::path &sanitizer) {
    ProcessOptions options;
    options.timeout = std::chrono::seconds(60);
    const ProcessResult result = run_process({sanitizer.string(), "--version"}, options);
    std::istringstream lines(result.out + result.err);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind("Version ", 0) == 0) return line.substr(8);
    return "unknown (" + sanitizer.string() + " --version printed no version line)";
}

std::string skip_reason(bool skip_option) {
    if (skip_option) return "skipped on request (--skip); the gate reports the sanitizer as not checked";
    if (sanitizer_switched_off())
        return "skipped because RUN_SANITIZER=0; the gate reports the sanitizer as not checked";
    return "";
}

// The sanitize stage's body: one sanitizer process per variant and tool over every shape, a failed
// one re-run shape by shape, then the fold.
StageResult run_sanitize_checks(const StageContext &context, const SanitizeRequest &request, const Reporter &reporter,
                                const std::string &skipped, const std::vector<SanitizerTool> &tools,
                                const std::vector<std::string> &shape_names, const std::vector<std::string> &candidates) {
    const RunDirectory &run = context.run();
    const Experiment &experiment = context.experiment();
    const auto &shapes = sanitizer_shapes();
    StageResult result;
    if (!skipped.empty()) {
        SanitizeFigures figures;
        figures.tools = experiment.sanitizer_tools;
        figures.summary = "skipped (not checked)";
        result.status = StageStatus::skipped;
        result.reasons.push_back(skipped);
        result.figures = figures.to_toml();
        return result;
    }

    const BuiltKernels kernels = built_kernels(context);  // every cubin as recorded
    const std::vector<DeviceFacts> devices = require_gpus(Stage::sanitize, request.devices, context.run(), kernels.arch);
    for (const DeviceFacts &device : devices) require_kernels_for_device("sanitize", kernels, device);
    const std::optional<fs::path> sanitizer = find_cuda_tool("compute-sanitizer");
    if (!sanitizer)
        fail(ExitCode::missing_tool, std::string("sanitize needs compute-sanitizer, which is not installed (looked in ") +
                                     cuda_tool_search_order() + "); use --skip or RUN_SANITIZER=0 to record the "
                                     "stage as not checked");
    result.tools.insert("compute-sanitizer", sanitizer_version(*sanitizer));
    result.tools.insert("gpu", gpu_names(devices));
    result.tools.insert("cuda_driver", cuda_version_string(devices.front().driver_version));

    const fs::path log_dir = run.logs() / "sanitize";
    fs::create_directories(log_dir);
    const std::vector<SanitizeBatchPlan> batches = plan_sanitize_batches(experiment.variant_names(), tools, shape_names);
    // Every check's place in the figures, in plan order, whichever process settles it.
    std::map<std::string, std::size_t> slot_of;
    for (const SanitizeBatchPlan &batch : batches)
        for (const SanitizeCheckPlan &check : batch.checks) slot_of.emplace(check.log_name, slot_of.size());
    const std::size_t check_count = slot_of.size();

    // Each process has its own context on its GPU and its own instrumentation, so several at once
    // find what one at a time finds; only the wall time is shared. The batches are dealt over the
    // GPUs, each run pinned to its GPU (exec --device), at most request.jobs at once on each. A batch
    // that does not pass queues one process per shape on the same GPU (sanitize_matrix.h says why
    // that is sound). A process whose output holds a device error loses its GPU: its checks fail
    // with that error (not re-run: a kernel that takes one GPU down would take the next), the GPU's
    // queue moves to the GPUs still running, and with none left its checks are not run, never passed.
    std::vector<int> indices;
    std::vector<GpuFigures> gpus;
    for (const DeviceFacts &device : devices) {
        indices.push_back(device.index);
        gpus.push_back(GpuFigures::of(device));
    }
    auto figures_of = [&gpus](int gpu) -> GpuFigures & {
        return *std::find_if(gpus.begin(), gpus.end(), [gpu](const GpuFigures &g) { return g.index == gpu; });
    };
    std::vector<std::optional<SanitizeOutcome>> outcomes(check_count);
    std::vector<SanitizeSplit> splits;
    std::deque<SanitizeBatchPlan> work(batches.begin(), batches.end());  // the batches, then the singles
    GpuQueues queues(batches.size(), indices);
    std::mutex mutex;
    std::condition_variable changed;
    std::size_t running = 0, settled = 0, processes = 0;
    std::exception_ptr failure;
    const auto began = std::chrono::steady_clock::now();
    struct Ran {
        SanitizerReport report;
        std::string log;  // run-relative
        double seconds = 0;
        bool timed_out = false;
        std::optional<std::string> device_error;  // device_error_in the process's output
    };
    auto run_batch = [&](const SanitizeBatchPlan &batch, int gpu) {
        const std::string tool_name = sanitizer_tool_name(batch.tool);
        SanitizerRun config;
        config.sanitizer = *sanitizer;
        config.tool = batch.tool;
        config.log_file = log_dir / log_name_on_gpu(batch.log_name, gpu);
        fs::remove(*config.log_file);
        const ExecRequest exec{run.root(), batch.variant, batch.shape_indices(), std::nullopt,
                               kSanitizeSeed, std::nullopt, gpu};
        const std::vector<std::string> target = exec.to_argv(current_executable());
        ProcessOptions process;
        process.timeout = std::chrono::seconds(request.timeout_s);
        const std::vector<std::string> argv = sanitizer_argv(config, target);
        std::string command = quoted_command(argv);
        command.pop_back();  // its newline
        {
            std::lock_guard<std::mutex> lock(mutex);
            reporter.detail("  " + command);
        }
        const ProcessResult ran = run_process(argv, process);

        // One log per process: the tool's records, then what sage2tp exec itself printed (a line per
        // shape that ran to the end).
        const std::string log =
            (fs::exists(*config.log_file) ? read_text_file(*config.log_file) : std::string()) +
            "\n--- sage2tp exec stdout ---\n" + ran.out + "\n--- sage2tp exec stderr ---\n" + ran.err;
        SanitizerReport report = parse_sanitizer_output(batch.tool, log, ran.exit_code);
        if (ran.timed_out) {
            report.passed = false;
            report.verdict =
                tool_name + " did not finish within " + std::to_string(request.timeout_s) + " s (raise --timeout)";
        }
        const std::optional<std::string> device_error = device_error_in(log);
        if (device_error) {
            report.passed = false;
            report.verdict = "GPU " + std::to_string(gpu) + " lost during this check: " + *device_error;
        }
        std::ofstream(*config.log_file, std::ios::binary | std::ios::trunc)
            << log << "\n--- verdict ---\n" << report.verdict << "\n";
        return Ran{report, run.relative(*config.log_file), ran.seconds, ran.timed_out, device_error};
    };
    auto record = [&](std::vector<SanitizeOutcome> settled_outcomes) {
        for (SanitizeOutcome &outcome : settled_outcomes) {
            ++settled;
            outcomes[slot_of.at(outcome.check.log_name)] = std::move(outcome);
        }
    };
    // Under the lock: what one finished process settles, or the singles it queues.
    auto settle = [&](const SanitizeBatchPlan &batch, int gpu, Ran ran) {
        ++processes;
        const std::string timing = " (" + fixed(ran.seconds, 1) + " s, GPU " + std::to_string(gpu) + ", log " + ran.log + ")";
        if (ran.device_error) {
            GpuFigures &lost = figures_of(gpu);
            if (lost.lost.empty()) lost.lost = *ran.device_error + " (log " + ran.log + ")";
            reporter.progress("  " + batch.describe() + ": " + ran.report.verdict + timing +
                              "; its remaining checks move to the GPUs still running");
            record(batch_outcomes(batch, ran.report, ran.log, gpu));
            for (const std::size_t item : queues.lose(gpu)) record(not_run_outcomes(work[item], gpu, *ran.device_error, ran.log));
            return;
        }
        if (!ran.report.passed && batch.checks.size() > 1) {
            reporter.progress("  " + batch.describe() + " in one process: " + ran.report.verdict + timing +
                              "; split into one process per shape");
            for (SanitizeBatchPlan &single : split_sanitize_batch(batch)) {
                work.push_back(std::move(single));
                if (!queues.add(gpu, work.size() - 1))
                    record(not_run_outcomes(work.back(), gpu, figures_of(gpu).lost, ran.log));
            }
            splits.push_back(SanitizeSplit{batch, std::move(ran.report), ran.log, ran.timed_out});
            return;
        }
        record(batch_outcomes(batch, ran.report, ran.log, gpu));
        const std::string what = "[" + std::to_string(settled) + "/" + std::to_string(check_count) + "] " +
                                 batch.describe();
        // On a terminal one line, rewritten in place; in a pipe one line per process.
        if (reporter.live()) {
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
            reporter.live_line("  sanitize " + what + ", " +
                               elapsed_and_eta(elapsed, static_cast<double>(settled) / check_count));
        } else {
            reporter.progress(what);
        }
        reporter.detail("  " + what + ": " + (ran.report.passed ? "passed" : "FAILED") + ", " + ran.report.verdict +
                        timing);
    };
    auto worker = [&](int gpu) {
        std::unique_lock<std::mutex> lock(mutex);
        for (;;) {
            // Idle while others run: a failed batch may still queue its singles, a lost GPU its queue.
            changed.wait(lock, [&] {
                return failure || queues.lost(gpu) || queues.has_work(gpu) || (running == 0 && queues.empty());
            });
            if (failure || queues.lost(gpu) || !queues.has_work(gpu)) return;
            const SanitizeBatchPlan batch = work[*queues.take(gpu)];
            ++running;
            lock.unlock();
            try {
                Ran ran = run_batch(batch, gpu);
                lock.lock();
                settle(batch, gpu, std::move(ran));
            } catch (...) {
                if (!lock.owns_lock()) lock.lock();
                if (!failure) failure = std::current_exception();
            }
            --running;
            changed.notify_all();
        }
    };
    // As many workers per GPU as --jobs allows the singles of split batches, which may outnumber the batches.
    const std::size_t jobs = static_cast<std::size_t>(std::max(1, request.jobs));
    reporter.progress("  " + std::to_string(batches.size()) + " processes for " + std::to_string(check_count) +
                      " checks on " + std::to_string(devices.size()) + " GPU" + (devices.size() == 1 ? "" : "s") +
                      ", " + std::to_string(std::min(jobs * devices.size(), batches.size())) + " at a time");
    std::vector<std::thread> workers;
    for (const int gpu : indices)
        for (std::size_t i = 0; i < std::min(jobs, std::max<std::size_t>(1, check_count)); ++i) workers.emplace_back(worker, gpu);
    for (auto &w : workers) w.join();
    if (failure) std::rethrow_exception(failure);
    std::vector<SanitizeOutcome> done;
    for (auto &outcome : outcomes) {
        if (!outcome) fail(ExitCode::internal, "sanitize: a check was neither run nor reported as not run");
        done.push_back(std::move(*outcome));
    }
    reporter.end_live_line();
    if (!splits.empty())
        reporter.progress("  " + std::to_string(processes) + " processes ran for " + std::to_string(check_count) +
                          " checks: " + std::to_string(splits.size()) + " of " + std::to_string(batches.size()) +
                          " batches split into one process per shape");

    SanitizeFold fold =
        fold_sanitize_checks(done, shapes.size(), experiment.sanitizer_tools, candidates, splits, std::move(gpus));
    fold.figures.device = devices.front().summary();
    fold.figures.seed = static_cast<std::int64_t>(kSanitizeSeed);
    result.status = fold.passed ? StageStatus::passed : StageStatus::failed;
    result.reasons = fold.reasons;
    result.figures = fold.figures.to_toml();
    return result;
}

}  // namespace

int default_sanitize_jobs() {
    if (const char *env = std::getenv("SAGE2TP_SANITIZE_JOBS"); env && *env) {
        char *end = nullptr;
        const long n = std::strtol(env, &end, 10);
        if (*end || n < 1 || n > 256)
            fail(ExitCode::usage, std::string("SAGE2TP_SANITIZE_JOBS='") + env + "' is not a count from 1 to 256");
        return static_cast<int>(n);
    }
    return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

StageWork sanitize_stage_work(StageContext &context, const SanitizeRequest &request, const Reporter &reporter) {
    const std::string skipped = skip_reason(request.skip);
    RunDirectory &run = context.run();
    const Experiment &experiment = context.experiment();
    std::vector<SanitizerTool> tools;
    for (const auto &name : experiment.sanitizer_tools) tools.push_back(parse_sanitizer_tool(name));
    const auto &shapes = sanitizer_shapes();
    std::vector<std::string> shape_names, candidates;
    for (const auto &shape : shapes) shape_names.push_back(shape.describe());
    for (const CandidateSpec &candidate : experiment.candidates) candidates.push_back(candidate.name);

    StageWork work;
    work.stage = Stage::sanitize;
    work.force = request.force;
    work.add_inputs = [&experiment, skipped, shape_names](Fingerprint &f) {
        // Checkpoints written before the figures were kept per candidate are not read as current.
        f.add("figures_layout", kFiguresLayout);
        f.add("skipped", static_cast<std::int64_t>(!skipped.empty()));
        for (const auto &name : experiment.sanitizer_tools) f.add("tool", name);
        for (const auto &shape : shape_names) f.add("shape", shape);
        f.add("seed", static_cast<std::int64_t>(kSanitizeSeed));
    };
    work.verify_outputs = [&run](const Checkpoint &c) -> std::string {
        for (const SanitizeCheck &check : SanitizeFigures::from_toml(c.figures).checks) {
            std::error_code ec;
            if (!fs::is_regular_file(run.resolve(check.log), ec)) return check.log + " is missing";
        }
        return "";
    };
    work.run = [&context, &request, &reporter, skipped, tools, shape_names, candidates] {
        return run_sanitize_checks(context, request, reporter, skipped, tools, shape_names, candidates);
    };
    work.summarize = [](const Checkpoint &c, const Reporter &to) {
        to.say(SanitizeFigures::from_toml(c.figures).text(to.verbose()));
    };
    return work;
}

}  // namespace s2tp
