#include "formats/utf8.h"

namespace s2tp {

std::optional<std::size_t> first_invalid_utf8(std::string_view text) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    std::size_t i = 0;
    while (i < text.size()) {
        const unsigned char lead = byte(i);
        if (lead < 0x80) {
            ++i;
            continue;
        }
        // The allowed range of the second byte narrows for E0, ED, F0 and F4: that is what excludes
        // overlong forms, surrogates (U+D800..U+DFFF) and code points above U+10FFFF (RFC 3629, section 4).
        std::size_t length = 0;
        unsigned char second_min = 0x80, second_max = 0xBF;
        if (lead >= 0xC2 && lead <= 0xDF) {
            length = 2;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            length = 3;
            if (lead == 0xE0) second_min = 0xA0;
            if (lead == 0xED) second_max = 0x9F;
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            length = 4;
            if (lead == 0xF0) second_min = 0x90;
            if (lead == 0xF4) second_max = 0x8F;
        } else {
            return i;  // a continuation byte without a lead, C0/C1 (always overlong), or F5..FF
        }
        if (text.size() - i < length) return i;
        if (byte(i + 1) < second_min || byte(i + 1) > second_max) return i;
        for (std::size_t k = 2; k < length; ++k)
            if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return i;
        i += length;
    }
    return std::nullopt;
}

}  // namespace s2tp
