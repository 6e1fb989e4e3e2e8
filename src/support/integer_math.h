// Whole-number arithmetic of sizes, tiles and grids, written once.
#pragma once

#include <cstdint>

namespace s2tp {

// The number of `unit`-sized pieces that cover `count` (count >= 0, unit > 0): a grid's blocks, a
// length's tiles.
constexpr std::int64_t ceil_div(std::int64_t count, std::int64_t unit) { return (count + unit - 1) / unit; }

// `count` rounded up to a multiple of `unit`: an allocation's granularity, a padded length.
constexpr std::int64_t round_up(std::int64_t count, std::int64_t unit) { return ceil_div(count, unit) * unit; }

}  // namespace s2tp
