#include "model/shape_sets.h"

#include <algorithm>

namespace s2tp {

std::vector<AttentionProblem> problems_of(const std::vector<ShapeRow> &rows) {
    std::vector<AttentionProblem> problems;
    for (const ShapeRow &row : rows) {
        AttentionProblem p;
        p.shape.batch = row.batch;
        p.shape.heads_q = row.heads_q;
        p.shape.heads_kv = row.heads_kv;
        p.shape.len_q = row.len_q;
        p.shape.len_kv = row.len_kv;
        p.shape.head_dim = row.head_dim;
        p.shape.layout = row.layout;
        p.causal = row.causal;
        p.dtype = row.dtype;
        p.sm_scale = default_sm_scale(row.head_dim);
        p.with_lse = true;
        p.validate();
        problems.push_back(p);
    }
    return problems;
}

namespace {

// Every self-attention length from 1 to 65 tokens, the attributes turning over with the length, and a
// ragged cross-attention of 1001 queries on 503 keys: the lengths at which upstream SageAttention's
// sm89 kernel gave NaN when shared memory held garbage where its tail tiles are loaded without
// zero-fill (thu-ml/SageAttention issues 376 and 377). The parity stage fills shared memory with NaN
// before every launch, so such a read shows on these shapes.
std::vector<ShapeRow> short_and_ragged_rows() {
    std::vector<ShapeRow> rows;
    for (std::int64_t len = 1; len <= 65; ++len)
        rows.push_back({1, 2, 2, len, len, len % 2 ? 64 : 128, len % 4 < 2 ? Layout::nhd : Layout::hnd, len % 3 == 0,
                        len % 2 ? DType::bf16 : DType::f16});
    rows.push_back({1, 2, 2, 1001, 503, 128, Layout::nhd, false, DType::bf16});
    rows.push_back({1, 4, 2, 1001, 503, 64, Layout::hnd, false, DType::f16});
    return rows;
}

std::vector<ShapeRow> joined(std::vector<ShapeRow> rows, const std::vector<ShapeRow> &more) {
    rows.insert(rows.end(), more.begin(), more.end());
    return rows;
}

}  // namespace

const std::vector<AttentionProblem> &default_parity_shapes() {
    // batch, heads_q, heads_kv, len_q, len_kv, head_dim, layout, causal, dtype
    static const std::vector<AttentionProblem> shapes = problems_of(joined({
        {2, 2, 2, 1, 63, 64, Layout::nhd, false, DType::f16},       // 1 tile, one key short of full; one query
        {1, 3, 3, 63, 63, 128, Layout::hnd, true, DType::bf16},     // 1 tile, one short, causal
        {1, 4, 2, 31, 64, 64, Layout::hnd, false, DType::f16},      // exactly 1 tile; GQA 2, partial warp of queries
        {1, 3, 3, 64, 64, 128, Layout::nhd, true, DType::bf16},     // exactly 1 tile, causal
        {1, 8, 2, 65, 65, 64, Layout::nhd, true, DType::f16},       // 2 tiles, 1-key last tile; GQA 4
        {1, 2, 2, 100, 65, 128, Layout::hnd, false, DType::bf16},   // 2 tiles, 1-key last tile
        {1, 3, 3, 80, 80, 64, Layout::hnd, true, DType::f16},       // 2 tiles, last 16 of 64 (720p tail)
        {1, 2, 2, 200, 80, 128, Layout::nhd, false, DType::bf16},   // 2 tiles, 720p tail; 2 query CTAs
        {1, 6, 3, 300, 120, 128, Layout::nhd, false, DType::f16},   // 2 tiles, last 56 of 64 (480p tail)
        {2, 4, 2, 120, 120, 64, Layout::hnd, true, DType::bf16},    // 2 tiles, 480p tail, causal
        {2, 2, 1, 383, 127, 128, Layout::hnd, false, DType::f16},   // 2 tiles, one key short; 3 query CTAs
        {1, 8, 2, 127, 127, 64, Layout::nhd, true, DType::bf16},    // 2 tiles, one short, causal
        {1, 2, 2, 128, 128, 128, Layout::nhd, true, DType::f16},    // exactly 2 tiles, causal
        {1, 3, 3, 129, 128, 64, Layout::hnd, false, DType::bf16},   // exactly 2 tiles; 1-row second query CTA
        {1, 4, 2, 129, 129, 128, Layout::hnd, true, DType::f16},    // 3 tiles, 1-key last; causal, 2 CTAs
        {1, 4, 4, 257, 129, 64, Layout::nhd, false, DType::bf16},   // 3 tiles, 1-key last tile
        {1, 8, 2, 1, 191, 64, Layout::nhd, false, DType::bf16},     // 3 tiles, one key short; one query
        {1, 2, 1, 191, 191, 128, Layout::hnd, true, DType::f16},    // 3 tiles, one short, causal
        {1, 3, 3, 31, 192, 64, Layout::hnd, false, DType::bf16},    // exactly 3 tiles
        {2, 2, 2, 192, 192, 128, Layout::nhd, true, DType::f16},    // exactly 3 tiles, causal
        {2, 6, 3, 193, 193, 64, Layout::nhd, true, DType::bf16},    // 4 tiles, 1-key last, causal
        {1, 4, 4, 100, 193, 128, Layout::hnd, false, DType::f16},   // 4 tiles, 1-key last tile
        {1, 2, 1, 208, 208, 64, Layout::hnd, true, DType::bf16},    // 4 tiles, 720p tail, causal
        {1, 8, 2, 200, 208, 128, Layout::nhd, false, DType::f16},   // 4 tiles, 720p tail
        {1, 2, 2, 300, 248, 128, Layout::nhd, false, DType::bf16},  // 4 tiles, 480p tail (Wan's own combination)
        {1, 3, 3, 248, 248, 64, Layout::hnd, true, DType::f16},     // 4 tiles, 480p tail, causal
        {1, 4, 2, 383, 255, 128, Layout::hnd, false, DType::bf16},  // 4 tiles, one key short
        {1, 3, 3, 255, 255, 64, Layout::nhd, true, DType::f16},     // 4 tiles, one short, causal
        {1, 8, 2, 256, 256, 128, Layout::nhd, true, DType::bf16},   // exactly 4 tiles, causal
        {2, 2, 1, 129, 256, 64, Layout::hnd, false, DType::f16},    // exactly 4 tiles
        {2, 3, 3, 257, 257, 128, Layout::hnd, true, DType::bf16},   // 5 tiles, 1-key last, causal
        {1, 2, 2, 257, 257, 64, Layout::nhd, false, DType::f16},    // 5 tiles: 257 keys (image cross-attention)
        {1, 2, 2, 1000, 1080, 128, Layout::nhd, false, DType::bf16},  // 17 tiles, 480p tail: many steady tiles
        {1, 2, 1, 1040, 1040, 64, Layout::hnd, true, DType::f16},     // 17 tiles, 720p tail, causal, 9 CTAs
    }, short_and_ragged_rows()));
    return shapes;
}

const std::vector<AttentionProblem> &sanitizer_shapes() {
    static const std::vector<AttentionProblem> shapes = problems_of({
        {1, 1, 1, 1, 1, 128, Layout::nhd, false, DType::bf16},     // 1 tile of 1 key, one query row
        {1, 2, 2, 64, 64, 128, Layout::nhd, false, DType::f16},    // exactly 1 tile
        {1, 2, 2, 128, 128, 64, Layout::hnd, true, DType::bf16},   // 2 tiles (penultimate + last), causal
        {1, 8, 2, 31, 65, 64, Layout::nhd, false, DType::bf16},    // 2 tiles, 1-key last; GQA 4, partial warp
        {1, 2, 2, 192, 192, 64, Layout::nhd, true, DType::f16},    // 3 tiles (one steady), causal, 2 CTAs
        {1, 2, 2, 129, 129, 128, Layout::hnd, true, DType::f16},   // 3 tiles, 1-key last, causal
        {1, 2, 2, 100, 256, 128, Layout::hnd, false, DType::bf16}, // 4 tiles, partial query CTA
        {1, 4, 2, 200, 300, 64, Layout::hnd, false, DType::f16},   // 5 tiles, partial last; GQA 2
        {1, 2, 2, 320, 320, 128, Layout::nhd, true, DType::bf16},  // 5 tiles, causal: CTAs with 2, 4, 5 tiles
        {2, 2, 1, 300, 257, 128, Layout::hnd, false, DType::f16},  // 5 tiles, 1-key last; batch 2, 3 CTAs
    });
    return shapes;
}

AttentionProblem boundary_problem(const AttentionProblem &timed) {
    constexpr std::int64_t kv_tile = 64, q_cta = 128;
    const AttentionShape &t = timed.shape;
    AttentionProblem p = timed;
    AttentionShape &s = p.shape;
    s.batch = 1;
    s.heads_kv = std::min<std::int64_t>(t.heads_kv, 2);
    s.heads_q = s.heads_kv * (t.heads_q / t.heads_kv);
    if (timed.causal) {
        s.len_q = s.len_kv = std::min(t.len_q, 2 * q_cta + t.len_q % q_cta);
    } else {
        s.len_kv = std::min(t.len_kv, 3 * kv_tile + t.len_kv % kv_tile);
        s.len_q = std::min(t.len_q, q_cta + t.len_q % q_cta);
    }
    p.with_lse = true;
    p.validate();
    return p;
}

std::vector<AttentionProblem> boundary_problems(const std::vector<AttentionProblem> &timed,
                                                const std::vector<AttentionProblem> &existing) {
    std::vector<AttentionProblem> added;
    const auto same = [](const AttentionProblem &a, const AttentionProblem &b) {
        return a.describe() == b.describe() && a.sm_scale == b.sm_scale && a.with_lse == b.with_lse;
    };
    for (const AttentionProblem &problem : timed) {
        const AttentionProblem boundary = boundary_problem(problem);
        const auto known = [&](const std::vector<AttentionProblem> &list) {
            return std::any_of(list.begin(), list.end(), [&](const AttentionProblem &p) { return same(p, boundary); });
        };
        if (!known(existing) && !known(added)) added.push_back(boundary);
    }
    return added;
}

}  // namespace s2tp
