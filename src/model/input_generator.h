// Seeded, machine-independent q/k/v generator for attention experiments.
//
// Usage:
//   s2tp::AttentionShape shape;
//   shape.heads_q = 4; shape.heads_kv = 4; shape.len_q = shape.len_kv = 1024; shape.layout = s2tp::Layout::hnd;
//   s2tp::GeneratedInputs in = s2tp::generate_inputs(shape, s2tp::DType::bf16, 42);
//   // in.q: q_shape(), in.k / in.v: kv_shape(), all in the requested dtype
//
// Same (shape, dtype, seed) gives the same bytes on every machine and compiler: the random bits come
// from our own counter-based hash (SplitMix64 finalizer over (seed, tensor, element)), and the normal
// deviates are sums of 12 uniform integers (Irwin-Hall), so no libm function and no std:: distribution
// takes part, and every floating-point step is one exactly specified IEEE operation.
// The logical values do not depend on the layout: NHD and HND with one seed hold the same tensor.
//
// Statistics (per batch and head, what real attention inputs look like and what the quantizers handle):
//   q = N(0,1) * per-channel scale in [0.5, 2]
//   k = N(0,1) * per-channel scale in [0.5, 2] + per-channel offset in [-4, 4]   (what K smoothing removes)
//   v = (N(0,1) + per-channel mean in [-0.5, 0.5]) * per-channel scale in [0.25, 4]
#pragma once

#include <cstdint>

#include "formats/tensor.h"

namespace s2tp {

struct GeneratedInputs {
    Tensor q;
    Tensor k;
    Tensor v;
};

// dtype must be f16 or bf16; shape is validated. Throws Error(usage) otherwise. The work is spread over
// `threads` threads (0: one per core); the bytes never depend on how many.
GeneratedInputs generate_inputs(const AttentionShape &shape, DType dtype, std::uint64_t seed, unsigned threads = 0);

}  // namespace s2tp
