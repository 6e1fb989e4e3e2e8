// toml++ is used in its compiled mode (TOML_HEADER_ONLY=0 for the whole project) with its
// implementation built here, once, into sage2tp itself: no libtomlplusplus.so at run time, so the
// binary runs on GPU hosts that do not have the package. Its configuration is support/toml_config.h.
// toml_config.h has already read toml++'s preprocessor.h, which set TOML_IMPLEMENTATION to 0; on this
// platform nothing there depends on it, and toml.h reads it only now.
#undef TOML_IMPLEMENTATION
#define TOML_IMPLEMENTATION 1
#include <toml++/toml.h>

#include <string>

namespace s2tp {

void toml_internal_check_failed(const char *expression, const char *file, int line) {
    // toml++ positions its own errors; this check does not know where the parser stood, so the
    // message carries the check instead and callers print it without a line number.
    throw toml::parse_error(("toml++ cannot parse this input (its internal check '" + std::string(expression) +
                             "' failed at " + file + ":" + std::to_string(line) + ")")
                                .c_str(),
                            toml::source_region{});
}

}  // namespace s2tp
