// sage2tp report: the run's time and gate results for a pull request (text, markdown, csv or json).
#include "subcommands.h"

#include "pipeline/cli.h"
#include "support/file_io.h"
#include "views/pull_request_report.h"

#include <iostream>

namespace s2tp {

int report_command(const Args &args) {
    CommandLine cl("report", "Print the run's time and gate results for pasting into a pull request.", args);
    cl.add_options()("format", "text, markdown, csv or json",
                     cxxopts::value<std::string>()->default_value("text"), "FORMAT")
        ("output", "write the report to FILE instead of stdout", cxxopts::value<std::string>(), "FILE");
    if (!cl.parse()) return 0;
    check_report_format(cl.result()["format"].as<std::string>());
    if (cl.has("output") && cl.result()["output"].as<std::string>().empty())
        fail(ExitCode::usage, "--output '' is an empty path; give it a file");
    RunDirectory run(require_existing_run(cl.selection()));
    const std::string report = pull_request_report(run, cl.result()["format"].as<std::string>());
    if (cl.has("output")) write_user_file(cl.result()["output"].as<std::string>(), report);
    else std::cout << report;
    return 0;
}

}  // namespace s2tp
