// Running external tools (git, nvcc, compute-sanitizer, ncu, sage2tp itself) with an argument vector.
// Nothing here ever goes through a shell: manifest values can hold any characters and stay inert.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct ProcessResult {
    int exit_code = -1;     // the child's exit status; 128+N when killed by signal N
    bool timed_out = false;
    std::string out;        // captured stdout
    std::string err;        // captured stderr
    double seconds = 0.0;   // wall time
};

struct ProcessOptions {
    std::optional<std::filesystem::path> working_directory;
    std::map<std::string, std::string> extra_environment;  // added to (or replacing in) the inherited one
    std::optional<std::chrono::seconds> timeout;           // the child is killed (SIGKILL) past this
    std::optional<std::string> stdin_text;                 // fed to the child's standard input
};

// Runs argv[0] (looked up in PATH when it has no slash) and waits for it, capturing both streams.
// Throws Error(missing_tool) when the program cannot be started at all, and Error(interrupted) when
// an interrupt arrived (before the start, or while the child ran: it has then been stopped).
//
// Every child runs under a small supervisor, a fork of this process that execs nothing: the tool
// leads its own process group (so nvcc's cicc and ptxas, or compute-sanitizer's target, can be
// signalled together), and the supervisor
//   * forwards SIGINT, SIGTERM and SIGHUP to that whole group;
//   * when the tool ends, SIGKILLs whatever is left in its group and, as their subreaper, reaps them
//     until the group is empty; then exits with the tool's status;
//   * when this process dies, even by SIGKILL (PR_SET_PDEATHSIG), SIGKILLs the whole group;
//   * keeps the run lock's descriptor (keep_open_in_children) until the group is gone, so the lock
//     is never free while a child of the run can still write.
// A tool that leaves its process group (setsid) is out of reach of this.
ProcessResult run_process(const std::vector<std::string> &argv, const ProcessOptions &options = {});

// Installs the SIGINT, SIGTERM and SIGHUP handlers of the sage2tp command. The first signal is
// forwarded to every running child's process group; run_process then waits for the child and throws
// Error(interrupted), and the stage framework writes no checkpoint. With no child running the command
// ends at once with status 128 + the signal. A second signal SIGKILLs every child group and ends the
// command at once.
void install_interrupt_handlers();
// The first interrupting signal received, or 0.
int interrupt_signal();
// Throws Error(interrupted) naming the signal and `what` was stopped, when an interrupt arrived; the
// message ends with the next step set below, if any.
void throw_if_interrupted(const std::string &what);
// What an interrupted command tells its user to do next ("to resume: sage2tp build --run DIR ..."),
// printed after either interrupt message: the thrown one and the one of a command that ends at once.
// The stage runner sets it once it knows the run. Kept in a fixed buffer, since the signal handler may
// only write(2) it; longer text is cut.
void set_interrupt_next_step(const std::string &next_step);

// A descriptor (the run's lock) that the supervisors keep open until their child's group is gone.
void keep_open_in_children(int fd);
void stop_keeping_open(int fd);

// The absolute path of a program found in PATH (or given with a slash and executable), if any.
std::optional<std::filesystem::path> find_program(const std::string &name);

// The path of the running executable (/proc/self/exe), for re-running sage2tp under a wrapper.
std::filesystem::path current_executable();

}  // namespace s2tp
