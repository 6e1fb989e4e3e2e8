#include "model/input_generator.h"

#include "support/errors.h"

#include <algorithm>
#include <array>
#include <thread>
#include <vector>

namespace s2tp {

namespace {

constexpr std::uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;

// SplitMix64's output function: a bijective 64-bit mixer with good avalanche.
std::uint64_t mix64(std::uint64_t z) {
    z += kGoldenGamma;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Independent random streams of one seed: each tensor and each per-channel parameter has its own.
enum Stream : std::uint64_t {
    q_values = 1,
    k_values,
    v_values,
    q_channel_scale,
    k_channel_scale,
    k_channel_offset,
    v_channel_scale,
    v_channel_mean,
};

class CounterRng {
public:
    CounterRng(std::uint64_t seed, Stream stream) : key_(mix64(mix64(seed) ^ (stream * 0xd1b54a32d192ed03ull))) {}

    std::uint64_t bits(std::uint64_t counter) const { return mix64(key_ + counter * kGoldenGamma); }

    // Irwin-Hall: the sum of 12 uniform 32-bit integers, centred and scaled to unit variance. The sum is
    // an exact integer below 2^36 and the scaling is by a power of two, so the result is exact in double
    // on every machine (unlike Box-Muller, which needs log and cos from whatever libm is present).
    // The tails stop at +-6 sigma, which only helps quantized experiments stay free of freak outliers.
    double normal(std::uint64_t counter) const {
        std::uint64_t sum = 0;
        for (std::uint64_t i = 0; i < 6; ++i) {
            const std::uint64_t word = bits(counter * 6 + i);
            sum += (word & 0xffffffffull) + (word >> 32);
        }
        const double two_32 = 4294967296.0;
        return (static_cast<double>(sum) - 6.0 * two_32) / two_32;
    }

    // A value k/16 with k uniform in [low_sixteenths, high_sixteenths]: few bits, so products with
    // normal() stay exact in double.
    double sixteenths(std::uint64_t counter, int low_sixteenths, int high_sixteenths) const {
        const auto span = static_cast<std::uint64_t>(high_sixteenths - low_sixteenths + 1);
        return static_cast<double>(low_sixteenths + static_cast<int>(bits(counter) % span)) / 16.0;
    }

private:
    std::uint64_t key_;
};

std::uint16_t to_storage(double value, DType dtype) {
    const auto single = static_cast<float>(value);
    return dtype == DType::f16 ? float_to_half(single) : float_to_bf16(single);
}

// Per-channel parameters of one tensor: a (low, high) sixteenths range per parameter, drawn once per
// (batch, head, channel) rather than once per element.
struct ChannelDraw {
    const CounterRng *rng;
    int low_sixteenths, high_sixteenths;
};

// Fills a q- or kv-shaped tensor. value(normal, params) gives the logical value from the element's
// normal deviate and its channel's parameters (in `draws` order). Counters are in canonical
// (b, h, token, d) order, so the layout never changes values, and every element is a pure function of
// its counters, so splitting the rows among threads cannot change a byte.
template <std::size_t Params, typename ValueFn>
Tensor fill(const AttentionShape &shape, bool kv, DType dtype, const CounterRng &values,
            const std::array<ChannelDraw, Params> &draws, ValueFn value, unsigned threads) {
    Tensor tensor(dtype, kv ? shape.kv_shape() : shape.q_shape());
    std::uint16_t *out = tensor.data<std::uint16_t>();
    const std::int64_t heads = kv ? shape.heads_kv : shape.heads_q;
    const std::int64_t len = kv ? shape.len_kv : shape.len_q;
    const std::int64_t dim = shape.head_dim;

    std::vector<std::array<double, Params>> channel_params(static_cast<std::size_t>(shape.batch * heads * dim));
    for (std::size_t c = 0; c < channel_params.size(); ++c)
        for (std::size_t p = 0; p < Params; ++p)
            channel_params[c][p] = draws[p].rng->sixteenths(c, draws[p].low_sixteenths, draws[p].high_sixteenths);

    const std::int64_t rows = shape.batch * heads * len;  // one row: the head_dim values of one token
    auto fill_rows = [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t row = first; row < last; ++row) {
            const std::int64_t bh = row / len, t = row % len, b = bh / heads, h = bh % heads;
            for (std::int64_t d = 0; d < dim; ++d) {
                const auto element = static_cast<std::uint64_t>(row * dim + d);
                const double v = value(values.normal(element), channel_params[static_cast<std::size_t>(bh * dim + d)]);
                out[shape.offset(kv, b, h, t, d)] = to_storage(v, dtype);
            }
        }
    };
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    const auto workers = static_cast<std::int64_t>(std::min<std::int64_t>(threads, std::max<std::int64_t>(1, rows / 4096)));
    std::vector<std::thread> pool;
    for (std::int64_t w = 1; w < workers; ++w) pool.emplace_back(fill_rows, rows * w / workers, rows * (w + 1) / workers);
    fill_rows(0, rows / workers);
    for (auto &thread : pool) thread.join();
    return tensor;
}

}  // namespace

GeneratedInputs generate_inputs(const AttentionShape &shape, DType dtype, std::uint64_t seed, unsigned threads) {
    shape.validate("input generator");
    if (dtype != DType::f16 && dtype != DType::bf16)
        fail(ExitCode::usage, std::string("input generator: dtype must be f16 or bf16, not ") + dtype_name(dtype));

    const CounterRng q_rng(seed, q_values), k_rng(seed, k_values), v_rng(seed, v_values);
    const CounterRng q_scale(seed, q_channel_scale), k_scale(seed, k_channel_scale),
        k_offset(seed, k_channel_offset), v_scale(seed, v_channel_scale), v_mean(seed, v_channel_mean);

    using Params2 = std::array<double, 2>;
    using Params1 = std::array<double, 1>;
    GeneratedInputs inputs;
    inputs.q = fill<1>(shape, false, dtype, q_rng, {ChannelDraw{&q_scale, 8, 32}},
                       [](double normal, const Params1 &p) { return normal * p[0]; }, threads);
    inputs.k = fill<2>(shape, true, dtype, k_rng, {ChannelDraw{&k_scale, 8, 32}, ChannelDraw{&k_offset, -64, 64}},
                       [](double normal, const Params2 &p) { return normal * p[0] + p[1]; }, threads);
    inputs.v = fill<2>(shape, true, dtype, v_rng, {ChannelDraw{&v_mean, -8, 8}, ChannelDraw{&v_scale, 4, 64}},
                       [](double normal, const Params2 &p) { return (normal + p[0]) * p[1]; }, threads);
    return inputs;
}

}  // namespace s2tp
