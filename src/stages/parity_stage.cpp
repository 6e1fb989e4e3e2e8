#include "stages/parity_stage.h"

#include "gpu/gpu_input_generator.h"
#include "gpu/gpu_reference.h"
#include "model/accuracy.h"
#include "model/cpu_reference.h"
#include "model/device_sharding.h"
#include "model/experiment_manifest.h"
#include "figures/gpu_figures.h"
#include "figures/build_figures.h"
#include "model/shape_sets.h"
#include "tools/gpu_session/gpu_session.h"
#include "tools/gpu_session/gpu_work_pool.h"
#include "stages/parity_check.h"
#include "support/errors.h"
#include "support/hashing.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>

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

// The variants' modules, loaded into the context of the calling thread's current GPU.
struct ParityModules {
    CubinModule quantize;
    LoadedAttention baseline;
    std::vector<std::unique_ptr<LoadedAttention>> candidates;  // in manifest order

    explicit ParityModules(const BuiltKernels &kernels)
        : quantize(kernels.quantize), baseline(load_attention(kernels.baseline)) {
        for (const BuiltAttention &built : kernels.candidates)
            candidates.push_back(std::make_unique<LoadedAttention>(load_attention(built)));
    }
};

std::int64_t unwritten(const KernelRun &run, const AttentionProblem &problem) {
    return count_nan(run.o) + (problem.with_lse ? count_nan(run.lse) : 0);
}

// What every comparison of one run reads.
struct ParityRun {
    const ParityPlan &plan;
    const BuiltKernels &kernels;
    const Experiment &experiment;
    bool accuracy;
};

// One comparison: every variant on one shape and seed, on the calling thread's GPU.
ParityComparison compare_variants(const ParityRun &run, const ParityModules &modules, std::size_t index,
                                  std::int64_t seed) {
    const ParityPlan &plan = run.plan;
    const BuiltKernels &kernels = run.kernels;
    const Experiment &experiment = run.experiment;
    const bool accuracy = run.accuracy;
    const AttentionProblem &problem = plan.all_problems[index];
    const bool accuracy_only = index >= plan.problems.size();
    ParityComparison c;
    c.shape = problem.describe();
    c.seed = seed;
    // The long accuracy shapes are generated on the GPU, bit for bit as on the host.
    DeviceInputs unquantized;
    if (accuracy_only) {
        unquantized = generate_inputs_on_gpu(modules.quantize, problem.shape, problem.dtype, static_cast<std::uint64_t>(seed));
    } else {
        const GeneratedInputs host = problem_inputs(problem, static_cast<std::uint64_t>(seed));
        unquantized = upload_inputs(problem, host.q, host.k, host.v);
    }
    // Quantized by the baseline build's kernels, once per recipe the variants' launchers need:
    // variants with the same recipe read the same buffers.
    InputsByRecipe quantized(modules.quantize, problem, std::move(unquantized));
    const DeviceQuantizedInputs &inputs = quantized.get(kernels.baseline.abi->quantization(problem.shape.head_dim));
    std::vector<std::uint32_t> rows;
    Tensor reference;
    if (accuracy) {
        rows = sample_query_rows(problem.shape.len_q, experiment.reference_rows, static_cast<std::uint64_t>(seed));
        reference = reference_on_gpu(modules.quantize, problem, quantized.unquantized(), rows);
        c.reference_rows = static_cast<std::int64_t>(rows.size());
    }
    // Every launch finds NaN in every SM's shared memory: a tail it reads unwritten shows.
    fill_shared_memory_with_nan(modules.quantize);
    const KernelRun base = run_attention(modules.baseline, problem, inputs, "baseline");
    c.baseline_unwritten = unwritten(base, problem);
    c.baseline_o_sha256 = sha256_hex(base.o.bytes.data(), base.o.bytes.size());
    Tensor base_rows;
    if (accuracy) {
        base_rows = gather_query_rows(base.o, problem.shape, rows);
        c.baseline_accuracy = accuracy_metrics(base_rows, reference, rows);
    }
    for (std::size_t i = 0; i < modules.candidates.size(); ++i) {
        const KernelAbi &abi = *kernels.candidates[i].abi;
        fill_shared_memory_with_nan(modules.quantize);
        const KernelRun cand =
            run_attention(*modules.candidates[i], problem, quantized.get(abi.quantization(problem.shape.head_dim)), kernels.candidates[i].variant);
        CandidateRun &ran = c.candidates[kernels.candidates[i].variant];
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
    return c;
}

// Every (shape, seed) is one comparison, an item of the GPU pool. Each GPU's worker makes its GPU
// current (the runtime's current device is per thread) and loads the modules into its context. A
// device error loses the GPU: the comparison it was lost on is not run, its others move to the GPUs
// still running (not run when none is left), the stage fails, and every comparison that ran is kept.
struct ParityItem {
    std::size_t problem;
    std::int64_t seed;
};

StageResult run_parity(StageContext &context, const ParityRequest &request, const Reporter &reporter,
                       const ParityPlan &plan, double limit, bool accuracy) {
    const Experiment &experiment = context.experiment();
    StageResult result;
    const BuiltKernels kernels = built_kernels(context);
    const std::vector<DeviceFacts> devices = require_gpus(Stage::parity, request.devices, context.run(), kernels.arch);
    for (const DeviceFacts &device : devices) require_kernels_for_device("parity", kernels, device);
    result.tools.insert("gpu", gpu_names(devices));
    result.tools.insert("cuda_driver", cuda_version_string(devices.front().driver_version));
    std::vector<std::string> names;
    for (const BuiltAttention &built : kernels.candidates) names.push_back(built.variant);

    std::vector<ParityItem> items;
    for (std::size_t index = 0; index < plan.all_problems.size(); ++index)
        for (const std::int64_t seed : experiment.parity_seeds) items.push_back({index, seed});
    std::vector<int> indices;
    std::vector<GpuFigures> gpus;
    for (const DeviceFacts &device : devices) {
        indices.push_back(device.index);
        gpus.push_back(GpuFigures::of(device));
    }
    const ParityRun run{plan, kernels, experiment, accuracy};
    std::vector<std::optional<ParityComparison>> slots(items.size());
    std::mutex reporting;
    std::size_t started = 0;
    auto compare_item = [&](const ParityModules &modules, std::size_t i, int gpu) {
        {
            std::lock_guard<std::mutex> lock(reporting);
            const bool accuracy_only = items[i].problem >= plan.problems.size();
            reporter.progress("[" + std::to_string(++started) + "/" + std::to_string(items.size()) + "] " +
                              plan.all_problems[items[i].problem].describe() + " seed " + std::to_string(items[i].seed) +
                              (accuracy_only ? " (accuracy only)" : "") +
                              (devices.size() > 1 ? " on GPU " + std::to_string(gpu) : ""));
        }
        slots[i] = compare_variants(run, modules, items[i].problem, items[i].seed);
    };
    GpuWorkPool pool(indices, items.size(), ItemPlacement::movable);
    const GpuPoolReport report = pool.run_per_worker([&](int gpu) -> GpuWorkPool::Work {
        select_device(gpu);
        const auto modules = std::make_shared<const ParityModules>(kernels);
        return [&compare_item, modules](std::size_t i, int on) { compare_item(*modules, i, on); };
    });

    std::vector<ParityComparison> comparisons;
    for (std::optional<ParityComparison> &c : slots)
        if (c) comparisons.push_back(std::move(*c));
    std::vector<GpuCheckOutcome> shares;
    for (std::size_t g = 0; g < gpus.size(); ++g) {
        const GpuShare &share = report.share(indices[g]);
        gpus[g].checks = static_cast<std::int64_t>(share.dealt);
        gpus[g].ran = static_cast<std::int64_t>(share.ran);
        if (share.lost) gpus[g].lost = share.lost->device_error + ": " + share.lost->message;
        shares.push_back(GpuCheckOutcome{indices[g], gpus[g].name, share.dealt, share.ran, 0,
                                         gpus[g].lost.empty() ? std::nullopt : std::optional(gpus[g].lost)});
    }
    const ShardedVerdict sharded = judge_sharded_checks(shares);

    ParityFold fold = fold_parity(comparisons, plan.all_problems.size(), experiment.parity_seeds.size(), limit, names,
                                  plan.rules);
    if (accuracy) fold.figures.reference_rows = experiment.reference_rows;
    fold.figures.device = devices.front().summary();
    fold.figures.gpus = std::move(gpus);
    result.status = fold.passed && sharded.passed ? StageStatus::passed : StageStatus::failed;
    if (!sharded.passed) {
        result.reasons = sharded.reasons;
        result.reasons.push_back(std::to_string(items.size() - comparisons.size()) + " of " +
                                 std::to_string(items.size()) + " comparisons not run; the figures hold only those that ran");
    }
    result.reasons.insert(result.reasons.end(), fold.reasons.begin(), fold.reasons.end());
    result.figures = fold.figures.to_toml();
    return result;
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
    work.run = [&context, &request, &reporter, plan, limit, accuracy] {
        return run_parity(context, request, reporter, *plan, limit, accuracy);
    };
    work.summarize = [](const Checkpoint &c, const Reporter &to) { to.say(ParityFigures::from_toml(c.figures).text()); };
    return work;
}

}  // namespace s2tp
