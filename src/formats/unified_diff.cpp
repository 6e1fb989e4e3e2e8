#include "formats/unified_diff.h"

#include "support/errors.h"
#include "support/file_io.h"
#include "support/text_lines.h"
#include "support/text_scan.h"

#include <optional>

namespace s2tp {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

std::string_view strip_prefix(std::string_view path) {
    return starts_with(path, "a/") || starts_with(path, "b/") ? path.substr(2) : path;
}

// git writes a path with unusual bytes C-quoted: "b/\056\056/x" is b/../x (see git-config(1),
// core.quotePath). Decodes the quoted path at the start of `text` and moves `text` past its closing
// quote; nullopt when it is malformed.
std::optional<std::string> unquote_c_path(std::string_view &text) {
    std::string decoded;
    std::size_t i = 1;
    while (i < text.size() && text[i] != '"') {
        char c = text[i++];
        if (c != '\\') {
            decoded += c;
            continue;
        }
        if (i >= text.size()) return std::nullopt;
        c = text[i++];
        switch (c) {
            case 'a': decoded += '\a'; break;
            case 'b': decoded += '\b'; break;
            case 'f': decoded += '\f'; break;
            case 'n': decoded += '\n'; break;
            case 'r': decoded += '\r'; break;
            case 't': decoded += '\t'; break;
            case 'v': decoded += '\v'; break;
            case '\\': decoded += '\\'; break;
            case '"': decoded += '"'; break;
            default: {
                if (c < '0' || c > '3') return std::nullopt;
                int value = c - '0';
                for (int digit = 0; digit < 2; ++digit) {
                    if (i >= text.size() || text[i] < '0' || text[i] > '7') return std::nullopt;
                    value = value * 8 + (text[i++] - '0');
                }
                decoded += static_cast<char>(value);
            }
        }
    }
    if (i >= text.size()) return std::nullopt;
    text.remove_prefix(i + 1);
    return decoded;
}

// A file mode on a git header line that would make the tree hold something other than plain files.
bool is_link_mode(std::string_view mode) {
    mode = trimmed(mode);
    return mode == "120000" || mode == "160000";
}

}  // namespace

std::vector<std::string> patch_paths(std::string_view diff, const std::string &source) {
    std::vector<std::string> paths;
    int number = 0;
    auto where = [&] { return source + ":" + std::to_string(number) + ": "; };
    auto check = [&](std::string_view path) {
        path = trimmed(path);
        std::string decoded;
        if (!path.empty() && path.front() == '"') {
            std::string_view rest = path;
            const auto unquoted = unquote_c_path(rest);
            if (!unquoted || !trimmed(rest.substr(0, rest.find('\t'))).empty())
                fail(ExitCode::usage, where() + "malformed quoted path " + std::string(path));
            decoded = *unquoted;
        } else {
            decoded = std::string(trimmed(path.substr(0, path.find('\t'))));  // "--- a/x\t2026-..." from diff -u
        }
        if (decoded == "/dev/null") return;
        const std::string stripped(strip_prefix(decoded));
        const std::filesystem::path p(stripped);
        bool escapes = p.is_absolute() || stripped.empty() || stripped.find('\0') != std::string::npos;
        for (const auto &part : p) escapes = escapes || part == ".." || part == ".git";
        if (escapes)
            fail(ExitCode::usage, where() + "the patch touches '" + decoded +
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
            std::string_view rest = trimmed(line.substr(11));
            if (!rest.empty() && rest.front() == '"') {
                // a quoted first path; the second follows it, quoted or not
                std::string_view after = rest;
                if (!unquote_c_path(after))
                    fail(ExitCode::usage, where() + "malformed quoted path in 'diff --git' line");
                check(rest.substr(0, rest.size() - after.size()));
                check(after);
                continue;
            }
            auto split = rest.find(" \"");
            if (split == std::string_view::npos) split = rest.find(" b/");
            if (split == std::string_view::npos) split = rest.find(' ');
            if (split == std::string_view::npos)
                fail(ExitCode::usage, where() + "malformed 'diff --git' line");
            check(rest.substr(0, split));
            check(rest.substr(split + 1));
        } else if (starts_with(line, "new file mode ") || starts_with(line, "deleted file mode ") ||
                   starts_with(line, "new mode ") || starts_with(line, "old mode ") ||
                   (starts_with(line, "index ") && line.find(' ', 6) != std::string_view::npos)) {
            const std::string_view mode = line.substr(line.rfind(' ') + 1);
            if (is_link_mode(mode))
                fail(ExitCode::usage, where() + "the patch makes a " +
                                          std::string(trimmed(mode) == "120000" ? "symbolic link" : "gitlink (submodule)") +
                                          " (mode " + std::string(trimmed(mode)) +
                                          "); only regular files may be patched, refusing to apply it");
        }
    }
    if (paths.empty()) fail(ExitCode::usage, source + ": not a unified diff (no ---/+++ file lines)");
    return paths;
}

std::vector<std::string> patch_paths(const std::filesystem::path &patch) {
    return patch_paths(read_text_file(patch), patch.string());
}

}  // namespace s2tp
