#include "stages/sanitize_matrix.h"

#include "model/device_sharding.h"
#include "tools/gpu_session/gpu_work_pool.h"

#include <algorithm>

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

std::vector<int> SanitizeBatchPlan::shape_indices() const {
    std::vector<int> indices;
    for (const SanitizeCheckPlan &check : checks) indices.push_back(static_cast<int>(check.shape_index));
    return indices;
}

std::string SanitizeBatchPlan::describe() const {
    return variant + " " + sanitizer_tool_name(tool) + " on " +
           (checks.size() == 1 ? checks.front().shape : std::to_string(checks.size()) + " shapes");
}

std::vector<SanitizeBatchPlan> plan_sanitize_batches(const std::vector<std::string> &variants,
                                                     const std::vector<SanitizerTool> &tools,
                                                     const std::vector<std::string> &shapes) {
    std::vector<SanitizeBatchPlan> batches;
    for (SanitizeCheckPlan &check : plan_sanitize_checks(variants, tools, shapes)) {
        if (batches.empty() || batches.back().variant != check.variant || batches.back().tool != check.tool)
            batches.push_back(SanitizeBatchPlan{check.variant, check.tool, {},
                                                check.variant + "-" + sanitizer_tool_name(check.tool) + "-batch.log"});
        batches.back().checks.push_back(std::move(check));
    }
    return batches;
}

std::vector<SanitizeBatchPlan> split_sanitize_batch(const SanitizeBatchPlan &batch) {
    std::vector<SanitizeBatchPlan> singles;
    for (const SanitizeCheckPlan &check : batch.checks)
        singles.push_back(SanitizeBatchPlan{batch.variant, batch.tool, {check}, check.log_name});
    return singles;
}

std::string log_name_on_gpu(const std::string &log_name, int gpu) {
    const std::string suffix = ".log";
    const bool has_suffix =
        log_name.size() >= suffix.size() && log_name.compare(log_name.size() - suffix.size(), suffix.size(), suffix) == 0;
    return has_suffix ? name_on_gpu(log_name.substr(0, log_name.size() - suffix.size()), gpu, suffix)
                      : name_on_gpu(log_name, gpu);
}

std::vector<SanitizeOutcome> batch_outcomes(const SanitizeBatchPlan &batch, const SanitizerReport &report,
                                            const std::string &log, int gpu) {
    std::vector<SanitizeOutcome> outcomes;
    for (const SanitizeCheckPlan &check : batch.checks) outcomes.push_back(SanitizeOutcome{check, report, log, gpu});
    return outcomes;
}

std::vector<SanitizeOutcome> not_run_outcomes(const SanitizeBatchPlan &batch, int gpu, const std::string &error,
                                              const std::string &log) {
    SanitizerReport report;
    report.tool = sanitizer_tool_name(batch.tool);
    report.passed = false;
    report.verdict = "not run: GPU " + std::to_string(gpu) + " lost (" + error + ")";
    std::vector<SanitizeOutcome> outcomes = batch_outcomes(batch, report, log, gpu);
    for (SanitizeOutcome &outcome : outcomes) outcome.ran = false;
    return outcomes;
}

namespace {

// A split batch's finding stands on its own when none of its shapes failed alone, unless the batch
// only ran out of time without a record: then its shapes, each run to the end, settle it.
bool finding_unattributed(const SanitizeSplit &split, const std::vector<SanitizeOutcome> &outcomes) {
    if (split.timed_out && split.report.errors == 0) return false;
    return std::none_of(outcomes.begin(), outcomes.end(), [&](const SanitizeOutcome &o) {
        return !o.report.passed && o.check.variant == split.batch.variant && o.check.tool == split.batch.tool &&
               std::any_of(split.batch.checks.begin(), split.batch.checks.end(), [&](const SanitizeCheckPlan &c) {
                   return c.shape_index == o.check.shape_index;
               });
    });
}

std::string quoted_failure(const std::string &what, const SanitizerReport &report, const std::string &log) {
    std::string line = what + ": " + report.verdict;
    if (!report.first_error_lines.empty()) line += "; first record: " + report.first_error_lines.front();
    return line + " (log " + log + ")";
}

}  // namespace

SanitizeFold fold_sanitize_checks(const std::vector<SanitizeOutcome> &outcomes, std::size_t shapes,
                                  const std::vector<std::string> &tools, const std::vector<std::string> &candidates,
                                  const std::vector<SanitizeSplit> &splits, std::vector<GpuFigures> gpus) {
    SanitizeFold fold;
    SanitizeFigures &f = fold.figures;
    f.tools = tools;
    f.total_errors = 0;
    f.failed_checks = 0;
    f.baseline = VariantSanitize{0, 0};
    for (const std::string &name : candidates) f.candidates[name] = VariantSanitize{0, 0};
    std::vector<std::string> failures;
    auto variant_of = [&f](const std::string &name) -> VariantSanitize & {
        auto found = f.candidates.find(name);
        return found == f.candidates.end() ? f.baseline : found->second;
    };
    // Quoted first, so that the limit on quoted reasons never hides them.
    std::size_t unattributed = 0;
    for (const SanitizeSplit &split : splits) {
        if (!finding_unattributed(split, outcomes)) continue;
        ++unattributed;
        *f.total_errors += split.report.errors;
        *variant_of(split.batch.variant).errors += split.report.errors;
        failures.push_back(quoted_failure(split.batch.describe() + " in one process", split.report, split.log) +
                           ", which no shape reproduced alone");
    }
    for (const SanitizeOutcome &o : outcomes) {
        const SanitizerReport &r = o.report;
        const std::string tool = sanitizer_tool_name(o.check.tool);
        f.checks.push_back(SanitizeCheck{o.check.variant, tool, o.check.shape, r.errors, r.passed, o.log, o.gpu});
        VariantSanitize &variant = variant_of(o.check.variant);
        *f.total_errors += r.errors;
        *variant.errors += r.errors;
        if (r.passed) continue;
        ++*f.failed_checks;
        ++*variant.failed_checks;
        failures.push_back(quoted_failure(o.check.variant + " " + tool + " on " + o.check.shape, r, o.log));
    }
    // Each GPU's share: a GPU lost, or one that did not run all its checks, fails the stage on its own.
    std::vector<GpuCheckOutcome> shares;
    for (GpuFigures &gpu : gpus) {
        GpuCheckOutcome share{static_cast<int>(gpu.index.value_or(-1)), gpu.name, 0, 0, 0, {}};
        for (const SanitizeOutcome &o : outcomes) {
            if (o.gpu != share.device) continue;
            ++share.checks;
            if (o.ran) ++(o.report.passed ? share.passed : share.failed);
        }
        if (!gpu.lost.empty()) share.lost = gpu.lost;
        gpu.checks = static_cast<std::int64_t>(share.checks);
        gpu.ran = static_cast<std::int64_t>(share.passed + share.failed);
        gpu.passed = static_cast<std::int64_t>(share.passed);
        gpu.failed = static_cast<std::int64_t>(share.failed);
        shares.push_back(share);
    }
    const ShardedVerdict sharded = judge_sharded_checks(shares);
    // Named per GPU where the figures show the GPUs; one GPU's failed checks are quoted below anyway.
    if (shows_gpu_table(gpus)) fold.reasons = sharded.reasons;
    for (std::size_t i = 0; i < failures.size() && i < kSanitizeReasonsShown; ++i) fold.reasons.push_back(failures[i]);
    if (failures.size() > kSanitizeReasonsShown)
        fold.reasons.push_back("and " + std::to_string(failures.size() - kSanitizeReasonsShown) +
                               " more failed checks (see figures.checks)");
    fold.passed = failures.empty() && (gpus.empty() || sharded.passed);
    f.gpus = std::move(gpus);
    f.summary = std::to_string(f.checks.size()) + " checks (" + std::to_string(shapes) + " shapes x " +
                std::to_string(tools.size()) + " tools x " + std::to_string(candidates.size() + 1) + " variants), " +
                std::to_string(*f.failed_checks) + " failed, " + std::to_string(*f.total_errors) + " errors";
    if (unattributed > 0)
        f.summary += ", " + std::to_string(unattributed) + " batch finding" + (unattributed == 1 ? "" : "s") +
                     " that no single shape reproduced";
    return fold;
}

}  // namespace s2tp
