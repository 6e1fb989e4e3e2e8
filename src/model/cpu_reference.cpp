#include "model/cpu_reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <tuple>
#include <vector>

#include "support/errors.h"
#include "formats/tensor_io.h"

namespace s2tp {

namespace {

constexpr std::int64_t kRowsPerTask = 16;

void require(const Tensor &tensor, DType dtype, const Shape &shape, const char *name) {
    TensorRequest request;
    request.dtype = dtype;
    request.shape = shape;
    request.require_finite = false;  // NaN V codes of all-zero channels are legitimate; they propagate
    check_tensor(tensor, request, std::string("cpu reference: ") + name);
}

// K and V of one (batch, kv head), token-major [len_kv][head_dim] so both inner loops (q.k and p*v over
// channels) run over contiguous memory. K stays as its int8 codes (held in double) with a per-token
// block scale: the code dot product is an integer below 2^14 * head_dim <= 2^45 (validate() bounds
// head_dim), exact in any summation order, and is then scaled once, which equals the double dot
// product of the dequantized values up to one rounding.
struct KvHead {
    std::vector<double> k_codes;
    std::vector<double> k_scale;  // per token
    std::vector<double> v;        // dequantized
};

// The V mean the kernel adds back to its output under smooth_v (0 otherwise), per channel of head (b, h).
std::vector<double> v_mean_of_head(const AttentionShape &shape, const QuantizedInputs &in,
                                   const QuantizationRecipe &recipe, std::int64_t b, std::int64_t h) {
    std::vector<double> mean(static_cast<std::size_t>(shape.head_dim), 0.0);
    if (!recipe.smooth_v) return mean;
    for (std::int64_t d = 0; d < shape.head_dim; ++d) {
        const std::int64_t at = (b * shape.heads_kv + h) * shape.head_dim + d;
        switch (in.v_mean.dtype) {
        case DType::f32: mean[d] = in.v_mean.data<float>()[at]; break;
        case DType::f16: mean[d] = half_to_float(in.v_mean.data<std::uint16_t>()[at]); break;
        default: mean[d] = bf16_to_float(in.v_mean.data<std::uint16_t>()[at]); break;
        }
    }
    return mean;
}

KvHead prepare_kv_head(const AttentionShape &shape, const QuantizedInputs &in, const QuantizationRecipe &recipe,
                       std::int64_t b, std::int64_t h) {
    const std::int64_t len = shape.len_kv, dim = shape.head_dim;
    KvHead head;
    head.k_codes.resize(static_cast<std::size_t>(len * dim));
    head.k_scale.resize(static_cast<std::size_t>(len));
    head.v.resize(static_cast<std::size_t>(len * dim));
    const std::int8_t *k_codes = in.k_int8.data<std::int8_t>();
    const float *k_scale = in.k_scale.data<float>();
    const std::int64_t k_blocks = in.k_scale.shape[2];

    for (std::int64_t t = 0; t < len; ++t) {
        head.k_scale[t] = k_scale[(b * shape.heads_kv + h) * k_blocks + k_scale_index(recipe.qk, t)];
        for (std::int64_t d = 0; d < dim; ++d) head.k_codes[t * dim + d] = k_codes[shape.offset(true, b, h, t, d)];
    }
    // The output is P (V - mean) + mean, and the rows of P sum to 1: V + mean per key is the same.
    const std::vector<double> mean = v_mean_of_head(shape, in, recipe, b, h);
    if (recipe.v_format == VFormat::f16) {
        const std::uint16_t *v = in.v_f16.data<std::uint16_t>();
        for (std::int64_t t = 0; t < len; ++t)
            for (std::int64_t d = 0; d < dim; ++d)
                head.v[t * dim + d] = static_cast<double>(half_to_float(v[shape.offset(true, b, h, t, d)])) + mean[d];
        return head;
    }
    const std::uint8_t *v_codes = in.v_fp8.data<std::uint8_t>();
    const float *v_scale = in.v_scale.data<float>();
    const std::int64_t padded = in.v_fp8.shape[3];
    int position_of_token[16];
    for (int s = 0; s < 16; ++s) position_of_token[kVTokenAtPosition[s]] = s;
    for (std::int64_t d = 0; d < dim; ++d) {
        const std::int64_t row = shape.layout == Layout::nhd ? (b * dim + d) * shape.heads_kv + h
                                                             : (b * shape.heads_kv + h) * dim + d;
        const double scale = v_scale[(b * shape.heads_kv + h) * dim + d];
        for (std::int64_t t = 0; t < len; ++t) {
            const std::int64_t position = t / 16 * 16 + position_of_token[t % 16];
            head.v[t * dim + d] = static_cast<double>(e4m3_to_float(v_codes[row * padded + position])) * scale + mean[d];
        }
    }
    return head;
}

// The two inner loops, written as fixed-width chunks so that compilers vectorize them at -O2 without
// -ffast-math: the lanes of code_dot are exact integer sums, so splitting the reduction changes nothing,
// and add_scaled has no reduction at all.
constexpr std::int64_t kChunk = 8;

double code_dot(const double *a, const double *b, std::int64_t n) {
    double lanes[kChunk] = {};
    std::int64_t d = 0;
    for (; d + kChunk <= n; d += kChunk)
        for (std::int64_t u = 0; u < kChunk; ++u) lanes[u] += a[d + u] * b[d + u];
    double sum = 0;
    for (std::int64_t u = 0; u < kChunk; ++u) sum += lanes[u];
    for (; d < n; ++d) sum += a[d] * b[d];
    return sum;
}

void add_scaled(double *acc, double factor, const double *x, std::int64_t n) {
    std::int64_t d = 0;
    for (; d + kChunk <= n; d += kChunk)
        for (std::int64_t u = 0; u < kChunk; ++u) acc[d + u] += factor * x[d + u];
    for (; d < n; ++d) acc[d] += factor * x[d];
}

}  // namespace

ReferenceResult reference_attention(const AttentionShape &shape, const QuantizedInputs &inputs, double sm_scale,
                                    bool causal, unsigned threads, const QuantizationRecipe &recipe) {
    shape.validate("cpu reference");
    require(inputs.q_int8, DType::i8, shape.q_shape(), "q_int8");
    require(inputs.q_scale, DType::f32, q_scale_shape(shape, recipe.qk), "q_scale");
    require(inputs.k_int8, DType::i8, shape.kv_shape(), "k_int8");
    require(inputs.k_scale, DType::f32, k_scale_shape(shape, recipe.qk), "k_scale");
    if (recipe.v_format == VFormat::f16) {
        require(inputs.v_f16, DType::f16, shape.kv_shape(), "v_f16");
    } else {
        require(inputs.v_fp8, DType::e4m3, v_fp8_shape(shape, recipe.v_pad_tokens), "v_fp8");
        require(inputs.v_scale, DType::f32, v_scale_shape(shape), "v_scale");
    }
    if (recipe.smooth_v && inputs.v_mean.shape != v_scale_shape(shape))
        fail(ExitCode::usage, "cpu reference: v_mean has shape " + shape_to_string(inputs.v_mean.shape) + ", expected " +
                                  shape_to_string(v_scale_shape(shape)) + " (" + recipe.describe() + ")");

    std::vector<KvHead> kv_heads;
    for (std::int64_t b = 0; b < shape.batch; ++b)
        for (std::int64_t h = 0; h < shape.heads_kv; ++h) kv_heads.push_back(prepare_kv_head(shape, inputs, recipe, b, h));

    ReferenceResult result;
    result.o = Tensor(DType::f64, shape.q_shape());
    result.lse = Tensor(DType::f64, {shape.batch, shape.heads_q, shape.len_q});
    double *o = result.o.data<double>();
    double *lse = result.lse.data<double>();
    const std::int8_t *q_codes = inputs.q_int8.data<std::int8_t>();
    const float *q_scale = inputs.q_scale.data<float>();
    const std::int64_t q_groups = inputs.q_scale.shape[2];
    const std::int64_t dim = shape.head_dim;
    const std::int64_t group_size = shape.heads_q / shape.heads_kv;
    const double logit_scale = sm_scale * 1.4426950408889634;  // base-2 exponent, like the kernel

    const std::int64_t row_tasks = (shape.len_q + kRowsPerTask - 1) / kRowsPerTask;
    const std::int64_t task_count = shape.batch * shape.heads_q * row_tasks;
    std::atomic<std::int64_t> next_task{0};

    auto worker = [&]() {
        std::vector<double> q(static_cast<std::size_t>(dim));
        std::vector<double> logits(static_cast<std::size_t>(shape.len_kv)), acc(static_cast<std::size_t>(dim));
        for (std::int64_t task; (task = next_task.fetch_add(1)) < task_count;) {
            const std::int64_t row_task = task % row_tasks;
            const std::int64_t h = task / row_tasks % shape.heads_q;
            const std::int64_t b = task / row_tasks / shape.heads_q;
            const KvHead &kv = kv_heads[static_cast<std::size_t>(b * shape.heads_kv + h / group_size)];
            const std::int64_t row_end = std::min(shape.len_q, (row_task + 1) * kRowsPerTask);
            for (std::int64_t i = row_task * kRowsPerTask; i < row_end; ++i) {
                const double row_scale =
                    q_scale[(b * shape.heads_q + h) * q_groups + q_scale_index(recipe.qk, i)] * logit_scale;
                for (std::int64_t d = 0; d < dim; ++d) q[d] = q_codes[shape.offset(false, b, h, i, d)];
                // Top-left causal: key j is visible to query i when j <= i.
                const std::int64_t visible = causal ? std::min(shape.len_kv, i + 1) : shape.len_kv;
                double max_logit = -std::numeric_limits<double>::infinity();
                for (std::int64_t j = 0; j < visible; ++j) {
                    const double s = code_dot(q.data(), &kv.k_codes[j * dim], dim);
                    logits[j] = s * kv.k_scale[j] * row_scale;
                    max_logit = std::max(max_logit, logits[j]);
                }
                std::fill(acc.begin(), acc.end(), 0.0);
                double sum = 0;
                for (std::int64_t j = 0; j < visible; ++j) {
                    const double p = std::exp2(logits[j] - max_logit);
                    sum += p;
                    add_scaled(acc.data(), p, &kv.v[j * dim], dim);
                }
                for (std::int64_t d = 0; d < dim; ++d) o[shape.offset(false, b, h, i, d)] = acc[d] / sum;
                lse[(b * shape.heads_q + h) * shape.len_q + i] = std::log2(sum) + max_logit;
            }
        }
    };

    if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
    threads = static_cast<unsigned>(std::min<std::int64_t>(threads, task_count));
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto &thread : pool) thread.join();
    return result;
}

Tensor unquantized_reference(const AttentionShape &shape, const Tensor &q, const Tensor &k, const Tensor &v,
                             double sm_scale, bool causal, const std::vector<std::uint32_t> &rows) {
    shape.validate("unquantized reference");
    for (const auto &[tensor, name, kv] : {std::tuple{&q, "q", false}, {&k, "k", true}, {&v, "v", true}})
        if (tensor->shape != (kv ? shape.kv_shape() : shape.q_shape()) || !dtype_is_floating(tensor->dtype))
            fail(ExitCode::usage, std::string("unquantized reference: ") + name + " is " + shape_to_string(tensor->shape) +
                                      " " + dtype_name(tensor->dtype) + ", not a floating " +
                                      shape_to_string(kv ? shape.kv_shape() : shape.q_shape()));
    const auto count = static_cast<std::int64_t>(rows.size());
    Tensor out(DType::f64, {shape.batch, shape.heads_q, count, shape.head_dim});
    double *o = out.data<double>();
    const std::int64_t dim = shape.head_dim, group = shape.heads_q / shape.heads_kv;
    std::vector<double> scores(static_cast<std::size_t>(shape.len_kv));
    for (std::int64_t b = 0; b < shape.batch; ++b)
        for (std::int64_t h = 0; h < shape.heads_q; ++h)
            for (std::int64_t r = 0; r < count; ++r, o += dim) {
                const std::int64_t i = rows[static_cast<std::size_t>(r)];
                const std::int64_t visible = causal ? std::min(shape.len_kv, i + 1) : shape.len_kv;
                double max_score = -std::numeric_limits<double>::infinity();
                for (std::int64_t j = 0; j < visible; ++j) {
                    double s = 0;
                    for (std::int64_t d = 0; d < dim; ++d)
                        s += q.value_at(shape.offset(false, b, h, i, d)) * k.value_at(shape.offset(true, b, h / group, j, d));
                    scores[static_cast<std::size_t>(j)] = s * sm_scale;
                    max_score = std::max(max_score, scores[static_cast<std::size_t>(j)]);
                }
                double sum = 0;
                for (std::int64_t d = 0; d < dim; ++d) o[d] = 0;
                for (std::int64_t j = 0; j < visible; ++j) {
                    const double p = std::exp(scores[static_cast<std::size_t>(j)] - max_score);
                    sum += p;
                    for (std::int64_t d = 0; d < dim; ++d) o[d] += p * v.value_at(shape.offset(true, b, h / group, j, d));
                }
                for (std::int64_t d = 0; d < dim; ++d) o[d] /= sum;
            }
    return out;
}

RelL2 relative_l2(const Tensor &out, const Tensor &ref) {
    if (!dtype_is_floating(out.dtype) || !dtype_is_floating(ref.dtype))
        fail(ExitCode::usage, std::string("relative_l2: needs floating tensors, got ") + dtype_name(out.dtype) + " and " +
                                  dtype_name(ref.dtype));
    if (out.numel() != ref.numel())
        fail(ExitCode::usage, "relative_l2: output " + shape_to_string(out.shape) + " and reference " +
                                  shape_to_string(ref.shape) + " differ in size");
    RelL2 result;
    double diff_squares = 0, ref_squares = 0;
    const std::int64_t count = out.numel();
    for (std::int64_t i = 0; i < count; ++i) {
        const double a = out.value_at(i), r = ref.value_at(i);
        if (!std::isfinite(a)) ++result.non_finite;
        if (!std::isfinite(a) || !std::isfinite(r)) continue;
        diff_squares += (a - r) * (a - r);
        ref_squares += r * r;
        ++result.compared;
    }
    if (ref_squares > 0) result.rel_l2 = std::sqrt(diff_squares / ref_squares);
    else result.rel_l2 = diff_squares == 0 ? 0.0 : std::numeric_limits<double>::infinity();
    return result;
}

}  // namespace s2tp
