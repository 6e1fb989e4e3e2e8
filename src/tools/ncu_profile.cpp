#include "tools/ncu_profile.h"

#include "tools/gpu_session/exec_request.h"

#include "pipeline/file_artifact.h"
#include "support/cuda_tools.h"
#include "support/file_io.h"

#include "formats/ncu_csv.h"
#include "tools/gpu_session/gpu_session.h"
#include "support/errors.h"
#include "support/hashing.h"
#include "support/process_runner.h"

#include <chrono>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

std::string first_line(const std::string &text) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line))
        if (line.find_first_not_of(" \t\r") != std::string::npos) return line;
    return "";
}

std::string joined(const std::vector<std::string> &metrics) {
    std::string list;
    for (const std::string &metric : metrics) list += (list.empty() ? "" : ",") + metric;
    return list;
}

}  // namespace

NcuProfiles profile_with_ncu(const RunDirectory &run, const NcuRequest &request, const Reporter &reporter) {
    NcuProfiles profiles;
    profiles.figures.requested = true;
    const std::optional<fs::path> ncu = find_cuda_tool("ncu");
    profiles.figures.found = ncu.has_value();
    if (!ncu) {
        reporter.warn(std::string("time: ncu was not found (") + cuda_tool_search_order() +
                      "); timed without Nsight Compute metrics");
        return profiles;
    }
    ProcessOptions version_options;
    version_options.timeout = std::chrono::seconds(60);
    const ProcessResult version = run_process({ncu->string(), "--version"}, version_options);
    profiles.version = first_line(version.out + version.err);
    if (request.seq_len > 0) profiles.figures.seq_len = request.seq_len;
    fs::create_directories(run.logs());
    fs::create_directories(run.reports());
    std::vector<std::optional<NcuRawPage>> pages(request.variants.size());
    double seconds = 0;
    for (std::size_t v = 0; v < request.variants.size(); ++v) {
        const std::string &variant = request.variants[v].name;
        const std::string &kernel = request.variants[v].entry;
        reporter.progress("time: profiling one " + variant + " launch with ncu (" +
                          std::to_string(request.metrics.size()) + " metrics)");
        const fs::path report_base = run.reports() / ("ncu-" + variant);
        const fs::path report_file = report_base.string() + ".ncu-rep";
        const fs::path csv_file = report_base.string() + ".csv";
        const fs::path log = run.logs() / ("ncu-" + variant + ".log");
        // Matched by the mangled name: a template entry's plain function name is the same for all of them.
        std::vector<std::string> argv{ncu->string(), "--clock-control", "none", "--force-overwrite",
                                      "--kernel-name-base", "mangled", "--kernel-name", kernel, "--launch-count", "1",
                                      "--metrics", joined(request.metrics), "-o", report_base.string()};
        const ExecRequest exec{run.root(), variant, {}, request.workload_file, std::nullopt,
                               request.seq_len > 0 ? std::optional<std::int64_t>(request.seq_len) : std::nullopt,
                               request.device_index};
        for (std::string &word : exec.to_argv(current_executable())) argv.push_back(std::move(word));
        ProcessOptions options;
        options.timeout = std::chrono::seconds(1800);
        const ProcessResult ran = run_process(argv, options);
        seconds += ran.seconds;
        std::string log_text = ran.out + ran.err;
        std::error_code ec;
        const bool made = ran.exit_code == 0 && fs::is_regular_file(report_file, ec);
        NcuRunFigures entry{ran.exit_code, run.relative(log), std::nullopt, ran.seconds};
        if (made) {
            entry.report = run.relative(report_file);
            profiles.artifacts.insert("ncu_" + variant, FileArtifact::of(run, report_file).to_toml());
            const ProcessResult imported =
                run_process({ncu->string(), "--import", report_file.string(), "--csv", "--page", "raw"}, version_options);
            log_text += "\n$ ncu --import " + run.relative(report_file) + " --csv --page raw\n" + imported.err;
            if (imported.exit_code == 0) {
                write_file_atomically(csv_file, imported.out);
                profiles.artifacts.insert("ncu_" + variant + "_csv", FileArtifact::of(run, csv_file).to_toml());
                try {
                    NcuRawPage page = parse_ncu_raw_csv(imported.out, run.relative(csv_file));
                    if (page.rows.empty()) reporter.warn("time: " + run.relative(csv_file) + " holds no launch");
                    else pages[v] = std::move(page);
                } catch (const Error &e) {
                    reporter.warn(std::string("time: ") + e.what());
                }
            } else {
                reporter.warn("time: ncu --import " + run.relative(report_file) + " failed (exit " +
                              std::to_string(imported.exit_code) + "); see " + run.relative(log));
            }
        } else {
            reporter.warn("time: ncu did not profile the " + variant + (ran.timed_out ? " (timed out)" : "") +
                          " (exit " + std::to_string(ran.exit_code) + "); see " + run.relative(log));
        }
        write_file_atomically(log, log_text);
        profiles.figures.runs[variant] = entry;
    }
    profiles.figures.seconds = seconds;
    for (std::size_t v = 1; v < request.variants.size(); ++v) {
        if (!pages[0] || !pages[v]) continue;
        NcuComparison comparison = compare_ncu_metrics(request.metrics, *pages[0], 0, *pages[v], 0);
        std::vector<std::string> absent;
        for (const NcuMetricFigure &figure : comparison.metrics)
            if (!figure.baseline || !figure.candidate) absent.push_back(figure.name);
        if (!absent.empty())
            reporter.warn("time: ncu gave no number for " + joined(absent) + " of " + request.variants[v].name +
                          " (see the raw pages in reports/)");
        profiles.comparisons.emplace(request.variants[v].name, std::move(comparison));
    }
    return profiles;
}

}  // namespace s2tp
