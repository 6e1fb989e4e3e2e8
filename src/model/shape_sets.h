// The built-in attention problems the GPU stages run: the default parity set (every code path of the
// kernel, several seeds each) and the small sanitizer set (each shape runs once per variant and tool
// under compute-sanitizer, so it stays at about ten small problems).
//
// Code paths, and what covers them:
//   tile count per CTA (1 = only the "last" tile code; 2 = penultimate + last; 3+ = the steady loop),
//   KV lengths at a tile boundary and one token either side (63/64/65 ... 255/256/257), the partial last
//   tiles of the real workloads (56 of 64 keys at 480p, 16 of 64 at 720p), 257 keys (image
//   cross-attention), query lengths that are not multiples of the 128-row CTA, NHD and HND, causal and
//   not, head dim 64 and 128, f16 and bf16 output, grouped-query heads, batch 2.
#pragma once

#include "model/attention_problem.h"

#include <cstdint>
#include <vector>

namespace s2tp {

// One row of a shape table: what a built-in problem set (here, and the GPU suite's own tables) lists.
struct ShapeRow {
    std::int64_t batch, heads_q, heads_kv, len_q, len_kv, head_dim;
    Layout layout;
    bool causal;
    DType dtype;
};

// The problems of a shape table, each validated, with sm_scale = head_dim^-0.5 and LSE on.
std::vector<AttentionProblem> problems_of(const std::vector<ShapeRow> &rows);

// Covering design: each KV length appears twice with complementary layout, mask, head dim and dtype,
// so every attribute value meets every KV length; then every length from 1 to 65 and a ragged Q 1001 /
// KV 503 (upstream SageAttention's NaN reports for tails read from unwritten shared memory).
// sm_scale = head_dim^-0.5, LSE on.
const std::vector<AttentionProblem> &default_parity_shapes();

// The boundary problem of a timed shape, so that what is timed is also checked: the same head layout
// (heads_q / heads_kv, at most 2 KV heads), head dim, layout, mask, dtype and sm_scale, with the
// same partial last tiles (len_kv mod 64 of the last KV tile, len_q mod 128 of the last query CTA)
// after at least three full KV tiles (the steady loop, penultimate and last tile code) and one full
// query CTA, or the shape's own lengths when they are shorter. Causal shapes keep len_q == len_kv
// (256 + len mod 128 has both tails). LSE on, batch 1.
AttentionProblem boundary_problem(const AttentionProblem &timed);
// boundary_problem of each workload, in order, leaving out problems already in `existing` and repeats.
std::vector<AttentionProblem> boundary_problems(const std::vector<AttentionProblem> &timed,
                                                const std::vector<AttentionProblem> &existing);

// 1 to 5 KV tiles, both layouts, causal and not, D 64 and 128, both dtypes, GQA; a few heads each.
const std::vector<AttentionProblem> &sanitizer_shapes();

}  // namespace s2tp
