#include "stages/parity_check.h"

#include "support/number_format.h"

#include <cstring>
#include <iomanip>
#include <set>
#include <sstream>

namespace s2tp {

ByteDifference byte_difference(const Tensor &baseline, const Tensor &candidate) {
    ByteDifference d;
    const std::size_t size = baseline.element_size();
    for (std::int64_t i = 0; i < baseline.numel(); ++i) {
        if (std::memcmp(baseline.bytes.data() + i * size, candidate.bytes.data() + i * size, size) != 0) {
            if (d.first < 0) d.first = i;
            ++d.differing;
        }
    }
    return d;
}

std::string element_text(const Tensor &t, std::int64_t index) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, t.bytes.data() + static_cast<std::size_t>(index) * t.element_size(), t.element_size());
    std::ostringstream s;
    s << "0x" << std::hex << std::setw(static_cast<int>(2 * t.element_size())) << std::setfill('0') << bits << std::dec
      << " (" << std::setprecision(9) << t.value_at(index) << ")";
    return s.str();
}

std::optional<TensorDifference> tensor_difference(const std::string &tensor, const Tensor &baseline,
                                                  const Tensor &candidate) {
    const ByteDifference d = byte_difference(baseline, candidate);
    if (d.differing == 0) return std::nullopt;
    return TensorDifference{tensor, d.differing, baseline.numel(), shape_to_string(unravel_index(d.first, baseline.shape)),
                            element_text(baseline, d.first), element_text(candidate, d.first)};
}

AccuracyRules accuracy_rules(const Experiment &experiment) {
    AccuracyRules rules;
    rules.limits = experiment.accuracy_limits;
    for (const CandidateSpec &c : experiment.candidates) rules.modes[c.name] = experiment.parity_mode_of(c.name);
    return rules;
}

void add_accuracy_inputs(Fingerprint &f, const AccuracyRules &rules, std::int64_t reference_rows) {
    for (const auto &[name, mode] : rules.modes) f.add("parity_mode", name + "=" + parity_mode_name(mode));
    const AccuracyLimits &l = rules.limits;
    for (const auto &[key, value] : {std::pair{"min_cosine", l.min_cosine}, {"max_rel_l1", l.max_rel_l1},
                                     {"max_rmse", l.max_rmse}, {"max_abs_error", l.max_abs_error}})
        if (value) f.add(key, &*value, sizeof *value);
    f.add("baseline_factor", &l.baseline_factor, sizeof l.baseline_factor);
    f.add("reference_rows", reference_rows);
}

namespace {

ParityMode mode_of(const AccuracyRules &rules, const std::string &candidate) {
    const auto found = rules.modes.find(candidate);
    return found == rules.modes.end() ? ParityMode::exact : found->second;
}

// Per shape, in the order the shapes ran: the worst accuracy over its seeds of the baseline and of each
// candidate, and the conditions on it; one failure per variant and shape that misses one.
void fold_accuracy(const std::vector<ParityComparison> &comparisons, const AccuracyRules &rules, ParityFigures &f,
                   std::vector<std::string> &failures) {
    std::vector<std::string> shapes;
    std::map<std::string, std::vector<AccuracyMetrics>> baseline;
    std::map<std::string, std::map<std::string, std::vector<AccuracyMetrics>>> candidate;
    for (const ParityComparison &c : comparisons) {
        if (!c.baseline_accuracy) continue;
        if (baseline.find(c.shape) == baseline.end()) shapes.push_back(c.shape);
        baseline[c.shape].push_back(*c.baseline_accuracy);
        f.baseline_accuracy.push_back(AccuracyFigure::of(c.shape, c.seed, c.reference_rows, *c.baseline_accuracy));
        for (const auto &[name, run] : c.candidates) {
            if (!run.accuracy || !run.vs_baseline) continue;
            candidate[name][c.shape].push_back(*run.accuracy);
            f.candidates[name].accuracy.push_back(AccuracyFigure::of(c.shape, c.seed, c.reference_rows, *run.accuracy));
            f.candidates[name].vs_baseline.push_back(AccuracyFigure::of(c.shape, c.seed, c.reference_rows, *run.vs_baseline));
        }
    }
    for (const std::string &shape : shapes) {
        const AccuracyMetrics base = worst_accuracy(baseline[shape]);
        const std::vector<AccuracyCheck> base_checks = absolute_accuracy_checks(base, rules.limits);
        f.baseline_checks.push_back({shape, all_passed(base_checks), checks_text(base_checks)});
        if (!all_passed(base_checks)) failures.push_back("baseline: " + shape + ": " + checks_text(base_checks));
        for (auto &[name, by_shape] : candidate) {
            const auto found = by_shape.find(shape);
            if (found == by_shape.end()) continue;
            const AccuracyMetrics mine = worst_accuracy(found->second);
            std::vector<AccuracyCheck> checks = absolute_accuracy_checks(mine, rules.limits);
            if (mode_of(rules, name) == ParityMode::tolerance) {
                const std::vector<AccuracyCheck> relative = relative_accuracy_checks(mine, base, rules.limits.baseline_factor);
                checks.insert(checks.end(), relative.begin(), relative.end());
            }
            f.candidates[name].checks.push_back({shape, all_passed(checks), checks_text(checks)});
            if (!all_passed(checks)) failures.push_back(name + ": " + shape + ": " + checks_text(checks));
        }
    }
}

}  // namespace

// Why a parity output holds NaN: the output and every SM's shared memory are filled with NaN before each
// launch, so an element was never written, or was computed from shared memory the kernel never wrote.
constexpr const char *nan_output_cause =
    ": unwritten (still the NaN poison), or computed from shared memory it did not write (filled with NaN before "
    "every launch)";

ParityFold fold_parity(const std::vector<ParityComparison> &comparisons, std::size_t shapes, std::size_t seeds,
                       double limit, const std::vector<std::string> &candidates, const AccuracyRules &accuracy) {
    ParityFold fold;
    ParityFigures &f = fold.figures;
    std::vector<std::string> failures;
    std::map<std::string, std::set<std::string>> differing_shapes;
    double worst = 0.0;
    std::string worst_case;
    for (const std::string &name : candidates) f.candidates[name].mode = parity_mode_name(mode_of(accuracy, name));
    for (const ParityComparison &c : comparisons) {
        const std::string where = c.shape + " seed " + std::to_string(c.seed);
        if (c.baseline_unwritten > 0)
            failures.push_back(where + ": the baseline left " + std::to_string(c.baseline_unwritten) +
                               " output elements NaN" + nan_output_cause);
        f.baseline_outputs.push_back(ParityOutput{c.shape, c.seed, c.baseline_o_sha256});
        for (const auto &[name, run] : c.candidates) {
            CandidateParity &figures = f.candidates[name];
            if (run.unwritten > 0)
                failures.push_back(name + ": " + where + ": the candidate left " + std::to_string(run.unwritten) +
                                   " output elements NaN" + nan_output_cause);
            const bool exact = mode_of(accuracy, name) == ParityMode::exact;
            for (const TensorDifference &d : run.differences) {
                differing_shapes[name].insert(c.shape);
                figures.differences.push_back(ParityDifference{c.shape, c.seed, d.tensor, d.differing, d.elements,
                                                               d.first_index, d.baseline_value, d.candidate_value});
                if (exact) failures.push_back(name + ": " + where + ": " + d.tensor + " differs in " + std::to_string(d.differing) +
                                   " of " + std::to_string(d.elements) + " elements; first at " + d.first_index +
                                   ": baseline " + d.baseline_value + ", candidate " + d.candidate_value);
            }
            figures.outputs.push_back(ParityOutput{c.shape, c.seed, run.o_sha256});
        }
        if (!c.cpu_reference_checked) continue;
        if (!(c.reference_rel_l2 <= worst)) {  // NaN counts as the worst
            worst = c.reference_rel_l2;
            worst_case = where;
        }
        if (c.reference_non_finite > 0 || !(c.reference_rel_l2 <= limit))
            failures.push_back(where + ": the baseline is " + fixed(c.reference_rel_l2, 5) +
                               " rel-L2 away from the float64 reference (limit " + fixed(limit, 5) + ", " +
                               std::to_string(c.reference_non_finite) + " non-finite elements)");
    }
    fold_accuracy(comparisons, accuracy, f, failures);
    for (std::size_t i = 0; i < failures.size() && i < kParityReasonsShown; ++i) fold.reasons.push_back(failures[i]);
    if (failures.size() > kParityReasonsShown)
        fold.reasons.push_back("and " + std::to_string(failures.size() - kParityReasonsShown) +
                               " more failures (see figures.candidates)");
    fold.passed = failures.empty();

    f.shapes_checked = static_cast<std::int64_t>(shapes);
    f.comparisons = static_cast<std::int64_t>(comparisons.size());
    f.reference_worst_rel_l2 = worst;
    f.reference_worst_case = worst_case;
    f.reference_limit = limit;
    std::string differ;
    for (auto &[name, figures] : f.candidates) {
        figures.shapes_differing = static_cast<std::int64_t>(differing_shapes[name].size());
        differ += (differ.empty() ? "" : ", ") + name + ": " + std::to_string(*figures.shapes_differing) + " shapes differ";
    }
    f.summary = std::to_string(shapes) + " shapes x " + std::to_string(seeds) + " seeds: " + differ +
                "; baseline vs float64 reference worst rel-L2 " + fixed(worst, 5) + " (limit " + fixed(limit, 5) + ")";
    if (!f.baseline_accuracy.empty()) {
        std::size_t passed = 0, total = 0;
        const auto count = [&](const std::vector<AccuracyShapeCheck> &checks) {
            for (const AccuracyShapeCheck &c : checks) passed += c.passed.value_or(false), ++total;
        };
        count(f.baseline_checks);
        for (const auto &[name, figures] : f.candidates) count(figures.checks);
        f.summary += "; accuracy against the float64 GPU reference: " + std::to_string(passed) + " of " +
                     std::to_string(total) + " variant-shape checks pass";
    }
    return fold;
}

}  // namespace s2tp
