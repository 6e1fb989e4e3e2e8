// sage2tp report: the run's time and gate results for a pull request (text, markdown, csv or json).
#include "subcommands.h"

#include "pipeline/cli.h"
#include "views/pull_request_report.h"

#include <iostream>

namespace s2tp {

int report_command(const Args &args) {
    CommandLine cl("report", "Print the run's time and gate results for pasting into a pull request.", args);
    cl.add_options()("format", "text, markdown, csv or json",
                     cxxopts::value<std::string>()->default_value("text"), "FORMAT");
    if (!cl.parse()) return 0;
    // --json asks for the one JSON object that --format json prints.
    std::string format = cl.result()["format"].as<std::string>();
    if (cl.reporter().json()) {
        if (cl.has("format") && format != "json")
            fail(ExitCode::usage, "--json prints the report as JSON; it cannot be combined with --format " + format);
        format = "json";
    }
    RunDirectory run(require_existing_run(cl.selection()));
    std::cout << pull_request_report(run, format);
    return 0;
}

}  // namespace s2tp
