// What timing a shape costs before anything is timed: the device memory its inputs, quantized inputs
// and the arms' outputs take, the work of one launch, and each shape's share of the stage's sampling
// budget. The time stage prints these first and refuses a shape that does not fit the GPU's memory.
#pragma once

#include "model/attention_problem.h"
#include "model/host_quantizer.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// 4 * B * Hq * Nq * Nkv * D operations (two matrix products of 2 * Nq * Nkv * D each per head), halved
// for a causal mask (top-left aligned, len_q == len_kv: the unmasked half is the work).
double attention_operations(const AttentionProblem &problem);

struct WorkloadCost {
    std::size_t input_bytes = 0;      // q, k and v of one input set in their dtype, freed once quantized
    std::size_t quantized_bytes = 0;  // one input set's quantized_input_bytes of every distinct recipe
    std::size_t output_bytes = 0;     // one arm's output (o, and the LSE when it has one)
    std::size_t arms = 0;
    std::size_t input_sets = 0;       // the time stage rotates its rounds among them
    // The most the time stage holds at once, while it makes the last input set: its q, k and v, every
    // set's quantized inputs, every arm's output and, per set, the output check's copy of the expected
    // bytes (one more per tolerance candidate, which are few; an L2 flush buffer of twice the L2, when
    // one is needed, only for footprints below it).
    std::size_t peak_bytes = 0;
    double operations = 0;            // of one launch
};
// `recipes`: each arm's kernel's quantization (KernelAbi::quantization); the arms that agree read one set
// of quantized inputs, as the time stage quantizes once per distinct recipe and input set.
WorkloadCost workload_cost(const AttentionProblem &problem, const std::vector<QuantizationRecipe> &recipes,
                           std::size_t arms, std::size_t input_sets);

// The device bytes of one set of the problem's inputs quantized by `recipe`, as the quantizer allocates
// them: int8 q and k with their scales and k's mean; V as padded e4m3 with its scale, or as fp16 (the
// sm80 launchers' V, 2 bytes an element); V's mean under smooth_v.
std::size_t quantized_input_bytes(const AttentionProblem &problem, const QuantizationRecipe &recipe);

// "peak 9.35 GB of device memory (3 input sets of 2.32 GB, quantized 1.16 GB each; 4 + 3 outputs of
// 774.1 MB), 117.1 TOP per launch"
std::string cost_text(const WorkloadCost &cost);

// Why `name` cannot be timed on a GPU with `free_bytes` of its `total_bytes` free: its peak does not
// fit. Nothing when it does.
std::optional<std::string> memory_refusal(const std::string &name, const WorkloadCost &cost, std::int64_t free_bytes,
                                          std::int64_t total_bytes);

// The sampling budget of the next shape of a set, given what is left of the stage's budget and the
// operations per launch of that shape and of every shape after it (`operations` front first). Each
// remaining shape is owed a floor of a quarter of an even split, so that a shape of small launches
// (an image cross-attention) still gets its rounds; the rest goes in proportion to the operations, so
// that each shape gets about the same number of rounds. Called once per shape as the stage goes, so
// that what a shape leaves unspent (it stopped on precision) goes to the shapes after it; the shares
// never add up to more than the budget.
double next_shape_budget(double remaining_seconds, const std::vector<double> &operations);

// "1.16 GB" (decimal units, as nvidia-smi's MiB are not: the figures are for reading, not for limits).
std::string bytes_text(std::size_t bytes);

}  // namespace s2tp
