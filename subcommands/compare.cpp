// sage2tp compare [RUN...]: several runs and their candidates in one table (text, markdown or csv) and
// one SVG of every candidate's ratio interval against 1.
#include "subcommands.h"

#include "pipeline/cli.h"
#include "views/run_comparison.h"

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
        ("svg", "where the SVG of the ratio intervals goes",
         cxxopts::value<std::string>()->default_value("sage2tp-compare.svg"), "FILE");
    cl.positional("runs");
    cl.positional_help("[RUN...]");
    if (!cl.parse()) return 0;

    const std::string format = cl.result()["format"].as<std::string>();
    const std::string svg = cl.result()["svg"].as<std::string>();
    if (svg.empty()) fail(ExitCode::usage, "--svg '' is an empty path; give it a file");
    const std::vector<std::string> words =
        cl.has("runs") ? cl.result()["runs"].as<std::vector<std::string>>() : std::vector<std::string>{};
    std::vector<ComparedRun> runs;
    for (const auto &root : select_compared_runs(words, cl.selection())) runs.push_back(compare_run(root));

    const std::string table = comparison_table(runs, format);
    write_user_file_outside_runs(svg, comparison_svg(runs));
    cl.reporter().say(table.substr(0, table.size() - 1));
    cl.reporter().progress("svg: " + svg);
    toml::table result = comparison_json(runs);
    result.insert("command", "compare");
    result.insert("svg", svg);
    cl.reporter().emit_json(result);
    return 0;
}

}  // namespace s2tp
