// Another process at work on a run, for the tests of what status and overview_run show meanwhile: a
// child that takes the run's lock (recording its pid there, as sage2tp does) and holds it until the
// LockHolder is destroyed. Header-only.
//
// Usage:
//   { s2tp::LockHolder other(run_root); ... other.pid() ... }   // the lock is free again here
#pragma once

#include "pipeline/run_directory.h"

#include <csignal>
#include <filesystem>
#include <stdexcept>

#include <sys/wait.h>
#include <unistd.h>

namespace s2tp {

class LockHolder {
public:
    // Returns once the child holds the lock.
    explicit LockHolder(const std::filesystem::path &run_root) {
        int ready[2];
        if (::pipe(ready) != 0) throw std::runtime_error("pipe failed");
        pid_ = ::fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            RunDirectory run(run_root);
            run.lock();
            char byte = 1;
            if (::write(ready[1], &byte, 1) != 1) ::_exit(1);
            ::pause();
            ::_exit(0);
        }
        char byte = 0;
        const bool locked = ::read(ready[0], &byte, 1) == 1;
        ::close(ready[0]);
        ::close(ready[1]);
        if (!locked) {
            stop();
            throw std::runtime_error("the child could not lock " + run_root.string());
        }
    }
    ~LockHolder() { stop(); }
    LockHolder(const LockHolder &) = delete;
    LockHolder &operator=(const LockHolder &) = delete;
    pid_t pid() const { return pid_; }

private:
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
    }
    pid_t pid_ = -1;
};

}  // namespace s2tp
