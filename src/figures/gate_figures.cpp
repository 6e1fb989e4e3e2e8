#include "figures/gate_figures.h"

#include "figures/figure_fields.h"

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

toml::table GateFigures::to_toml() const {
    toml::table threshold_table{{"max_candidate_p50_ms", thresholds.max_candidate_p50_ms},
                                {"max_spill_growth_bytes", thresholds.max_spill_growth_bytes},
                                {"require_sanitizer", thresholds.require_sanitizer}};
    put(threshold_table, "max_ratio_upper", thresholds.ratio_upper_bound);
    put(threshold_table, "max_geomean_ratio_upper", thresholds.geomean_ratio_upper_bound);
    put(threshold_table, "max_worst_ratio_upper", thresholds.worst_ratio_upper_bound);
    toml::table named;
    for (const auto &[name, c] : candidates) {
        toml::array conditions;
        for (const GateCondition &condition : c.result.conditions)
            conditions.push_back(toml::table{{"name", condition.name},
                                             {"status", gate_status_text(condition.status)},
                                             {"figure", condition.figure},
                                             {"detail", condition.detail},
                                             {"required", condition.required}});
        named.insert(name, toml::table{{"conditions", conditions},
                                       {"verdict", verdict_text(c.result.passed)},
                                       {"summary", c.summary}});
    }
    return toml::table{{"candidates", named},
                       {"verdict", verdict_text(passed)},
                       {"thresholds", threshold_table},
                       {"summary", summary}};
}

GateFigures GateFigures::from_toml(const toml::table &t) {
    GateFigures f;
    if (const toml::table *th = t["thresholds"].as_table()) {
        f.thresholds.max_candidate_p50_ms = real(*th, "max_candidate_p50_ms").value_or(f.thresholds.max_candidate_p50_ms);
        f.thresholds.max_spill_growth_bytes =
            integer(*th, "max_spill_growth_bytes").value_or(f.thresholds.max_spill_growth_bytes);
        f.thresholds.require_sanitizer = boolean(*th, "require_sanitizer").value_or(f.thresholds.require_sanitizer);
        f.thresholds.ratio_upper_bound = real(*th, "max_ratio_upper");
        f.thresholds.geomean_ratio_upper_bound = real(*th, "max_geomean_ratio_upper");
        f.thresholds.worst_ratio_upper_bound = real(*th, "max_worst_ratio_upper");
    }
    each_named(t, "candidates", [&](const std::string &name, const toml::table &c) {
        CandidateGate gate;
        each_table(c, "conditions", [&](const toml::table &entry) {
            GateCondition condition;
            condition.name = string_of(entry, "name");
            const std::string status = string_of(entry, "status");
            for (GateStatus s : {GateStatus::pass, GateStatus::fail, GateStatus::not_checked})
                if (status == gate_status_text(s)) condition.status = s;
            condition.figure = string_of(entry, "figure");
            condition.detail = string_of(entry, "detail");
            condition.required = boolean(entry, "required").value_or(true);
            gate.result.conditions.push_back(std::move(condition));
        });
        gate.result.passed = string_of(c, "verdict") == "PASS";
        gate.summary = string_of(c, "summary");
        f.candidates.emplace(name, std::move(gate));
    });
    f.passed = string_of(t, "verdict") == "PASS";
    f.summary = string_of(t, "summary");
    return f;
}

std::vector<std::string> GateFigures::reasons() const {
    std::vector<std::string> reasons;
    for (const auto &[name, c] : candidates)
        for (const GateCondition &condition : c.result.conditions) {
            const std::string detail = condition.detail.empty() ? "" : " (" + condition.detail + ")";
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
           a.required == b.required;
}

bool operator==(const GateThresholds &a, const GateThresholds &b) {
    return a.max_candidate_p50_ms == b.max_candidate_p50_ms && a.max_spill_growth_bytes == b.max_spill_growth_bytes &&
           a.ratio_upper_bound == b.ratio_upper_bound && a.geomean_ratio_upper_bound == b.geomean_ratio_upper_bound &&
           a.worst_ratio_upper_bound == b.worst_ratio_upper_bound && a.require_sanitizer == b.require_sanitizer;
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
