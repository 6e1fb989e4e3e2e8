#include "support/number_format.h"

#include "support/errors.h"

#include <charconv>
#include <system_error>

namespace s2tp {

namespace {

template <typename... Format> std::string to_text(double value, Format... format) {
    char buffer[128];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, format...);
    if (result.ec != std::errc()) fail(ExitCode::internal, "cannot format the number " + std::to_string(value));
    return std::string(buffer, result.ptr);
}

}  // namespace

std::string fixed(double value, int decimals) { return to_text(value, std::chars_format::fixed, decimals); }

std::string shortest(double value) { return to_text(value); }

std::string compact(double value, int decimals) {
    std::string text = fixed(value, decimals);
    if (text.find('.') == std::string::npos) return text;
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    return text;
}

std::string significant(double value, int digits) { return to_text(value, std::chars_format::general, digits); }

std::string signed_percent(double change, int decimals) {
    const std::string text = fixed(change * 100, decimals);
    return (change >= 0 && text[0] != '-' ? "+" : "") + text + "%";
}

std::string fixed_or_missing(const std::optional<double> &value, int decimals) {
    return value ? fixed(*value, decimals) : missing_figure;
}

std::string interval_text(const std::optional<double> &median, const std::optional<double> &low,
                          const std::optional<double> &high, const std::optional<double> &confidence,
                          const std::string &inside) {
    const std::string level = confidence ? compact(*confidence * 100, 1) + "% CI " : std::string("CI ");
    return fixed_or_missing(median, 4) + " (" + level + fixed_or_missing(low, 4) + " .. " + fixed_or_missing(high, 4) +
           inside + ")";
}

}  // namespace s2tp
