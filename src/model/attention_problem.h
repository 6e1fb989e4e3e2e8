// One attention problem: the geometry, dtype, mask and scale that every stage (parity shapes, sanitizer
// shapes, the real workload) and every launcher describe problems with.
#pragma once

#include "formats/tensor.h"

#include <cstdint>
#include <string>

namespace s2tp {

// The softmax scale upstream uses unless told otherwise: the head dim's -1/2 power, as a C++ float.
float default_sm_scale(std::int64_t head_dim);

struct AttentionProblem {
    AttentionShape shape;
    bool causal = false;
    DType dtype = DType::bf16;  // of q, k, v and o: f16 or bf16
    float sm_scale = 0.0f;      // before the kernel's log2(e) factor, usually original_head_dim^-0.5
    bool with_lse = true;

    // Throws Error(usage) naming the problem unless the kernels support it: head_dim 64 or 128,
    // f16/bf16, a positive finite sm_scale, causal only with len_q == len_kv (the mask is top-left
    // aligned), and every tensor within the kernels' 32-bit indexing.
    void validate() const;
    // "b=1 hq=2 hkv=2 nq=64 nkv=64 d=128 NHD bf16 causal"
    std::string describe() const;
};

}  // namespace s2tp
