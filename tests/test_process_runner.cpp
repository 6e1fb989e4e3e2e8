// run_process and its supervisor: exit statuses, a working directory, a program that cannot start,
// and a tool's process group ended with the tool (what it leaves behind, and on a timeout).
// /bin/sh is the tool here only to have a process that starts others, as nvcc does.
#include "support/errors.h"
#include "scratch_directory.h"
#include "support/process_runner.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_process_runner {

namespace {

// True while `pid` exists and is not a zombie.
bool running(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    std::size_t close = text.rfind(')');
    return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

}  // namespace

TEST(ProcessRunner, ExitStatusesAndOutputs) {
    ProcessResult r = run_process({"sh", "-c", "echo out; echo err >&2; exit 7"});
    EXPECT_EQ(r.exit_code, 7);
    EXPECT_EQ(r.out, "out\n");
    EXPECT_EQ(r.err, "err\n");
    EXPECT_FALSE(r.timed_out);
    r = run_process({"sh", "-c", "kill -TERM $$"});
    EXPECT_EQ(r.exit_code, 128 + SIGTERM);
    ProcessOptions options;
    options.stdin_text = "fed\n";
    EXPECT_EQ(run_process({"cat"}, options).out, "fed\n");
}

TEST(ProcessRunner, WorkingDirectoryAndStartFailures) {
    const ScratchDirectory scratch("process-runner");
    const fs::path &dir = scratch.path();
    ProcessOptions options;
    options.working_directory = dir;
    EXPECT_EQ(run_process({"pwd"}, options).out, dir.string() + "\n");
    options.working_directory = dir / "missing";
    try {
        run_process({"pwd"}, options);
        ADD_FAILURE() << "a missing working directory started the program";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::missing_tool);
        EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
    }
    try {
        run_process({"/nonexistent/tool"});
        ADD_FAILURE() << "a missing program started";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::missing_tool);
    }
}

TEST(ProcessRunner, WhatTheToolLeavesInItsGroupEndsWithIt) {
    // The tool exits at once and leaves a background child in its process group.
    ProcessResult r = run_process({"sh", "-c", "sleep 60 & echo $!"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const pid_t left = static_cast<pid_t>(std::stol(r.out));
    EXPECT_FALSE(running(left)) << "the tool's background child " << left << " outlived it";
    if (running(left)) ::kill(left, SIGKILL);
}

TEST(ProcessRunner, TimeoutKillsTheWholeGroup) {
    const ScratchDirectory scratch("process-timeout");
    const fs::path pid_file = scratch / "grandchild.pid";
    ProcessOptions options;
    options.timeout = std::chrono::seconds(1);
    ProcessResult r = run_process({"sh", "-c", "sleep 60 & echo $! > " + pid_file.string() + "; wait"}, options);
    EXPECT_TRUE(r.timed_out);
    EXPECT_EQ(r.exit_code, 128 + SIGKILL);
    std::ifstream in(pid_file);
    pid_t grandchild = 0;
    in >> grandchild;
    ASSERT_GT(grandchild, 0);
    EXPECT_FALSE(running(grandchild)) << "the grandchild " << grandchild << " survived the timeout";
    if (running(grandchild)) ::kill(grandchild, SIGKILL);
}

TEST(ProcessRunner, NoInterruptWithoutASignal) {
    EXPECT_EQ(interrupt_signal(), 0);
    EXPECT_NO_THROW(throw_if_interrupted("nothing"));
}

// Issue 36 item 9: an interrupt with no child running ends the command at once, and its message says
// what to do next. In a child process, since the handler ends the process it runs in.
TEST(ProcessRunner, InterruptWithoutAChildPrintsTheNextStep) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::dup2(pipe_fds[1], STDERR_FILENO);
        install_interrupt_handlers();
        set_interrupt_next_step("to resume: sage2tp time --run R");
        ::raise(SIGINT);
        ::_exit(0);  // not reached: the handler ends the process
    }
    ::close(pipe_fds[1]);
    std::string text;
    char buffer[256];
    for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
    ::close(pipe_fds[0]);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
    EXPECT_EQ(text, "sage2tp: interrupted; no checkpoint written\nto resume: sage2tp time --run R\n");
}

}  // namespace s2tp::unit_process_runner
