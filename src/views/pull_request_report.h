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

}  // namespace s2tp
