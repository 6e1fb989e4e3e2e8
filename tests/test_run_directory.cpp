#include "support/errors.h"
#include "scratch_directory.h"
#include "pipeline/run_directory.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_run_directory {

TEST(RunDirectory, SecondProcessIsRefusedWithTheHoldersPid) {
    const ScratchDirectory scratch("lock");
    const fs::path &root = scratch.path();
    int ready[2], release[2];
    ASSERT_EQ(::pipe(ready), 0);
    ASSERT_EQ(::pipe(release), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        RunDirectory held(root);
        held.lock();
        char c = 1;
        (void)!::write(ready[1], &c, 1);
        (void)!::read(release[0], &c, 1);
        ::_exit(0);
    }
    char c;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    RunDirectory second(root);
    try {
        second.lock();
        FAIL() << "second lock succeeded";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_NE(std::string(e.what()).find("pid " + std::to_string(child)), std::string::npos) << e.what();
    }
    (void)!::write(release[1], &c, 1);
    int status = 0;
    ::waitpid(child, &status, 0);
    // Once the holder is gone the lock is free again.
    RunDirectory third(root);
    EXPECT_NO_THROW(third.lock());
}

TEST(RunDirectory, RecordedPathsCannotEscape) {
    EXPECT_TRUE(stays_inside("builds/baseline/a.cubin"));
    EXPECT_TRUE(stays_inside("a/../b"));
    EXPECT_FALSE(stays_inside("../outside"));
    EXPECT_FALSE(stays_inside("a/../../outside"));
    EXPECT_FALSE(stays_inside("/etc/passwd"));
    EXPECT_FALSE(stays_inside(""));
    RunDirectory run(fs::temp_directory_path() / "s2tp-resolve");
    EXPECT_THROW(run.resolve("../../etc/passwd"), Error);
    EXPECT_EQ(run.resolve("logs/x.log"), run.root() / "logs/x.log");
}

TEST(RunIds, OnlyTheSafeSetIsAccepted) {
    for (const std::string id : {"tp1", "temporal-pair-20261129T135954Z", "a.b_c-D9"}) EXPECT_NO_THROW(check_run_id(id)) << id;
    for (const std::string id : {"", "-x", ".x", "latest", "a/b", "a b", "a$(x)", "a`x`", "a\"b", "a%b", "a\\b", "a\nb"}) {
        try {
            check_run_id(id);
            ADD_FAILURE() << "accepted '" << id << "'";
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage) << id;
            EXPECT_NE(std::string(e.what()).find("invalid run id"), std::string::npos) << e.what();
        }
    }
}

TEST(RunIds, NewIdsAreClaimedAndSafe) {
    const ScratchDirectory scratch("ids");
    const std::filesystem::path &root = scratch.path();
    const std::string first = new_run_id("exp", root), second = new_run_id("exp", root);
    EXPECT_NE(first, second);
    EXPECT_TRUE(std::filesystem::is_directory(root / first));
    EXPECT_TRUE(std::filesystem::is_directory(root / second));
    const std::string odd = new_run_id("-my exp$(x)", root);
    EXPECT_NO_THROW(check_run_id(odd)) << odd;
    EXPECT_EQ(odd.rfind("my_exp__x_-", 0), 0u) << odd;
}

}  // namespace s2tp::unit_run_directory
