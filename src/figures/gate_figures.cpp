#include "figures/gate_figures.h"

#include "figures/figure_fields.h"
#include "model/experiment_manifest.h"

namespace s2tp {

using namespace figure_fields;

namespace {

std::string candidate_summary(const GateResult &result) {
    if (result.passed) return "PASS";
    std::string blocking;
    for (const GateCondition &c : result.conditions)
        if (c.blocks()) blocking += (blocking.empty() ? "" : ", ") + c.name;
    return "FAIL: " + blocking;
}

const char *verdict_text(bool passed) { return passed ? "PASS" : "FAIL"; }

}  // namespace

GateFigures GateFigures::of(const std::map<std::string, GateResult> &results, const GateThresholds &thresholds) {
    GateFigures f;
    f.thresholds = thresholds;
    f.passed = !results.empty();
    std::string failing;
    for (const auto &[name, result] : results) {
        f.candidates[name] = CandidateGate{result, candidate_summary(result)};
        if (result.passed) continue;
        f.passed = false;
        failing += (failing.empty() ? "" : "; ") + name + ": " + f.candidates[name].summary.substr(6);
    }
    f.summary = f.passed ? "PASS" : "FAIL: " + (failing.empty() ? std::string("no candidate") : failing);
    return f;
}

const std::vector<Field<GateThresholds>> &figure_fields_of(const GateThresholds *) {
    using T = GateThresholds;
    static const std::vector<Field<T>> table{
        // The bound applied, then whether it was the default: read back into the bound chosen, or the default.
        converted<T, double>(
            "max_candidate_p50_ms", "ms", [](const T &t) { return t.candidate_p50_bound(); },
            [](T &t, const std::optional<double> &bound) { t.max_candidate_p50_ms = bound; }),
        converted<T, bool>(
            "max_candidate_p50_ms_is_default", "rule", [](const T &t) { return !t.max_candidate_p50_ms; },
            // A checkpoint from before this key was written by the gate of its time, which took a bound
            // of 220 ms for the default: it reads back as it was judged.
            [](T &t, const std::optional<bool> &is_default) {
                if (!t.max_candidate_p50_ms ||
                    !is_default.value_or(*t.max_candidate_p50_ms == Experiment::default_max_candidate_p50_ms))
                    return;
                t.default_max_candidate_p50_ms = *t.max_candidate_p50_ms;
                t.max_candidate_p50_ms.reset();
            }),
        field("max_spill_growth_bytes", &T::max_spill_growth_bytes, "bytes"),
        field("require_sanitizer", &T::require_sanitizer, "rule"),
        field("max_ratio_upper", &T::ratio_upper_bound, "times the baseline"),
        field("max_geomean_ratio_upper", &T::geomean_ratio_upper_bound, "times the baseline"),
        field("max_worst_ratio_upper", &T::worst_ratio_upper_bound, "times the baseline"),
        field("waivers", &T::waivers, "one per [[gate.waiver]]")};
    return table;
}

const std::vector<Field<GateWaiver>> &figure_fields_of(const GateWaiver *) {
    using W = GateWaiver;
    static const std::vector<Field<W>> table{field("condition", &W::condition, "condition", Presence::always),
                                             field("reason", &W::reason, "why", Presence::always)};
    return table;
}

const std::vector<Field<GateCondition>> &figure_fields_of(const GateCondition *) {
    using C = GateCondition;
    static const std::vector<Field<C>> table{
        field("name", &C::name, "condition", Presence::always),
        converted<C, std::string>(
            "status", "PASS | FAIL | NOT CHECKED (before any waiver)", [](const C &c) { return std::string(gate_status_text(c.status)); },
            [](C &c, const std::optional<std::string> &status) {
                for (GateStatus s : {GateStatus::pass, GateStatus::fail, GateStatus::not_checked})
                    if (status == gate_status_text(s)) c.status = s;
            }),
        field("figure", &C::figure, "figure", Presence::always),
        field("detail", &C::detail, "why", Presence::always),
        field("required", &C::required, "rule"),
        field("waiver", &C::waiver, "why")};
    return table;
}

const std::vector<Field<CandidateGate>> &CandidateGate::fields() {
    using C = CandidateGate;
    static const std::vector<Field<C>> table{
        field_at<C>("conditions", [](auto &c) -> auto & { return c.result.conditions; }, "in report order",
                    Presence::always),
        converted<C, std::string>(
            "verdict", "PASS | FAIL", [](const C &c) { return std::string(verdict_text(c.result.passed)); },
            [](C &c, const std::optional<std::string> &verdict) { c.result.passed = verdict == "PASS"; }),
        field("summary", &C::summary, "line", Presence::always)};
    return table;
}

const std::vector<Field<GateFigures>> &GateFigures::fields() {
    using G = GateFigures;
    static const std::vector<Field<G>> table{
        named_map("candidates", &G::candidates, "by name", Presence::always),
        converted<G, std::string>(
            "verdict", "PASS | FAIL", [](const G &g) { return std::string(verdict_text(g.passed)); },
            [](G &g, const std::optional<std::string> &verdict) { g.passed = verdict == "PASS"; }),
        field("thresholds", &G::thresholds, "applied"),
        field("summary", &G::summary, "line", Presence::always)};
    return table;
}

toml::table GateFigures::to_toml() const { return write_fields(fields(), *this); }

GateFigures GateFigures::from_toml(const toml::table &t) { return read_fields(fields(), t); }

std::vector<std::string> GateFigures::reasons() const {
    std::vector<std::string> reasons;
    for (const auto &[name, c] : candidates)
        for (const GateCondition &condition : c.result.conditions) {
            const std::string detail = condition.detail.empty() ? "" : " (" + condition.detail + ")";
            if (condition.waived()) continue;
            if (condition.status == GateStatus::fail)
                reasons.push_back(name + ": " + condition.name + " failed: " + condition.figure + detail);
            else if (condition.blocks())
                reasons.push_back(name + ": " + condition.name + " is required but was not checked: " +
                                  condition.figure + detail);
        }
    return reasons;
}

std::string GateFigures::text() const {
    std::string out;
    std::size_t passing = 0;
    for (const auto &[name, c] : candidates) {
        out += "candidate " + name + ":\n" + format_gate_report(c.result);
        if (c.result.passed) ++passing;
    }
    return out + "overall: " + verdict_text(passed) + " (" + std::to_string(passing) + " of " +
           std::to_string(candidates.size()) + " candidates pass)";
}

bool operator==(const GateCondition &a, const GateCondition &b) {
    return a.name == b.name && a.status == b.status && a.figure == b.figure && a.detail == b.detail &&
           a.required == b.required && a.waiver == b.waiver;
}

bool operator==(const GateWaiver &a, const GateWaiver &b) { return a.condition == b.condition && a.reason == b.reason; }

bool operator==(const GateThresholds &a, const GateThresholds &b) {
    return a.max_candidate_p50_ms == b.max_candidate_p50_ms && a.candidate_p50_bound() == b.candidate_p50_bound() &&
           a.max_spill_growth_bytes == b.max_spill_growth_bytes &&
           a.ratio_upper_bound == b.ratio_upper_bound && a.geomean_ratio_upper_bound == b.geomean_ratio_upper_bound &&
           a.worst_ratio_upper_bound == b.worst_ratio_upper_bound && a.require_sanitizer == b.require_sanitizer &&
           a.waivers == b.waivers;
}

bool operator==(const GateFigures &a, const GateFigures &b) {
    if (!(a.thresholds == b.thresholds) || a.passed != b.passed || a.summary != b.summary ||
        a.candidates.size() != b.candidates.size())
        return false;
    for (const auto &[name, c] : a.candidates) {
        const auto found = b.candidates.find(name);
        if (found == b.candidates.end() || c.summary != found->second.summary ||
            c.result.passed != found->second.result.passed || c.result.conditions != found->second.result.conditions)
            return false;
    }
    return true;
}

}  // namespace s2tp
