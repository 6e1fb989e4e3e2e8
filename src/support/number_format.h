// How sage2tp prints numbers, defined once. std::to_chars never uses a decimal comma, whatever the
// process locale, so tables, checkpoints' summaries, SVG coordinates and reports read the same
// everywhere.
#pragma once

#include <optional>
#include <string>

namespace s2tp {

// `value` with exactly `decimals` digits after the point: fixed(55.4412, 3) == "55.441".
std::string fixed(double value, int decimals);

// The shortest text that reads back as `value`: 1e-05, 0.5, 86400.
std::string shortest(double value);

// Trailing zeros (and a trailing point) dropped from fixed(value, decimals): 4, 1.5, 2.25.
std::string compact(double value, int decimals);

// The one spelling of a missing value in every table and text: a figure that no checkpoint records
// (never shown as 0), a run whose manifest cannot be read, a stage without a checkpoint.
inline constexpr const char *missing_figure = "-";

// fixed(*value, decimals), or missing_figure when there is no value.
std::string fixed_or_missing(const std::optional<double> &value, int decimals);

// A ratio and its interval, the one spelling of every table and text: "1.3441 (95% CI 1.3427 .. 1.3451)",
// the level from the figure's confidence ("CI" alone when it records none), missing_figure for a figure
// not recorded; `inside` is added within the parentheses (", half-width 0.089%").
std::string interval_text(const std::optional<double> &median, const std::optional<double> &low,
                          const std::optional<double> &high, const std::optional<double> &confidence,
                          const std::string &inside = "");

// `digits` significant digits, exponent form for very small or large values: 0.999512, 3.18e-05, nan.
std::string significant(double value, int digits);

// A signed percentage of a relative change: +34.9%, -2.7% (`change` 0.349 -> "+34.9%").
std::string signed_percent(double change, int decimals);

}  // namespace s2tp
