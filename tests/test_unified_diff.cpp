// The paths a patch touches, read before prepare applies it: inside the tree or refused, naming the line.
#include "formats/unified_diff.h"
#include "support/errors.h"

#include <gtest/gtest.h>

namespace s2tp::unit_unified_diff {
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

TEST(PatchPaths, GitQuotedPathsAreDecodedBeforeTheCheck) {
    EXPECT_NE(refusal("--- a/x\n+++ \"b/\\056\\056/x\"\n").find("c.patch:2: the patch touches 'b/../x'"),
              std::string::npos);
    EXPECT_NE(refusal("diff --git \"a/\\056git/config\" \"b/\\056git/config\"\n").find("c.patch:1:"), std::string::npos);
    EXPECT_NE(refusal("diff --git a/x \"b/\\056\\056/x\"\n").find("'b/../x'"), std::string::npos);
    EXPECT_NE(refusal("+++ \"b/x\\9\"\n").find("c.patch:1: malformed quoted path"), std::string::npos);
    EXPECT_NE(refusal("+++ \"b/x\n").find("malformed quoted path"), std::string::npos);
    const std::vector<std::string> expected = {"sp ace\t\"q\"\\.cu", "sp ace\t\"q\"\\.cu", "caf\xc3\xa9.cu"};
    EXPECT_EQ(patch_paths("diff --git \"a/sp ace\\t\\\"q\\\"\\\\.cu\" \"b/sp ace\\t\\\"q\\\"\\\\.cu\"\n"
                          "+++ \"b/caf\\303\\251.cu\"\n",
                          "c.patch"),
              expected);
}

TEST(PatchPaths, SymbolicLinksAndGitlinksAreRefusedWithTheLine) {
    const std::string link = "diff --git a/evil b/evil\nnew file mode 120000\nindex 0000000..1111111\n"
                             "--- /dev/null\n+++ b/evil\n@@ -0,0 +1 @@\n+/etc/passwd\n";
    EXPECT_NE(refusal(link).find("c.patch:2: the patch makes a symbolic link (mode 120000)"), std::string::npos);
    EXPECT_NE(refusal("diff --git a/x b/x\nold mode 100644\nnew mode 120000\n").find("c.patch:3:"), std::string::npos);
    EXPECT_NE(refusal("diff --git a/m b/m\nindex 1111111..2222222 160000\n").find("c.patch:2: the patch makes a gitlink"),
              std::string::npos);
    EXPECT_EQ(patch_paths("diff --git a/x b/x\nnew file mode 100755\nindex 1..2 100644\n", "c.patch").size(), 2u);
}

}  // namespace
}  // namespace s2tp::unit_unified_diff
