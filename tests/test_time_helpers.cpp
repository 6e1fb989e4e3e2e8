// What the time stage's GPU helpers compute, checked on the host without a GPU: the GPU input
// generator's arithmetic (kernels/input_generator_math.h, compiled here as plain C++) and element
// mapping (generate_params) against the host generator, byte for byte; and the NaN criterion of the
// GPU's NaN count against std::isnan. The GPU itself runs them in gpu_time_helpers_check.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "gpu/gpu_input_generator.h"
#include "input_generator_math.h"
#include "model/input_generator.h"
#include "sage2tp_abi.h"

using namespace s2tp;

namespace s2tp::unit_time_helpers {

namespace {

// Every element the kernel would write, at the offset it would write it, against the host's tensor;
// each offset must be written exactly once. Empty when they agree, else the first difference.
std::string kernel_vs_host(const AttentionShape &shape, DType dtype, std::uint64_t seed, std::uint32_t which,
                           const Tensor &host) {
    const s2tp_generate_params p = generate_params(shape, which, seed, nullptr);
    const std::uint32_t elements = p.batch * p.heads * p.len * p.head_dim;
    if (static_cast<std::int64_t>(elements) != host.numel())
        return "the kernel writes " + std::to_string(elements) + " elements, the host tensor has " +
               std::to_string(host.numel());
    const std::uint16_t *expected = host.data<std::uint16_t>();
    std::vector<bool> written(elements, false);
    for (std::uint32_t e = 0; e < elements; ++e) {
        const generator::GeneratedElement g = generator::generated_element(p, e, dtype == DType::f16);
        if (g.offset >= elements || written[g.offset])
            return "element " + std::to_string(e) + " goes to offset " + std::to_string(g.offset) +
                   (g.offset >= elements ? ", outside the tensor" : ", written twice");
        written[g.offset] = true;
        if (g.bits != expected[g.offset])
            return "element " + std::to_string(e) + " (offset " + std::to_string(g.offset) + ") is " +
                   std::to_string(g.bits) + ", the host's " + std::to_string(expected[g.offset]);
    }
    return "";
}

TEST(GpuInputGenerator, ArithmeticAndMappingAreTheHostGenerators) {
    // Odd extents everywhere, grouped heads, len 1, both layouts and dtypes, several seeds.
    const AttentionShape shapes[] = {
        AttentionShape{2, 3, 1, 37, 45, 40, Layout::nhd}, AttentionShape{2, 3, 1, 37, 45, 40, Layout::hnd},
        AttentionShape{1, 4, 2, 1, 129, 64, Layout::nhd}, AttentionShape{3, 2, 2, 65, 1, 24, Layout::hnd},
        AttentionShape{1, 1, 1, 200, 200, 128, Layout::nhd}, AttentionShape{1, 2, 1, 5, 7, 5, Layout::hnd},
    };
    for (const AttentionShape &shape : shapes)
        for (DType dtype : {DType::f16, DType::bf16})
            for (std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{24}, ~std::uint64_t{0}}) {
                const GeneratedInputs host = generate_inputs(shape, dtype, seed, 1);
                const std::string where = shape.to_string() + " " + dtype_name(dtype) + " seed " + std::to_string(seed);
                EXPECT_EQ(kernel_vs_host(shape, dtype, seed, S2TP_GENERATED_Q, host.q), "") << "q of " << where;
                EXPECT_EQ(kernel_vs_host(shape, dtype, seed, S2TP_GENERATED_K, host.k), "") << "k of " << where;
                EXPECT_EQ(kernel_vs_host(shape, dtype, seed, S2TP_GENERATED_V, host.v), "") << "v of " << where;
            }
}

TEST(GpuInputGenerator, ParamsFollowTheShapesOffsets) {
    for (Layout layout : {Layout::nhd, Layout::hnd}) {
        const AttentionShape s{2, 6, 3, 11, 13, 8, layout};
        for (std::uint32_t which : {S2TP_GENERATED_Q, S2TP_GENERATED_K}) {
            const bool kv = which == S2TP_GENERATED_K;
            const s2tp_generate_params p = generate_params(s, which, 1, nullptr);
            EXPECT_EQ(p.heads, kv ? 3u : 6u);
            EXPECT_EQ(p.len, kv ? 13u : 11u);
            for (std::int64_t b = 0; b < s.batch; ++b)
                for (std::int64_t h = 0; h < p.heads; ++h)
                    for (std::int64_t t = 0; t < p.len; ++t)
                        for (std::int64_t d = 0; d < s.head_dim; ++d)
                            ASSERT_EQ(b * p.stride_bz + t * p.stride_seq + h * p.stride_h + d, s.offset(kv, b, h, t, d))
                                << layout_name(layout) << (kv ? " kv" : " q") << " at " << b << "," << h << "," << t
                                << "," << d;
        }
    }
}

// The GPU counts what count_nan counts on the host: every 16-bit pattern whose decoded value is NaN.
TEST(GpuOutputChecks, NanCriterionIsIsnanForEveryPattern) {
    for (std::uint32_t bits = 0; bits <= 0xffffu; ++bits) {
        const auto pattern = static_cast<std::uint16_t>(bits);
        ASSERT_EQ(S2TP_IS_NAN16(pattern, S2TP_F16_INF_BITS), std::isnan(half_to_float(pattern))) << "f16 " << bits;
        ASSERT_EQ(S2TP_IS_NAN16(pattern, S2TP_BF16_INF_BITS), std::isnan(bf16_to_float(pattern))) << "bf16 " << bits;
    }
}

}  // namespace

}  // namespace s2tp::unit_time_helpers
