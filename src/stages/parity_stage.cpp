#include "stages/parity_stage.h"

#include "gpu/gpu_input_generator.h"
#include "gpu/gpu_reference.h"
#include "model/accuracy.h"
#include "model/cpu_reference.h"
#include "model/experiment_manifest.h"
#include "figures/build_figures.h"
#include "model/shape_sets.h"
#include "tools/gpu_session.h"
#include "stages/parity_check.h"
#include "support/errors.h"
#include "support/hashing.h"

#include <memory>

namespace s2tp {
namespace {

std::vector<AttentionProblem> parity_problems(const Experiment &experiment) {
    std::vector<AttentionProblem> problems;
    if (experiment.parity_default_shapes) problems = default_parity_shapes();
    problems.insert(problems.end(), experiment.parity_shapes.begin(), experiment.parity_shapes.end());
    // What time measures is also checked: each timed shape's tails and head layout, small.
    std::vector<AttentionProblem> timed;
    for (const SetWorkload &w : experiment.timed_workloads()) timed.push_back(w.workload.problem);
    for (AttentionProblem &boundary : boundary_problems(timed, problems)) problems.push_back(std::move(boundary));
    return problems;
}

// What the stage compares: the shapes checked against the CPU reference, then all of them with the
// accuracy-only shapes after the others (checked against the GPU reference alone), and the limits.
struct ParityPlan {
    std::vector<AttentionProblem> problems;
    std::vector<AttentionProblem> all_problems;
    AccuracyRules rules;
};

ParityPlan parity_plan(const Experiment &experiment) {
    ParityPlan plan{parity_problems(experiment), {}, accuracy_rules(experiment)};
    plan.all_problems = plan.problems;
    plan.all_problems.insert(plan.all_problems.end(), experiment.accuracy_shapes.begin(), experiment.accuracy_shapes.end());
    return plan;
}

std::int64_t unwritten(const KernelRun &run, const AttentionProblem &problem) {
    return count_nan(run.o) + (problem.with_lse ? count_nan(run.lse) : 0);
}

}  // namespace

StageWork parity_stage_work(StageContext &context, const ParityRequest &request, const Reporter &reporter) {
    RunDirectory &run = context.run();
    const Experiment &experiment = context.experiment();
    const auto plan = std::make_shared<const ParityPlan>(parity_plan(experiment));
    if (plan->all_problems.empty())
        fail(ExitCode::usage, run.relative(run.manifest()) +
                                  ": [parity] default_shapes is false and no [[parity.shape]] or [[parity.accuracy_shape]] "
                                  "is given: nothing to compare");
    if (experiment.parity_seeds.empty())
        fail(ExitCode::usage, run.relative(run.manifest()) + ": [parity] seeds is empty: nothing to compare");
    const double limit = experiment.reference_max_rel_l2;
    const bool accuracy = experiment.checks_accuracy();

    StageWork work;
    work.stage = Stage::parity;
    work.force = request.force;
    work.add_inputs = [&experiment, plan, limit, accuracy](Fingerprint &f) {
        // Checkpoints written before the figures were kept per candidate are not read as current.
        f.add("figures_layout", kFiguresLayout);
        for (const auto &p : plan->problems) {
            float scale = p.sm_scale;
            f.add("shape", p.describe()).add("sm_scale", &scale, sizeof scale).add("with_lse", std::int64_t{p.with_lse});
        }
        for (std::int64_t seed : experiment.parity_seeds) f.add("seed", seed);
        f.add("reference_max_rel_l2", &limit, sizeof limit);
        if (accuracy) {
            for (const auto &p : experiment.accuracy_shapes) f.add("accuracy_shape", p.describe());
            add_accuracy_inputs(f, plan->rules, experiment.reference_rows);
        }
    };
    work.run = [&context, &experiment, &request, &reporter, plan, limit, accuracy] {
        StageResult result;
        const BuiltKernels kernels = built_kernels(context);
        const DeviceFacts device = require_gpu(Stage::parity, request.device_index, context.run(), kernels.arch);
        require_kernels_for_device("parity", kernels, device);
        result.tools.insert("gpu", device.name);
        result.tools.insert("cuda_driver", cuda_version_string(device.driver_version));
        const CubinModule quantize(kernels.quantize);
        const CubinModule baseline(kernels.baseline.cubin);
        std::vector<std::unique_ptr<CubinModule>> candidates;
        std::vector<std::string> names;
        for (const BuiltAttention &built : kernels.candidates) {
            candidates.push_back(std::make_unique<CubinModule>(built.cubin));
            names.push_back(built.variant);
        }

        std::vector<ParityComparison> comparisons;
        const std::size_t total = plan->all_problems.size() * experiment.parity_seeds.size();
        for (std::size_t index = 0; index < plan->all_problems.size(); ++index) {
            const AttentionProblem &problem = plan->all_problems[index];
            const bool accuracy_only = index >= plan->problems.size();
            for (const std::int64_t seed : experiment.parity_seeds) {
                ParityComparison c{problem.describe(), seed};
                reporter.progress("[" + std::to_string(comparisons.size() + 1) + "/" + std::to_string(total) + "] " +
                                  c.shape + " seed " + std::to_string(seed) + (accuracy_only ? " (accuracy only)" : ""));
                // The long accuracy shapes are generated on the GPU, bit for bit as on the host.
                DeviceInputs unquantized;
                if (accuracy_only) {
                    unquantized = generate_inputs_on_gpu(quantize, problem.shape, problem.dtype, static_cast<std::uint64_t>(seed));
                } else {
                    const GeneratedInputs host = problem_inputs(problem, static_cast<std::uint64_t>(seed));
                    unquantized = upload_inputs(problem, host.q, host.k, host.v);
                }
                // Quantized by the baseline build's kernels, once per recipe the variants' launchers need:
                // variants with the same recipe read the same buffers.
                InputsByRecipe quantized(quantize, problem, std::move(unquantized));
                const DeviceQuantizedInputs &inputs = quantized.get(kernels.baseline.abi->quantization(problem.shape.head_dim));
                std::vector<std::uint32_t> rows;
                Tensor reference;
                if (accuracy) {
                    rows = sample_query_rows(problem.shape.len_q, experiment.reference_rows, static_cast<std::uint64_t>(seed));
                    reference = reference_on_gpu(quantize, problem, quantized.unquantized(), rows);
                    c.reference_rows = static_cast<std::int64_t>(rows.size());
                }
                const KernelRun base = run_attention(*kernels.baseline.abi, baseline, problem, inputs, "baseline");
                c.baseline_unwritten = unwritten(base, problem);
                c.baseline_o_sha256 = sha256_hex(base.o.bytes.data(), base.o.bytes.size());
                Tensor base_rows;
                if (accuracy) {
                    base_rows = gather_query_rows(base.o, problem.shape, rows);
                    c.baseline_accuracy = accuracy_metrics(base_rows, reference, rows);
                }
                for (std::size_t i = 0; i < candidates.size(); ++i) {
                    const KernelAbi &abi = *kernels.candidates[i].abi;
                    const KernelRun cand =
                        run_attention(abi, *candidates[i], problem, quantized.get(abi.quantization(problem.shape.head_dim)), names[i]);
                    CandidateRun &ran = c.candidates[names[i]];
                    ran.unwritten = unwritten(cand, problem);
                    ran.o_sha256 = sha256_hex(cand.o.bytes.data(), cand.o.bytes.size());
                    if (auto d = tensor_difference("o", base.o, cand.o)) ran.differences.push_back(*d);
                    if (problem.with_lse)
                        if (auto d = tensor_difference("lse", base.lse, cand.lse)) ran.differences.push_back(*d);
                    if (accuracy) {
                        const Tensor cand_rows = gather_query_rows(cand.o, problem.shape, rows);
                        ran.accuracy = accuracy_metrics(cand_rows, reference, rows);
                        ran.vs_baseline = accuracy_metrics(cand_rows, base_rows, rows);
                    }
                }
                c.cpu_reference_checked = !accuracy_only;
                if (!accuracy_only) {
                    const ReferenceResult cpu = reference_attention(problem.shape, download_quantized(problem, inputs),
                                                                    problem.sm_scale, problem.causal, 0, inputs.recipe);
                    const RelL2 error = relative_l2(base.o, cpu.o);
                    c.reference_rel_l2 = error.rel_l2;
                    c.reference_non_finite = error.non_finite;
                }
                comparisons.push_back(std::move(c));
            }
        }

        ParityFold fold = fold_parity(comparisons, plan->all_problems.size(), experiment.parity_seeds.size(), limit,
                                      names, plan->rules);
        if (accuracy) fold.figures.reference_rows = experiment.reference_rows;
        fold.figures.device = device.summary();
        result.status = fold.passed ? StageStatus::passed : StageStatus::failed;
        result.reasons = fold.reasons;
        result.figures = fold.figures.to_toml();
        return result;
    };
    work.summarize = [](const Checkpoint &c, const Reporter &to) { to.say(ParityFigures::from_toml(c.figures).text()); };
    return work;
}

}  // namespace s2tp
