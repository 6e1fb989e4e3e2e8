// The arithmetic of the s2tp_generate_inputs_* kernels (quantize.cu): one element of
// model/input_generator.cpp's q, k or v, step for step, so that the time stage need not generate on
// the host and upload a gigabyte. It compiles for the GPU inside nvcc and as plain C++ on the host,
// where the unit tests compare it with generate_inputs without a GPU.
//
// Why the bytes are the host's: the integer hashing is exact by nature. Every double step is exact as
// well (a sum of 32-bit words below 2^36, scalings by powers of two, products of a deviate with 2^-32
// resolution and a k/16 of at most 7 bits, sums below 2^5 with 2^-36 resolution), and on the GPU each
// is an explicit round-to-nearest intrinsic, so that no contraction or reassociation under
// --use_fast_math can touch one. The only roundings are double -> float (IEEE round to nearest even; a
// nonzero value is at least 2^-33 in magnitude, never a float subnormal, so the .ftz that
// --use_fast_math adds to that conversion cannot apply) and float -> f16/bf16, done with the host's
// own integer routines (formats/tensor.cpp) rather than conversion instructions.
#ifndef SAGE2TP_INPUT_GENERATOR_MATH_H
#define SAGE2TP_INPUT_GENERATOR_MATH_H

#include <stdint.h>
#include <string.h>

#include "sage2tp_abi.h"

#if defined(__CUDACC__)
#define S2TP_GENERATOR_FN __host__ __device__ __forceinline__
#else
#define S2TP_GENERATOR_FN inline
#endif

namespace s2tp {
namespace generator {

constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;

// The host's random streams (model/input_generator.cpp, enum Stream).
constexpr uint64_t kStreamQValues = 1, kStreamKValues = 2, kStreamVValues = 3, kStreamQScale = 4,
                   kStreamKScale = 5, kStreamKOffset = 6, kStreamVScale = 7, kStreamVMean = 8;

// ---- IEEE steps, each rounded once to nearest (all exact here, see above) ----

S2TP_GENERATOR_FN double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

S2TP_GENERATOR_FN double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}

S2TP_GENERATOR_FN double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dsub_rn(a, b);
#else
    return a - b;
#endif
}

S2TP_GENERATOR_FN double u64_to_double(uint64_t value) {
#if defined(__CUDA_ARCH__)
    return __ull2double_rn(value);
#else
    return static_cast<double>(value);
#endif
}

S2TP_GENERATOR_FN double int_to_double(int value) {
#if defined(__CUDA_ARCH__)
    return __int2double_rn(value);
#else
    return static_cast<double>(value);
#endif
}

S2TP_GENERATOR_FN float double_to_float(double value) {
#if defined(__CUDA_ARCH__)
    return __double2float_rn(value);
#else
    return static_cast<float>(value);
#endif
}

S2TP_GENERATOR_FN uint32_t float_bits(float value) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(value);
#else
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
#endif
}

// ---- The host generator's hashing (model/input_generator.cpp) ----

S2TP_GENERATOR_FN uint64_t mix64(uint64_t z) {
    z += kGoldenGamma;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

S2TP_GENERATOR_FN uint64_t stream_key(uint64_t seed, uint64_t stream) {
    return mix64(mix64(seed) ^ (stream * 0xd1b54a32d192ed03ull));
}

S2TP_GENERATOR_FN uint64_t random_bits(uint64_t key, uint64_t counter) { return mix64(key + counter * kGoldenGamma); }

// Irwin-Hall over 12 uniform 32-bit words, centred and scaled by 2^-32 (the host divides by 2^32: the
// same exact result).
S2TP_GENERATOR_FN double normal_deviate(uint64_t key, uint64_t counter) {
    uint64_t sum = 0;
    for (uint64_t i = 0; i < 6; ++i) {
        const uint64_t word = random_bits(key, counter * 6 + i);
        sum += (word & 0xffffffffull) + (word >> 32);
    }
    return mul_rn(sub_rn(u64_to_double(sum), 6.0 * 4294967296.0), 1.0 / 4294967296.0);
}

// k/16 with k uniform in [Low, High]; the span is a constant so the 64-bit remainder is cheap.
template <int Low, int High>
S2TP_GENERATOR_FN double sixteenths(uint64_t key, uint64_t counter) {
    constexpr uint64_t kSpan = static_cast<uint64_t>(High - Low + 1);
    return mul_rn(int_to_double(Low + static_cast<int>(random_bits(key, counter) % kSpan)), 0.0625);
}

// ---- The host's float -> f16 / bf16 roundings (formats/tensor.cpp), as integer code ----

S2TP_GENERATOR_FN uint32_t shift_round_even(uint32_t mantissa, uint32_t shift) {
    uint32_t kept = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1u))) {
        ++kept;
    }
    return kept;
}

S2TP_GENERATOR_FN uint16_t float_to_half_bits(float value) {
    const uint32_t bits = float_bits(value);
    const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) {
        return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
    }
    if (magnitude >= 0x477ff000u) {
        return static_cast<uint16_t>(sign | 0x7c00u);
    }
    const uint32_t exponent = magnitude >> 23;
    if (exponent >= 113) {
        const uint32_t rebased = ((exponent - 112) << 23) | (magnitude & 0x7fffffu);
        return static_cast<uint16_t>(sign | shift_round_even(rebased, 13));
    }
    if (exponent < 102) {
        return sign;
    }
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    return static_cast<uint16_t>(sign | shift_round_even(mantissa, 126 - exponent));
}

S2TP_GENERATOR_FN uint16_t float_to_bf16_bits(float value) {
    const uint32_t bits = float_bits(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        return static_cast<uint16_t>((bits >> 16) | 0x0040u);
    }
    return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// ---- One element ----

struct GeneratedElement {
    uint32_t offset;  // in elements, from p's strides
    uint16_t bits;    // f16 (half) or bf16
};

// Element `element` (canonical (b, h, token, d) order, below batch * heads * len * head_dim) of the
// tensor p describes.
S2TP_GENERATOR_FN GeneratedElement generated_element(const s2tp_generate_params &p, uint32_t element, bool half) {
    const uint32_t row = element / p.head_dim, d = element % p.head_dim;
    const uint32_t bh = row / p.len, token = row % p.len, b = bh / p.heads, h = bh % p.heads;
    const uint64_t channel = static_cast<uint64_t>(bh) * p.head_dim + d;

    double value;
    if (p.tensor == S2TP_GENERATED_Q) {
        const double normal = normal_deviate(stream_key(p.seed, kStreamQValues), element);
        value = mul_rn(normal, sixteenths<8, 32>(stream_key(p.seed, kStreamQScale), channel));
    } else if (p.tensor == S2TP_GENERATED_K) {
        const double normal = normal_deviate(stream_key(p.seed, kStreamKValues), element);
        const double scale = sixteenths<8, 32>(stream_key(p.seed, kStreamKScale), channel);
        const double offset = sixteenths<-64, 64>(stream_key(p.seed, kStreamKOffset), channel);
        value = add_rn(mul_rn(normal, scale), offset);
    } else {
        const double normal = normal_deviate(stream_key(p.seed, kStreamVValues), element);
        const double mean = sixteenths<-8, 8>(stream_key(p.seed, kStreamVMean), channel);
        const double scale = sixteenths<4, 64>(stream_key(p.seed, kStreamVScale), channel);
        value = mul_rn(add_rn(normal, mean), scale);
    }
    const float single = double_to_float(value);
    GeneratedElement generated;
    generated.offset = b * p.stride_bz + token * p.stride_seq + h * p.stride_h + d;
    generated.bits = half ? float_to_half_bits(single) : float_to_bf16_bits(single);
    return generated;
}

}  // namespace generator
}  // namespace s2tp

#endif  // SAGE2TP_INPUT_GENERATOR_MATH_H
