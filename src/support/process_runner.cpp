#include "support/process_runner.h"

#include "support/errors.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>

extern char **environ;

namespace s2tp {
namespace {

void close_quietly(int &fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

struct Pipe {
    int read_end = -1;
    int write_end = -1;
    Pipe() {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) fail(ExitCode::internal, std::string("pipe: ") + std::strerror(errno));
        read_end = fds[0];
        write_end = fds[1];
    }
    ~Pipe() {
        close_quietly(read_end);
        close_quietly(write_end);
    }
};

std::vector<std::string> merged_environment(const std::map<std::string, std::string> &extra) {
    std::vector<std::string> env;
    for (char **entry = environ; *entry; ++entry) {
        std::string item(*entry);
        std::string key = item.substr(0, item.find('='));
        if (!extra.count(key)) env.push_back(item);
    }
    for (const auto &[key, value] : extra) env.push_back(key + "=" + value);
    return env;
}

std::vector<char *> c_pointers(std::vector<std::string> &strings) {
    std::vector<char *> pointers;
    for (auto &s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
    return pointers;
}

}  // namespace

std::optional<std::filesystem::path> find_program(const std::string &name) {
    if (name.empty()) return std::nullopt;
    if (name.find('/') != std::string::npos) {
        if (::access(name.c_str(), X_OK) == 0) return std::filesystem::path(name);
        return std::nullopt;
    }
    const char *path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= dirs.size()) {
        std::size_t end = dirs.find(':', start);
        if (end == std::string::npos) end = dirs.size();
        std::string dir = dirs.substr(start, end - start);
        if (!dir.empty()) {
            std::filesystem::path candidate = std::filesystem::path(dir) / name;
            std::error_code ec;
            if (std::filesystem::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0)
                return candidate;
        }
        start = end + 1;
    }
    return std::nullopt;
}

std::filesystem::path current_executable() { return std::filesystem::read_symlink("/proc/self/exe"); }

namespace {

// Everything the signal handlers touch is a lock-free atomic: async-signal-safe to read and write.
constexpr std::size_t max_children = 1024;  // above the largest --jobs the build accepts
std::atomic<pid_t> live_supervisors[max_children];
std::atomic<int> spawns_in_progress{0};
std::atomic<int> first_signal{0};
constexpr std::size_t max_kept_fds = 8;
std::atomic<int> kept_fds[max_kept_fds] = {};
// set_interrupt_next_step's text, NUL-terminated; `next_step_ready` is false while it is being written.
char next_step_text[1024];
std::atomic<bool> next_step_ready{false};

void write_stderr(const char *text) {
    ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
    (void)ignored;
}

void on_interrupt(int signo) {
    int expected = 0;
    if (!first_signal.compare_exchange_strong(expected, signo)) {
        // A second signal: stop waiting for the children. Their supervisors SIGKILL each group.
        for (auto &slot : live_supervisors)
            if (pid_t pid = slot.load(); pid > 0) ::kill(pid, SIGUSR1);
        write_stderr("sage2tp: second interrupt: children killed\n");
        ::_exit(128 + expected);
    }
    int live = 0;
    for (auto &slot : live_supervisors)
        if (pid_t pid = slot.load(); pid > 0) {
            ::kill(pid, signo);
            ++live;
        }
    if (live == 0 && spawns_in_progress.load() == 0) {
        // No child to wait for: nothing can write into the run after this process is gone.
        write_stderr("sage2tp: interrupted; no checkpoint written\n");
        if (next_step_ready.load()) {
            write_stderr(next_step_text);
            write_stderr("\n");
        }
        ::_exit(128 + signo);
    }
}

std::size_t register_supervisor(pid_t pid) {
    for (std::size_t i = 0; i < max_children; ++i) {
        pid_t expected = 0;
        if (live_supervisors[i].compare_exchange_strong(expected, pid)) return i;
    }
    return max_children;
}

// ---- the supervisor's side, after fork(): only async-signal-safe calls from here on ----

volatile pid_t supervised_tool = 0;

void supervisor_forward(int signo) {
    if (supervised_tool > 0) ::kill(-supervised_tool, signo);
}

// On a timeout, or when the parent died: SIGKILL the group. The supervisor's main path then sees
// the tool end and reaps the group as usual.
void supervisor_kill_group(int) {
    if (supervised_tool <= 0) ::_exit(128 + SIGKILL);  // no tool yet: it is never started
    ::kill(-supervised_tool, SIGKILL);
    ::kill(supervised_tool, SIGKILL);
}

void close_all_but(int lowest, const int *kept, int kept_count) {
    int sorted[max_kept_fds];
    int n = 0;
    for (int i = 0; i < kept_count; ++i)
        if (kept[i] >= lowest) sorted[n++] = kept[i];
    for (int i = 1; i < n; ++i)  // insertion sort: a handful of entries, and nothing that may allocate
        for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; --j) std::swap(sorted[j - 1], sorted[j]);
    unsigned from = static_cast<unsigned>(lowest);
    for (int i = 0; i <= n; ++i) {
        unsigned to = i < n ? static_cast<unsigned>(sorted[i]) : ~0u;
        if (to > from) {
            unsigned last = i < n ? to - 1 : ~0u;
            if (::close_range(from, last, 0) != 0) {
                struct rlimit limit {};
                unsigned cap = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 65536 ? limit.rlim_cur : 65536;
                for (unsigned fd = from; fd <= std::min(last, cap); ++fd) ::close(static_cast<int>(fd));
            }
        }
        if (i < n) from = static_cast<unsigned>(sorted[i]) + 1;
    }
}

struct SpawnPlan {
    const char *program;
    char *const *argv;
    char *const *envp;
    const char *working_directory;  // or nullptr
    int stdin_fd, stdout_fd, stderr_fd;
    int exec_error_fd;  // the tool writes errno here when it cannot start
    pid_t parent;
    sigset_t original_mask;
    int kept[max_kept_fds];
    int kept_count;
};

[[noreturn]] void report_start_failure(int fd, int error) {
    ssize_t ignored = ::write(fd, &error, sizeof error);
    (void)ignored;
    ::_exit(127);
}

[[noreturn]] void run_tool(const SpawnPlan &plan, pid_t supervisor) {
    for (int signo : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) ::signal(signo, SIG_DFL);
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != supervisor) ::_exit(127);
    if (::dup2(plan.stdin_fd, STDIN_FILENO) < 0 || ::dup2(plan.stdout_fd, STDOUT_FILENO) < 0 ||
        ::dup2(plan.stderr_fd, STDERR_FILENO) < 0)
        report_start_failure(plan.exec_error_fd, errno);
    if (plan.working_directory && ::chdir(plan.working_directory) != 0) report_start_failure(plan.exec_error_fd, errno);
    ::sigprocmask(SIG_SETMASK, &plan.original_mask, nullptr);
    ::execve(plan.program, plan.argv, plan.envp);
    report_start_failure(plan.exec_error_fd, errno);
}

[[noreturn]] void supervise(const SpawnPlan &plan) {
    // All signals stay blocked (inherited from the spawning thread) until the tool's pid is known,
    // so a signal forwarded early is held, not lost.
    struct sigaction forward {};
    forward.sa_handler = supervisor_forward;
    sigemptyset(&forward.sa_mask);
    for (int signo : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signo, &forward, nullptr);
    struct sigaction kill_group {};
    kill_group.sa_handler = supervisor_kill_group;
    sigemptyset(&kill_group.sa_mask);
    ::sigaction(SIGUSR1, &kill_group, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGUSR1);
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (::getppid() != plan.parent) ::_exit(128 + SIGKILL);  // the parent is already gone

    pid_t self = ::getpid();
    pid_t tool = ::fork();
    if (tool < 0) report_start_failure(plan.exec_error_fd, errno);
    if (tool == 0) run_tool(plan, self);
    ::setpgid(tool, tool);  // also done by the tool itself: whichever runs first
    supervised_tool = tool;
    // Nothing of the parent's but the kept descriptors (the run lock) stays open here: another
    // child's pipe held by this process would keep that child's output from ever reaching EOF.
    close_all_but(0, plan.kept, plan.kept_count);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);

    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(tool), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {}
    // The tool is a zombie, so its group id cannot be reused yet: end whatever it left behind.
    ::kill(-tool, SIGKILL);
    int status = 0;
    while (::waitpid(tool, &status, 0) < 0 && errno == EINTR) {}
    // The group's last members (cicc, ptxas) were orphaned to this process, the subreaper: reap them
    // until the group is empty, so that none is alive once run_process returns. A group id cannot be
    // given to a new process while a member still holds it. Bounded, in case a member is stuck.
    for (int round = 0; round < 10000 && ::kill(-tool, 0) == 0; ++round) {
        while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
        if (::kill(-tool, 0) != 0) break;
        struct timespec pause {0, 1000 * 1000};
        ::nanosleep(&pause, nullptr);
    }
    if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
    ::_exit(128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
}

const char *signal_name(int signo) {
    switch (signo) {
        case SIGINT: return "SIGINT";
        case SIGTERM: return "SIGTERM";
        case SIGHUP: return "SIGHUP";
        default: return "a signal";
    }
}

}  // namespace

void install_interrupt_handlers() {
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (int signo : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signo, &action, nullptr);
}

int interrupt_signal() { return first_signal.load(); }

void throw_if_interrupted(const std::string &what) {
    if (int signo = interrupt_signal())
        fail(ExitCode::interrupted, std::string("interrupted by ") + signal_name(signo) + ": " + what +
                                        " stopped; no checkpoint written" +
                                        (next_step_ready.load() ? "\n" + std::string(next_step_text) : ""));
}

void set_interrupt_next_step(const std::string &next_step) {
    next_step_ready.store(false);
    const std::size_t length = std::min(next_step.size(), sizeof next_step_text - 1);
    next_step.copy(next_step_text, length);
    next_step_text[length] = '\0';
    next_step_ready.store(!next_step.empty());
}

void keep_open_in_children(int fd) {
    for (auto &slot : kept_fds) {
        int expected = 0;
        if (slot.compare_exchange_strong(expected, fd + 1)) return;  // stored +1 so that 0 means empty
    }
    fail(ExitCode::internal, "keep_open_in_children: too many descriptors");
}

void stop_keeping_open(int fd) {
    for (auto &slot : kept_fds) {
        int expected = fd + 1;
        if (slot.compare_exchange_strong(expected, 0)) return;
    }
}

ProcessResult run_process(const std::vector<std::string> &argv, const ProcessOptions &options) {
    if (argv.empty()) fail(ExitCode::internal, "run_process: empty argument vector");
    throw_if_interrupted("'" + argv[0] + "' was not started");
    auto program = find_program(argv[0]);
    if (!program) fail(ExitCode::missing_tool, "cannot run '" + argv[0] + "': not found in PATH");

    Pipe in, out, err, exec_error;
    std::vector<std::string> args = argv;
    args[0] = program->string();
    std::vector<std::string> env = merged_environment(options.extra_environment);
    auto arg_ptrs = c_pointers(args);
    auto env_ptrs = c_pointers(env);
    const std::string working_directory = options.working_directory ? options.working_directory->string() : "";

    SpawnPlan plan{};
    plan.program = args[0].c_str();
    plan.argv = arg_ptrs.data();
    plan.envp = env_ptrs.data();
    plan.working_directory = options.working_directory ? working_directory.c_str() : nullptr;
    plan.stdin_fd = in.read_end;
    plan.stdout_fd = out.write_end;
    plan.stderr_fd = err.write_end;
    plan.exec_error_fd = exec_error.write_end;
    plan.parent = ::getpid();
    plan.kept_count = 0;
    for (auto &slot : kept_fds)
        if (int fd = slot.load(); fd > 0) plan.kept[plan.kept_count++] = fd - 1;

    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &plan.original_mask);
    spawns_in_progress.fetch_add(1);
    auto started = std::chrono::steady_clock::now();
    pid_t pid = ::fork();
    if (pid == 0) supervise(plan);
    int fork_error = errno;
    std::size_t slot = pid > 0 ? register_supervisor(pid) : max_children;
    spawns_in_progress.fetch_sub(1);
    ::pthread_sigmask(SIG_SETMASK, &plan.original_mask, nullptr);
    if (pid < 0) fail(ExitCode::internal, std::string("fork: ") + std::strerror(fork_error));
    // A signal that came while this child was being started found no child to forward to.
    if (int signo = first_signal.load()) ::kill(pid, signo);

    close_quietly(in.read_end);
    close_quietly(out.write_end);
    close_quietly(err.write_end);
    close_quietly(exec_error.write_end);

    auto reap = [&] {
        siginfo_t info{};
        while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {}
        // Forget the supervisor before reaping it, so that a signal can never reach a reused pid.
        if (slot < max_children) live_supervisors[slot].store(0);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        return status;
    };

    int start_error = 0;
    ssize_t got;
    while ((got = ::read(exec_error.read_end, &start_error, sizeof start_error)) < 0 && errno == EINTR) {}
    if (got == sizeof start_error) {
        reap();
        fail(ExitCode::missing_tool, "cannot run '" + args[0] + "'" +
                                         (options.working_directory ? " in '" + working_directory + "'" : "") + ": " +
                                         std::strerror(start_error));
    }

    ProcessResult result;
    std::string input = options.stdin_text.value_or("");
    std::size_t input_sent = 0;
    if (input.empty()) close_quietly(in.write_end);
    else ::fcntl(in.write_end, F_SETFL, O_NONBLOCK);

    std::array<char, 65536> buffer;
    while (out.read_end >= 0 || err.read_end >= 0) {
        std::vector<pollfd> fds;
        if (out.read_end >= 0) fds.push_back({out.read_end, POLLIN, 0});
        if (err.read_end >= 0) fds.push_back({err.read_end, POLLIN, 0});
        if (in.write_end >= 0) fds.push_back({in.write_end, POLLOUT, 0});
        int wait_ms = -1;
        if (options.timeout) {
            auto deadline = started + *options.timeout;
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) {
                ::kill(pid, SIGUSR1);  // the supervisor SIGKILLs the tool's whole group
                result.timed_out = true;
                break;
            }
            wait_ms = static_cast<int>(left.count());
        }
        int ready = ::poll(fds.data(), fds.size(), wait_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) break;
        for (auto &p : fds) {
            if (!p.revents) continue;
            if (p.fd == in.write_end) {
                ssize_t n = ::write(in.write_end, input.data() + input_sent, input.size() - input_sent);
                if (n > 0) input_sent += static_cast<std::size_t>(n);
                if (n < 0 || input_sent == input.size()) close_quietly(in.write_end);
                continue;
            }
            ssize_t n = ::read(p.fd, buffer.data(), buffer.size());
            std::string &sink = (p.fd == out.read_end) ? result.out : result.err;
            if (n > 0) sink.append(buffer.data(), static_cast<std::size_t>(n));
            else if (p.fd == out.read_end) close_quietly(out.read_end);
            else close_quietly(err.read_end);
        }
    }
    close_quietly(in.write_end);

    int status = reap();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
    throw_if_interrupted("'" + args[0] + "'");
    return result;
}

}  // namespace s2tp
