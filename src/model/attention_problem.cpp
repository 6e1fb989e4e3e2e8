#include "model/attention_problem.h"

#include "support/errors.h"
#include "sage2tp_abi.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace s2tp {

float default_sm_scale(std::int64_t head_dim) {
    return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

void AttentionProblem::validate() const {
    const std::string what = "attention problem " + describe();
    shape.validate(what);
    if (shape.head_dim != 64 && shape.head_dim != 128)
        fail(ExitCode::usage, what + ": head_dim must be 64 or 128, got " + std::to_string(shape.head_dim));
    if (dtype != DType::f16 && dtype != DType::bf16)
        fail(ExitCode::usage, what + ": dtype must be f16 or bf16, got " + dtype_name(dtype));
    if (!(std::isfinite(sm_scale) && sm_scale > 0.0f))
        fail(ExitCode::usage, what + ": sm_scale must be positive and finite, got " + std::to_string(sm_scale));
    if (causal && shape.len_q != shape.len_kv)
        fail(ExitCode::usage, what + ": the causal mask is top-left aligned and needs len_q == len_kv");
    // The kernels index with uint32 (as upstream does); the padded V is the largest tensor.
    const std::int64_t padded_v = shape.batch * shape.heads_kv * shape.head_dim * S2TP_V_PADDED_LEN(shape.len_kv);
    if (padded_v > std::numeric_limits<std::uint32_t>::max())
        fail(ExitCode::usage, what + ": the padded V has " + std::to_string(padded_v) +
                                  " elements, past the kernels' 32-bit indexing");
}

std::string AttentionProblem::describe() const {
    return shape.to_string() + " " + dtype_name(dtype) + (causal ? " causal" : "");
}

}  // namespace s2tp
