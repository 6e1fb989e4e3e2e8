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

}  // namespace s2tp
