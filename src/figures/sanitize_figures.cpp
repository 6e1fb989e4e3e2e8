#include "figures/sanitize_figures.h"

#include "figures/figure_fields.h"

namespace s2tp {

using namespace figure_fields;

namespace {

toml::table variant_table(const VariantSanitize &v) {
    toml::table t;
    put(t, "errors", v.errors);
    put(t, "failed_checks", v.failed_checks);
    return t;
}

VariantSanitize variant_from(const toml::table &t) { return VariantSanitize{integer(t, "errors"), integer(t, "failed_checks")}; }

}  // namespace

std::optional<std::int64_t> SanitizeFigures::errors_for(const std::string &candidate) const {
    const auto found = candidates.find(candidate);
    if (found == candidates.end() || !found->second.errors || !baseline.errors) return std::nullopt;
    return *baseline.errors + *found->second.errors;
}

toml::table SanitizeFigures::to_toml() const {
    toml::table t;
    t.insert("tools", string_array(tools));
    if (!checks.empty()) {
        toml::array array;
        for (const SanitizeCheck &c : checks) {
            toml::table check{{"variant", c.variant}, {"tool", c.tool}, {"shape", c.shape}};
            put(check, "errors", c.errors);
            put(check, "passed", c.passed);
            put(check, "log", c.log);
            array.push_back(std::move(check));
        }
        t.insert("checks", std::move(array));
    }
    put(t, "total_errors", total_errors);
    put(t, "failed_checks", failed_checks);
    if (baseline.errors || baseline.failed_checks) t.insert("baseline", variant_table(baseline));
    if (!candidates.empty()) {
        toml::table named;
        for (const auto &[name, v] : candidates) named.insert(name, variant_table(v));
        t.insert("candidates", std::move(named));
    }
    put(t, "device", device);
    put(t, "seed", seed);
    put(t, "summary", summary);
    return t;
}

SanitizeFigures SanitizeFigures::from_toml(const toml::table &t) {
    SanitizeFigures f;
    f.tools = strings(t, "tools");
    each_table(t, "checks", [&](const toml::table &c) {
        f.checks.push_back(SanitizeCheck{string_of(c, "variant"), string_of(c, "tool"), string_of(c, "shape"), integer(c, "errors"),
                                         boolean(c, "passed"), string_of(c, "log")});
    });
    f.total_errors = integer(t, "total_errors");
    f.failed_checks = integer(t, "failed_checks");
    if (const toml::table *base = t["baseline"].as_table()) f.baseline = variant_from(*base);
    each_named(t, "candidates", [&](const std::string &name, const toml::table &v) { f.candidates.emplace(name, variant_from(v)); });
    f.device = string_of(t, "device");
    f.seed = integer(t, "seed");
    f.summary = string_of(t, "summary");
    return f;
}

bool SanitizeFigures::operator==(const SanitizeFigures &o) const {
    return tools == o.tools && checks == o.checks && total_errors == o.total_errors && failed_checks == o.failed_checks &&
           baseline == o.baseline && candidates == o.candidates && device == o.device && seed == o.seed &&
           summary == o.summary;
}

std::string SanitizeFigures::text(bool verbose) const {
    std::string out = "  " + summary;
    for (const SanitizeCheck &c : checks) {
        const bool passed = c.passed.value_or(false);
        if (passed && !verbose) continue;
        out += std::string("\n  ") + (passed ? "ok   " : "FAIL ") + c.variant + " " + c.tool + " " + c.shape + ": " +
               std::to_string(c.errors.value_or(0)) + " errors, log " + c.log;
    }
    return out;
}

}  // namespace s2tp
