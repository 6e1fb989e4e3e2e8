#include "gpu/upstream_launchers.h"

#include "formats/demangled_name.h"
#include "support/errors.h"

namespace s2tp {

std::array<std::int64_t, 4> contiguous_strides(const std::array<std::int64_t, 4> &sizes) {
    return {sizes[1] * sizes[2] * sizes[3], sizes[2] * sizes[3], sizes[3], 1};
}

const char *template_bool(bool value) { return value ? "true" : "false"; }

std::string select_one_entry(const std::vector<std::string> &entry_names,
                             const std::function<bool(const std::string &mangled)> &serves, const std::string &wanted,
                             const std::string &which, const std::string &cubin) {
    std::vector<std::string> matches;
    std::string candidates;
    for (const std::string &mangled : entry_names) {
        candidates += "\n  " + demangle(mangled).value_or(mangled);
        if (serves(mangled)) matches.push_back(mangled);
    }
    if (matches.size() == 1) return matches.front();
    std::string matched;
    for (const std::string &mangled : matches) matched += "\n  " + demangle(mangled).value_or(mangled);
    fail(ExitCode::usage,
         "cubin '" + cubin + "' has " + (matches.empty() ? "no entry" : std::to_string(matches.size()) + " entries") +
             " matching " + wanted + " (" + which + ")" +
             (matches.empty() ? "; its entries:" + (candidates.empty() ? std::string(" none") : candidates)
                              : "; they are:" + matched));
}

}  // namespace s2tp
