#include "stages/sanitize_stage.h"

#include "tools/gpu_session/exec_request.h"

#include "pipeline/common_options.h"

#include "formats/sanitizer_report.h"
#include "model/experiment_manifest.h"
#include "figures/build_figures.h"
#include "model/shape_sets.h"
#include "tools/gpu_session/gpu_session.h"
#include "tools/gpu_session/gpu_work_pool.h"
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

// What one sanitizer process ended as.
struct SanitizerProcess {
    SanitizerReport report;
    std::string log;  // run-relative
    double seconds = 0;
    bool timed_out = false;
    std::optional<std::string> device_error;  // device_error_in the process's output
};

// The sanitizer processes of one stage run. Each process has its own context on its GPU and its own
// instrumentation, so several at once find what one at a time finds; only the wall time is shared.
// The batches are movable items of the GPU pool, each run pinned to its GPU (exec --device), at most
// request.jobs at once on each. A batch that does not pass queues one process per shape on the same
// GPU (sanitize_matrix.h says why that is sound). A process whose output holds a device error loses
// its GPU: its checks fail with that error (not re-run: a kernel that takes one GPU down would take
// the next), and the pool moves the GPU's queue to the GPUs still running, or reports it not run.
class SanitizeProcesses {
public:
    SanitizeProcesses(const StageContext &context, const SanitizeRequest &request, const Reporter &reporter,
                      fs::path sanitizer, const std::vector<SanitizeBatchPlan> &batches,
                      const std::vector<DeviceFacts> &devices)
        : run_(context.run()), request_(request), reporter_(reporter), sanitizer_(std::move(sanitizer)),
          log_dir_(context.run().logs() / "sanitize"), batch_count_(batches.size()), work_(batches.begin(), batches.end()) {
        fs::create_directories(log_dir_);
        // Every check's place in the figures, in plan order, whichever process settles it.
        for (const SanitizeBatchPlan &batch : batches)
            for (const SanitizeCheckPlan &check : batch.checks) slot_of_.emplace(check.log_name, slot_of_.size());
        outcomes_.resize(slot_of_.size());
        for (const DeviceFacts &device : devices) {
            indices_.push_back(device.index);
            gpus_.push_back(GpuFigures::of(device));
        }
    }

    // Every check settled, in plan order; the GPUs' figures and the split batches beside them.
    std::vector<SanitizeOutcome> run_all() {
        // As many workers per GPU as --jobs allows the singles of split batches, which may outnumber the batches.
        const std::size_t jobs = static_cast<std::size_t>(std::max(1, request_.jobs));
        const std::size_t checks = slot_of_.size();
        reporter_.progress("  " + std::to_string(batch_count_) + " processes for " + std::to_string(checks) +
                           " checks on " + std::to_string(indices_.size()) + " GPU" + (indices_.size() == 1 ? "" : "s") +
                           ", " + std::to_string(std::min(jobs * indices_.size(), batch_count_)) + " at a time");
        began_ = std::chrono::steady_clock::now();
        GpuWorkPool pool(indices_, batch_count_, ItemPlacement::movable, std::min(jobs, std::max<std::size_t>(1, checks)));
        const GpuPoolReport report = pool.run([&](std::size_t item, int gpu) { run_item(pool, item, gpu); });
        for (const GpuPoolReport::NotRun &unrun : report.not_run) {
            const Loss &loss = losses_.at(unrun.gpu);
            record(not_run_outcomes(work_[unrun.item], unrun.gpu, loss.device_error, loss.log));
        }
        std::vector<SanitizeOutcome> done;
        for (auto &outcome : outcomes_) {
            if (!outcome) fail(ExitCode::internal, "sanitize: a check was neither run nor reported as not run");
            done.push_back(std::move(*outcome));
        }
        reporter_.end_live_line();
        if (!splits_.empty())
            reporter_.progress("  " + std::to_string(processes_) + " processes ran for " + std::to_string(checks) +
                               " checks: " + std::to_string(splits_.size()) + " of " + std::to_string(batch_count_) +
                               " batches split into one process per shape");
        return done;
    }

    std::vector<SanitizeSplit> &splits() { return splits_; }
    std::vector<GpuFigures> &gpus() { return gpus_; }

private:
    // The first device error that lost a GPU, and the log of the process that met it.
    struct Loss {
        std::string device_error, log;
    };
    const RunDirectory &run_;
    const SanitizeRequest &request_;
    const Reporter &reporter_;
    const fs::path sanitizer_;
    const fs::path log_dir_;
    const std::size_t batch_count_;
    std::deque<SanitizeBatchPlan> work_;  // the pool's items: the batches, then the singles
    std::map<std::string, std::size_t> slot_of_;
    std::vector<std::optional<SanitizeOutcome>> outcomes_;
    std::vector<int> indices_;
    std::vector<GpuFigures> gpus_;
    std::map<int, Loss> losses_;
    std::vector<SanitizeSplit> splits_;
    std::mutex mutex_;
    std::size_t settled_ = 0, processes_ = 0;
    std::chrono::steady_clock::time_point began_;

    GpuFigures &figures_of(int gpu) {
        return *std::find_if(gpus_.begin(), gpus_.end(), [gpu](const GpuFigures &g) { return g.index == gpu; });
    }

    void run_item(GpuWorkPool &pool, std::size_t item, int gpu) {
        SanitizeBatchPlan batch;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            batch = work_[item];
        }
        SanitizerProcess ran = run_batch(batch, gpu);
        std::lock_guard<std::mutex> lock(mutex_);
        settle(pool, batch, gpu, std::move(ran));
    }

    SanitizerProcess run_batch(const SanitizeBatchPlan &batch, int gpu) {
        const std::string tool_name = sanitizer_tool_name(batch.tool);
        SanitizerRun config;
        config.sanitizer = sanitizer_;
        config.tool = batch.tool;
        config.log_file = log_dir_ / log_name_on_gpu(batch.log_name, gpu);
        fs::remove(*config.log_file);
        const ExecRequest exec{run_.root(), batch.variant, batch.shape_indices(), std::nullopt,
                               kSanitizeSeed, std::nullopt, gpu};
        const std::vector<std::string> target = exec.to_argv(current_executable());
        ProcessOptions process;
        process.timeout = std::chrono::seconds(request_.timeout_s);
        const std::vector<std::string> argv = sanitizer_argv(config, target);
        std::string command = quoted_command(argv);
        command.pop_back();  // its newline
        {
            std::lock_guard<std::mutex> lock(mutex_);
            reporter_.detail("  " + command);
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
                tool_name + " did not finish within " + std::to_string(request_.timeout_s) + " s (raise --timeout)";
        }
        const std::optional<std::string> device_error = device_error_in(log);
        if (device_error) {
            report.passed = false;
            report.verdict = "GPU " + std::to_string(gpu) + " lost during this check: " + *device_error;
        }
        std::ofstream(*config.log_file, std::ios::binary | std::ios::trunc)
            << log << "\n--- verdict ---\n" << report.verdict << "\n";
        return SanitizerProcess{report, run_.relative(*config.log_file), ran.seconds, ran.timed_out, device_error};
    }

    void record(std::vector<SanitizeOutcome> settled_outcomes) {
        for (SanitizeOutcome &outcome : settled_outcomes) {
            ++settled_;
            outcomes_[slot_of_.at(outcome.check.log_name)] = std::move(outcome);
        }
    }

    // Under the lock: what one finished process settles, or the singles it queues. A lost GPU is
    // thrown for the pool, after its checks are settled.
    void settle(GpuWorkPool &pool, const SanitizeBatchPlan &batch, int gpu, SanitizerProcess ran) {
        ++processes_;
        const std::string timing = " (" + fixed(ran.seconds, 1) + " s, GPU " + std::to_string(gpu) + ", log " + ran.log + ")";
        if (ran.device_error) {
            const std::string lost = *ran.device_error + " (log " + ran.log + ")";
            if (losses_.emplace(gpu, Loss{*ran.device_error, ran.log}).second) figures_of(gpu).lost = lost;
            reporter_.progress("  " + batch.describe() + ": " + ran.report.verdict + timing +
                               "; its remaining checks move to the GPUs still running");
            record(batch_outcomes(batch, ran.report, ran.log, gpu));
            fail(ExitCode::missing_tool, lost);
        }
        if (!ran.report.passed && batch.checks.size() > 1) {
            reporter_.progress("  " + batch.describe() + " in one process: " + ran.report.verdict + timing +
                               "; split into one process per shape");
            for (SanitizeBatchPlan &single : split_sanitize_batch(batch)) {
                work_.push_back(std::move(single));
                pool.add(gpu, work_.size() - 1);
            }
            splits_.push_back(SanitizeSplit{batch, std::move(ran.report), ran.log, ran.timed_out});
            return;
        }
        record(batch_outcomes(batch, ran.report, ran.log, gpu));
        report_settled(batch, ran.report, timing);
    }

    void report_settled(const SanitizeBatchPlan &batch, const SanitizerReport &report, const std::string &timing) {
        const std::size_t checks = slot_of_.size();
        const std::string what = "[" + std::to_string(settled_) + "/" + std::to_string(checks) + "] " + batch.describe();
        // On a terminal one line, rewritten in place; in a pipe one line per process.
        if (reporter_.live()) {
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
            reporter_.live_line("  sanitize " + what + ", " +
                                elapsed_and_eta(elapsed, static_cast<double>(settled_) / checks));
        } else {
            reporter_.progress(what);
        }
        reporter_.detail("  " + what + ": " + (report.passed ? "passed" : "FAILED") + ", " + report.verdict + timing);
    }
};

// The sanitize stage's body: one sanitizer process per variant and tool over every shape, a failed
// one re-run shape by shape, then the fold.
StageResult run_sanitize_checks(const StageContext &context, const SanitizeRequest &request, const Reporter &reporter,
                                const std::string &skipped, const std::vector<SanitizerTool> &tools,
                                const std::vector<std::string> &shape_names, const std::vector<std::string> &candidates) {
    const Experiment &experiment = context.experiment();
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

    SanitizeProcesses processes(context, request, reporter, *sanitizer,
                                plan_sanitize_batches(experiment.variant_names(), tools, shape_names), devices);
    const std::vector<SanitizeOutcome> done = processes.run_all();
    SanitizeFold fold = fold_sanitize_checks(done, sanitizer_shapes().size(), experiment.sanitizer_tools, candidates,
                                             processes.splits(), std::move(processes.gpus()));
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
