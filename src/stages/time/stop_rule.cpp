#include "stages/time/stop_rule.h"

#include "model/arch_limits.h"
#include "support/data_paths.h"
#include "support/number_format.h"

namespace s2tp {

namespace {

std::string in_where(const std::string &where) { return where.empty() ? "" : " in " + where; }

}  // namespace

std::vector<std::string> unwritten_output_reasons(const std::vector<std::string> &arms,
                                                  const std::vector<OutputDigest> &first) {
    std::vector<std::string> reasons;
    for (Arm arm = 0; arm < first.size(); ++arm)
        if (arm != control_arm && first[arm].nan_count > 0)
            reasons.push_back("the " + arms.at(arm) + " left " + std::to_string(first[arm].nan_count) +
                              " output elements unwritten (still the NaN poison)");
    return reasons;
}

std::optional<std::string> nondeterminism_reason(const std::vector<OutputDigest> &first) {
    const std::string &base = first.at(baseline_arm).sha256, &control = first.at(control_arm).sha256;
    if (control == base) return std::nullopt;
    return "the baseline's output differs between two launches on the same inputs (sha256 " + base + " then " +
           control + "): it is not deterministic";
}

std::vector<std::string> candidate_mismatch_reasons(const std::vector<std::string> &arms,
                                                    const std::vector<OutputDigest> &first,
                                                    const std::vector<ArmAccuracy> &accuracy) {
    std::vector<std::string> reasons;
    for (Arm arm = first_candidate_arm; arm < first.size(); ++arm)
        if (first[arm].sha256 != first[baseline_arm].sha256 && !(arm < accuracy.size() && accuracy[arm].tolerance))
            reasons.push_back("the candidate " + arms.at(arm) + "'s output differs from the baseline's: sha256 " +
                              first[arm].sha256 + " vs " + first[baseline_arm].sha256);
    return reasons;
}

std::optional<std::string> pin_mismatch_reason(const std::string &baseline_sha256,
                                               const std::optional<std::string> &expected, const PinKey &key) {
    if (!expected || baseline_sha256 == *expected) return std::nullopt;
    return "the baseline, kernel " + key.kernel + " built for " + key.arch + ", gave output sha256 " + baseline_sha256 +
           ", but the workload pins " + *expected + " for kernel " + key.text() +
           ": the same kernel's bytes changed (its source, compiler or inputs); if that is intended, "
           "'sage2tp time --pin' records the new output";
}

std::vector<std::string> accuracy_failure_reasons(const std::vector<std::string> &arms,
                                                  const std::vector<ArmAccuracy> &accuracy) {
    std::vector<std::string> reasons;
    for (Arm arm = 0; arm < accuracy.size() && arm < arms.size(); ++arm)
        if (accuracy[arm].passed == false)
            reasons.push_back("the " + arms[arm] + "'s output misses the accuracy conditions: " + accuracy[arm].conditions);
    return reasons;
}

std::vector<std::string> first_output_failures(const std::vector<std::string> &arms,
                                               const std::vector<OutputDigest> &first,
                                               const std::optional<std::string> &expected, bool pin,
                                               const PinKey &key, const std::vector<ArmAccuracy> &accuracy) {
    std::vector<std::string> reasons = unwritten_output_reasons(arms, first);
    if (auto reason = nondeterminism_reason(first)) reasons.push_back(*reason);
    for (std::string &reason : candidate_mismatch_reasons(arms, first, accuracy)) reasons.push_back(std::move(reason));
    for (std::string &reason : accuracy_failure_reasons(arms, accuracy)) reasons.push_back(std::move(reason));
    // Under --pin the earlier pin is what gets replaced, not a criterion; the new one is written only
    // once the timed launches have shown the baseline's bytes to be stable.
    if (!pin)
        if (auto reason = pin_mismatch_reason(first.at(baseline_arm).sha256, expected, key)) reasons.push_back(*reason);
    return reasons;
}

std::vector<std::string> changed_output_reasons(const std::vector<std::string> &arms,
                                                const std::vector<OutputDigest> &reference,
                                                const std::vector<OutputDigest> &other, const std::string &where) {
    std::vector<std::string> reasons;
    if (other.size() != reference.size()) {
        reasons.push_back("the first outputs" + in_where(where) + " were not recorded for every arm (" +
                          std::to_string(other.size()) + " of " + std::to_string(reference.size()) + ")");
        return reasons;
    }
    for (Arm arm = 0; arm < reference.size(); ++arm)
        if (other[arm].sha256 != reference[arm].sha256)
            reasons.push_back("the " + arms.at(arm) + " launch's output" + in_where(where) +
                              " differs from the first measurement's (sha256 " + reference[arm].sha256 + " then " +
                              other[arm].sha256 + "): not deterministic");
    return reasons;
}

std::vector<std::string> recheck_failure_reasons(const std::vector<std::string> &arms, const TimingRun &run,
                                                 const std::string &where) {
    std::vector<std::string> reasons;
    for (const RecheckFailure &failure : run.recheck_failures)
        reasons.push_back("the " + (failure.arm < arms.size() ? arms[failure.arm] : "arm " + std::to_string(failure.arm)) +
                          " " + failure.what + " in timed round " + std::to_string(failure.round + 1) + " on input set " +
                          std::to_string(failure.input_set) + in_where(where) +
                          ": its timed launches did not compute what it was checked for");
    return reasons;
}

std::string sampling_budget_text(double seconds) { return "up to " + compact(seconds, 1) + " s of sampling"; }

std::optional<std::string> too_few_rounds_reason(const TimingRun &run, const TimingSettings &settings,
                                                 const std::string &where) {
    if (run.kept_rounds >= settings.min_rounds) return std::nullopt;
    return "only " + std::to_string(run.kept_rounds) + " unthrottled rounds (of " + std::to_string(run.rounds.size()) +
           ") fit in the budget of " + compact(settings.budget_seconds, 1) + " s" + in_where(where) +
           ", fewer than min_rounds " + std::to_string(settings.min_rounds) + ": no interval to trust; raise --budget";
}

std::string aa_band_basis_text(const std::string &arch) {
    const ArchLimitsTable table = load_arch_limits(arch_limits_table().string());
    const std::string &basis = resolve_arch(table, arch).aa_band_basis;
    return "the band is a tenth of [time] target_half_width (or one 0.5 us CUDA event tick of the baseline's p50, "
           "if wider), " +
           (basis.empty() ? "set from an H200's A/A control and not measured on " + arch : basis) +
           "; on a desktop GPU that drives a display, see sage2tp-time(1) for what to set";
}

}  // namespace s2tp
