// Nsight Compute reports of the real workload, one launch of each variant (the baseline and every
// candidate), for `sage2tp time --ncu`.
// ncu runs `sage2tp exec --workload` so that it watches exactly one attention launch, with
// --clock-control none: ncu's default would lock the clocks to base, changing a shared GPU's settings
// and measuring a clock the timing never ran at. It collects only the requested metrics (--metrics,
// no sections), which keeps the replay passes, and so the GPU time of the stage, few; each report is
// then read back with `ncu --import R --csv --page raw` and each candidate's launch compared with the
// baseline's.
#pragma once

#include "pipeline/cli.h"
#include "pipeline/run_directory.h"
#include "figures/ncu_metrics.h"
#include "figures/time_figures.h"

#include <toml++/toml.h>

#include <map>
#include <optional>
#include <string>

namespace s2tp {

struct NcuProfiles {
    NcuFigures figures;                  // requested, found, seconds, seq_len, and each variant's run
    toml::table artifacts;               // ncu_<variant> = { path, sha256 } for each report made
    std::optional<std::string> version;  // first line of `ncu --version`, when ncu was found
    // By candidate name: its comparison with the baseline, when both were profiled and read back.
    std::map<std::string, NcuComparison> comparisons;
};

struct NcuVariant {
    std::string name;   // "baseline" or a candidate's name: `exec --variant NAME`
    // The attention entry the variant's `exec --workload` launches, by its mangled name (what its ABI
    // adapter selected): ncu profiles that launch and not the quantization kernels before it.
    std::string entry;
};

struct NcuRequest {
    std::vector<NcuVariant> variants;  // the baseline first
    std::vector<std::string> metrics;  // raw metric names ([time] ncu_metrics)
    std::int64_t seq_len = 0;          // 0: the workload's shape; else len_q = len_kv = seq_len
    int device_index = 0;
    // The workload file time was given (time --workload FILE), profiled instead of the run's workload.
    std::optional<std::filesystem::path> workload_file;
};

// Never fails the caller: a missing ncu or a failed profile is a warning and a figure.
NcuProfiles profile_with_ncu(const RunDirectory &run, const NcuRequest &request, const Reporter &reporter);

}  // namespace s2tp
