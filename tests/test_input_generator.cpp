// The seeded q/k/v generator: reproducible bytes (pinned digests), layout independence, and the
// statistics the quantizers are meant to face (K channel offsets, V channel scales).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "support/errors.h"
#include "model/input_generator.h"

using namespace s2tp;

namespace s2tp::unit_input_generator {

namespace {

// FNV-1a 64: enough to pin a few kilobytes of output without depending on any digest library.
std::uint64_t fnv1a(const std::vector<std::uint8_t> &bytes) {
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (std::uint8_t b : bytes) hash = (hash ^ b) * 0x100000001b3ull;
    return hash;
}

AttentionShape small_shape(Layout layout) {
    AttentionShape s;
    s.batch = 1, s.heads_q = 2, s.heads_kv = 1, s.len_q = 5, s.len_kv = 7, s.head_dim = 16;
    s.layout = layout;
    return s;
}

// Per-channel mean and standard deviation over tokens of one (batch 0, head h) slice of a kv tensor.
struct ChannelStats {
    std::vector<double> mean, stddev;
};

ChannelStats channel_stats(const AttentionShape &s, const Tensor &t, std::int64_t h) {
    ChannelStats stats;
    for (std::int64_t d = 0; d < s.head_dim; ++d) {
        double sum = 0, squares = 0;
        for (std::int64_t n = 0; n < s.len_kv; ++n) {
            const double x = t.value_at(s.offset(true, 0, h, n, d));
            sum += x;
            squares += x * x;
        }
        const double mean = sum / s.len_kv;
        stats.mean.push_back(mean);
        stats.stddev.push_back(std::sqrt(std::max(0.0, squares / s.len_kv - mean * mean)));
    }
    return stats;
}

}  // namespace

TEST(InputGenerator, SameSeedSameBytesPinned) {
    // These digests pin the generator's exact output. The generator uses only integer hashing and exact
    // double arithmetic, so they hold on every machine; a change here changes every generated input and
    // every stored result that depends on one.
    const GeneratedInputs f16 = generate_inputs(small_shape(Layout::nhd), DType::f16, 42);
    const GeneratedInputs bf16 = generate_inputs(small_shape(Layout::hnd), DType::bf16, 7);
    EXPECT_EQ(fnv1a(f16.q.bytes), 0x96d36390769ed053ull);
    EXPECT_EQ(fnv1a(f16.k.bytes), 0x32ccb90cb5354cbaull);
    EXPECT_EQ(fnv1a(f16.v.bytes), 0x2b8d297113a85a44ull);
    EXPECT_EQ(fnv1a(bf16.q.bytes), 0xa8aeef6408838fcfull);
    EXPECT_EQ(fnv1a(bf16.k.bytes), 0x5effccea21d07cb0ull);
    EXPECT_EQ(fnv1a(bf16.v.bytes), 0xcb44fa6d3ae1f9beull);

    const GeneratedInputs again = generate_inputs(small_shape(Layout::nhd), DType::f16, 42);
    EXPECT_EQ(again.q.bytes, f16.q.bytes);
    EXPECT_EQ(again.k.bytes, f16.k.bytes);
    EXPECT_EQ(again.v.bytes, f16.v.bytes);
}

TEST(InputGenerator, ShapesDtypesAndSeedsMatter) {
    const AttentionShape s = small_shape(Layout::nhd);
    const GeneratedInputs a = generate_inputs(s, DType::bf16, 1);
    EXPECT_EQ(a.q.dtype, DType::bf16);
    EXPECT_EQ(a.q.shape, (Shape{1, 5, 2, 16}));
    EXPECT_EQ(a.k.shape, (Shape{1, 7, 1, 16}));
    EXPECT_EQ(a.v.shape, (Shape{1, 7, 1, 16}));
    const GeneratedInputs b = generate_inputs(s, DType::bf16, 2);
    EXPECT_NE(a.q.bytes, b.q.bytes);
    EXPECT_NE(a.k.bytes, b.k.bytes);
    EXPECT_NE(a.v.bytes, b.v.bytes);
}

TEST(InputGenerator, LayoutDoesNotChangeValues) {
    const AttentionShape nhd = small_shape(Layout::nhd), hnd = small_shape(Layout::hnd);
    const GeneratedInputs a = generate_inputs(nhd, DType::f16, 99);
    const GeneratedInputs b = generate_inputs(hnd, DType::f16, 99);
    EXPECT_NE(a.q.bytes, b.q.bytes);  // the layouts really differ
    for (std::int64_t h = 0; h < nhd.heads_q; ++h)
        for (std::int64_t n = 0; n < nhd.len_q; ++n)
            for (std::int64_t d = 0; d < nhd.head_dim; ++d)
                ASSERT_EQ(a.q.value_at(nhd.offset(false, 0, h, n, d)), b.q.value_at(hnd.offset(false, 0, h, n, d)));
    for (std::int64_t n = 0; n < nhd.len_kv; ++n)
        for (std::int64_t d = 0; d < nhd.head_dim; ++d) {
            ASSERT_EQ(a.k.value_at(nhd.offset(true, 0, 0, n, d)), b.k.value_at(hnd.offset(true, 0, 0, n, d)));
            ASSERT_EQ(a.v.value_at(nhd.offset(true, 0, 0, n, d)), b.v.value_at(hnd.offset(true, 0, 0, n, d)));
        }
}

TEST(InputGenerator, RealisticStatistics) {
    AttentionShape s;
    s.batch = 1, s.heads_q = 2, s.heads_kv = 2, s.len_q = 512, s.len_kv = 512, s.head_dim = 64;
    s.layout = Layout::hnd;
    const GeneratedInputs in = generate_inputs(s, DType::bf16, 2024);

    double q_sum = 0, q_squares = 0;
    for (std::int64_t i = 0; i < in.q.numel(); ++i) {
        const double x = in.q.value_at(i);
        ASSERT_TRUE(std::isfinite(x));
        q_sum += x;
        q_squares += x * x;
    }
    const double q_mean = q_sum / in.q.numel(), q_rms = std::sqrt(q_squares / in.q.numel());
    EXPECT_LT(std::fabs(q_mean), 0.05);
    EXPECT_GT(q_rms, 0.7);   // channel scales in [0.5, 2]
    EXPECT_LT(q_rms, 1.8);

    for (std::int64_t h = 0; h < s.heads_kv; ++h) {
        const ChannelStats k = channel_stats(s, in.k, h), v = channel_stats(s, in.v, h);
        // K: channel means spread well beyond the per-token noise (what smoothing removes).
        const auto [k_min_mean, k_max_mean] = std::minmax_element(k.mean.begin(), k.mean.end());
        EXPECT_GT(*k_max_mean - *k_min_mean, 4.0);
        for (double sd : k.stddev) {
            EXPECT_GT(sd, 0.35);
            EXPECT_LT(sd, 2.5);
        }
        // V: channel scales differ by a large factor; no channel is all zero (it would quantize to NaN).
        const auto [v_min_sd, v_max_sd] = std::minmax_element(v.stddev.begin(), v.stddev.end());
        EXPECT_GT(*v_min_sd, 0.15);
        EXPECT_GT(*v_max_sd / *v_min_sd, 4.0);
    }
}

TEST(InputGenerator, RejectsBadRequests) {
    AttentionShape s = small_shape(Layout::nhd);
    EXPECT_THROW(generate_inputs(s, DType::f32, 1), Error);
    s.heads_kv = 3;
    try {
        generate_inputs(s, DType::f16, 1);
        FAIL() << "expected an error";
    } catch (const Error &error) {
        EXPECT_EQ(error.code(), ExitCode::usage);
        EXPECT_NE(std::string(error.what()).find("heads_q (2) is not a multiple of heads_kv (3)"), std::string::npos);
    }
}

TEST(InputGenerator, ThreadCountNeverChangesBytes) {
    // Enough rows (2 heads x 8192 tokens) for the generator to split the work among 4 threads.
    AttentionShape s;
    s.heads_q = s.heads_kv = 2;
    s.len_q = s.len_kv = 8192;
    s.head_dim = 64;
    s.layout = Layout::hnd;
    const GeneratedInputs one = generate_inputs(s, DType::bf16, 24, 1);
    const GeneratedInputs four = generate_inputs(s, DType::bf16, 24, 4);
    const GeneratedInputs three = generate_inputs(s, DType::bf16, 24, 3);
    EXPECT_EQ(one.q.bytes, four.q.bytes);
    EXPECT_EQ(one.k.bytes, four.k.bytes);
    EXPECT_EQ(one.v.bytes, four.v.bytes);
    EXPECT_EQ(one.v.bytes, three.v.bytes);
}

}  // namespace s2tp::unit_input_generator
