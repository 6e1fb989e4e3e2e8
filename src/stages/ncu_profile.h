// Nsight Compute reports of the real workload, one launch of each variant, for `sage2tp time --ncu`.
// ncu runs `sage2tp exec --workload` so that it watches exactly one attention launch, with
// --clock-control none: ncu's default would lock the clocks to base, changing a shared GPU's settings
// and measuring a clock the timing never ran at.
#pragma once

#include "pipeline/cli.h"
#include "pipeline/run_directory.h"

#include <toml++/toml.h>

#include <optional>
#include <string>

namespace s2tp {

struct NcuProfiles {
    toml::table figures;                 // requested, found, and per variant: exit_code, log, seconds, report
    toml::table artifacts;               // ncu_<variant> = { path, sha256 } for each report made
    std::optional<std::string> version;  // first line of `ncu --version`, when ncu was found
};

// The attention entry each variant's `exec --workload` launches, by its mangled name (what its ABI
// adapter selected): ncu profiles that launch and not the quantization kernels before it.
struct NcuEntries {
    std::string baseline, candidate;
};

// Never fails the caller: a missing ncu or a failed profile is a warning and a figure.
NcuProfiles profile_with_ncu(const RunDirectory &run, int device_index, const NcuEntries &entries,
                             const Reporter &reporter);

}  // namespace s2tp
