// Exit codes and the one exception type every layer throws. The codes are part of the CLI contract
// (sage2tp(1), EXIT STATUS): scripts depend on them, so they never change meaning.
#pragma once

#include <stdexcept>
#include <string>

namespace s2tp {

enum class ExitCode : int {
    ok = 0,            // stage passed, or was already up to date
    stop = 1,          // a stop condition fired: the experiment says no
    usage = 2,         // usage or configuration error (bad option, bad manifest, bad input file)
    missing_tool = 3,  // a required tool or device is missing (nvcc, git, compute-sanitizer, GPU)
    precondition = 4,  // the previous stage's checkpoint is missing, failed or stale
    internal = 5,      // a bug or an unexpected system failure
    interrupted = 128, // SIGINT, SIGTERM or SIGHUP arrived: the command exits 128 + the signal's number
};

// Thrown for every failure that should end the command with a message and a documented exit code.
// The message is complete and user-facing: it names the file, line, value or tool involved.
class Error : public std::runtime_error {
public:
    Error(ExitCode code, const std::string &message) : std::runtime_error(message), code_(code) {}
    ExitCode code() const { return code_; }

private:
    ExitCode code_;
};

[[noreturn]] inline void fail(ExitCode code, const std::string &message) { throw Error(code, message); }

}  // namespace s2tp
