// sage2tp sanitize: runs `sage2tp exec` under compute-sanitizer once per (variant, tool, sanitizer
// shape), keeps every log under logs/sanitize/, and records each check's error count. A missing summary,
// a timeout or a failing target is a failed check, never a pass: compute-sanitizer has no default
// --error-exitcode, so its exit status alone can be 0 with errors found.
#include "subcommands.h"

#include "support/file_io.h"
#include "pipeline/cli.h"
#include "support/errors.h"
#include "model/experiment_manifest.h"
#include "stages/gpu_stage.h"
#include "stages/kernel_build.h"
#include "support/process_runner.h"
#include "formats/sanitizer_report.h"
#include "model/shape_sets.h"
#include "pipeline/stage_pipeline.h"

#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <chrono>
#include <iterator>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

// One seed for every sanitizer shape: what a check covers is the code path, not the values.
constexpr std::uint64_t kSanitizeSeed = 1;
// Failed checks quoted one by one in the reasons; the checkpoint's figures list all of them.
constexpr std::size_t kReasonsShown = 12;

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
    const char *value = std::getenv("RUN_SANITIZER");
    if (value && std::string(value) == "0")
        return "skipped because RUN_SANITIZER=0; the gate reports the sanitizer as not checked";
    return "";
}

void print_checks(const Checkpoint &c, const Reporter &reporter) {
    reporter.say("  " + c.figures["summary"].value_or(std::string()));
    const toml::array *checks = c.figures["checks"].as_array();
    if (!checks) return;
    for (const auto &node : *checks) {
        const toml::table &check = *node.as_table();
        if (check["passed"].value_or(false) && !reporter.verbose()) continue;
        reporter.say(std::string("  ") + (check["passed"].value_or(false) ? "ok   " : "FAIL ") +
                     check["variant"].value_or(std::string()) + " " + check["tool"].value_or(std::string()) + " " +
                     check["shape"].value_or(std::string()) + ": " +
                     std::to_string(check["errors"].value_or<std::int64_t>(0)) + " errors, log " +
                     check["log"].value_or(std::string()));
    }
}

}  // namespace

int sanitize_command(const Args &args) {
    CommandLine cl("sanitize", "Run both builds under compute-sanitizer on small shapes.", args);
    cl.add_options()
        ("device", "GPU index within CUDA_VISIBLE_DEVICES", cxxopts::value<int>()->default_value("0"), "N")
        ("skip", "record a skipped stage instead of running (also: RUN_SANITIZER=0)")
        ("timeout", "seconds before one sanitizer process is killed and its check failed",
         cxxopts::value<int>()->default_value("1800"), "S")
        ("force", "run even when the checkpoint is up to date");
    if (!cl.parse()) return 0;
    const int device_index = cl.result()["device"].as<int>();
    const int timeout_s = cl.result()["timeout"].as<int>();
    if (timeout_s < 1) fail(ExitCode::usage, "--timeout must be at least 1 second");
    const std::string skipped = skip_reason(cl.has("skip"));

    StageContext context(Stage::sanitize, require_existing_run(cl.selection()));
    RunDirectory &run = context.run();
    const Experiment &experiment = context.experiment();
    std::vector<SanitizerTool> tools;
    for (const auto &name : experiment.sanitizer_tools) tools.push_back(parse_sanitizer_tool(name));
    const auto &shapes = sanitizer_shapes();

    StageWork work;
    work.stage = Stage::sanitize;
    work.add_inputs = [&](Fingerprint &f) {
        f.add("skipped", static_cast<std::int64_t>(!skipped.empty()));
        for (const auto &name : experiment.sanitizer_tools) f.add("tool", name);
        for (const auto &shape : shapes) f.add("shape", shape.describe());
        f.add("seed", static_cast<std::int64_t>(kSanitizeSeed));
    };
    work.verify_outputs = [&](const Checkpoint &c) -> std::string {
        if (const toml::array *checks = c.figures["checks"].as_array())
            for (const auto &node : *checks) {
                const std::string log = (*node.as_table())["log"].value_or(std::string());
                std::error_code ec;
                if (!fs::is_regular_file(run.resolve(log), ec)) return log + " is missing";
            }
        return "";
    };
    work.run = [&] {
        StageResult result;
        toml::array tool_names;
        for (const auto &name : experiment.sanitizer_tools) tool_names.push_back(name);
        if (!skipped.empty()) {
            result.status = StageStatus::skipped;
            result.reasons.push_back(skipped);
            result.figures = toml::table{{"tools", tool_names}, {"summary", "skipped (not checked)"}};
            return result;
        }

        const DeviceFacts device = require_gpu("sanitize", device_index);
        require_kernels_for_device("sanitize", built_kernels(context), device);  // every cubin as recorded
        const std::optional<fs::path> sanitizer = find_cuda_tool("compute-sanitizer");
        if (!sanitizer)
            fail(ExitCode::missing_tool, "sanitize needs compute-sanitizer, which is not installed (looked in PATH, "
                                         "$CUDA_HOME/bin, $CUDA_PATH/bin and /usr/local/cuda/bin); use --skip or "
                                         "RUN_SANITIZER=0 to record the stage as not checked");
        result.tools.insert("compute-sanitizer", sanitizer_version(*sanitizer));
        result.tools.insert("gpu", device.name);
        result.tools.insert("cuda_driver", cuda_version_string(device.driver_version));

        const fs::path log_dir = run.logs() / "sanitize";
        fs::create_directories(log_dir);
        toml::array checks;
        std::int64_t total_errors = 0, failed_checks = 0;
        std::vector<std::string> failures;
        const std::size_t total = 2 * tools.size() * shapes.size();
        std::size_t done = 0;
        const Reporter &reporter = cl.reporter();
        const auto began = std::chrono::steady_clock::now();
        const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(); };
        for (const std::string variant : {"baseline", "candidate"}) {
            for (const SanitizerTool tool : tools) {
                for (std::size_t index = 0; index < shapes.size(); ++index) {
                    const std::string tool_name = sanitizer_tool_name(tool);
                    const std::string shape = shapes[index].describe();
                    const std::string what = "[" + std::to_string(++done) + "/" + std::to_string(total) + "] " +
                                             tool_name + " " + variant + " " + shape;
                    // On a terminal one line, rewritten in place; in a pipe one line per check.
                    if (reporter.live())
                        reporter.live_line("  sanitize " + what + ", " +
                                           elapsed_and_eta(elapsed(), static_cast<double>(done - 1) / total));
                    else
                        reporter.progress(what);
                    SanitizerRun config;
                    config.sanitizer = *sanitizer;
                    config.tool = tool;
                    config.log_file = log_dir / (variant + "-" + tool_name + "-shape" + std::to_string(index) + ".log");
                    fs::remove(*config.log_file);
                    const std::vector<std::string> target = {
                        current_executable().string(), "exec", "--run", run.root().string(), "--variant", variant,
                        "--sanitize-shape", std::to_string(index), "--seed", std::to_string(kSanitizeSeed),
                        "--device", std::to_string(device_index)};
                    ProcessOptions process;
                    process.timeout = std::chrono::seconds(timeout_s);
                    const std::vector<std::string> argv = sanitizer_argv(config, target);
                    std::string command = quoted_command(argv);
                    command.pop_back();  // its newline
                    reporter.detail("  " + command);
                    const ProcessResult ran = run_process(argv, process);

                    // One log per check: the tool's records, then what sage2tp exec itself printed.
                    const std::string log = (fs::exists(*config.log_file) ? read_text_file(*config.log_file) : std::string()) + "\n--- sage2tp exec stdout ---\n" + ran.out +
                                            "\n--- sage2tp exec stderr ---\n" + ran.err;
                    SanitizerReport report = parse_sanitizer_output(tool, log, ran.exit_code);
                    if (ran.timed_out) {
                        report.passed = false;
                        report.verdict = tool_name + " did not finish within " + std::to_string(timeout_s) +
                                         " s (raise --timeout)";
                    }
                    std::ofstream(*config.log_file, std::ios::binary | std::ios::trunc)
                        << log << "\n--- verdict ---\n" << report.verdict << "\n";

                    std::ostringstream seconds;
                    seconds << std::fixed << std::setprecision(1) << ran.seconds;
                    reporter.detail("  " + what + ": " + (report.passed ? "passed" : "FAILED") + ", " + report.verdict +
                                    " (" + seconds.str() + " s, log " + run.relative(*config.log_file) + ")");
                    total_errors += report.errors;
                    if (!report.passed) {
                        ++failed_checks;
                        std::string line = variant + " " + tool_name + " on " + shape + ": " + report.verdict;
                        if (!report.first_error_lines.empty()) line += "; first record: " + report.first_error_lines.front();
                        failures.push_back(line + " (log " + run.relative(*config.log_file) + ")");
                    }
                    checks.push_back(toml::table{{"variant", variant},
                                                 {"tool", tool_name},
                                                 {"shape", shape},
                                                 {"errors", report.errors},
                                                 {"passed", report.passed},
                                                 {"log", run.relative(*config.log_file)}});
                }
            }
        }

        reporter.end_live_line();
        for (std::size_t i = 0; i < failures.size() && i < kReasonsShown; ++i) result.reasons.push_back(failures[i]);
        if (failures.size() > kReasonsShown)
            result.reasons.push_back("and " + std::to_string(failures.size() - kReasonsShown) +
                                     " more failed checks (see figures.checks)");
        result.status = failed_checks == 0 ? StageStatus::passed : StageStatus::failed;
        result.figures = toml::table{{"checks", checks},
                                     {"total_errors", total_errors},
                                     {"tools", tool_names},
                                     {"failed_checks", failed_checks},
                                     {"device", device.summary()},
                                     {"seed", static_cast<std::int64_t>(kSanitizeSeed)}};
        result.figures.insert("summary", std::to_string(checks.size()) + " checks (" + std::to_string(shapes.size()) +
                                             " shapes x " + std::to_string(tools.size()) + " tools x 2 variants), " +
                                             std::to_string(failed_checks) + " failed, " + std::to_string(total_errors) +
                                             " errors");
        return result;
    };
    work.summarize = print_checks;
    return static_cast<int>(execute_stage(context, work, cl.has("force"), cl.reporter()));
}

}  // namespace s2tp
