// The time stage's stop rule: each condition under which it times nothing, or gives no verdict, as a
// pure function of the records, with the reason it gives (arms named by arm_names).
#pragma once

#include "stages/time/measurement.h"

#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// One reason per arm that left elements unwritten.
std::vector<std::string> unwritten_output_reasons(const std::vector<std::string> &arms,
                                                  const std::vector<OutputDigest> &first);
// The A/A control's output differs from the baseline's: the baseline is not deterministic.
std::optional<std::string> nondeterminism_reason(const std::vector<OutputDigest> &first);
// One reason per candidate whose output differs from the baseline's, except tolerance candidates
// (`accuracy`, per arm, when the run checks accuracy).
std::vector<std::string> candidate_mismatch_reasons(const std::vector<std::string> &arms,
                                                    const std::vector<OutputDigest> &first,
                                                    const std::vector<ArmAccuracy> &accuracy = {});
// One reason per arm whose accuracy conditions failed.
std::vector<std::string> accuracy_failure_reasons(const std::vector<std::string> &arms,
                                                  const std::vector<ArmAccuracy> &accuracy);
// The baseline's digest differs from the one pinned for its kernel on its arch (`key`).
std::optional<std::string> pin_mismatch_reason(const std::string &baseline_sha256,
                                               const std::optional<std::string> &expected, const PinKey &key);
// All of the above that must hold before anything is timed (the pin is not a criterion under --pin).
std::vector<std::string> first_output_failures(const std::vector<std::string> &arms,
                                               const std::vector<OutputDigest> &first,
                                               const std::optional<std::string> &expected, bool pin,
                                               const PinKey &key, const std::vector<ArmAccuracy> &accuracy = {});
// One reason per arm whose first output in another measurement (`where` says which, e.g. "repeat 3")
// differs from the first measurement's record.
std::vector<std::string> changed_output_reasons(const std::vector<std::string> &arms,
                                                const std::vector<OutputDigest> &reference,
                                                const std::vector<OutputDigest> &other, const std::string &where);
// One reason per failed re-check of a timed round, naming the arm, the round (from 1), the input set
// and `where` ("" for a single measurement).
std::vector<std::string> recheck_failure_reasons(const std::vector<std::string> &arms, const TimingRun &run,
                                                 const std::string &where);
// "up to 12.1 s of sampling": how every progress line spells a sampling budget, and how the reason
// for too few rounds spells it too.
std::string sampling_budget_text(double seconds);
// Fewer unthrottled rounds than min_rounds: no interval to trust.
std::optional<std::string> too_few_rounds_reason(const TimingRun &run, const TimingSettings &settings,
                                                 const std::string &where);

// What the A/A band rests on for `arch`, after a too-noisy reason: the band was set from an H200's A/A
// figures.
std::string aa_band_basis_text(const std::string &arch);

}  // namespace s2tp
