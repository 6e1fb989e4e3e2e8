// sage2tp report: the run's time and gate results for a pull request (text, markdown, csv or json).
#include "subcommands.h"

#include "pipeline/cli.h"
#include "views/pull_request_report.h"

#include <iostream>

namespace s2tp {

int report_command(const Args &args) {
    CommandLine cl("report", "Print the run's time and gate results for pasting into a pull request.", args);
    cl.add_options()("format", "text, markdown, csv or json",
                     cxxopts::value<std::string>()->default_value("text"), "FORMAT")
        ("output", "write the report to FILE instead of stdout", cxxopts::value<std::string>(), "FILE");
    if (!cl.parse()) return 0;
    // --json asks for the one JSON object that --format json prints.
    std::string format = cl.result()["format"].as<std::string>();
    if (cl.reporter().json()) {
        if (cl.has("format") && format != "json")
            fail(ExitCode::usage, "--json prints the report as JSON; it cannot be combined with --format " + format);
        format = "json";
    }
    check_report_format(format);
    if (cl.has("output") && cl.result()["output"].as<std::string>().empty())
        fail(ExitCode::usage, "--output '' is an empty path; give it a file");
    RunDirectory run(require_existing_run(cl.selection()));
    const std::string report = pull_request_report(run, format);
    if (!cl.has("output")) {
        std::cout << report;
        return 0;
    }
    const std::string output = cl.result()["output"].as<std::string>();
    write_user_file_outside_runs(output, report);
    cl.reporter().emit_json(toml::table{{"command", "report"}, {"run_dir", run.root().string()}, {"output", output}});
    return 0;
}

}  // namespace s2tp
