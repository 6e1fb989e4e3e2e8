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
// Throws Error(missing_tool) when the program cannot be started at all.
ProcessResult run_process(const std::vector<std::string> &argv, const ProcessOptions &options = {});

// The absolute path of a program found in PATH (or given with a slash and executable), if any.
std::optional<std::filesystem::path> find_program(const std::string &name);

// The path of the running executable (/proc/self/exe), for re-running sage2tp under a wrapper.
std::filesystem::path current_executable();

}  // namespace s2tp
