// sage2tp parity: baseline and candidate on identical quantized inputs, output bytes (O and LSE)
// compared exactly for every shape and seed, plus the baseline against the float64 CPU reference so
// that "both equally wrong" cannot pass.
#include "support/number_format.h"
#include "subcommands.h"

#include "pipeline/cli.h"
#include "model/cpu_reference.h"
#include "support/errors.h"
#include "model/experiment_manifest.h"
#include "stages/gpu_stage.h"
#include "support/hashing.h"
#include "model/shape_sets.h"
#include "pipeline/stage_pipeline.h"

#include <algorithm>
#include <cstring>
#include <iomanip>
#include <sstream>

namespace s2tp {
namespace {

// Failures quoted one by one in the reasons; figures.differences lists every difference.
constexpr std::size_t kReasonsShown = 12;

// "0x3c01 (1.0009766)": the stored bits and the value they decode to.
std::string element_text(const Tensor &t, std::int64_t index) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, t.bytes.data() + static_cast<std::size_t>(index) * t.element_size(), t.element_size());
    std::ostringstream s;
    s << "0x" << std::hex << std::setw(static_cast<int>(2 * t.element_size())) << std::setfill('0') << bits << std::dec
      << " (" << std::setprecision(9) << t.value_at(index) << ")";
    return s.str();
}

struct Difference {
    std::int64_t differing = 0;
    std::int64_t first = -1;
};

Difference byte_difference(const Tensor &baseline, const Tensor &candidate) {
    Difference d;
    const std::size_t size = baseline.element_size();
    for (std::int64_t i = 0; i < baseline.numel(); ++i) {
        if (std::memcmp(baseline.bytes.data() + i * size, candidate.bytes.data() + i * size, size) != 0) {
            if (d.first < 0) d.first = i;
            ++d.differing;
        }
    }
    return d;
}

std::vector<AttentionProblem> parity_problems(const Experiment &experiment) {
    std::vector<AttentionProblem> problems;
    if (experiment.parity_default_shapes) problems = default_parity_shapes();
    problems.insert(problems.end(), experiment.parity_shapes.begin(), experiment.parity_shapes.end());
    return problems;
}

void print_parity(const Checkpoint &c, const Reporter &reporter) {
    reporter.say("  " + c.figures["summary"].value_or(std::string()));
}

}  // namespace

int parity_command(const Args &args) {
    CommandLine cl("parity", "Compare baseline and candidate outputs byte for byte on identical inputs.", args);
    cl.add_options()
        ("device", "GPU index within CUDA_VISIBLE_DEVICES", cxxopts::value<int>()->default_value("0"), "N")
        ("force", "run even when the checkpoint is up to date");
    if (!cl.parse()) return 0;
    const int device_index = cl.result()["device"].as<int>();

    StageContext context(Stage::parity, require_existing_run(cl.selection()));
    RunDirectory &run = context.run();
    const Experiment &experiment = context.experiment();
    const std::vector<AttentionProblem> problems = parity_problems(experiment);
    if (problems.empty())
        fail(ExitCode::usage, run.relative(run.manifest()) +
                                  ": [parity] default_shapes is false and no [[parity.shape]] is given: nothing to compare");
    if (experiment.parity_seeds.empty())
        fail(ExitCode::usage, run.relative(run.manifest()) + ": [parity] seeds is empty: nothing to compare");
    const double limit = experiment.reference_max_rel_l2;

    StageWork work;
    work.stage = Stage::parity;
    work.add_inputs = [&](Fingerprint &f) {
        for (const auto &p : problems) {
            float scale = p.sm_scale;
            f.add("shape", p.describe()).add("sm_scale", &scale, sizeof scale).add("with_lse", std::int64_t{p.with_lse});
        }
        for (std::int64_t seed : experiment.parity_seeds) f.add("seed", seed);
        f.add("reference_max_rel_l2", &limit, sizeof limit);
    };
    work.run = [&] {
        StageResult result;
        const DeviceFacts device = require_gpu("parity", device_index);
        const BuiltKernels kernels = built_kernels(context);
        require_kernels_for_device("parity", kernels, device);
        result.tools.insert("gpu", device.name);
        result.tools.insert("cuda_driver", cuda_version_string(device.driver_version));
        const CubinModule quantize(kernels.quantize);
        // One candidate until parity checks several ([[candidate]]).
        const BuiltAttention &built_candidate = kernels.candidates.front();
        const CubinModule baseline(kernels.baseline.cubin);
        const CubinModule candidate(built_candidate.cubin);

        toml::array differences, outputs;
        std::vector<std::string> failures;
        std::int64_t shapes_differing = 0, comparisons = 0;
        double worst_rel_l2 = 0.0;
        std::string worst_shape;
        const std::size_t total = problems.size() * experiment.parity_seeds.size();
        for (const AttentionProblem &problem : problems) {
            const std::string shape = problem.describe();
            bool differs = false;
            for (const std::int64_t seed : experiment.parity_seeds) {
                cl.reporter().progress("[" + std::to_string(++comparisons) + "/" + std::to_string(total) + "] " + shape +
                                       " seed " + std::to_string(seed));
                const GeneratedInputs host = problem_inputs(problem, static_cast<std::uint64_t>(seed));
                // Quantized once, by the baseline build's kernels; both variants read these buffers.
                const DeviceQuantizedInputs inputs = quantize_on_gpu(quantize, problem, host.q, host.k, host.v);
                const KernelRun base = run_attention(*kernels.baseline.abi, baseline, problem, inputs, "baseline");
                const KernelRun cand = run_attention(*built_candidate.abi, candidate, problem, inputs, "candidate");
                const std::string where = shape + " seed " + std::to_string(seed);

                for (const auto &[label, ran] : {std::pair<const char *, const KernelRun *>{"baseline", &base},
                                                 std::pair<const char *, const KernelRun *>{"candidate", &cand}}) {
                    const std::int64_t unwritten = count_nan(ran->o) + (problem.with_lse ? count_nan(ran->lse) : 0);
                    if (unwritten > 0)
                        failures.push_back(where + ": the " + label + " left " + std::to_string(unwritten) +
                                           " output elements unwritten (still the NaN poison)");
                }

                std::vector<std::pair<const char *, std::pair<const Tensor *, const Tensor *>>> tensors = {
                    {"o", {&base.o, &cand.o}}};
                if (problem.with_lse) tensors.push_back({"lse", {&base.lse, &cand.lse}});
                for (const auto &[name, pair] : tensors) {
                    const Difference d = byte_difference(*pair.first, *pair.second);
                    if (d.differing == 0) continue;
                    differs = true;
                    const std::string index = shape_to_string(unravel_index(d.first, pair.first->shape));
                    const std::string base_value = element_text(*pair.first, d.first);
                    const std::string cand_value = element_text(*pair.second, d.first);
                    differences.push_back(toml::table{{"shape", shape},
                                                      {"seed", seed},
                                                      {"tensor", name},
                                                      {"differing_elements", d.differing},
                                                      {"elements", pair.first->numel()},
                                                      {"first_index", index},
                                                      {"baseline_value", base_value},
                                                      {"candidate_value", cand_value}});
                    failures.push_back(where + ": " + name + " differs in " + std::to_string(d.differing) + " of " +
                                       std::to_string(pair.first->numel()) + " elements; first at " + index +
                                       ": baseline " + base_value + ", candidate " + cand_value);
                }
                outputs.push_back(toml::table{{"shape", shape},
                                              {"seed", seed},
                                              {"baseline_sha256", sha256_hex(base.o.bytes.data(), base.o.bytes.size())},
                                              {"candidate_sha256", sha256_hex(cand.o.bytes.data(), cand.o.bytes.size())}});

                const ReferenceResult reference = reference_attention(
                    problem.shape, download_quantized(problem, inputs), problem.sm_scale, problem.causal);
                const RelL2 error = relative_l2(base.o, reference.o);
                if (!(error.rel_l2 <= worst_rel_l2)) {  // NaN counts as the worst
                    worst_rel_l2 = error.rel_l2;
                    worst_shape = where;
                }
                if (error.non_finite > 0 || !(error.rel_l2 <= limit))
                    failures.push_back(where + ": the baseline is " + fixed(error.rel_l2, 5) +
                                       " rel-L2 away from the float64 reference (limit " + fixed(limit, 5) + ", " +
                                       std::to_string(error.non_finite) + " non-finite elements)");
            }
            if (differs) ++shapes_differing;
        }

        for (std::size_t i = 0; i < failures.size() && i < kReasonsShown; ++i) result.reasons.push_back(failures[i]);
        if (failures.size() > kReasonsShown)
            result.reasons.push_back("and " + std::to_string(failures.size() - kReasonsShown) +
                                     " more failures (see figures.differences)");
        result.status = failures.empty() ? StageStatus::passed : StageStatus::failed;
        result.figures = toml::table{{"shapes_checked", static_cast<std::int64_t>(problems.size())},
                                     {"shapes_differing", shapes_differing},
                                     {"comparisons", comparisons},
                                     {"differences", differences},
                                     {"reference_worst_rel_l2", worst_rel_l2},
                                     {"reference_worst_case", worst_shape},
                                     {"reference_limit", limit},
                                     {"outputs", outputs},
                                     {"device", device.summary()}};
        std::ostringstream summary;
        summary << problems.size() << " shapes x " << experiment.parity_seeds.size() << " seeds: " << shapes_differing
                << " shapes differ; baseline vs float64 reference worst rel-L2 " << fixed(worst_rel_l2, 5) << " (limit "
                << fixed(limit, 5) << ")";
        result.figures.insert("summary", summary.str());
        return result;
    };
    work.summarize = print_parity;
    return static_cast<int>(execute_stage(context, work, cl.has("force"), cl.reporter()));
}

}  // namespace s2tp
