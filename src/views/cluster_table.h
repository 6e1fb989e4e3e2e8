// The table of a run's Slurm verdicts (figures/cluster_verdicts.h) as `sage2tp slurm collect`,
// `report` and `compare` print it: one row per array task, by arch and GPU kind, each with Slurm's
// state, the node, the verdict and why.
#pragma once

#include "figures/cluster_verdicts.h"

#include <toml++/toml.h>

#include <string>

namespace s2tp {

// format: text | markdown | csv, else Error(usage).
std::string cluster_table(const ClusterVerdicts &verdicts, const std::string &format);
// The rows for --json: { job, submission, all_passed, tasks = [ {task, arch, gpu_kind, ...} ] }.
toml::table cluster_json(const ClusterVerdicts &verdicts);

}  // namespace s2tp
