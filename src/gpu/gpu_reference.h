// The float64 reference of attention on a problem's unquantized inputs, computed on the GPU by the
// quantize cubin's s2tp_reference_attention_* kernels (kernels/reference_attention.cuh) for a sample of
// query rows of every (batch, head) and all keys; and an output's same rows, gathered on the GPU, so
// that the tolerance checks read a few megabytes instead of a gigabyte-sized output.
//
// Usage:
//   std::vector<std::uint32_t> rows = s2tp::sample_query_rows(problem.shape.len_q, 256, seed);  // model/accuracy.h
//   s2tp::Tensor ref = s2tp::reference_on_gpu(quant, problem, device_inputs, rows);   // f64 [B, Hq, R, D]
//   s2tp::Tensor out = s2tp::gather_rows_on_gpu(quant, problem, outputs.o, rows);     // dtype [B, Hq, R, D]
//   s2tp::AccuracyMetrics m = s2tp::accuracy_metrics(out, ref, rows);
#pragma once

#include "gpu/attention_launch.h"
#include "gpu/gpu_runtime.h"
#include "model/attention_problem.h"
#include "formats/tensor.h"

#include <cstdint>
#include <vector>

namespace s2tp {

// Returns once the kernel is done. Error(internal) when a row is out of range or the inputs' sizes do
// not match the problem.
Tensor reference_on_gpu(const CubinModule &quantize_module, const AttentionProblem &problem, const DeviceInputs &inputs,
                        const std::vector<std::uint32_t> &rows);

// The problem's output `o` (its dtype, the problem's layout) at `rows` of every (batch, q head).
Tensor gather_rows_on_gpu(const CubinModule &quantize_module, const AttentionProblem &problem, const DeviceBuffer &o,
                          const std::vector<std::uint32_t> &rows);

}  // namespace s2tp
