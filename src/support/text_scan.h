// Scanning tool output by hand, the way every log parser in sage2tp does it (never std::regex, whose
// libstdc++ implementation recurses per character): ASCII character classes and prefix consumption.
#pragma once

#include <string>
#include <string_view>

namespace s2tp {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_word(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

// Removes `prefix` from the front of `text` when it is there; says whether it was.
inline bool consume(std::string_view &text, std::string_view prefix) {
    if (text.substr(0, prefix.size()) != prefix) return false;
    text.remove_prefix(prefix.size());
    return true;
}

// `text` without the ASCII white space (space, \t, \r, \n, \v, \f) at either end. The std::string
// overload returns a copy, for a temporary such as a process's output.
inline std::string_view trimmed(std::string_view text) {
    constexpr std::string_view kWhiteSpace = " \t\r\n\v\f";
    const auto begin = text.find_first_not_of(kWhiteSpace);
    if (begin == std::string_view::npos) return {};
    return text.substr(begin, text.find_last_not_of(kWhiteSpace) - begin + 1);
}
inline std::string trimmed(const std::string &text) { return std::string(trimmed(std::string_view(text))); }

}  // namespace s2tp
