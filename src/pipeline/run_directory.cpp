#include "pipeline/run_directory.h"

#include "support/did_you_mean.h"
#include "support/file_io.h"

#include "support/errors.h"
#include "support/process_runner.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <thread>

namespace fs = std::filesystem;

namespace s2tp {

namespace {

fs::path absolute_run_path(const fs::path &root) {
    if (root.empty()) fail(ExitCode::usage, "the run directory is an empty path; give --run a directory");
    std::error_code ec;
    fs::path absolute = fs::absolute(root, ec);
    if (ec) fail(ExitCode::usage, "run directory '" + root.string() + "': " + ec.message());
    return absolute.lexically_normal();
}

}  // namespace

RunDirectory::RunDirectory(fs::path root) : root_(absolute_run_path(root)) {}

RunDirectory::~RunDirectory() {
    if (lock_fd_ >= 0) {
        stop_keeping_open(lock_fd_);
        ::close(lock_fd_);  // closing releases the flock
    }
}

void RunDirectory::lock(Links links) {
    std::error_code ec;
    fs::create_directories(root_, ec);
    if (ec || !fs::is_directory(root_))
        fail(ExitCode::usage, "cannot use '" + root_.string() + "' as a run directory: " +
                                  (ec ? ec.message() : std::string("it exists and is not a directory")));
    if (links == Links::refuse) refuse_planted_links();
    auto lock_file = root_ / ".lock";
    lock_fd_ = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (lock_fd_ < 0) fail(ExitCode::usage, "cannot open lock file '" + lock_file.string() + "': " + std::strerror(errno));
    // The pid is written into the lock file: one that is a hard link shares its bytes with a file
    // elsewhere (a copied run may carry one), and one that is no regular file is no lock of ours.
    struct stat st {};
    if (::fstat(lock_fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
        const bool linked = S_ISREG(st.st_mode) && st.st_nlink > 1;
        ::close(lock_fd_);
        lock_fd_ = -1;
        fail(ExitCode::usage, "lock file '" + lock_file.string() + "' " +
                                  (linked ? "has " + std::to_string(st.st_nlink) +
                                                " hard links: it shares its bytes with a file elsewhere, which the pid "
                                                "would overwrite"
                                          : std::string("is not a regular file")) +
                                  "; remove it (rm '" + lock_file.string() + "') and run the command again");
    }
    // The supervisors of this run's children hold the lock too, until their child's process group is
    // gone: even when this process is SIGKILLed, the lock is not free while a child can still write.
    keep_open_in_children(lock_fd_);
    // A few tries over about 100 ms: lock_holder (sage2tp status) holds a shared lock for a moment.
    bool locked = false;
    for (int attempt = 0; attempt < 5 && !locked; ++attempt) {
        if (attempt) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        locked = ::flock(lock_fd_, LOCK_EX | LOCK_NB) == 0;
        if (!locked && errno != EWOULDBLOCK) break;
    }
    if (!locked) {
        std::ifstream in(lock_file);
        std::string holder;
        std::getline(in, holder);
        stop_keeping_open(lock_fd_);
        ::close(lock_fd_);
        lock_fd_ = -1;
        fail(ExitCode::usage, "run directory '" + root_.string() + "' is in use by another sage2tp process (pid " +
                                  (holder.empty() ? std::string("unknown") : holder) + "); wait for it or use another --run");
    }
    std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0)
        fail(ExitCode::usage, "cannot record pid in '" + lock_file.string() + "': " + std::strerror(errno));
}

void RunDirectory::refuse_planted_links() const {
    // Two levels of the layout (builds/<variant>/<file>, inputs/workload/<tensor>, checkpoints/<file>),
    // but only one under trees/: a source tree may hold links of its own, which are the sources'.
    auto refuse_link = [&](const fs::path &entry) {
        std::error_code ec;
        if (!fs::is_symlink(fs::symlink_status(entry, ec))) return false;
        fail(ExitCode::usage, "'" + entry.string() + "' is a symbolic link (to '" + fs::read_symlink(entry, ec).string() +
                                  "'); sage2tp never writes or deletes through a link in a run, which a copied run "
                                  "(rsync -a) may carry: remove the link, or prepare the run afresh");
    };
    std::error_code ec;
    for (const std::string &name : run_layout_entries()) {
        const fs::path entry = root_ / name;
        if (refuse_link(entry) || !fs::is_directory(fs::symlink_status(entry, ec))) continue;
        const int depth = name == "trees" ? 1 : 2;
        for (fs::recursive_directory_iterator it(entry, ec), end; !ec && it != end; it.increment(ec)) {
            refuse_link(it->path());
            if (it.depth() + 1 >= depth) it.disable_recursion_pending();
        }
    }
}

std::optional<long> lock_holder(const fs::path &run_root) {
    const fs::path lock_file = run_root / ".lock";
    const int fd = ::open(lock_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    const bool free = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
    ::close(fd);  // also drops the shared lock
    if (free) return std::nullopt;
    std::ifstream in(lock_file);
    long pid = 0;
    in >> pid;
    return in ? pid : 0;
}

std::optional<fs::path> enclosing_run(const fs::path &dir) {
    std::error_code ec;
    fs::path at = fs::weakly_canonical(fs::absolute(dir, ec), ec);
    if (ec) return std::nullopt;
    for (;;) {
        if (fs::is_regular_file(at / "experiment.toml", ec) && fs::exists(at / ".lock", ec)) return at;
        if (at == at.root_path() || at.empty()) return std::nullopt;
        at = at.parent_path();
    }
}

void write_user_file_outside_runs(const fs::path &file, const std::string &content) {
    std::error_code ec;
    const fs::path parent = fs::absolute(file, ec).parent_path();
    if (auto run = enclosing_run(parent))
        fail(ExitCode::usage, "will not write '" + file.string() + "' inside the run '" + run->string() +
                                  "': a run holds only what its stages write; give a path outside it");
    write_user_file(file, content);
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
    if (const char *id = std::getenv("SAGE2TP_RUN_ID"); id && *id) return std::string(id);
    // The experiment's earlier shell runner named runs through this variable; keep honouring it.
    if (const char *id = std::getenv("SAGE2_TEMPORAL_RUN_ID"); id && *id) return std::string(id);
    return std::nullopt;
}

bool run_id_character(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

}  // namespace

void check_run_id(const std::string &id) {
    const std::string rule = ": a run id is letters, digits, '.', '_' and '-', not starting with '.' or '-'";
    if (id.empty()) fail(ExitCode::usage, "invalid run id '': it is empty" + rule);
    for (char c : id)
        if (!run_id_character(c)) {
            char shown[8];
            if (std::isprint(static_cast<unsigned char>(c))) std::snprintf(shown, sizeof shown, "%c", c);
            else std::snprintf(shown, sizeof shown, "\\x%02x", static_cast<unsigned char>(c));
            fail(ExitCode::usage, "invalid run id '" + id + "': character '" + std::string(shown) + "' is not allowed" + rule);
        }
    if (id.front() == '.' || id.front() == '-')
        fail(ExitCode::usage, "invalid run id '" + id + "': it starts with '" + id.substr(0, 1) + "'" + rule);
    if (id == "latest") fail(ExitCode::usage, "invalid run id 'latest': the name is taken by the link to the latest run");
}

fs::path default_runs_root() {
    if (const char *root = std::getenv("SAGE2TP_ROOT"); root && *root) return root;
    const fs::path name = "sage2tp-runs";
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    if (ec) return name;
    if (fs::is_directory(cwd / name, ec)) return name;
    for (fs::path at = cwd.parent_path(); !at.empty(); at = at.parent_path()) {
        if (fs::is_directory(at / name, ec)) return at / name;
        if (at == at.root_path()) break;
    }
    return name;
}

RunSelection select_run_word(RunSelection selection, const std::string &word) {
    std::error_code ec;
    // A path (it names a directory level, or something is there) is a run directory, missing or not a
    // directory as it may be: "no such run", never "invalid run id".
    const bool path = word.find('/') != std::string::npos || fs::symlink_status(word, ec).type() != fs::file_type::not_found;
    if (path) selection.run_dir = word;
    else selection.run_id = word;
    return selection;
}

std::optional<fs::path> existing_run(const RunSelection &selection) {
    if (selection.run_dir) return selection.run_dir;
    if (auto id = effective_run_id(selection)) {
        check_run_id(*id);
        return selection.runs_root / *id;
    }
    std::error_code ec;
    if (fs::path cwd = fs::current_path(ec); !ec)
        if (auto here = enclosing_run(cwd)) return here;
    if (auto latest = latest_run(selection.runs_root)) return latest;
    return std::nullopt;
}

std::optional<fs::path> latest_run(const fs::path &runs_root) {
    std::error_code ec;
    const fs::path latest = runs_root / "latest";
    if (!fs::is_symlink(latest, ec) || !fs::is_directory(latest, ec)) return std::nullopt;
    const fs::path run = fs::canonical(latest, ec);
    const fs::path root = fs::canonical(runs_root, ec);
    if (ec || run.parent_path() != root) return std::nullopt;  // a link to anywhere else is no run of this root
    return run;
}

fs::path run_for_prepare(const RunSelection &selection, const std::string &experiment_name) {
    if (auto run = existing_run(selection)) return *run;
    return selection.runs_root / new_run_id(experiment_name, selection.runs_root);
}

std::string new_run_id(const std::string &experiment_name, const fs::path &runs_root) {
    // The experiment name comes from a manifest: keep only what a run id may hold.
    std::string name;
    for (char c : experiment_name) name += run_id_character(c) ? c : '_';
    while (!name.empty() && (name.front() == '.' || name.front() == '-')) name.erase(0, 1);
    if (name.empty()) name = "run";
    const std::string stamp = name + "-" + utc_now("%Y%m%dT%H%M%SZ");
    std::error_code ec;
    fs::create_directories(runs_root, ec);
    if (ec) fail(ExitCode::usage, "cannot create the runs root '" + runs_root.string() + "': " + ec.message());
    // mkdir claims the name atomically: two prepares in the same second (or at the same time) get two runs.
    for (int n = 1; n < 1000; ++n) {
        std::string id = n == 1 ? stamp : stamp + "-" + std::to_string(n);
        if (fs::create_directory(runs_root / id, ec)) return id;
        if (ec) fail(ExitCode::usage, "cannot create run directory '" + (runs_root / id).string() + "': " + ec.message());
    }
    fail(ExitCode::usage, "more than 999 runs named '" + stamp + "' under '" + runs_root.string() + "'");
}

fs::path require_existing_run(const RunSelection &selection) {
    auto run = existing_run(selection);
    if (!run) fail(ExitCode::precondition, "no run found under '" + selection.runs_root.string() +
                                               "'; run 'sage2tp prepare' first (or pass --run DIR)");
    std::error_code ec;
    const fs::file_status status = fs::status(*run, ec);
    if (status.type() == fs::file_type::not_found) {
        // A mistyped run id names a run next to it: say which, before suggesting a new one.
        std::vector<std::string> runs;
        for (fs::directory_iterator it(run->parent_path(), ec), end; !ec && it != end; it.increment(ec))
            if (it->is_directory(ec) && it->path().filename() != "latest") runs.push_back(it->path().filename().string());
        std::sort(runs.begin(), runs.end());
        const std::string near = did_you_mean(run->filename().string(), runs);
        fail(ExitCode::precondition, "run directory '" + run->string() + "' does not exist" +
                                         (near.empty() ? "; run 'sage2tp prepare' first, or name a run that exists"
                                                       : near + " ('sage2tp runs' lists them)"));
    }
    if (!fs::is_directory(status))
        fail(ExitCode::precondition, "'" + run->string() + "' is not a directory, so it is no run; pass --run a run directory");
    // Unreadable, a stage would see no checkpoint at all and report an empty run as if nothing had run.
    fs::directory_iterator listing(*run, ec);
    if (ec) fail(ExitCode::precondition, "cannot read run directory '" + run->string() + "': " + ec.message());
    const fs::path checkpoints = RunDirectory(*run).checkpoints();
    const fs::file_status slot = fs::symlink_status(checkpoints, ec);
    if (slot.type() != fs::file_type::not_found && !fs::is_directory(slot))
        fail(ExitCode::precondition, "run directory '" + run->string() + "' is damaged: '" + checkpoints.string() +
                                         "' is not a directory, so no checkpoint of the run can be read");
    if (fs::is_directory(slot)) {
        fs::directory_iterator checkpoint_listing(checkpoints, ec);
        if (ec) fail(ExitCode::precondition, "cannot read '" + checkpoints.string() + "': " + ec.message());
    }
    return *run;
}

bool claim_run_directory(const fs::path &dir) {
    std::error_code ec;
    const fs::path at = fs::absolute(dir, ec).lexically_normal();
    if (at.has_parent_path()) fs::create_directories(at.parent_path(), ec);
    if (!ec && fs::create_directory(at, ec)) return true;
    if (!ec && fs::is_directory(at, ec)) return false;
    fail(ExitCode::usage, "cannot create the run directory '" + dir.string() + "': " +
                              (ec ? ec.message() : std::string("something other than a directory is there")));
}

void mark_latest(const RunSelection &selection, const fs::path &run) {
    fs::path root = fs::absolute(selection.runs_root).lexically_normal();
    fs::path target = fs::absolute(run).lexically_normal().lexically_relative(root);
    if (!stays_inside(target)) return;  // a run outside the runs root is not "the latest run" of that root
    fs::path link = root / "latest";
    std::error_code ec;
    fs::create_directories(root, ec);
    // A random name made by create_temporary_file, freed for the link (symlink(2) never follows).
    fs::path temporary;
    if (!ec) ::close(create_temporary_file(root, ".latest.tmp-", temporary));
    if (::unlink(temporary.c_str()) != 0) ec = std::error_code(errno, std::generic_category());
    if (!ec) fs::create_directory_symlink(target, temporary, ec);
    if (!ec) fs::rename(temporary, link, ec);
    if (ec) fail(ExitCode::usage, "cannot point '" + link.string() + "' at '" + run.string() + "': " + ec.message());
}

const std::vector<std::string> &run_layout_entries() {
    static const std::vector<std::string> entries{"experiment.toml", "pins.toml",    "last-stop.toml", "checkpoints",  "trees",
                                                  "builds",          "logs",         "reports",      "inputs",
                                                  "slurm",           ".prepare-new", ".prepare-old", ".build-new",
                                                  ".build-old",      ".sage2tp-run", ".sage2tp-removing", ".lock"};
    return entries;
}

namespace {

bool is_layout_entry(const std::string &name) {
    for (const std::string &entry : run_layout_entries())
        // A file written atomically leaves .NAME.tmp-XXXX behind when its writer is killed.
        if (name == entry || name.rfind("." + entry + ".tmp-", 0) == 0) return true;
    const std::string patch = ".patch";
    return name.rfind(worktree_patch_prefix, 0) == 0 && name.size() > patch.size() &&
           name.compare(name.size() - patch.size(), patch.size(), patch) == 0;
}

// True when `inner` is `outer` or inside it (both absolute and normal).
bool is_within(const fs::path &inner, const fs::path &outer) {
    const fs::path rel = inner.lexically_relative(outer);
    return !rel.empty() && (rel == "." || stays_inside(rel));
}

}  // namespace

std::string why_not_removable_run(const fs::path &root) {
    std::error_code ec;
    const fs::path at = fs::canonical(root, ec);
    if (ec) return "it does not exist";
    if (!fs::is_directory(fs::symlink_status(at, ec))) return "it is not a directory";
    if (at == at.root_path()) return "it is the root directory";
    if (fs::path cwd = fs::canonical(fs::current_path(ec), ec); !ec && is_within(cwd, at))
        return cwd == at ? "it is the working directory" : "it holds the working directory";
    if (const char *home = std::getenv("HOME"); home && *home)
        if (fs::path h = fs::weakly_canonical(home, ec); !ec && is_within(h, at))
            return h == at ? "it is your home directory" : "it holds your home directory";
    if (fs::symlink_status(at / ".git", ec).type() != fs::file_type::not_found) return "it holds .git (a git repository)";
    return why_not_a_run(at, RunMarkers::required);
}

std::string why_not_a_run(const fs::path &root, RunMarkers markers) {
    std::error_code ec;
    const fs::path at = fs::absolute(root, ec).lexically_normal();
    bool only_lock = true;
    std::string foreign;  // the first name that is no part of a run
    for (fs::directory_iterator it(at, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (foreign.empty() && !is_layout_entry(name)) foreign = name;
        // A temporary file of an atomic write (.NAME.tmp-XXXX) is a half-written entry, not content.
        only_lock = only_lock && (name == ".lock" || (is_layout_entry(name) && name.find(".tmp-") != std::string::npos));
    }
    if (ec) return "it cannot be listed: " + ec.message();
    // Empty, or a lock alone (a prepare killed before it marked the run, maybe midway through writing
    // the marker): nothing there to lose.
    if (markers == RunMarkers::optional_when_empty && only_lock) return "";
    const auto is_file = [&](const char *name) { return fs::is_regular_file(fs::symlink_status(at / name, ec)); };
    // A clean killed midway leaves its removal marker, and maybe no lock: a later clean finishes the job.
    if (!is_file(".sage2tp-removing")) {
        if (!is_file(".lock")) return "it has no .lock, which every sage2tp run has";
        // Recognised by its own marker, never by the names of the folders it holds; experiment.toml marks
        // a run prepared before the marker existed.
        if (!is_file(".sage2tp-run") && !is_file("experiment.toml"))
            return "it has no .sage2tp-run, the marker prepare puts in every run";
    }
    if (!foreign.empty()) return "it holds '" + foreign + "', which is no part of a run";
    return "";
}

void RunDirectory::mark_as_run() const {
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(run_marker(), ec)))
        write_file_atomically(run_marker(), "a sage2tp run directory: sage2tp clean removes it whole\n");
}

}  // namespace s2tp
