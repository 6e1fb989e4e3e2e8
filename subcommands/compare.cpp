// sage2tp compare [RUN...]: several runs and their candidates in one table (text, markdown or csv) and
// (with --svg) one SVG of every candidate's ratio interval against 1; with several runs, each later run's
// candidates classified FAST, SLOW or SAME against the first's, and with --fail-on slow exit 1 on SLOW.
#include "subcommands.h"

#include "pipeline/cli.h"
#include "views/run_comparison.h"
#include "views/run_regression.h"

#include "support/errors.h"
#include "support/number_format.h"

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
        ("output", "write the table to FILE instead of stdout", cxxopts::value<std::string>(), "FILE")
        ("band", "with several runs: a change of a candidate's ratio against the first run's counts as FAST or SLOW "
                 "only beyond this relative band (and beyond its interval)",
         cxxopts::value<double>()->default_value(shortest(default_change_band)), "F")
        ("fail-on", "'slow': exit 1 when a later run's candidate is SLOW against the first run's, or cannot be "
                    "classified", cxxopts::value<std::string>(), "WHAT");
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
    const double band = cl.result()["band"].as<double>();
    if (!(band > 0 && band < 1)) fail(ExitCode::usage, "--band must be in (0, 1), got " + shortest(band));
    const bool fail_on_slow = cl.has("fail-on");
    if (fail_on_slow && cl.result()["fail-on"].as<std::string>() != "slow")
        fail(ExitCode::usage, "--fail-on '" + cl.result()["fail-on"].as<std::string>() + "': expected slow");
    std::vector<ComparedRun> runs = compare_runs(select_compared_runs(words, cl.selection()));
    if (fail_on_slow && runs.size() < 2)
        fail(ExitCode::usage, "--fail-on slow needs two runs or more: BASE, then the runs to check against it");
    const std::vector<CandidateChange> changes = classify_changes(runs, band);
    attach_changes(runs, changes);

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
    if (runs.size() > 1) result.insert("band", band);
    cl.reporter().emit_json(result);
    if (!fail_on_slow) return 0;
    const std::vector<std::string> slow = slow_change_lines(changes, band);
    for (const std::string &line : slow) cl.reporter().warn(line);
    return static_cast<int>(slow.empty() ? ExitCode::ok : ExitCode::stop);
}

}  // namespace s2tp
