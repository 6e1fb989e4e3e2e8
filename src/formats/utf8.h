// Strict UTF-8 validation (RFC 3629): what sage2tp checks before handing text to a parser, so that a
// bad byte is reported by its offset instead of by whatever the parser makes of it.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace s2tp {

// The byte offset of the first byte that does not start or continue a well-formed UTF-8 sequence
// (a stray continuation byte, a truncated sequence, an overlong form, a surrogate, a code point above
// U+10FFFF), or nullopt when all of `text` is valid.
std::optional<std::size_t> first_invalid_utf8(std::string_view text);

}  // namespace s2tp
