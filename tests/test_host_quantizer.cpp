// Host quantizers against upstream's golden outputs (within the documented tolerance: scales within
// 1 ulp, int8 codes within +-1, e4m3 codes within one step, k mean within 1 ulp of the input dtype)
// and against hand-built inputs for the layout rules (V permutation, padding, empty Q groups, zero V).
#include <gtest/gtest.h>

#include <toml++/toml.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "support/errors.h"
#include "model/host_quantizer.h"
#include "formats/tensor_io.h"
#include "golden_cases.h"

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

std::int64_t float_ulps(float a, float b) {
    std::int32_t x, y;
    std::memcpy(&x, &a, 4);
    std::memcpy(&y, &b, 4);
    return std::llabs(static_cast<std::int64_t>(x) - y);
}

// Position of an e4m3 code on the number line (codes are sign-magnitude), for "one step apart".
int e4m3_ordinal(std::uint8_t code) { return (code & 0x80) ? -(code & 0x7f) : code; }

// Fewer than one code in a thousand may differ at all: a systematic error (say, a wrong rounding mode)
// would stay within +-1 yet move far more codes.
constexpr double kMaxDifferingFraction = 1e-3;

void expect_int8_close(const Tensor &host, const Tensor &golden, const std::string &what) {
    ASSERT_EQ(host.shape, golden.shape) << what;
    std::int64_t differing = 0;
    for (std::int64_t i = 0; i < host.numel(); ++i) {
        const int a = host.data<std::int8_t>()[i], b = golden.data<std::int8_t>()[i];
        ASSERT_LE(std::abs(a - b), 1) << what << " at flat index " << i;
        differing += a != b;
    }
    EXPECT_LE(differing, kMaxDifferingFraction * host.numel()) << what;
}

void expect_scales_close(const Tensor &host, const Tensor &golden, const std::string &what) {
    ASSERT_EQ(host.shape, golden.shape) << what;
    for (std::int64_t i = 0; i < host.numel(); ++i)
        ASSERT_LE(float_ulps(host.data<float>()[i], golden.data<float>()[i]), 1) << what << " at flat index " << i;
}

}  // namespace

TEST(HostQuantizer, MatchesUpstreamGoldenWithinTolerance) {
    if (!fs::exists(golden::directory() / "cases.toml")) GTEST_SKIP() << "golden data not found at " << golden::directory();
    const std::vector<golden::Case> cases = golden::cases(golden::directory());
    ASSERT_GE(cases.size(), 4u);
    for (const golden::Case &c : cases) {
        SCOPED_TRACE(c.name);
        const Tensor q = golden::load(c, "q"), k = golden::load(c, "k"), v = golden::load(c, "v");
        const Tensor golden_k_mean = golden::load(c, "k_mean");
        const QuantizedInputs host = quantize_inputs(c.problem.shape, q, k, v);

        expect_int8_close(host.q_int8, golden::load(c, "q_int8"), "q_int8");
        expect_scales_close(host.q_scale, golden::load(c, "q_scale"), "q_scale");

        ASSERT_EQ(host.k_mean.shape, golden_k_mean.shape);
        for (std::int64_t i = 0; i < host.k_mean.numel(); ++i)
            ASSERT_LE(std::abs(host.k_mean.data<std::uint16_t>()[i] - golden_k_mean.data<std::uint16_t>()[i]), 1) << i;

        // K checked with upstream's own mean, so a 1-ulp mean difference cannot mask a quantizer error.
        Tensor k_int8, k_scale;
        quantize_k(c.problem.shape, k, golden_k_mean, k_int8, k_scale);
        expect_int8_close(k_int8, golden::load(c, "k_int8"), "k_int8");
        expect_scales_close(k_scale, golden::load(c, "k_scale"), "k_scale");

        const Tensor golden_v = golden::load(c, "v_fp8");
        ASSERT_EQ(host.v_fp8.shape, golden_v.shape);
        std::int64_t differing = 0;
        for (std::int64_t i = 0; i < golden_v.numel(); ++i) {
            const std::uint8_t a = host.v_fp8.data<std::uint8_t>()[i], b = golden_v.data<std::uint8_t>()[i];
            if ((a & 0x7f) == 0x7f || (b & 0x7f) == 0x7f) {
                ASSERT_EQ(a, b) << "v_fp8 NaN code mismatch at flat index " << i;
                continue;
            }
            ASSERT_LE(std::abs(e4m3_ordinal(a) - e4m3_ordinal(b)), 1) << "v_fp8 at flat index " << i;
            differing += a != b;
        }
        EXPECT_LE(differing, kMaxDifferingFraction * golden_v.numel());
        expect_scales_close(host.v_scale, golden::load(c, "v_scale"), "v_scale");
    }
}

namespace {

AttentionShape tiny_shape(Layout layout, std::int64_t len_q, std::int64_t len_kv, std::int64_t heads_kv = 1) {
    AttentionShape s;
    s.batch = 1, s.heads_q = heads_kv, s.heads_kv = heads_kv, s.len_q = len_q, s.len_kv = len_kv, s.head_dim = 4;
    s.layout = layout;
    return s;
}

Tensor half_tensor(const Shape &shape, DType dtype, const std::vector<float> &values) {
    Tensor t(dtype, shape);
    for (std::size_t i = 0; i < values.size(); ++i)
        t.data<std::uint16_t>()[i] = dtype == DType::bf16 ? float_to_bf16(values[i]) : float_to_half(values[i]);
    return t;
}

}  // namespace

TEST(HostQuantizer, VIsTransposedPaddedAndPermuted) {
    for (Layout layout : {Layout::nhd, Layout::hnd}) {
        const AttentionShape s = tiny_shape(layout, 1, 20, 2);
        // v[token, head, channel] = (token + 1) * (channel + 1) * (head ? -1 : 1): every channel's amax is
        // at token 19, so codes are exact multiples and each token is recognisable after quantization.
        Tensor v(DType::f16, s.kv_shape());
        for (std::int64_t h = 0; h < 2; ++h)
            for (std::int64_t t = 0; t < 20; ++t)
                for (std::int64_t d = 0; d < 4; ++d)
                    v.data<std::uint16_t>()[s.offset(true, 0, h, t, d)] =
                        float_to_half(static_cast<float>((t + 1) * (d + 1) * (h ? -1 : 1)));
        Tensor v_fp8, v_scale;
        quantize_v(s, v, v_fp8, v_scale);
        EXPECT_EQ(v_fp8.shape, layout == Layout::nhd ? (Shape{1, 4, 2, 64}) : (Shape{1, 2, 4, 64}));
        EXPECT_EQ(v_scale.shape, (Shape{1, 2, 4}));
        for (std::int64_t h = 0; h < 2; ++h)
            for (std::int64_t d = 0; d < 4; ++d) {
                const float amax = 20.0f * (d + 1);
                EXPECT_EQ(v_scale.data<float>()[h * 4 + d], amax * (1.0f / 2.25f));
                const std::int64_t row = layout == Layout::nhd ? d * 2 + h : h * 4 + d;
                for (std::int64_t position = 0; position < 64; ++position) {
                    const std::int64_t token = position / 16 * 16 + kVTokenAtPosition[position % 16];
                    const float x = token < 20 ? static_cast<float>((token + 1) * (d + 1) * (h ? -1 : 1)) : 0.0f;
                    const std::uint8_t expected = float_to_e4m3(x * (2.25f * (1.0f / amax)));
                    ASSERT_EQ(v_fp8.data<std::uint8_t>()[row * 64 + position], expected)
                        << layout_name(layout) << " h" << h << " d" << d << " position " << position;
                }
                // Spot checks of the permutation itself: position 2 holds token 8, position 4 token 2.
                EXPECT_EQ(e4m3_to_float(v_fp8.data<std::uint8_t>()[row * 64 + 2]),
                          e4m3_to_float(float_to_e4m3(9.0f * (d + 1) * (h ? -1 : 1) * (2.25f / amax))));
                EXPECT_EQ(v_fp8.data<std::uint8_t>()[row * 64 + 40], 0x00);  // padding token 40
            }
    }
}

TEST(HostQuantizer, AllZeroVChannelBecomesNaNWithZeroScale) {
    const AttentionShape s = tiny_shape(Layout::nhd, 1, 3);
    const Tensor v = half_tensor(s.kv_shape(), DType::bf16, {1, 0, 2, 3, 4, 0, 5, 6, -7, 0, 8, 9});
    Tensor v_fp8, v_scale;
    quantize_v(s, v, v_fp8, v_scale);
    EXPECT_EQ(v_scale.data<float>()[1], 0.0f);
    for (std::int64_t position = 0; position < 64; ++position) EXPECT_EQ(v_fp8.data<std::uint8_t>()[64 + position], 0x7f);
    // Channel 0's largest magnitude is token 2 (-7), stored at position 4: the most negative code.
    EXPECT_EQ(v_fp8.data<std::uint8_t>()[4], float_to_e4m3(-2.25f));
}

TEST(HostQuantizer, QGroupsOf32WithEmptyGroupsAndKBlocksOf64) {
    const AttentionShape s = tiny_shape(Layout::hnd, 40, 70);
    std::vector<float> q_values(40 * 4), k_values(70 * 4);
    for (std::size_t i = 0; i < q_values.size(); ++i) q_values[i] = i < 32 * 4 ? 1.0f : 0.5f;  // group 0 vs 1
    q_values[5] = -4.0f;
    for (std::size_t i = 0; i < k_values.size(); ++i) k_values[i] = (i / 4 < 64) ? 2.0f : -1.0f;
    k_values[3] = 6.0f;
    const Tensor q = half_tensor(s.q_shape(), DType::f16, q_values);
    const Tensor k = half_tensor(s.kv_shape(), DType::f16, k_values);

    Tensor q_int8, q_scale;
    quantize_q(s, q, q_int8, q_scale);
    ASSERT_EQ(q_scale.shape, (Shape{1, 1, 4}));
    EXPECT_EQ(q_scale.data<float>()[0], 4.0f * (1.0f / 127.0f));
    EXPECT_EQ(q_scale.data<float>()[1], 0.5f * (1.0f / 127.0f));
    EXPECT_EQ(q_scale.data<float>()[2], 1e-7f * (1.0f / 127.0f));  // no tokens: upstream's floor
    EXPECT_EQ(q_scale.data<float>()[3], 1e-7f * (1.0f / 127.0f));
    EXPECT_EQ(q_int8.data<std::int8_t>()[5], -127);
    EXPECT_EQ(q_int8.data<std::int8_t>()[0], 32);   // 1 * 127/4 = 31.75
    EXPECT_EQ(q_int8.data<std::int8_t>()[32 * 4], 127);

    const Tensor k_mean = compute_k_mean(s, k);
    ASSERT_EQ(k_mean.shape, (Shape{1, 1, 1, 4}));
    // channel 0: (64 * 2 - 6) / 70; channel 3: (6 + 63 * 2 - 6) / 70
    EXPECT_EQ(k_mean.data<std::uint16_t>()[0], float_to_half(122.0f / 70.0f));
    EXPECT_EQ(k_mean.data<std::uint16_t>()[3], float_to_half(126.0f / 70.0f));
    Tensor k_int8, k_scale;
    quantize_k(s, k, k_mean, k_int8, k_scale);
    ASSERT_EQ(k_scale.shape, (Shape{1, 1, 2}));
    const float mean3 = half_to_float(k_mean.data<std::uint16_t>()[3]);
    const float mean0 = half_to_float(k_mean.data<std::uint16_t>()[0]);
    EXPECT_EQ(k_scale.data<float>()[0], (6.0f - mean3) * (1.0f / 127.0f));
    EXPECT_EQ(k_scale.data<float>()[1], std::fabs(-1.0f - mean3) * (1.0f / 127.0f));
    EXPECT_EQ(k_int8.data<std::int8_t>()[3], 127);
    EXPECT_EQ(k_int8.data<std::int8_t>()[64 * 4 + 3], -127);
    EXPECT_EQ(k_int8.data<std::int8_t>()[64 * 4], std::nearbyint((-1.0f - mean0) * (127.0f * (1.0f / (1.0f + mean3)))));
}

TEST(HostQuantizer, RejectsMismatchedInputs) {
    const AttentionShape s = tiny_shape(Layout::nhd, 4, 4);
    const Tensor good(DType::f16, s.q_shape());
    Tensor q_int8, q_scale;
    try {
        quantize_q(s, Tensor(DType::f32, s.q_shape()), q_int8, q_scale);
        FAIL();
    } catch (const Error &error) {
        EXPECT_EQ(error.code(), ExitCode::usage);
        EXPECT_NE(std::string(error.what()).find("q must be f16 or bf16, not f32"), std::string::npos);
    }
    EXPECT_THROW(quantize_q(s, Tensor(DType::f16, {1, 4, 1, 8}), q_int8, q_scale), Error);
    EXPECT_THROW(quantize_inputs(s, good, Tensor(DType::bf16, s.kv_shape()), good), Error);
}
