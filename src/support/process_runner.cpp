#include "support/process_runner.h"

#include "support/errors.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
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

ProcessResult run_process(const std::vector<std::string> &argv, const ProcessOptions &options) {
    if (argv.empty()) fail(ExitCode::internal, "run_process: empty argument vector");
    auto program = find_program(argv[0]);
    if (!program) fail(ExitCode::missing_tool, "cannot run '" + argv[0] + "': not found in PATH");

    Pipe in, out, err;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in.read_end, STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out.write_end, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err.write_end, STDERR_FILENO);
    if (options.working_directory)
        posix_spawn_file_actions_addchdir_np(&actions, options.working_directory->c_str());

    std::vector<std::string> args = argv;
    args[0] = program->string();
    std::vector<std::string> env = merged_environment(options.extra_environment);
    auto arg_ptrs = c_pointers(args);
    auto env_ptrs = c_pointers(env);

    // The child gets its own process group so a timeout can kill everything it started.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);

    auto started = std::chrono::steady_clock::now();
    pid_t pid = -1;
    int spawn_rc = ::posix_spawn(&pid, args[0].c_str(), &actions, &attributes, arg_ptrs.data(), env_ptrs.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (spawn_rc != 0)
        fail(ExitCode::missing_tool, "cannot run '" + args[0] + "': " + std::strerror(spawn_rc));

    close_quietly(in.read_end);
    close_quietly(out.write_end);
    close_quietly(err.write_end);

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
                ::kill(-pid, SIGKILL);
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

    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
    return result;
}

}  // namespace s2tp
