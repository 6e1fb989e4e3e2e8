#include "stages/sass_histogram.h"
#include "support/cuda_tools.h"

#include "stages/gpu_stage.h"
#include "support/errors.h"
#include "support/file_io.h"
#include "support/hashing.h"
#include "support/process_runner.h"

#include <chrono>
#include <iomanip>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

toml::table histogram_table(const SassHistogram &h) {
    toml::table t{{"total", h.total}};
    for (const auto &[family, count] : h.families) t.insert(family, count);
    return t;
}

SassHistogram histogram_from(const toml::table &t) {
    SassHistogram h;
    for (const std::string &family : sass_families()) h.families[family] = t[family].value_or<std::int64_t>(0);
    h.total = t["total"].value_or<std::int64_t>(0);
    return h;
}

toml::table variant_table(const SassVariantFigures &v) {
    toml::table t{{"all", histogram_table(v.all)}};
    if (v.loop) {
        toml::table loop = histogram_table(*v.loop);
        loop.insert("start", static_cast<std::int64_t>(v.loop_start));
        loop.insert("end", static_cast<std::int64_t>(v.loop_end));
        t.insert("loop", loop);
    }
    return t;
}

SassVariantFigures variant_from(const toml::table &t) {
    SassVariantFigures v;
    if (const toml::table *all = t["all"].as_table()) v.all = histogram_from(*all);
    if (const toml::table *loop = t["loop"].as_table()) {
        v.loop = histogram_from(*loop);
        v.loop_start = static_cast<std::uint64_t>((*loop)["start"].value_or<std::int64_t>(0));
        v.loop_end = static_cast<std::uint64_t>((*loop)["end"].value_or<std::int64_t>(0));
    }
    return v;
}

SassVariantFigures figures_of(const SassFunction &function) {
    SassVariantFigures v;
    v.all = opcode_histogram(function.instructions);
    if (auto loop = find_main_loop(function)) {
        v.loop = opcode_histogram(loop->body);
        v.loop_start = loop->start;
        v.loop_end = loop->end;
    }
    return v;
}

std::string change(std::int64_t base, std::int64_t cand) {
    std::ostringstream s;
    s << base << " -> " << cand;
    if (cand != base) s << " (" << std::showpos << cand - base << ")";
    return s.str();
}

std::string hex(std::uint64_t address) {
    std::ostringstream s;
    s << "0x" << std::hex << address;
    return s.str();
}

}  // namespace

SassComparison compare_sass(const std::vector<SassFunction> &baseline, const std::vector<SassFunction> &candidate,
                            const SassEntryKey &baseline_key, const SassEntryKey &candidate_key) {
    auto key_of = [](const SassEntryKey &key, const std::string &name) {
        return key ? key(name) : std::optional<std::string>(name);
    };
    SassComparison comparison;
    for (const SassFunction &base : baseline) {
        const std::optional<std::string> base_key = key_of(baseline_key, base.name);
        if (!base_key) continue;
        for (const SassFunction &cand : candidate)
            if (key_of(candidate_key, cand.name) == base_key) {
                comparison.entries.push_back({*base_key, figures_of(base), figures_of(cand)});
                break;
            }
    }
    return comparison;
}

toml::table SassComparison::to_toml() const {
    toml::table entries_table;
    for (const SassEntryComparison &e : entries)
        entries_table.insert(e.entry, toml::table{{"baseline", variant_table(e.baseline)},
                                                  {"candidate", variant_table(e.candidate)}});
    return toml::table{{"tool", tool}, {"entries", entries_table}};
}

SassComparison SassComparison::from_toml(const toml::table &table) {
    SassComparison comparison;
    comparison.tool = table["tool"].value_or(std::string());
    if (const toml::table *entries = table["entries"].as_table())
        for (const auto &[name, node] : *entries) {
            const toml::table *e = node.as_table();
            if (!e) continue;
            SassEntryComparison entry;
            entry.entry = std::string(name.str());
            if (const toml::table *b = (*e)["baseline"].as_table()) entry.baseline = variant_from(*b);
            if (const toml::table *c = (*e)["candidate"].as_table()) entry.candidate = variant_from(*c);
            comparison.entries.push_back(entry);
        }
    return comparison;
}

std::string SassComparison::table_text() const {
    std::ostringstream out;
    out << "  SASS opcode families (" << tool << "), baseline -> candidate (delta):\n";
    for (const SassEntryComparison &e : entries) {
        const SassVariantFigures &b = e.baseline, &c = e.candidate;
        const bool loops = b.loop && c.loop;
        out << "  " << e.entry;
        if (loops)
            out << "; main loop " << hex(b.loop_start) << ".." << hex(b.loop_end) << " -> " << hex(c.loop_start)
                << ".." << hex(c.loop_end);
        else out << "; main loop not found in " << (b.loop ? "the candidate" : c.loop ? "the baseline" : "either");
        out << "\n    " << std::left << std::setw(8) << "FAMILY" << std::setw(26) << "ENTRY"
            << (loops ? "MAIN LOOP" : "") << "\n";
        std::vector<std::string> rows = sass_families();
        rows.push_back("total");
        for (const std::string &family : rows) {
            const auto count = [&](const SassHistogram &h) {
                return family == "total" ? h.total : h.families.at(family);
            };
            out << "    " << std::setw(8) << family << std::setw(26) << change(count(b.all), count(c.all));
            if (loops) out << change(count(*b.loop), count(*c.loop));
            out << "\n";
        }
    }
    return out.str();
}

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
                          toml::table{{"path", run.relative(job.cubin)}, {"sha256", sha256_file(job.cubin)}});
    toml::table report = comparison->to_toml();
    report.insert("cubins", cubins);
    std::ostringstream text;
    text << report << "\n";
    fs::create_directories(run.reports());
    write_file_atomically(run.reports() / "sass.toml", text.str());
    return comparison;
}

}  // namespace s2tp
