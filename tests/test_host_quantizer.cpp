// Host quantizers against upstream's golden outputs (within the documented tolerance: scales within
// 1 ulp, int8 codes within +-1, e4m3 codes within one step, k mean within 1 ulp of the input dtype)
// and against hand-built inputs for the layout rules (V permutation, padding, empty Q groups, zero V).
#include <gtest/gtest.h>

#include <toml++/toml.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/errors.h"
#include "support/hashing.h"
#include "model/host_quantizer.h"
#include "model/input_generator.h"
#include "formats/tensor_io.h"
#include "golden_cases.h"
#include "golden/golden_cases_file.h"

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_host_quantizer {

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

// ---- The sm90, sm80 and sm89 per-thread recipes against upstream's digests (tests/golden/upstream.toml) ----
//
// Inputs regenerate from the cases' seeds and K is centred on upstream's own mean (tests/golden/means),
// so this runs in CI without the golden arrays; so is the sm80 fuse_v_mean launcher's V
// (means/<case>/sm80_v_mean.npy, sub_mean's mean in V's dtype).

namespace {

const fs::path &golden_source_dir() {
    static const fs::path dir = fs::path(S2TP_SOURCE_ROOT) / "tests" / "golden";
    return dir;
}

Tensor golden_mean(const golden::SeededCase &c, const char *file, const Shape &shape) {
    TensorRequest request;
    request.dtype = c.problem.dtype, request.shape = shape;
    return load_tensor(golden_source_dir() / "means" / c.name / file, request);
}

// One launcher's quantized inputs on every golden case: the host's digests beside upstream's.
struct LauncherDigests {
    std::string case_name;
    std::map<std::string, std::string> host;  // tensor name -> sha256 of the host quantizer's bytes
    const toml::table *upstream = nullptr;
};

// `recipe` of a case's head dim; the host quantizes by it, V as its format says.
std::vector<LauncherDigests> launcher_digests(const std::string &launcher, QkGranularity granularity,
                                              const std::function<QuantizationRecipe(std::int64_t)> &recipe_of) {
    static const toml::table digests = golden::parse_toml_file(golden_source_dir() / "upstream.toml");
    std::vector<LauncherDigests> result;
    for (const golden::SeededCase &c : golden::seeded_cases(golden_source_dir() / "cases.toml")) {
        const AttentionShape &shape = c.problem.shape;
        const GeneratedInputs in = generate_inputs(shape, c.problem.dtype, c.seed);
        const Tensor k_mean = golden_mean(c, "k_mean.npy", k_mean_shape(shape));
        const QuantizationRecipe recipe = recipe_of(shape.head_dim);
        QuantizedInputs host;
        quantize_q(shape, in.q, host.q_int8, host.q_scale, recipe.qk);
        quantize_k(shape, in.k, k_mean, host.k_int8, host.k_scale, recipe.qk);
        std::vector<std::pair<const char *, const Tensor *>> tensors = {
            {"q_int8", &host.q_int8}, {"q_scale", &host.q_scale}, {"k_int8", &host.k_int8}, {"k_scale", &host.k_scale}};
        if (recipe.v_format == VFormat::f16) {
            if (recipe.smooth_v) host.v_mean = golden_mean(c, "sm80_v_mean.npy", v_scale_shape(shape));
            host.v_f16 = convert_v_f16(shape, in.v, recipe.smooth_v ? &host.v_mean : nullptr);
            tensors.push_back({"v", &host.v_f16});
        } else {
            quantize_v(shape, in.v, host.v_fp8, host.v_scale, recipe.v_scale_max, recipe.v_pad_tokens);
            tensors.push_back({"v_fp8", &host.v_fp8});
            tensors.push_back({"v_scale", &host.v_scale});
        }
        LauncherDigests d;
        d.case_name = c.name;
        for (const auto &[name, tensor] : tensors) d.host[name] = sha256_hex(tensor->bytes.data(), tensor->nbytes());
        d.upstream = digests["case"][c.name][launcher][granularity_name(granularity)].as_table();
        result.push_back(std::move(d));
    }
    return result;
}

using CaseTensor = std::pair<std::string, std::string>;  // (case, tensor)

// Every digest of `checked` equal on all 12 cases, except where a CUDA quantizer's hardware reciprocal
// decides a tie (`ties`); those are asserted to differ, so that a change in either quantizer shows here.
void expect_launcher_digests(const std::string &launcher, QkGranularity granularity,
                             const std::function<QuantizationRecipe(std::int64_t)> &recipe_of,
                             const std::set<std::string> &checked, const std::set<CaseTensor> &ties = {}) {
    const std::vector<LauncherDigests> all = launcher_digests(launcher, granularity, recipe_of);
    ASSERT_EQ(all.size(), 12u);
    const std::string which = launcher + " " + granularity_name(granularity);
    for (const LauncherDigests &d : all) {
        ASSERT_TRUE(d.upstream) << d.case_name << " " << which;
        for (const std::string &name : checked) {
            ASSERT_TRUE(d.host.count(name)) << name;
            const std::optional<std::string> upstream = (*d.upstream)[name].value<std::string>();
            ASSERT_TRUE(upstream) << d.case_name << " " << which << " has no " << name;
            if (ties.count({d.case_name, name}))
                EXPECT_NE(*upstream, d.host.at(name)) << d.case_name << " " << which << " " << name
                                                      << " now matches: update the list";
            else
                EXPECT_EQ(*upstream, d.host.at(name)) << d.case_name << " " << which << " " << name;
        }
    }
}

const char *const kSm90Launchers[] = {"sm90_qk_int8_sv_f8_accum_f32_attn_inst_buf",
                                      "sm90_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf"};

// Where upstream's CUDA quantizers (per-warp Q/K, V) round c * MUFU.RCP(amax) and the host c * fl(1/amax)
// to different sides of a tie (host_quantizer.h): an element whose exact x * c / amax is a rounding
// boundary, e.g. 63.5 for x = amax / 2, or an e4m3 midpoint such as 336 for x = 0.75 amax. Compared
// with upstream's arrays (the fuse_v_scale launcher's, made on the H200), every differing byte is one
// step apart: q_int8 1, 5, 28, 4, 2 and 30 bytes; k_int8 6, 1 and 13; v_fp8 3, 2, 6, 1, 9, 1 and 68.
const std::set<CaseTensor> kSm90TiesUnderTheHardwareReciprocal = {
    {"tiles3_nhd_f16", "q_int8"},      {"partial200_nhd_bf16", "q_int8"}, {"gqa8x2_hnd_bf16", "q_int8"},
    {"d64_hnd_bf16", "q_int8"},        {"causal300_nhd_bf16", "q_int8"},  {"mid_hnd_bf16", "q_int8"},
    {"partial200_nhd_bf16", "k_int8"}, {"causal384_hnd_f16", "k_int8"},   {"mid_hnd_bf16", "k_int8"},
    {"tiles2_nhd_f16", "v_fp8"},       {"tiles3_nhd_f16", "v_fp8"},       {"partial200_nhd_bf16", "v_fp8"},
    {"cross300x257_hnd_f16", "v_fp8"}, {"gqa8x2_hnd_bf16", "v_fp8"},      {"causal300_nhd_bf16", "v_fp8"},
    {"mid_hnd_bf16", "v_fp8"},
};

const std::set<std::string> kQkTensors = {"q_int8", "q_scale", "k_int8", "k_scale"};

std::set<std::string> with(std::set<std::string> names, std::initializer_list<const char *> more) {
    names.insert(more.begin(), more.end());
    return names;
}

}  // namespace

TEST(HostQuantizerSm90, PerWarpScalesEqualUpstreamAndCodesBarHardwareReciprocalTies) {
    const auto recipe = [](std::int64_t) { return sm90_recipe(QkGranularity::per_warp); };
    for (const char *launcher : kSm90Launchers)
        expect_launcher_digests(launcher, QkGranularity::per_warp, recipe, with(kQkTensors, {"v_fp8", "v_scale"}),
                                kSm90TiesUnderTheHardwareReciprocal);
}

// Triton's per-thread Q/K bytes are reproduced exactly; V is the same CUDA per_channel_fp8 as per warp.
TEST(HostQuantizerSm90, PerThreadQAndKBytesEqualUpstreamOnEveryGoldenCase) {
    const auto recipe = [](std::int64_t) { return sm90_recipe(QkGranularity::per_thread); };
    std::set<CaseTensor> v_ties;
    for (const CaseTensor &tie : kSm90TiesUnderTheHardwareReciprocal)
        if (tie.second == "v_fp8") v_ties.insert(tie);
    for (const char *launcher : kSm90Launchers)
        expect_launcher_digests(launcher, QkGranularity::per_thread, recipe, with(kQkTensors, {"v_fp8", "v_scale"}),
                                v_ties);
}

// ---- The sm80 path (core.py's sageattn_qk_int8_pv_fp16_cuda): fp16 V, Q warps of 32 (16 for head dim 128
// with "fp16+fp32"), K blocks of 64 ----

namespace {

struct Sm80Launcher {
    const char *name;
    bool q_warp_16_at_d128, fuse_v_mean;
};
constexpr Sm80Launcher kSm80Launchers[] = {
    {"sm80_qk_int8_sv_f16_accum_f32_attn", false, false},
    {"sm80_qk_int8_sv_f16_accum_f16_attn", false, false},
    {"sm80_qk_int8_sv_f16_accum_f16_attn_inst_buf", true, false},
    {"sm80_qk_int8_sv_f16_accum_f16_fuse_v_mean_attn", false, true},
};

std::function<QuantizationRecipe(std::int64_t)> sm80_recipe_of(const Sm80Launcher &launcher, QkGranularity g) {
    return [=](std::int64_t head_dim) {
        return sm80_recipe(g, launcher.q_warp_16_at_d128 && head_dim == 128 ? 16 : 32, launcher.fuse_v_mean);
    };
}

}  // namespace

// fp16 V (cast, or sub_mean's V minus its mean) and Triton's per-thread Q/K: every byte as upstream's.
TEST(HostQuantizerSm80, PerThreadQKAndF16VBytesEqualUpstreamOnEveryGoldenCase) {
    for (const Sm80Launcher &launcher : kSm80Launchers)
        expect_launcher_digests(launcher.name, QkGranularity::per_thread,
                                sm80_recipe_of(launcher, QkGranularity::per_thread), with(kQkTensors, {"v"}));
}

// The per-warp CUDA quantizer's ties under its hardware reciprocal (as for the sm90 path) with Q warps
// of 32 and K blocks of 64: the same cases for every sm80 launcher, and with Q warps of 16 (the
// inst_buf launcher at head dim 128) one more Q tie.
const std::set<CaseTensor> kSm80TiesUnderTheHardwareReciprocal = {
    {"d64_hnd_bf16", "q_int8"},        {"gqa8x2_hnd_bf16", "q_int8"},   {"mid_hnd_bf16", "q_int8"},
    {"partial200_nhd_bf16", "q_int8"}, {"tiles3_nhd_f16", "q_int8"},    {"causal384_hnd_f16", "k_int8"},
    {"mid_hnd_bf16", "k_int8"},        {"partial200_nhd_bf16", "k_int8"}, {"tiles3_nhd_f16", "k_int8"},
};

TEST(HostQuantizerSm80, PerWarpScalesAndF16VEqualUpstreamAndCodesBarHardwareReciprocalTies) {
    for (const Sm80Launcher &launcher : kSm80Launchers) {
        std::set<CaseTensor> ties = kSm80TiesUnderTheHardwareReciprocal;
        if (launcher.q_warp_16_at_d128) ties.insert({"causal300_nhd_bf16", "q_int8"});
        expect_launcher_digests(launcher.name, QkGranularity::per_warp,
                                sm80_recipe_of(launcher, QkGranularity::per_warp), with(kQkTensors, {"v"}), ties);
    }
}

// The sm89 launchers' per-thread Q/K (Triton's, blocks 128/32 and 64/64): every byte as upstream's.
TEST(HostQuantizerSm89, PerThreadQAndKBytesEqualUpstreamOnEveryGoldenCase) {
    for (const char *launcher : {"sm89_qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf",
                                 "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_fuse_v_mean_attn"}) {
        const auto recipe = [](std::int64_t) {
            QuantizationRecipe r;
            r.qk.granularity = QkGranularity::per_thread;
            return r;
        };
        expect_launcher_digests(launcher, QkGranularity::per_thread, recipe, kQkTensors);
    }
}

TEST(HostQuantizerSm80, RecipeIsCorePysSm80Path) {
    const QuantizationRecipe r = sm80_recipe(QkGranularity::per_warp, 16, true);
    EXPECT_EQ(r.qk, (QkQuantization{QkGranularity::per_warp, 128, 16, 64, 64}));
    EXPECT_EQ(r.v_format, VFormat::f16);
    EXPECT_TRUE(r.smooth_v);
    EXPECT_EQ(r.describe(), "Q/K per_warp 128/16 64/64, V f16, V mean subtracted");
    EXPECT_FALSE(sm80_recipe(QkGranularity::per_warp, 32) == QuantizationRecipe{});  // only V differs
    EXPECT_EQ(v_mean_dtype(r, DType::bf16), DType::bf16);
    EXPECT_EQ(v_mean_dtype(QuantizationRecipe{}, DType::bf16), DType::f32);
    const AttentionShape s = tiny_shape(Layout::nhd, 200, 65);
    EXPECT_EQ(q_scale_shape(s, r.qk), (Shape{1, 1, 16}));
    EXPECT_EQ(q_scale_shape(s, sm80_recipe(QkGranularity::per_thread, 16).qk), (Shape{1, 1, 128}));
    EXPECT_EQ(k_scale_shape(s, sm80_recipe(QkGranularity::per_thread, 32).qk), (Shape{1, 1, 8}));
}

// bf16 V minus its mean is rounded to bf16 first (sub_mean's __hsub2), then to fp16; the plain cast is
// one rounding; the quantized inputs hold fp16 V and no e4m3 V.
TEST(HostQuantizerSm80, F16VIsOneRoundingOrTwoAfterTheMean) {
    const AttentionShape s = tiny_shape(Layout::hnd, 1, 1);
    // 1 + 2^-7 is a bfloat16 (8 significand bits), and fp16 holds it exactly.
    const Tensor v = half_tensor(s.kv_shape(), DType::bf16, {1.0078125f, 3.0f, -2.0f, 0.0f});
    // mean 2^-8: 1.0078125 - 0.00390625 = 1.00390625 is a tie in bfloat16 between 1 and 1.0078125 (even: 1).
    const Tensor mean = half_tensor(v_scale_shape(s), DType::bf16, {0.00390625f, 0.0f, 0.5f, 0.0f});
    const Tensor cast = convert_v_f16(s, v);
    const Tensor smoothed = convert_v_f16(s, v, &mean);
    ASSERT_EQ(smoothed.dtype, DType::f16);
    EXPECT_EQ(half_to_float(cast.data<std::uint16_t>()[0]), 1.0078125f);
    EXPECT_EQ(half_to_float(smoothed.data<std::uint16_t>()[0]), 1.0f);  // fp16 alone would keep 1.00390625
    EXPECT_EQ(half_to_float(smoothed.data<std::uint16_t>()[2]), -2.5f);
    const QuantizedInputs in = quantize_inputs(s, half_tensor(s.q_shape(), DType::bf16, {1, 2, 3, 4}),
                                               half_tensor(s.kv_shape(), DType::bf16, {1, 2, 3, 4}), v,
                                               sm80_recipe(QkGranularity::per_thread, 32));
    EXPECT_EQ(in.v_f16.bytes, cast.bytes);
    EXPECT_TRUE(in.v_fp8.bytes.empty());
    EXPECT_THROW(convert_v_f16(s, v, &cast), Error);  // a mean of another dtype
}

TEST(HostQuantizerSm90, RecipeIsCorePysSm90Path) {
    for (QkGranularity g : {QkGranularity::per_warp, QkGranularity::per_thread}) {
        const QuantizationRecipe r = sm90_recipe(g);
        EXPECT_EQ(r.qk.granularity, g);
        EXPECT_EQ(r.qk.q_block, 64);
        EXPECT_EQ(r.qk.q_warp, 16);
        EXPECT_EQ(r.qk.k_block, 128);
        EXPECT_EQ(r.qk.k_warp, 128);
        EXPECT_EQ(r.v_scale_max, 448.0f);
        EXPECT_EQ(r.v_pad_tokens, 128);
        EXPECT_FALSE(r.smooth_v);
        EXPECT_FALSE(r == QuantizationRecipe{});
    }
    EXPECT_EQ(sm90_recipe(QkGranularity::per_thread).describe(), "Q/K per_thread 64/16 128/128, V scale_max 448 padded to 128");
    EXPECT_EQ(QuantizationRecipe{}.describe(), "Q/K per_warp 128/32 64/64, V scale_max 2.25 padded to 64");
    // The shapes core.py allocates: per thread, 8 Q scales per 16-row warp and 4 K scales per 128-row block.
    AttentionShape s = tiny_shape(Layout::nhd, 65, 129);
    EXPECT_EQ(q_scale_shape(s, sm90_recipe(QkGranularity::per_warp).qk), (Shape{1, 1, 8}));
    EXPECT_EQ(q_scale_shape(s, sm90_recipe(QkGranularity::per_thread).qk), (Shape{1, 1, 64}));
    EXPECT_EQ(k_scale_shape(s, sm90_recipe(QkGranularity::per_warp).qk), (Shape{1, 1, 2}));
    EXPECT_EQ(k_scale_shape(s, sm90_recipe(QkGranularity::per_thread).qk), (Shape{1, 1, 8}));
    EXPECT_EQ(v_fp8_shape(s, 128), (Shape{1, 4, 1, 256}));
    EXPECT_EQ(v_fp8_shape(s), (Shape{1, 4, 1, 192}));
}

// Per thread, Q rows t and t + 8 of each 16-row warp share a scale (8 per warp); K rows 2g, 2g + 1,
// 2g + 8, 2g + 9, ... of each 128-row block share one (4 per block). Codes round half away from zero.
TEST(HostQuantizerSm90, PerThreadGroupsRowsAsTritonDoes) {
    const QkQuantization qk = sm90_recipe(QkGranularity::per_thread).qk;
    const AttentionShape s = tiny_shape(Layout::nhd, 20, 20);
    std::vector<float> q_values(20 * 4, 1.0f), k_values(20 * 4, 1.0f);
    for (std::int64_t t = 0; t < 20; ++t) q_values[t * 4] = static_cast<float>(t + 1);  // row t's max is t + 1
    for (std::int64_t t = 0; t < 20; ++t) k_values[t * 4] = static_cast<float>(t + 1);
    Tensor q_int8, q_scale;
    quantize_q(s, half_tensor(s.q_shape(), DType::f16, q_values), q_int8, q_scale, qk);
    ASSERT_EQ(q_scale.shape, (Shape{1, 1, 32}));
    const auto triton_scale = [](float amax) { return std::fma(amax, 1.0f / 127.0f, 1e-7f); };
    for (std::int64_t g = 0; g < 8; ++g) {
        EXPECT_EQ(q_scale.data<float>()[g], triton_scale(g + 9.0f)) << g;           // rows g and g + 8
        EXPECT_EQ(q_scale.data<float>()[8 + g], triton_scale(g < 4 ? g + 17.0f : 0.0f)) << g;  // row 16 + g, if any
    }
    for (std::int64_t j = 12; j < 32; ++j) EXPECT_EQ(q_scale.data<float>()[j], 1e-7f) << j;  // rows past the end
    // Row 0: 1 / (9 / 127) = 14.11 -> 14; the other channels 1 -> 14 too; row 8 holds the max, 127.
    EXPECT_EQ(q_int8.data<std::int8_t>()[0], 14);
    EXPECT_EQ(q_int8.data<std::int8_t>()[8 * 4], 127);

    Tensor k_int8, k_scale;
    const Tensor k = half_tensor(s.kv_shape(), DType::f16, k_values);
    const Tensor zero_mean(DType::f16, k_mean_shape(s));
    quantize_k(s, k, zero_mean, k_int8, k_scale, qk);
    ASSERT_EQ(k_scale.shape, (Shape{1, 1, 4}));
    // Group g: rows 2g, 2g + 1, 2g + 8, 2g + 9, 2g + 16, 2g + 17 (those below 20).
    for (std::int64_t g = 0; g < 4; ++g) {
        const float amax = g < 2 ? 2.0f * g + 18.0f : 2.0f * g + 10.0f;
        EXPECT_EQ(k_scale.data<float>()[g], triton_scale(amax)) << g;
    }
    // Half away from zero: 0.5 * 127 / 127.0000x rounds to 1 in magnitude either side of zero.
    const AttentionShape one = tiny_shape(Layout::nhd, 1, 1);
    quantize_q(one, half_tensor(one.q_shape(), DType::f16, {1.0f, 0.5f, -0.5f, 0.0f}), q_int8,
               q_scale, qk);
    const float scale = triton_scale(1.0f);
    EXPECT_EQ(q_int8.data<std::int8_t>()[1], static_cast<std::int8_t>(std::trunc(0.5f / scale + 0.5f)));
    EXPECT_EQ(q_int8.data<std::int8_t>()[2], -q_int8.data<std::int8_t>()[1]);
    EXPECT_EQ(q_int8.data<std::int8_t>()[3], 0);
}

TEST(HostQuantizerSm90, RejectsBlocksUpstreamCannotTake) {
    const AttentionShape s = tiny_shape(Layout::nhd, 4, 4);
    const Tensor q(DType::f16, s.q_shape());
    Tensor q_int8, q_scale;
    QkQuantization bad = sm90_recipe(QkGranularity::per_thread).qk;
    bad.q_warp = 12;
    try {
        quantize_q(s, q, q_int8, q_scale, bad);
        FAIL();
    } catch (const Error &error) {
        EXPECT_EQ(error.code(), ExitCode::usage);
        EXPECT_NE(std::string(error.what()).find("Q/K blocks 64/12 and 128/128: each warp must divide its block"),
                  std::string::npos)
            << error.what();
    }
    bad.q_warp = 4, bad.q_block = 64;
    EXPECT_THROW(quantize_q(s, q, q_int8, q_scale, bad), Error);  // per thread needs 8-row steps
    QuantizationRecipe smooth = sm90_recipe(QkGranularity::per_warp);
    smooth.smooth_v = true;
    EXPECT_THROW(quantize_inputs(s, q, Tensor(DType::f16, s.kv_shape()), Tensor(DType::f16, s.kv_shape()), smooth), Error);
}

}  // namespace s2tp::unit_host_quantizer
