// What a unified diff (git diff, diff -u) touches: the paths of its file lines, read before the patch
// is applied so that one reaching outside the source tree is refused up front.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace s2tp {

// Paths the diff touches (a/ and b/ prefixes removed), from its ---/+++, "diff --git", rename and copy
// lines. `source` names the diff in messages. Throws Error(usage) "source:line: ..." when a path is
// absolute, climbs out with "..", or reaches into .git, and when no file line is present at all.
// git's C-quoted paths ("b/\056\056/x") are decoded before that check. A mode line (new file mode,
// new mode, old mode, deleted file mode, index) with 120000 (symbolic link) or 160000 (gitlink) is
// refused too: a link in the tree could point anywhere.
std::vector<std::string> patch_paths(std::string_view diff, const std::string &source);

// The same for a patch file; one that cannot be read is Error(usage) naming it.
std::vector<std::string> patch_paths(const std::filesystem::path &patch);

}  // namespace s2tp
