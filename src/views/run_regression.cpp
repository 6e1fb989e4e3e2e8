#include "views/run_regression.h"

#include "support/number_format.h"
#include "support/statistics.h"

namespace s2tp {

namespace {

const ComparedCandidate *same_candidate(const ComparedRun &run, const ComparedCandidate &c) {
    for (const ComparedCandidate &other : run.candidates)
        if (other.name == c.name && other.shape == c.shape && other.gpu == c.gpu) return &other;
    return nullptr;
}

// The candidate as a row names it: "candidate", "candidate t2v-480p", "candidate on GPU 1 ...".
std::string candidate_text(const CandidateChange &change) {
    std::string text = change.candidate;
    if (!change.shape.empty()) text += " " + change.shape;
    if (!change.gpu.empty()) text += " on " + change.gpu;
    return text;
}

CandidateChange classify(const ComparedRun &base, const ComparedRun &run, std::size_t run_index,
                         const ComparedCandidate &c, double band) {
    CandidateChange change{run_index, run.id, base.id, c.name, c.shape, c.gpu, std::nullopt, ChangeClass::unknown, ""};
    const ComparedCandidate *before = same_candidate(base, c);
    if (!before) {
        change.why = base.id + " has no candidate " + candidate_text(change);
        return change;
    }
    if (!before->ratio || !c.ratio) {
        change.why = (!before->ratio ? base.id : run.id) + " records no ratio for it (time " +
                     (!before->ratio ? base.time.state : run.time.state) + ")";
        return change;
    }
    const RatioInterval &was = *before->ratio, &now = *c.ratio;
    RatioInterval ratio;
    ratio.median = now.median / was.median;
    ratio.lo = now.lo / was.hi;
    ratio.hi = now.hi / was.lo;
    ratio.half_width_rel = (ratio.hi - ratio.lo) / 2 / ratio.median;
    ratio.n = std::min(now.n, was.n);
    // Both intervals hold their runs' values together with probability c1 * c2 (the runs are independent),
    // and then the change lies between these ends: the level is at least that product (0.9025 for two
    // 95% intervals).
    ratio.confidence = now.confidence * was.confidence;
    change.change = ratio;
    if (ratio.median > 1 + band && ratio.lo > 1) change.verdict = ChangeClass::slow;
    else if (ratio.median < 1 - band && ratio.hi < 1) change.verdict = ChangeClass::fast;
    else change.verdict = ChangeClass::same;
    return change;
}

}  // namespace

const char *change_class_name(ChangeClass c) {
    switch (c) {
    case ChangeClass::fast: return "FAST";
    case ChangeClass::slow: return "SLOW";
    case ChangeClass::same: return "SAME";
    case ChangeClass::unknown: break;
    }
    return "UNKNOWN";
}

std::vector<CandidateChange> classify_changes(const std::vector<ComparedRun> &runs, double band) {
    std::vector<CandidateChange> changes;
    for (std::size_t r = 1; r < runs.size(); ++r)
        for (const ComparedCandidate &c : runs[r].candidates) changes.push_back(classify(runs[0], runs[r], r, c, band));
    return changes;
}

void attach_changes(std::vector<ComparedRun> &runs, const std::vector<CandidateChange> &changes) {
    for (const CandidateChange &change : changes)
        for (ComparedCandidate &c : runs.at(change.run_index).candidates)
            if (change.candidate == c.name && change.shape == c.shape && change.gpu == c.gpu) {
                c.change = change.change;
                c.change_class = change_class_name(change.verdict);
            }
}

bool fails_on_slow(const CandidateChange &change) {
    return change.verdict == ChangeClass::slow || change.verdict == ChangeClass::unknown;
}

std::vector<std::string> slow_change_lines(const std::vector<CandidateChange> &changes, double band) {
    std::vector<std::string> lines;
    for (const CandidateChange &change : changes) {
        if (!fails_on_slow(change)) continue;
        std::string line = change.run + ": " + candidate_text(change) + " is " + change_class_name(change.verdict);
        if (change.change)
            line += ": its ratio changed " + signed_percent(change.change->median - 1, 2) + " against " +
                    change.base_run + " (" + interval_text(*change.change) + "), beyond the band of " +
                    fixed(band * 100, 1) + "% and wholly above 1";
        else
            line += " against " + change.base_run + ": " + change.why;
        lines.push_back(line);
    }
    return lines;
}

}  // namespace s2tp
