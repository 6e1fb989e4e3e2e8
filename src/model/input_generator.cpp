#include "model/input_generator.h"

#include "support/errors.h"

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

// Fills a q- or kv-shaped tensor; value(b, h, token, d, channel_counter, element_counter) gives the
// logical value, counters are in canonical (b, h, token, d) order so the layout never changes values.
template <typename ValueFn>
Tensor fill(const AttentionShape &shape, bool kv, DType dtype, ValueFn value) {
    Tensor tensor(dtype, kv ? shape.kv_shape() : shape.q_shape());
    std::uint16_t *out = tensor.data<std::uint16_t>();
    const std::int64_t heads = kv ? shape.heads_kv : shape.heads_q;
    const std::int64_t len = kv ? shape.len_kv : shape.len_q;
    for (std::int64_t b = 0; b < shape.batch; ++b)
        for (std::int64_t h = 0; h < heads; ++h)
            for (std::int64_t t = 0; t < len; ++t)
                for (std::int64_t d = 0; d < shape.head_dim; ++d) {
                    const auto channel = static_cast<std::uint64_t>((b * heads + h) * shape.head_dim + d);
                    const auto element = static_cast<std::uint64_t>(((b * heads + h) * len + t) * shape.head_dim + d);
                    out[shape.offset(kv, b, h, t, d)] = to_storage(value(channel, element), dtype);
                }
    return tensor;
}

}  // namespace

GeneratedInputs generate_inputs(const AttentionShape &shape, DType dtype, std::uint64_t seed) {
    shape.validate("input generator");
    if (dtype != DType::f16 && dtype != DType::bf16)
        fail(ExitCode::usage, std::string("input generator: dtype must be f16 or bf16, not ") + dtype_name(dtype));

    const CounterRng q_rng(seed, q_values), k_rng(seed, k_values), v_rng(seed, v_values);
    const CounterRng q_scale(seed, q_channel_scale), k_scale(seed, k_channel_scale),
        k_offset(seed, k_channel_offset), v_scale(seed, v_channel_scale), v_mean(seed, v_channel_mean);

    GeneratedInputs inputs;
    inputs.q = fill(shape, false, dtype, [&](std::uint64_t channel, std::uint64_t element) {
        return q_rng.normal(element) * q_scale.sixteenths(channel, 8, 32);
    });
    inputs.k = fill(shape, true, dtype, [&](std::uint64_t channel, std::uint64_t element) {
        return k_rng.normal(element) * k_scale.sixteenths(channel, 8, 32) + k_offset.sixteenths(channel, -64, 64);
    });
    inputs.v = fill(shape, true, dtype, [&](std::uint64_t channel, std::uint64_t element) {
        return (v_rng.normal(element) + v_mean.sixteenths(channel, -8, 8)) * v_scale.sixteenths(channel, 4, 64);
    });
    return inputs;
}

}  // namespace s2tp
