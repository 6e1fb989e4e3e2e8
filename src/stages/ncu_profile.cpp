#include "stages/ncu_profile.h"
#include "support/file_io.h"

#include "stages/gpu_stage.h"
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

}  // namespace

NcuProfiles profile_with_ncu(const RunDirectory &run, int device_index, const NcuEntries &entries,
                             const Reporter &reporter) {
    NcuProfiles profiles;
    profiles.figures.insert("requested", true);
    const std::optional<fs::path> ncu = find_cuda_tool("ncu");
    profiles.figures.insert("found", ncu.has_value());
    if (!ncu) {
        reporter.warn("time: ncu was not found (PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin); "
                      "timed without Nsight Compute reports");
        return profiles;
    }
    ProcessOptions version_options;
    version_options.timeout = std::chrono::seconds(60);
    const ProcessResult version = run_process({ncu->string(), "--version"}, version_options);
    profiles.version = first_line(version.out + version.err);
    fs::create_directories(run.logs());
    for (const char *variant : {"baseline", "candidate"}) {
        const std::string &kernel = std::string(variant) == "baseline" ? entries.baseline : entries.candidate;
        reporter.progress(std::string("time: profiling one ") + variant + " launch with ncu");
        const fs::path report_base = run.reports() / (std::string("ncu-") + variant);
        const fs::path report_file = report_base.string() + ".ncu-rep";
        const fs::path log = run.logs() / (std::string("ncu-") + variant + ".log");
        // Matched by the mangled name: a template entry's plain function name is the same for all of them.
        const std::vector<std::string> argv{ncu->string(), "--clock-control", "none", "--force-overwrite",
                                            "--kernel-name-base", "mangled", "--kernel-name", kernel,
                                            "--launch-count", "1",
                                            "-o", report_base.string(), current_executable().string(),
                                            "exec", "--run", run.root().string(), "--variant", variant,
                                            "--workload", "--device", std::to_string(device_index)};
        ProcessOptions options;
        options.timeout = std::chrono::seconds(1800);
        const ProcessResult ran = run_process(argv, options);
        write_file_atomically(log, ran.out + ran.err);
        std::error_code ec;
        const bool made = ran.exit_code == 0 && fs::is_regular_file(report_file, ec);
        toml::table entry{{"exit_code", ran.exit_code}, {"log", run.relative(log)}, {"seconds", ran.seconds}};
        if (made) {
            entry.insert("report", run.relative(report_file));
            profiles.artifacts.insert(std::string("ncu_") + variant,
                                      toml::table{{"path", run.relative(report_file)}, {"sha256", sha256_file(report_file)}});
        } else {
            reporter.warn("time: ncu did not profile the " + std::string(variant) + (ran.timed_out ? " (timed out)" : "") +
                          " (exit " + std::to_string(ran.exit_code) + "); see " + run.relative(log));
        }
        profiles.figures.insert(variant, entry);
    }
    return profiles;
}

}  // namespace s2tp
