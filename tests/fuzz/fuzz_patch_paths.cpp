// The unified-diff path reader that guards prepare: any text ends as paths inside the tree or
// Error(usage); a returned path is never absolute and never climbs out.
#include "formats/unified_diff.h"
#include "support/errors.h"

#include <cstdlib>
#include <filesystem>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::string_view diff(reinterpret_cast<const char *>(data), size);
    try {
        for (const std::string &path : s2tp::patch_paths(diff, "fuzz.patch")) {
            const std::filesystem::path p(path);
            if (path.empty() || p.is_absolute()) std::abort();
            for (const auto &part : p)
                if (part == ".." || part == ".git") std::abort();
        }
    } catch (const s2tp::Error &) {
    }
    return 0;
}
