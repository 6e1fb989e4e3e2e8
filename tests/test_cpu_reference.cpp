// The float64 CPU reference: against upstream's golden O and LSE, against closed-form cases (uniform
// scores, causal masking, GQA head mapping, V layout decoding), and the rel-L2 measure.
#include <gtest/gtest.h>

#include <toml++/toml.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "model/cpu_reference.h"
#include "support/errors.h"
#include "model/host_quantizer.h"
#include "model/input_generator.h"
#include "formats/tensor_io.h"
#include "golden_cases.h"

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_cpu_reference {

TEST(CpuReference, MatchesUpstreamGoldenOutputAndLse) {
    if (!fs::exists(golden::directory() / "cases.toml")) GTEST_SKIP() << "golden data not found at " << golden::directory();
    const std::vector<golden::Case> cases = golden::cases(golden::directory());
    ASSERT_GE(cases.size(), 4u);
    for (const golden::Case &c : cases) {
        SCOPED_TRACE(c.name);
        QuantizedInputs golden;
        golden.q_int8 = golden::load(c, "q_int8");
        golden.q_scale = golden::load(c, "q_scale");
        golden.k_int8 = golden::load(c, "k_int8");
        golden.k_scale = golden::load(c, "k_scale");
        golden.v_fp8 = golden::load(c, "v_fp8");
        golden.v_scale = golden::load(c, "v_scale");
        const Tensor o = golden::load(c, "o"), lse = golden::load(c, "lse");

        const ReferenceResult ref = reference_attention(c.problem.shape, golden, c.problem.sm_scale, c.problem.causal);
        const RelL2 err = relative_l2(o, ref.o);
        EXPECT_EQ(err.non_finite, 0);
        EXPECT_EQ(err.compared, o.numel());
        EXPECT_LE(err.rel_l2, 0.05);
        EXPECT_GT(err.rel_l2, 0.0);  // fp8 P and fp16 partial sums: the kernel is never exact

        // The kernel's LSE uses ex2.approx/lg2.approx on the same smoothed scores: close in base 2.
        ASSERT_EQ(ref.lse.shape, lse.shape);
        double worst = 0;
        for (std::int64_t i = 0; i < lse.numel(); ++i) worst = std::max(worst, std::fabs(lse.value_at(i) - ref.lse.value_at(i)));
        EXPECT_LE(worst, 1e-3);

        // From the raw inputs through the host quantizer, the reference still lands on the kernel's output.
        // (Skipped for the largest case only to keep unoptimised test builds quick.)
        if (c.problem.shape.batch * c.problem.shape.heads_q * c.problem.shape.len_q * c.problem.shape.len_kv > (1 << 20)) continue;
        const QuantizedInputs host = quantize_inputs(c.problem.shape, golden::load(c, "q"), golden::load(c, "k"),
                                                     golden::load(c, "v"));
        EXPECT_LE(relative_l2(o, reference_attention(c.problem.shape, host, c.problem.sm_scale, c.problem.causal).o).rel_l2, 0.05);
    }
}

namespace {

// Quantized inputs with all-zero Q codes (every score 0, so softmax is uniform over the visible keys)
// and V built from chosen per-token values through the host quantizer.
QuantizedInputs uniform_scores(const AttentionShape &s, const std::vector<float> &v_token_value) {
    QuantizedInputs in;
    in.q_int8 = Tensor(DType::i8, s.q_shape());
    in.q_scale = Tensor(DType::f32, q_scale_shape(s));
    in.k_int8 = Tensor(DType::i8, s.kv_shape());
    in.k_scale = Tensor(DType::f32, k_scale_shape(s));
    for (std::int64_t i = 0; i < in.q_scale.numel(); ++i) in.q_scale.data<float>()[i] = 0.01f;
    for (std::int64_t i = 0; i < in.k_scale.numel(); ++i) in.k_scale.data<float>()[i] = 0.02f;
    for (std::int64_t i = 0; i < in.k_int8.numel(); ++i) in.k_int8.data<std::int8_t>()[i] = static_cast<std::int8_t>(i % 7 - 3);
    Tensor v(DType::f16, s.kv_shape());
    for (std::int64_t b = 0; b < s.batch; ++b)
        for (std::int64_t h = 0; h < s.heads_kv; ++h)
            for (std::int64_t t = 0; t < s.len_kv; ++t)
                for (std::int64_t d = 0; d < s.head_dim; ++d)
                    v.data<std::uint16_t>()[s.offset(true, b, h, t, d)] =
                        float_to_half(v_token_value[t] * static_cast<float>(h + 1) * (d % 2 ? -1.0f : 1.0f));
    quantize_v(s, v, in.v_fp8, in.v_scale);
    return in;
}

}  // namespace

TEST(CpuReference, UniformScoresAverageVisibleValuesWithCausalMaskAndGqa) {
    // V values 1, 2, 4, 8 (times the kv head's factor) quantize to exact e4m3 codes (8 maps to 2.25), so
    // dequantization returns them up to the float rounding of v_scale = amax * fl(1/2.25).
    for (Layout layout : {Layout::nhd, Layout::hnd}) {
        for (bool causal : {false, true}) {
            AttentionShape s;
            s.batch = 2, s.heads_q = 4, s.heads_kv = 2, s.len_q = 19, s.len_kv = 19, s.head_dim = 8;
            s.layout = layout;
            std::vector<float> v_values(19);
            for (int t = 0; t < 19; ++t) v_values[t] = static_cast<float>(1 << (t % 4));
            const ReferenceResult ref = reference_attention(s, uniform_scores(s, v_values), 0.125, causal);
            for (std::int64_t b = 0; b < 2; ++b)
                for (std::int64_t h = 0; h < 4; ++h)
                    for (std::int64_t i = 0; i < 19; ++i) {
                        const std::int64_t visible = causal ? i + 1 : 19;
                        double mean = 0;
                        for (std::int64_t t = 0; t < visible; ++t) mean += v_values[t];
                        mean /= visible;
                        const double kv_head_factor = static_cast<double>(h / 2 + 1);  // GQA: q heads 0,1 -> kv 0
                        for (std::int64_t d = 0; d < 8; ++d)
                            ASSERT_NEAR(ref.o.value_at(s.offset(false, b, h, i, d)),
                                        mean * kv_head_factor * (d % 2 ? -1 : 1), 1e-6 * mean * kv_head_factor)
                                << layout_name(layout) << (causal ? " causal" : "") << " b" << b << " h" << h << " i" << i;
                        ASSERT_NEAR(ref.lse.value_at((b * 4 + h) * 19 + i), std::log2(static_cast<double>(visible)), 1e-12);
                    }
        }
    }
}

TEST(CpuReference, ScoresUseBothScalesAndBaseTwoLse) {
    // One query and 65 keys: keys 0..63 (K block 0) score 0; key 64 is in K block 1, with its own scale.
    AttentionShape s;
    s.len_q = 1, s.len_kv = 65, s.head_dim = 1;
    QuantizedInputs in;
    in.q_int8 = Tensor(DType::i8, s.q_shape());
    in.q_int8.data<std::int8_t>()[0] = 2;
    in.q_scale = Tensor(DType::f32, q_scale_shape(s));
    in.q_scale.data<float>()[0] = 0.5f;
    in.k_int8 = Tensor(DType::i8, s.kv_shape());
    in.k_int8.data<std::int8_t>()[64] = 3;  // keys 0..63 score 0, key 64 scores 2*0.5 * 3*4 = 12
    in.k_scale = Tensor(DType::f32, k_scale_shape(s));
    in.k_scale.data<float>()[0] = 1.0f;
    in.k_scale.data<float>()[1] = 4.0f;
    in.v_fp8 = Tensor(DType::e4m3, v_fp8_shape(s));
    in.v_scale = Tensor(DType::f32, v_scale_shape(s));
    in.v_scale.data<float>()[0] = 1.0f;
    // Key 64 is token 0 of its 16-group: stored at position 64. Give it value 1 (0x38), all others 0.
    in.v_fp8.data<std::uint8_t>()[64] = 0x38;
    const double sm_scale = 0.25;
    const ReferenceResult ref = reference_attention(s, in, sm_scale, false);
    const double e = std::exp(12.0 * sm_scale);  // exp2(s * sm_scale * log2 e) = e^(s * sm_scale)
    EXPECT_NEAR(ref.o.value_at(0), e / (64.0 + e), 1e-12);
    EXPECT_NEAR(ref.lse.value_at(0), std::log2(64.0 + e), 1e-12);
}

TEST(CpuReference, ThreadCountDoesNotChangeResults) {
    AttentionShape s;
    s.heads_q = 2, s.heads_kv = 1, s.len_q = 70, s.len_kv = 50, s.head_dim = 16;
    std::vector<float> v_values(50);
    for (int t = 0; t < 50; ++t) v_values[t] = 0.1f * static_cast<float>(t % 11) - 0.4f;
    QuantizedInputs in = uniform_scores(s, v_values);
    for (std::int64_t i = 0; i < in.q_int8.numel(); ++i) in.q_int8.data<std::int8_t>()[i] = static_cast<std::int8_t>(i * 13 % 255 - 127);
    const ReferenceResult one = reference_attention(s, in, 0.3, true, 1);
    const ReferenceResult three = reference_attention(s, in, 0.3, true, 3);
    EXPECT_EQ(one.o.bytes, three.o.bytes);
    EXPECT_EQ(one.lse.bytes, three.lse.bytes);
}

TEST(CpuReference, RejectsInconsistentInputs) {
    AttentionShape s;
    s.len_q = 4, s.len_kv = 4, s.head_dim = 8;
    QuantizedInputs in = uniform_scores(s, {1, 2, 3, 4});
    in.k_scale = Tensor(DType::f32, {1, 1, 2});
    try {
        reference_attention(s, in, 0.1, false);
        FAIL();
    } catch (const Error &error) {
        EXPECT_EQ(error.code(), ExitCode::usage);
        EXPECT_NE(std::string(error.what()).find("k_scale: shape is [1, 1, 2], expected [1, 1, 1]"), std::string::npos)
            << error.what();
    }
}

// The sm90 path's inputs (per-thread and per-warp scales, V padded to 128): dequantized by their recipe,
// the reference stays within the quantization error of the unquantized attention, and read by another
// recipe they are refused rather than misread.
TEST(CpuReference, ReadsTheSm90RecipesScaleGroups) {
    AttentionShape s;
    s.batch = 1, s.heads_q = 4, s.heads_kv = 2, s.len_q = 150, s.len_kv = 200, s.head_dim = 64;
    s.layout = Layout::hnd;
    const GeneratedInputs in = generate_inputs(s, DType::bf16, 5);
    const double sm_scale = 0.125;
    std::vector<std::uint32_t> rows;
    for (std::uint32_t r = 0; r < 150; r += 7) rows.push_back(r);
    const Tensor exact = unquantized_reference(s, in.q, in.k, in.v, sm_scale, false, rows);
    for (QkGranularity g : {QkGranularity::per_thread, QkGranularity::per_warp}) {
        const QuantizationRecipe recipe = sm90_recipe(g);
        const QuantizedInputs qi = quantize_inputs(s, in.q, in.k, in.v, recipe);
        const ReferenceResult ref = reference_attention(s, qi, sm_scale, false, 0, recipe);
        Tensor picked(DType::f64, exact.shape);
        for (std::int64_t h = 0; h < s.heads_q; ++h)
            for (std::size_t r = 0; r < rows.size(); ++r)
                for (std::int64_t d = 0; d < s.head_dim; ++d)
                    picked.data<double>()[(h * static_cast<std::int64_t>(rows.size()) + static_cast<std::int64_t>(r)) * s.head_dim + d] =
                        ref.o.data<double>()[s.offset(false, 0, h, rows[r], d)];
        const RelL2 error = relative_l2(picked, exact);
        EXPECT_EQ(error.non_finite, 0);
        EXPECT_LT(error.rel_l2, 0.05) << granularity_name(g);
        EXPECT_THROW(reference_attention(s, qi, sm_scale, false), Error) << "sm89 layout on sm90 inputs";
    }
}

TEST(RelativeL2, NormsCountsAndErrors) {
    Tensor ref(DType::f64, {4}), out(DType::f32, {2, 2});
    const double ref_values[4] = {3, 0, 4, 1};
    const float out_values[4] = {3, 0, 4, std::numeric_limits<float>::quiet_NaN()};
    for (int i = 0; i < 4; ++i) {
        ref.data<double>()[i] = ref_values[i];
        out.data<float>()[i] = out_values[i];
    }
    RelL2 err = relative_l2(out, ref);
    EXPECT_EQ(err.non_finite, 1);
    EXPECT_EQ(err.compared, 3);
    EXPECT_EQ(err.rel_l2, 0.0);
    out.data<float>()[3] = 1;
    out.data<float>()[0] = 3.5f;
    err = relative_l2(out, ref);
    EXPECT_EQ(err.non_finite, 0);
    EXPECT_NEAR(err.rel_l2, 0.5 / std::sqrt(26.0), 1e-15);

    Tensor zero(DType::f64, {4});
    EXPECT_TRUE(std::isinf(relative_l2(out, zero).rel_l2));
    EXPECT_EQ(relative_l2(zero, zero).rel_l2, 0.0);
    EXPECT_THROW(relative_l2(Tensor(DType::f32, {3}), ref), Error);
    EXPECT_THROW(relative_l2(Tensor(DType::i8, {4}), ref), Error);
}

}  // namespace s2tp::unit_cpu_reference
