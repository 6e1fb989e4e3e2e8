#include "figures/sanitize_figures.h"

#include "figures/figure_fields.h"

namespace s2tp {

using namespace figure_fields;

std::optional<std::int64_t> SanitizeFigures::errors_for(const std::string &candidate) const {
    const auto found = candidates.find(candidate);
    if (found == candidates.end() || !found->second.errors || !baseline.errors) return std::nullopt;
    return *baseline.errors + *found->second.errors;
}

const std::vector<Field<SanitizeCheck>> &SanitizeCheck::fields() {
    using C = SanitizeCheck;
    static const std::vector<Field<C>> table{field("variant", &C::variant, "variant", Presence::always),
                                             field("tool", &C::tool, "tool", Presence::always),
                                             field("shape", &C::shape, "shape", Presence::always),
                                             field("errors", &C::errors, "errors"),
                                             field("passed", &C::passed, "outcome"),
                                             field("log", &C::log, "path"),
                                             field("gpu", &C::gpu, "GPU index")};
    return table;
}

const std::vector<Field<VariantSanitize>> &VariantSanitize::fields() {
    using V = VariantSanitize;
    static const std::vector<Field<V>> table{field("errors", &V::errors, "errors"),
                                             field("failed_checks", &V::failed_checks, "checks")};
    return table;
}

const std::vector<Field<SanitizeFigures>> &SanitizeFigures::fields() {
    using F = SanitizeFigures;
    static const std::vector<Field<F>> table{field("tools", &F::tools, "tools", Presence::always),
                                             field("checks", &F::checks, "one per check"),
                                             field("total_errors", &F::total_errors, "errors"),
                                             field("failed_checks", &F::failed_checks, "checks"),
                                             field("baseline", &F::baseline, "variant"),
                                             named_map("candidates", &F::candidates, "by name"),
                                             field("device", &F::device, "GPU"),
                                             field("gpus", &F::gpus, "one per GPU"),
                                             field("seed", &F::seed, "seed"),
                                             field("summary", &F::summary, "line")};
    return table;
}

toml::table SanitizeFigures::to_toml() const { return write_fields(fields(), *this); }

SanitizeFigures SanitizeFigures::from_toml(const toml::table &t) { return read_fields(fields(), t); }

bool SanitizeFigures::operator==(const SanitizeFigures &o) const {
    return tools == o.tools && checks == o.checks && total_errors == o.total_errors && failed_checks == o.failed_checks &&
           baseline == o.baseline && candidates == o.candidates && device == o.device && gpus == o.gpus && seed == o.seed &&
           summary == o.summary;
}

std::string SanitizeFigures::text(bool verbose) const {
    std::string out = with_gpu_table("  " + summary, gpus);
    for (const SanitizeCheck &c : checks) {
        const bool passed = c.passed.value_or(false);
        if (passed && !verbose) continue;
        out += std::string("\n  ") + (passed ? "ok   " : "FAIL ") + c.variant + " " + c.tool + " " + c.shape + ": " +
               std::to_string(c.errors.value_or(0)) + " errors, " +
               (c.gpu ? "GPU " + std::to_string(*c.gpu) + ", " : "") + "log " + c.log;
    }
    return out;
}

}  // namespace s2tp
