#include "stages/sanitize_matrix.h"

namespace s2tp {

std::vector<SanitizeCheckPlan> plan_sanitize_checks(const std::vector<std::string> &variants,
                                                    const std::vector<SanitizerTool> &tools,
                                                    const std::vector<std::string> &shapes) {
    std::vector<SanitizeCheckPlan> plan;
    for (const std::string &variant : variants)
        for (const SanitizerTool tool : tools)
            for (std::size_t index = 0; index < shapes.size(); ++index)
                plan.push_back(SanitizeCheckPlan{variant, tool, index, shapes[index],
                                                 variant + "-" + sanitizer_tool_name(tool) + "-shape" +
                                                     std::to_string(index) + ".log"});
    return plan;
}

SanitizeFold fold_sanitize_checks(const std::vector<SanitizeOutcome> &outcomes, std::size_t shapes,
                                  const std::vector<std::string> &tools, const std::vector<std::string> &candidates) {
    SanitizeFold fold;
    SanitizeFigures &f = fold.figures;
    f.tools = tools;
    f.total_errors = 0;
    f.failed_checks = 0;
    f.baseline = VariantSanitize{0, 0};
    for (const std::string &name : candidates) f.candidates[name] = VariantSanitize{0, 0};
    std::vector<std::string> failures;
    for (const SanitizeOutcome &o : outcomes) {
        const SanitizerReport &r = o.report;
        const std::string tool = sanitizer_tool_name(o.check.tool);
        f.checks.push_back(SanitizeCheck{o.check.variant, tool, o.check.shape, r.errors, r.passed, o.log});
        auto found = f.candidates.find(o.check.variant);
        VariantSanitize &variant = found == f.candidates.end() ? f.baseline : found->second;
        *f.total_errors += r.errors;
        *variant.errors += r.errors;
        if (r.passed) continue;
        ++*f.failed_checks;
        ++*variant.failed_checks;
        std::string line = o.check.variant + " " + tool + " on " + o.check.shape + ": " + r.verdict;
        if (!r.first_error_lines.empty()) line += "; first record: " + r.first_error_lines.front();
        failures.push_back(line + " (log " + o.log + ")");
    }
    for (std::size_t i = 0; i < failures.size() && i < kSanitizeReasonsShown; ++i) fold.reasons.push_back(failures[i]);
    if (failures.size() > kSanitizeReasonsShown)
        fold.reasons.push_back("and " + std::to_string(failures.size() - kSanitizeReasonsShown) +
                               " more failed checks (see figures.checks)");
    fold.passed = failures.empty();
    f.summary = std::to_string(f.checks.size()) + " checks (" + std::to_string(shapes) + " shapes x " +
                std::to_string(tools.size()) + " tools x " + std::to_string(candidates.size() + 1) + " variants), " +
                std::to_string(*f.failed_checks) + " failed, " + std::to_string(*f.total_errors) + " errors";
    return fold;
}

}  // namespace s2tp
