#include "stages/time/ncu.h"

#include "tools/gpu_session/gpu_session.h"
#include "tools/ncu_profile.h"

namespace s2tp {

namespace {

// The mangled name of the kernel ncu profiles for a variant: the one its host function launched on
// the workload, where time recorded it (a candidate's host code may launch another kernel than
// upstream's), else the entry the variant's adapter selects for the problem (the module is loaded only
// to read it).
std::string find_entry_name(const BuiltAttention &built, const AttentionProblem &problem,
                            const std::optional<ArmTimeFigures> &timing) {
    if (timing && timing->launch_kernel) return *timing->launch_kernel;
    const CubinModule module(built.cubin);
    return built.abi->select_entry(problem, module.entry_names(), built.cubin.string());
}

}  // namespace

void add_ncu_profiles(const TimeStageInputs &in, TimeFigures &f, StageResult &result, const Reporter &reporter) {
    std::vector<NcuVariant> variants{{"baseline", find_entry_name(in.kernels.baseline, in.workload.problem, f.baseline)}};
    for (const BuiltAttention &candidate : in.kernels.candidates) {
        const CandidateTimeFigures *timed = f.candidate(candidate.variant);
        variants.push_back({candidate.variant,
                            find_entry_name(candidate, in.workload.problem, timed ? timed->timing : std::nullopt)});
    }
    NcuProfiles profiles = profile_with_ncu(in.run, {variants, in.ncu_metrics, in.ncu_seq_len, in.device_index, in.workload_file}, reporter);
    if (profiles.version) result.tools.insert("ncu", *profiles.version);
    for (auto &&[name, node] : profiles.artifacts) result.artifacts.insert(name, node);
    f.ncu = profiles.figures;
    std::string changes;
    for (auto &[name, comparison] : profiles.comparisons) {
        if (!comparison.largest_changes.empty())
            changes += (changes.empty() ? "" : "; ") + name + ": " + comparison.largest_changes_text();
        f.candidate_or_add(name).ncu = std::move(comparison);
    }
    if (!changes.empty()) f.summary = f.summary.value_or(std::string()) + "; ncu: " + changes;
}

}  // namespace s2tp
