// Whole-number arithmetic of sizes, tiles and grids, written once.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>

namespace s2tp {

// The number of `unit`-sized pieces that cover `count` (count >= 0, unit > 0): a grid's blocks, a
// length's tiles.
constexpr std::int64_t ceil_div(std::int64_t count, std::int64_t unit) { return (count + unit - 1) / unit; }

// `count` rounded up to a multiple of `unit`: an allocation's granularity, a padded length.
constexpr std::int64_t round_up(std::int64_t count, std::int64_t unit) { return ceil_div(count, unit) * unit; }

// The product of `factors` (each >= 0), or nothing when it does not fit in 64 bits: every size that a
// manifest, a workload or a command line multiplies (batch x heads x tokens x head_dim) goes through
// here before it is compared with a limit, so that no overflow can wrap it below the limit.
inline std::optional<std::int64_t> checked_product(std::initializer_list<std::int64_t> factors) {
    std::int64_t product = 1;
    for (std::int64_t factor : factors)
        if (__builtin_mul_overflow(product, factor, &product)) return std::nullopt;
    return product;
}

}  // namespace s2tp
