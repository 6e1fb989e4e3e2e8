// `sage2tp report`: the time and gate results of a run, read from their checkpoints, and the verdicts
// of its Slurm job array where it has some (reports/cluster.toml), in a form to paste into a pull request.
#pragma once

#include "pipeline/run_directory.h"

#include <string>

namespace s2tp {

// format: text | markdown | csv | json (anything else: Error(usage)). Needs the gate checkpoint or the
// cluster table (Error(precondition) naming 'sage2tp gate' without either); a run whose time stage never ran says so.
std::string pull_request_report(const RunDirectory &run, const std::string &format);
// The format check alone, for the command to make before it looks for a run.
void check_report_format(const std::string &format);

// Table cells the report's formats share with `sage2tp compare`: a CSV field, quoted (RFC 4180) when it
// holds a comma, a quote or a newline; a markdown table cell, with '|' escaped and newlines as spaces.
std::string csv_field(const std::string &text);
std::string markdown_cell(const std::string &text);

}  // namespace s2tp
