// sage2tp compare [RUN...]: several runs and their candidates in one table (text, markdown or csv) and
// (with --svg) one SVG of every candidate's ratio interval against 1.
#include "subcommands.h"

#include "pipeline/cli.h"
#include "views/run_comparison.h"

#include <iostream>
#include <optional>

namespace s2tp {

int compare_command(const Args &args) {
    CommandLine cl("compare",
                   "Compare runs and their candidates: workload, GPU, clocks, p50s, ratios, A/A, verdicts. Each RUN is "
                   "a run directory or a run id under --root; without one, the run other commands pick.",
                   args);
    cl.add_options()("runs", "the runs: run directories or run ids under --root (default: the run other commands "
                             "pick)",
                     cxxopts::value<std::vector<std::string>>(), "RUN")
        ("format", "text, markdown or csv", cxxopts::value<std::string>()->default_value("text"), "FORMAT")
        ("svg", "also write the SVG of the ratio intervals to FILE", cxxopts::value<std::string>(), "FILE")
        ("output", "write the table to FILE instead of stdout", cxxopts::value<std::string>(), "FILE");
    cl.positional("runs");
    cl.positional_help("[RUN...]");
    if (!cl.parse()) return 0;

    const std::string format = cl.result()["format"].as<std::string>();
    const std::optional<std::string> svg = cl.has("svg") ? std::optional(cl.result()["svg"].as<std::string>()) : std::nullopt;
    const std::optional<std::string> output =
        cl.has("output") ? std::optional(cl.result()["output"].as<std::string>()) : std::nullopt;
    if (svg && svg->empty()) fail(ExitCode::usage, "--svg '' is an empty path; give it a file");
    if (output && output->empty()) fail(ExitCode::usage, "--output '' is an empty path; give it a file");
    const std::vector<std::string> words =
        cl.has("runs") ? cl.result()["runs"].as<std::vector<std::string>>() : std::vector<std::string>{};
    std::vector<ComparedRun> runs;
    for (const auto &root : select_compared_runs(words, cl.selection())) runs.push_back(compare_run(root));

    const std::string table = comparison_table(runs, format);
    if (svg) {
        write_user_file_outside_runs(*svg, comparison_svg(runs));
        // Not on stdout, which carries the table alone, safe to redirect.
        if (!cl.has("quiet")) std::cerr << "svg: " << *svg << std::endl;
    }
    if (output) write_user_file_outside_runs(*output, table);
    else cl.reporter().say(table.substr(0, table.size() - 1));
    toml::table result = comparison_json(runs);
    result.insert("command", "compare");
    if (svg) result.insert("svg", *svg);
    if (output) result.insert("output", *output);
    cl.reporter().emit_json(result);
    return 0;
}

}  // namespace s2tp
