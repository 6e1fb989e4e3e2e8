#include "formats/unified_diff.h"

#include "support/errors.h"
#include "support/file_io.h"
#include "support/text_lines.h"

namespace s2tp {
namespace {

std::string_view trimmed(std::string_view text) {
    const auto begin = text.find_first_not_of(" \t\r\n");
    if (begin == std::string_view::npos) return {};
    const auto end = text.find_last_not_of(" \t\r\n");
    return text.substr(begin, end - begin + 1);
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

std::string_view strip_prefix(std::string_view path) {
    return starts_with(path, "a/") || starts_with(path, "b/") ? path.substr(2) : path;
}

}  // namespace

std::vector<std::string> patch_paths(std::string_view diff, const std::string &source) {
    std::vector<std::string> paths;
    int number = 0;
    auto check = [&](std::string_view path) {
        path = path.substr(0, path.find('\t'));  // "--- a/x\t2026-..." from diff -u
        path = trimmed(path);
        if (path == "/dev/null") return;
        const std::string stripped(strip_prefix(path));
        const std::filesystem::path p(stripped);
        bool escapes = p.is_absolute() || stripped.empty();
        for (const auto &part : p) escapes = escapes || part == ".." || part == ".git";
        if (escapes)
            fail(ExitCode::usage, source + ":" + std::to_string(number) + ": the patch touches '" + std::string(path) +
                                      "', which is outside the source tree; refusing to apply it");
        paths.push_back(stripped);
    };
    for (std::string_view line : split_lines(diff)) {
        ++number;
        if (starts_with(line, "--- ") || starts_with(line, "+++ ")) check(line.substr(4));
        else if (starts_with(line, "rename from ")) check(line.substr(12));
        else if (starts_with(line, "copy from ")) check(line.substr(10));
        else if (starts_with(line, "rename to ")) check(line.substr(10));
        else if (starts_with(line, "copy to ")) check(line.substr(8));
        else if (starts_with(line, "diff --git ")) {
            const std::string_view rest = line.substr(11);
            auto split = rest.find(" b/");
            if (split == std::string_view::npos) split = rest.find(' ');
            if (split == std::string_view::npos)
                fail(ExitCode::usage, source + ":" + std::to_string(number) + ": malformed 'diff --git' line");
            check(rest.substr(0, split));
            check(rest.substr(split + 1));
        }
    }
    if (paths.empty()) fail(ExitCode::usage, source + ": not a unified diff (no ---/+++ file lines)");
    return paths;
}

std::vector<std::string> patch_paths(const std::filesystem::path &patch) {
    return patch_paths(read_text_file(patch), patch.string());
}

}  // namespace s2tp
