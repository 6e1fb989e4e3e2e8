#include "figures/resource_comparison.h"

#include "formats/demangled_name.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace s2tp {

EntryResources entry_resources(const KernelResources &k, const AbiEntry &launch, const Occupancy &o) {
    EntryResources e;
    e.entry = launch.full_name;
    e.registers = k.registers;
    e.barriers = k.barriers.value_or(1);
    e.stack_frame_bytes = k.stack_frame_bytes;
    e.spill_store_bytes = k.spill_store_bytes;
    e.spill_load_bytes = k.spill_load_bytes;
    e.static_smem_bytes = k.static_smem_bytes;
    e.dynamic_smem_bytes = launch.dynamic_smem_bytes;
    e.smem_per_block = k.static_smem_bytes + launch.dynamic_smem_bytes;
    e.threads_per_block = launch.threads_per_block;
    e.blocks_per_sm = o.blocks_per_sm;
    e.resident_warps = o.resident_warps;
    e.warps_per_scheduler = o.warps_per_scheduler;
    e.limited_by = limiter_names(o.limited_by);
    return e;
}

EntryTable variant_resources(const std::vector<PtxasReport> &reports, const std::string &variant,
                             const KernelAbi &abi, const ArchLimits &limits, std::vector<std::string> &clashes) {
    EntryTable entries;
    for (const PtxasReport &report : reports)
        for (const auto &[key, k] : report) {
            const std::optional<AbiEntry> launch = abi.describe_entry(key.name);
            if (!launch) continue;  // not an entry the GPU stages launch through this adapter
            const LaunchResources resources{k.registers, launch->threads_per_block, k.static_smem_bytes,
                                            launch->dynamic_smem_bytes, k.barriers.value_or(1)};
            auto [at, inserted] =
                entries.emplace(launch->short_name, entry_resources(k, *launch, compute_occupancy(limits, resources)));
            if (!inserted)
                clashes.push_back(variant + ": two entries are " + launch->short_name + " for kernel ABI " +
                                  abi.name() + ": " + at->second.entry + " and " + launch->full_name);
        }
    return entries;
}

namespace {

// The function name of a mangled entry without its template arguments; the name itself for an extern "C" one.
std::string function_name_of(const std::string &mangled) {
    const std::optional<std::string> demangled = demangle(mangled);
    const std::optional<FunctionName> parsed = demangled ? parse_function_name(*demangled) : std::nullopt;
    return parsed ? parsed->name : mangled;
}

}  // namespace

std::optional<EntryResources> worst_unrecognized_entry(const std::vector<PtxasReport> &reports, const KernelAbi &abi) {
    // Other instances of the adapter's own kernel template (another granularity, with the LSE) are
    // upstream's, not the host code's replacements.
    std::set<std::string> adapter_kernels;
    for (const PtxasReport &report : reports)
        for (const auto &[key, k] : report)
            if (abi.describe_entry(key.name)) adapter_kernels.insert(function_name_of(key.name));
    std::optional<EntryResources> worst;
    std::size_t count = 0;
    for (const PtxasReport &report : reports)
        for (const auto &[key, k] : report) {
            if (adapter_kernels.count(function_name_of(key.name))) continue;
            if (!worst) worst = EntryResources{};
            ++count;
            const auto most = [](std::optional<std::int64_t> &field, std::int64_t value) {
                field = std::max(field.value_or(value), value);
            };
            most(worst->registers, k.registers);
            most(worst->barriers, k.barriers.value_or(1));
            most(worst->stack_frame_bytes, k.stack_frame_bytes);
            most(worst->spill_store_bytes, k.spill_store_bytes);
            most(worst->spill_load_bytes, k.spill_load_bytes);
            most(worst->static_smem_bytes, k.static_smem_bytes);
        }
    if (worst) worst->entry = "the worst of the host code's " + std::to_string(count) + " other entry points";
    return worst;
}

ResourceComparison compare_resources(const std::string &arch, const std::string &baseline_abi, EntryTable baseline,
                                     std::map<std::string, EntryTable> candidates,
                                     const std::map<std::string, EntryResources> &relaunched) {
    ResourceComparison c;
    if (baseline.empty()) {
        c.reasons.push_back("no attention entry point of kernel ABI " + baseline_abi +
                            " was found in the ptxas report of the compared sources");
        return c;
    }
    std::string summary;
    for (auto &[name, entries] : candidates) {
        const auto stand_in = relaunched.find(name);
        std::size_t replaced = 0;
        for (const auto &[entry, base] : baseline) {
            if (entries.count(entry)) continue;
            if (stand_in == relaunched.end()) {
                c.reasons.push_back(name + ": entry point " + entry + " is in the baseline but not in the candidate");
                continue;
            }
            entries.emplace(entry, stand_in->second);
            ++replaced;
        }
        const ResourceAggregates a = aggregate_resources(baseline, entries);
        std::ostringstream line;
        line << a.entries << " entries";
        if (replaced > 0) line << " (" << replaced << " launched by its host code from its own entry points)";
        line << ", register growth <= " << a.max_register_growth.value_or(0)
             << ", spill growth <= " << (a.spills ? a.spills->candidate - a.spills->baseline : 0) << " B, smem "
             << a.baseline_max_smem << "->" << a.candidate_max_smem << (a.any_warps_fell ? ", warps/scheduler FELL" : "");
        summary += (summary.empty() ? "" : "; ") + name + ": " + line.str();
        c.candidates.emplace(name, CandidateBuild{std::move(entries), line.str()});
    }
    c.summary = arch + ": " + summary;
    c.baseline = std::move(baseline);
    return c;
}

}  // namespace s2tp
