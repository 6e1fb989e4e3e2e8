#include "pipeline/run_directory.h"
#include "support/file_io.h"

#include "support/errors.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>

namespace fs = std::filesystem;

namespace s2tp {

RunDirectory::RunDirectory(fs::path root) : root_(fs::absolute(std::move(root)).lexically_normal()) {}

RunDirectory::~RunDirectory() {
    if (lock_fd_ >= 0) ::close(lock_fd_);  // closing releases the flock
}

void RunDirectory::lock() {
    fs::create_directories(root_);
    auto lock_file = root_ / ".lock";
    lock_fd_ = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0) fail(ExitCode::usage, "cannot open lock file '" + lock_file.string() + "': " + std::strerror(errno));
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        std::ifstream in(lock_file);
        std::string holder;
        std::getline(in, holder);
        ::close(lock_fd_);
        lock_fd_ = -1;
        fail(ExitCode::usage, "run directory '" + root_.string() + "' is in use by another sage2tp process (pid " +
                                  (holder.empty() ? std::string("unknown") : holder) + "); wait for it or use another --run");
    }
    std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0)
        fail(ExitCode::internal, "cannot record pid in '" + lock_file.string() + "'");
}

bool stays_inside(const fs::path &relative_path) {
    if (relative_path.empty() || relative_path.is_absolute() || relative_path.has_root_name()) return false;
    int depth = 0;
    for (const auto &part : relative_path) {
        if (part == "..") {
            if (--depth < 0) return false;
        } else if (part != "." && !part.empty()) {
            ++depth;
        }
    }
    return true;
}

std::string RunDirectory::relative(const fs::path &path) const {
    fs::path rel = fs::absolute(path).lexically_normal().lexically_relative(root_);
    if (!stays_inside(rel)) fail(ExitCode::internal, "'" + path.string() + "' is outside the run directory");
    return rel.generic_string();
}

fs::path RunDirectory::resolve(const std::string &recorded) const {
    fs::path rel(recorded);
    if (!stays_inside(rel))
        fail(ExitCode::usage, "recorded path '" + recorded + "' escapes the run directory '" + root_.string() + "'");
    return root_ / rel;
}

namespace {

std::optional<std::string> effective_run_id(const RunSelection &selection) {
    if (selection.run_id) return selection.run_id;
    // The experiment's earlier shell runner named runs through this variable; keep honouring it.
    if (const char *id = std::getenv("SAGE2_TEMPORAL_RUN_ID"); id && *id) return std::string(id);
    return std::nullopt;
}

void check_run_id(const std::string &id) {
    if (id.empty() || id == "." || id == ".." || id == "latest" || id.find('/') != std::string::npos)
        fail(ExitCode::usage, "invalid run id '" + id + "': use a plain name without '/'");
}

}  // namespace

std::optional<fs::path> existing_run(const RunSelection &selection) {
    if (selection.run_dir) return selection.run_dir;
    if (auto id = effective_run_id(selection)) {
        check_run_id(*id);
        return selection.runs_root / *id;
    }
    fs::path latest = selection.runs_root / "latest";
    std::error_code ec;
    if (fs::is_symlink(latest, ec) && fs::is_directory(latest, ec))
        return fs::canonical(latest, ec);
    return std::nullopt;
}

fs::path run_for_prepare(const RunSelection &selection, const std::string &experiment_name) {
    if (auto run = existing_run(selection)) return *run;
    return selection.runs_root / new_run_id(experiment_name);
}

std::string new_run_id(const std::string &experiment_name) { return experiment_name + "-" + utc_now("%Y%m%dT%H%M%SZ"); }

fs::path require_existing_run(const RunSelection &selection) {
    auto run = existing_run(selection);
    if (!run) fail(ExitCode::precondition, "no run found under '" + selection.runs_root.string() +
                                               "'; run 'sage2tp prepare' first (or pass --run DIR)");
    std::error_code ec;
    if (!fs::is_directory(*run, ec))
        fail(ExitCode::precondition, "run directory '" + run->string() + "' does not exist; run 'sage2tp prepare' first");
    return *run;
}

void mark_latest(const RunSelection &selection, const fs::path &run) {
    fs::path root = fs::absolute(selection.runs_root).lexically_normal();
    fs::path target = fs::absolute(run).lexically_normal().lexically_relative(root);
    if (!stays_inside(target)) return;  // a run outside the runs root is not "the latest run" of that root
    fs::create_directories(root);
    fs::path link = root / "latest";
    fs::path temporary = root / (".latest.tmp-" + std::to_string(::getpid()));
    std::error_code ec;
    fs::remove(temporary, ec);
    fs::create_directory_symlink(target, temporary);
    fs::rename(temporary, link);
}

}  // namespace s2tp
