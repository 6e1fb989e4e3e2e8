// The build stage's resource comparison as functions of typed inputs: ptxas's report of one variant's
// compiled sources turned into its entry table, and the baseline's table compared with every
// candidate's, giving the build figures' entries, per-candidate summaries and the reasons to fail.
//
// Usage:
//   EntryTable base = variant_resources(reports_of_baseline, baseline_abi, limits, clashes);
//   ResourceComparison c = compare_resources("sm_90a", "sage2tp", base, {{"candidate", cand}});
//   if (!c.reasons.empty()) ...;   // the stage fails
#pragma once

#include "formats/ptxas_report.h"
#include "gpu/kernel_abi.h"
#include "model/arch_limits.h"
#include "model/occupancy.h"
#include "figures/build_figures.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// One entry point's figures: ptxas's resources, the adapter's launch shape and the modelled occupancy.
EntryResources entry_resources(const KernelResources &k, const AbiEntry &launch, const Occupancy &o);

// The entries of one variant's ptxas reports (one per compared source) that the adapter launches,
// keyed by short name so that variants of different ABIs compare entry by entry. Two entries with one
// short name cannot be told apart by the GPU stages either: each such clash is a reason in `clashes`.
EntryTable variant_resources(const std::vector<PtxasReport> &reports, const std::string &variant,
                             const KernelAbi &abi, const ArchLimits &limits, std::vector<std::string> &clashes);

// The worst of a host-call variant's entry points that its adapter does not recognize: kernels the
// variant's own host code launches in place of upstream's (another schedule, another launch shape).
// Build cannot tell which of them one instance launches, since the host function decides when it
// runs, so each figure ptxas gives is the worst over all of them, and the launch shape (threads,
// dynamic shared memory, occupancy) is unset: time records the launch the host function made.
// nullopt when every entry is recognized.
std::optional<EntryResources> worst_unrecognized_entry(const std::vector<PtxasReport> &reports, const KernelAbi &abi);

struct ResourceComparison {
    EntryTable baseline;
    std::map<std::string, CandidateBuild> candidates;
    std::string summary;               // the stage's: "<arch>: <name>: <n> entries, ..." per candidate
    std::vector<std::string> reasons;  // empty when every candidate has every baseline entry
};

// `baseline_abi` names the adapter in the reason given when the baseline has no entry at all. A
// candidate that lacks a baseline entry fails, unless `relaunched` holds its worst unrecognized entry
// (a host-call candidate whose host code launches other kernels): that entry then stands in for the
// missing one, and the candidate's summary line says how many it replaced.
ResourceComparison compare_resources(const std::string &arch, const std::string &baseline_abi, EntryTable baseline,
                                     std::map<std::string, EntryTable> candidates,
                                     const std::map<std::string, EntryResources> &relaunched = {});

}  // namespace s2tp
