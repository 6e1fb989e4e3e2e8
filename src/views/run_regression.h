// `sage2tp compare BASE NEW...` across commits: each candidate of a later run against the candidate of
// the same name (and shape, and GPU) in the first run, classified FAST, SLOW or SAME against a stated
// band, so that CI can fail a commit that made a kernel slower (`compare --fail-on slow`).
//
// What is compared is each run's own ratio (candidate / its baseline, timed interleaved in one
// process), not the raw p50s: the ratio carries the baseline's measurement along, so a GPU that ran at
// another clock or temperature in one run moves both arms alike and does not show as a change. The change
// is NEW's ratio over BASE's, and its interval is the widest that the two ratio intervals allow
// ([NEW lo / BASE hi, NEW hi / BASE lo]), at a level of at least the product of theirs, since the two
// runs are independent.
//
// The rule (as nvbench's compare script has it: a change must be both beyond the noise and beyond the
// band): SLOW when the change exceeds 1 + band and its interval lies wholly above 1; FAST when it is
// below 1 - band and its interval lies wholly below 1; SAME otherwise. A candidate that either run has no
// ratio for is UNKNOWN, with the reason: it cannot be shown not to be slower.
//
// Usage:
//   std::vector<CandidateChange> changes = classify_changes(runs, 0.02);
//   bool failed = std::any_of(changes.begin(), changes.end(), fails_on_slow);
#pragma once

#include "views/run_comparison.h"

#include <optional>
#include <string>
#include <vector>

namespace s2tp {

enum class ChangeClass { fast, slow, same, unknown };
const char *change_class_name(ChangeClass c);  // "FAST" | "SLOW" | "SAME" | "UNKNOWN"

inline constexpr double default_change_band = 0.02;

struct CandidateChange {
    std::size_t run_index = 0;  // the later run's place in the runs compared
    std::string run;            // its id
    std::string base_run;       // the first run's id
    std::string candidate, shape, gpu;  // as ComparedCandidate names them
    std::optional<RatioInterval> change;  // NEW ratio / BASE ratio, with its conservative interval
    ChangeClass verdict = ChangeClass::unknown;
    std::string why;  // for UNKNOWN: what is missing
};

// The change of every candidate of runs[1..] against runs[0] (none with fewer than two runs), in the
// runs' and candidates' order. `band` is the relative band, 0 < band < 1.
std::vector<CandidateChange> classify_changes(const std::vector<ComparedRun> &runs, double band);

// Records each change on its candidate (ComparedCandidate::change and change_class), which the tables,
// the JSON and the SVG of run_comparison.h show.
void attach_changes(std::vector<ComparedRun> &runs, const std::vector<CandidateChange> &changes);

// What --fail-on slow fails on: a SLOW change, or one that cannot be classified.
bool fails_on_slow(const CandidateChange &change);

// One line per failing change, naming the run, the candidate (and shape) and why.
std::vector<std::string> slow_change_lines(const std::vector<CandidateChange> &changes, double band);

}  // namespace s2tp
