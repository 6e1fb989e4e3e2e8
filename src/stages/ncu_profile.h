// Nsight Compute reports of the real workload, one launch of each variant, for `sage2tp time --ncu`.
// ncu runs `sage2tp exec --workload` so that it watches exactly one attention launch, with
// --clock-control none: ncu's default would lock the clocks to base, changing a shared GPU's settings
// and measuring a clock the timing never ran at. It collects only the requested metrics (--metrics,
// no sections), which keeps the replay passes, and so the GPU time of the stage, few; each report is
// then read back with `ncu --import R --csv --page raw` and the two launches compared.
#pragma once

#include "pipeline/cli.h"
#include "pipeline/run_directory.h"
#include "stages/ncu_metrics.h"

#include <toml++/toml.h>

#include <optional>
#include <string>

namespace s2tp {

struct NcuProfiles {
    toml::table figures;                 // requested, found, and per variant: exit_code, log, seconds, report
    toml::table artifacts;               // ncu_<variant> = { path, sha256 } for each report made
    std::optional<std::string> version;  // first line of `ncu --version`, when ncu was found
    std::optional<NcuComparison> comparison;  // when both variants were profiled and read back
};

struct NcuRequest {
    // The attention entry each variant's `exec --workload` launches, by its mangled name (what its ABI
    // adapter selected): ncu profiles that launch and not the quantization kernels before it.
    std::string baseline_entry, candidate_entry;
    std::vector<std::string> metrics;  // raw metric names ([time] ncu_metrics)
    std::int64_t seq_len = 0;          // 0: the workload's shape; else len_q = len_kv = seq_len
    int device_index = 0;
};

// Never fails the caller: a missing ncu or a failed profile is a warning and a figure (the comparison
// then lands in figures too, under "metrics").
NcuProfiles profile_with_ncu(const RunDirectory &run, const NcuRequest &request, const Reporter &reporter);

}  // namespace s2tp
