// The paths a patch touches, read before prepare applies it: inside the tree or refused, naming the line.
#include "formats/unified_diff.h"
#include "support/errors.h"

#include <gtest/gtest.h>

namespace s2tp {
namespace {

std::string refusal(const std::string &diff) {
    try {
        patch_paths(diff, "c.patch");
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        return e.what();
    }
    return "";
}

TEST(PatchPaths, ReadsGitAndDiffUFileLines) {
    const std::string diff = "diff --git a/kernels/x.cu b/kernels/x.cu\n"
                             "--- a/kernels/x.cu\t2026-01-01 00:00:00\n"
                             "+++ b/kernels/x.cu\r\n"
                             "@@ -1 +1 @@\n-a\n+b\n"
                             "diff --git a/old.h b/new.h\nrename from old.h\nrename to new.h\n"
                             "--- /dev/null\n+++ b/added.cu\n";
    const std::vector<std::string> expected = {"kernels/x.cu", "kernels/x.cu", "kernels/x.cu", "kernels/x.cu",
                                               "old.h",        "new.h",        "old.h",        "new.h",
                                               "added.cu"};
    EXPECT_EQ(patch_paths(diff, "c.patch"), expected);
}

TEST(PatchPaths, PathsOutsideTheTreeAreRefusedWithTheLine) {
    EXPECT_NE(refusal("--- a/x\n+++ b/../x\n").find("c.patch:2: the patch touches 'b/../x'"), std::string::npos);
    EXPECT_NE(refusal("--- /etc/passwd\n").find("c.patch:1:"), std::string::npos);
    EXPECT_NE(refusal("diff --git a/x b/.git/config\n").find("outside the source tree"), std::string::npos);
    EXPECT_NE(refusal("copy to sub/../../y\n").find("c.patch:1:"), std::string::npos);
    EXPECT_NE(refusal("diff --git nospace\n").find("malformed 'diff --git' line"), std::string::npos);
    EXPECT_NE(refusal("just text\n").find("not a unified diff"), std::string::npos);
}

}  // namespace
}  // namespace s2tp
