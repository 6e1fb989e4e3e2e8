#include "tools/sass_histogram.h"

#include "pipeline/file_artifact.h"
#include "support/cuda_tools.h"

#include "tools/gpu_session/gpu_session.h"
#include "support/errors.h"
#include "support/file_io.h"
#include "support/hashing.h"
#include "support/process_runner.h"

#include <chrono>
#include <iomanip>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {

std::optional<Disassembler> find_disassembler() {
    if (auto cuobjdump = find_cuda_tool("cuobjdump")) return Disassembler{*cuobjdump, true};
    if (auto nvdisasm = find_cuda_tool("nvdisasm")) return Disassembler{*nvdisasm, false};
    return std::nullopt;
}

std::string disassemble(const Disassembler &tool, const fs::path &cubin) {
    ProcessOptions options;
    options.timeout = std::chrono::seconds(300);
    const std::vector<std::string> argv = tool.is_cuobjdump
                                              ? std::vector<std::string>{tool.program.string(), "-sass", cubin.string()}
                                              : std::vector<std::string>{tool.program.string(), cubin.string()};
    const ProcessResult ran = run_process(argv, options);
    if (ran.exit_code != 0)
        fail(ExitCode::internal, tool.program.string() + (tool.is_cuobjdump ? " -sass " : " ") + cubin.string() +
                                     " failed (exit " + std::to_string(ran.exit_code) + "): " + ran.err.substr(0, 400));
    return ran.out;
}

std::optional<SassComparison> sass_of_build(const std::vector<CompileJob> &jobs, const KernelAbi &baseline_abi,
                                            const KernelAbi &candidate_abi, const Reporter &reporter) {
    const std::optional<Disassembler> tool = find_disassembler();
    if (!tool) {
        reporter.warn(std::string("build --sass: neither cuobjdump nor nvdisasm was found (") + cuda_tool_search_order() +
                      "); no SASS histogram");
        return std::nullopt;
    }
    ProcessOptions options;
    options.timeout = std::chrono::seconds(60);
    const ProcessResult version = run_process({tool->program.string(), "--version"}, options);
    std::string version_line;
    {
        std::istringstream lines(version.out);
        std::string line;
        while (std::getline(lines, line))
            if (!line.empty()) version_line = line;  // the last line names the release
    }
    std::vector<SassFunction> listings[2];
    for (const CompileJob &job : jobs) {
        if (!job.compared) continue;
        const int v = job.variant == "baseline" ? 0 : 1;
        try {
            std::vector<SassFunction> functions = parse_sass_listing(disassemble(*tool, job.cubin), job.cubin.string());
            listings[v].insert(listings[v].end(), functions.begin(), functions.end());
        } catch (const Error &e) {
            // The histogram explains a result; it is no condition of the build.
            reporter.warn(std::string("build --sass: ") + e.what() + "; no SASS histogram");
            return std::nullopt;
        }
    }
    auto short_name_in = [](const KernelAbi &abi) {
        return [&abi](const std::string &name) -> std::optional<std::string> {
            const std::optional<AbiEntry> entry = abi.describe_entry(name);
            return entry ? std::optional<std::string>(entry->short_name) : std::nullopt;
        };
    };
    SassComparison comparison = compare_sass(listings[0], listings[1], short_name_in(baseline_abi), short_name_in(candidate_abi));
    comparison.tool = tool->program.filename().string() + (version_line.empty() ? "" : ", " + version_line);
    return comparison;
}

std::optional<SassComparison> write_sass_report(const RunDirectory &run, const std::vector<CompileJob> &jobs,
                                                const KernelAbi &baseline_abi, const KernelAbi &candidate_abi,
                                                const Reporter &reporter) {
    std::optional<SassComparison> comparison = sass_of_build(jobs, baseline_abi, candidate_abi, reporter);
    if (!comparison) return comparison;
    toml::table cubins;
    for (const CompileJob &job : jobs)
        if (job.compared)
            cubins.insert(job.variant + ":" + job.source,
                          FileArtifact::of(run, job.cubin).to_toml());
    toml::table report = comparison->to_toml();
    report.insert("cubins", cubins);
    std::ostringstream text;
    text << report << "\n";
    fs::create_directories(run.reports());
    write_file_atomically(run.reports() / "sass.toml", text.str());
    return comparison;
}

}  // namespace s2tp
