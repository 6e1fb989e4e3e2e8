#include "model/workload_cost.h"

#include "model/host_quantizer.h"
#include "support/errors.h"
#include "support/number_format.h"

#include <algorithm>
#include <numeric>

namespace s2tp {

double attention_operations(const AttentionProblem &problem) {
    const AttentionShape &s = problem.shape;
    double operations = 4.0 * static_cast<double>(s.batch) * static_cast<double>(s.heads_q) *
                        static_cast<double>(s.len_q) * static_cast<double>(s.len_kv) * static_cast<double>(s.head_dim);
    if (problem.causal) operations /= 2.0;
    return operations;
}

namespace {
std::size_t bytes(DType dtype, const Shape &shape) {
    return static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
}
}  // namespace

WorkloadCost workload_cost(const AttentionProblem &problem, const std::vector<QuantizationRecipe> &recipes,
                           std::size_t arms, std::size_t input_sets) {
    const AttentionShape &s = problem.shape;
    WorkloadCost c;
    c.arms = arms;
    c.input_sets = input_sets;
    c.input_bytes = bytes(problem.dtype, s.q_shape()) + 2 * bytes(problem.dtype, s.kv_shape());
    std::vector<QuantizationRecipe> distinct;
    for (const QuantizationRecipe &recipe : recipes)
        if (std::find(distinct.begin(), distinct.end(), recipe) == distinct.end()) distinct.push_back(recipe);
    for (const QuantizationRecipe &recipe : distinct) c.quantized_bytes += quantized_input_bytes(problem, recipe);
    c.output_bytes = bytes(problem.dtype, s.q_shape()) + (problem.with_lse ? bytes(DType::f32, {s.batch, s.heads_q, s.len_q}) : 0);  // the LSE is [B, Hq, Nq]
    c.peak_bytes = c.input_bytes + input_sets * c.quantized_bytes + (arms + input_sets) * c.output_bytes;
    c.operations = attention_operations(problem);
    return c;
}

std::size_t quantized_input_bytes(const AttentionProblem &problem, const QuantizationRecipe &recipe) {
    const AttentionShape &s = problem.shape;
    const std::size_t q_and_k = bytes(DType::i8, s.q_shape()) + bytes(DType::f32, q_scale_shape(s, recipe.qk)) +
                                bytes(DType::i8, s.kv_shape()) + bytes(DType::f32, k_scale_shape(s, recipe.qk)) +
                                bytes(problem.dtype, k_mean_shape(s));
    const std::size_t v = recipe.v_format == VFormat::f16
                              ? bytes(DType::f16, s.kv_shape())
                              : bytes(DType::e4m3, v_fp8_shape(s, recipe.v_pad_tokens)) + bytes(DType::f32, v_scale_shape(s));
    const std::size_t v_mean = recipe.smooth_v ? bytes(v_mean_dtype(recipe, problem.dtype), v_mean_shape(s)) : 0;
    return q_and_k + v + v_mean;
}

std::string cost_text(const WorkloadCost &cost) {
    return "peak " + bytes_text(cost.peak_bytes) + " of device memory (" + std::to_string(cost.input_sets) +
           " input sets of " + bytes_text(cost.input_bytes) + ", quantized " + bytes_text(cost.quantized_bytes) +
           " each; " + std::to_string(cost.arms) + " + " + std::to_string(cost.input_sets) + " outputs of " +
           bytes_text(cost.output_bytes) + "), " + fixed(cost.operations / 1e12, 1) + " TOP per launch";
}

std::optional<std::string> memory_refusal(const std::string &name, const WorkloadCost &cost, std::int64_t free_bytes,
                                          std::int64_t total_bytes) {
    if (free_bytes >= 0 && cost.peak_bytes <= static_cast<std::size_t>(free_bytes)) return std::nullopt;
    return name + " does not fit: " + cost_text(cost) + ", but the GPU has " +
           bytes_text(static_cast<std::size_t>(std::max<std::int64_t>(free_bytes, 0))) + " free of " +
           bytes_text(static_cast<std::size_t>(std::max<std::int64_t>(total_bytes, 0))) +
           "; time it on a larger GPU or leave it out";
}

double next_shape_budget(double remaining_seconds, const std::vector<double> &operations) {
    if (operations.empty()) fail(ExitCode::internal, "shape budget: no shapes left");
    for (double ops : operations)
        if (!(ops > 0.0)) fail(ExitCode::internal, "shape budget: a shape of " + std::to_string(ops) + " operations");
    if (!(remaining_seconds > 0.0)) return 0.0;
    const double shapes = static_cast<double>(operations.size());
    const double floor = remaining_seconds / shapes / 4.0;
    const double total_ops = std::accumulate(operations.begin(), operations.end(), 0.0);
    return floor + (remaining_seconds - shapes * floor) * operations.front() / total_ops;
}

std::string bytes_text(std::size_t bytes) {
    const double b = static_cast<double>(bytes);
    if (b >= 1e9) return fixed(b / 1e9, 2) + " GB";
    if (b >= 1e6) return fixed(b / 1e6, 1) + " MB";
    if (b >= 1e3) return fixed(b / 1e3, 1) + " kB";
    return std::to_string(bytes) + " B";
}

}  // namespace s2tp
