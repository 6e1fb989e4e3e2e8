// What the tests of the sage2tp binary share: the binary under test ($SAGE2TP_BIN, set by meson), a
// fresh temporary directory per test, and running sage2tp and git there. Header-only: each CLI test is
// an executable of its own.
//
// Usage:
//   class Cli : public s2tp::CliTest {};
//   TEST_F(Cli, StatusWithoutARun) { EXPECT_EQ(sage2tp({"status"}).exit_code, 4); }
// or, for a suite that shares one directory between its tests, the free functions:
//   ProcessResult r = s2tp::run_sage2tp({"build", "--run", "run"}, dir);
#pragma once

#include "scratch_directory.h"
#include "support/process_runner.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

namespace s2tp {

// $SAGE2TP_BIN, or "" when it is not set (the test is then not run by meson).
inline const std::string &sage2tp_binary() {
    static const std::string binary = std::getenv("SAGE2TP_BIN") ? std::getenv("SAGE2TP_BIN") : "";
    return binary;
}

// sage2tp with `args`, run in `working_directory`, to completion.
inline ProcessResult run_sage2tp(std::vector<std::string> args, const std::filesystem::path &working_directory,
                                 std::map<std::string, std::string> environment = {}) {
    args.insert(args.begin(), sage2tp_binary());
    ProcessOptions options;
    options.working_directory = working_directory;
    options.extra_environment = std::move(environment);
    return run_process(args, options);
}

// sage2tp started in `working_directory` without waiting, its output thrown away (its stderr written to
// `stderr_file` when one is named); in a process group of its own when `own_group`, as a shell's job is,
// so that a signal to the group is what Ctrl-C at a terminal sends; `environment` is added to the
// inherited one. The caller waits for it (waitpid).
inline pid_t start_sage2tp(const std::vector<std::string> &args, const std::filesystem::path &working_directory,
                           bool own_group = false, const std::map<std::string, std::string> &environment = {},
                           const std::filesystem::path &stderr_file = {}) {
    std::vector<std::string> words{sage2tp_binary()};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char *> argv;
    for (auto &word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (own_group) ::setpgid(0, 0);
        for (const auto &[name, value] : environment) ::setenv(name.c_str(), value.c_str(), 1);
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, STDOUT_FILENO);
        const int err = stderr_file.empty() ? null : ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(err, STDERR_FILENO);
        if (::chdir(working_directory.c_str()) != 0) ::_exit(126);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    if (own_group) ::setpgid(pid, pid);
    return pid;
}

// git -C `repo` with `args`, under a fixed identity so that commits work on any host.
inline ProcessResult run_git(const std::filesystem::path &repo, std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", repo.string()});
    ProcessOptions options;
    options.extra_environment = {{"GIT_AUTHOR_NAME", "t"}, {"GIT_AUTHOR_EMAIL", "t@t"},
                                 {"GIT_COMMITTER_NAME", "t"}, {"GIT_COMMITTER_EMAIL", "t@t"}};
    return run_process(args, options);
}

// The whole file, "" when it cannot be read. With plain read(2), so that it also reads /proc files of
// processes that may exit meanwhile: libstdc++'s filebuf throws when a read fails (ESRCH).
// How many JSON values stand at the top level of `text`, with anything other than whitespace between
// them counted as one more (so "{..}\nsvg: x" is 2): under --json, stdout must hold exactly one object.
inline std::size_t top_level_json_values(const std::string &text) {
    std::size_t values = 0, depth = 0;
    bool in_string = false, escaped = false, in_stray = false;
    for (char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (depth == 0 && !(c == '{' || c == '[')) {
            const bool blank = c == ' ' || c == '\n' || c == '\t' || c == '\r';
            if (!blank && !in_stray) ++values;
            in_stray = !blank;
            continue;
        }
        in_stray = false;
        if (c == '"') in_string = true;
        else if (c == '{' || c == '[') {
            if (depth++ == 0) ++values;
        } else if (c == '}' || c == ']') --depth;
    }
    return values;
}

inline std::string slurp(const std::filesystem::path &file) {
    std::string text;
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return text;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
    ::close(fd);
    return text;
}

// A test of the binary: SetUp fails without $SAGE2TP_BIN and gives the test its own empty directory
// dir_ (<tmp>/s2tp-<suite>-<test>-XXXXXX), the working directory of sage2tp(); TearDown removes it.
class CliTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(sage2tp_binary().empty()) << "SAGE2TP_BIN is not set";
        const ::testing::TestInfo *test = ::testing::UnitTest::GetInstance()->current_test_info();
        scratch_.emplace(std::string(test->test_suite_name()) + "-" + test->name());
        dir_ = scratch_->path();
    }
    void TearDown() override { scratch_.reset(); }
    ProcessResult sage2tp(std::vector<std::string> args, std::map<std::string, std::string> environment = {}) {
        return run_sage2tp(std::move(args), dir_, std::move(environment));
    }
    pid_t start(const std::vector<std::string> &args, bool own_group = false) {
        return start_sage2tp(args, dir_, own_group);
    }
    // git in `repo`; the test fails when it does.
    void git(const std::filesystem::path &repo, std::vector<std::string> args) {
        const ProcessResult r = run_git(repo, std::move(args));
        ASSERT_EQ(r.exit_code, 0) << r.err;
    }

    // Makes `repo`, holding the files already written there, a git repository of one commit; returns its id.
    std::string commit_repository(const std::filesystem::path &repo) {
        for (std::vector<std::string> args : {std::vector<std::string>{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "k"}}) {
            const ProcessResult r = run_git(repo, args);
            EXPECT_EQ(r.exit_code, 0) << r.err;
        }
        return run_git(repo, {"rev-parse", "HEAD"}).out.substr(0, 40);
    }

    std::optional<ScratchDirectory> scratch_;
    std::filesystem::path dir_;
};

}  // namespace s2tp
