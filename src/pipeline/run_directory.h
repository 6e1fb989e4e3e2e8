// The run directory: everything one experiment run owns, and the lock that keeps it to one process.
//
//   <run>/experiment.toml          the manifest as resolved at prepare time
//   <run>/pins.toml                output SHA-256 pins made by time --pin
//   <run>/last-stop.toml           why the last stage attempt stopped without a checkpoint (no GPU)
//   <run>/checkpoints/NN-<stage>.toml
//   <run>/trees/{baseline,<each candidate>,support}
//   <run>/builds/  <run>/logs/  <run>/reports/  <run>/inputs/
//   <run>/.prepare-new/ .prepare-old/   prepare's staging, present only while (or if killed while) it runs
//   <run>/.build-new/ .build-old/       build's staging, the same
//   <run>/slurm/                   sage2tp slurm's submissions (tools/slurm/slurm_submission.h)
//   <run>/.sage2tp-run             the marker that makes a directory a run (written by prepare)
//   <run>/.sage2tp-removing        written by clean before it removes anything: a later clean finishes
//   <run>/.lock                    flock(2) target; holds the pid of the process using the run
//
// Every path sage2tp reads back from a run is relative to the run directory, so a run prepared and
// built on a CPU host can be copied to a GPU host and resumed there. (prepare's figures and the build's
// .cmd files also record absolute paths, of where things were on the host that wrote them.)
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

class RunDirectory {
public:
    explicit RunDirectory(std::filesystem::path root);
    ~RunDirectory();
    RunDirectory(const RunDirectory &) = delete;
    RunDirectory &operator=(const RunDirectory &) = delete;

    // Takes the exclusive lock or throws Error(usage) naming the pid that holds it. First refuses
    // (Error(usage)) a run with a symbolic link at an entry of its layout (refuse_planted_links), except
    // for clean, which removes links themselves and never follows them; and a .lock that is not a
    // regular file or has more than one hard link (the pid written into it would land elsewhere).
    enum class Links { refuse, removed_without_following };
    void lock(Links links = Links::refuse);
    // Error(usage) naming the first symbolic link among the run layout's entries and what they hold
    // (two levels deep; under trees/ only the trees themselves): sage2tp writes and deletes there.
    void refuse_planted_links() const;

    const std::filesystem::path &root() const { return root_; }
    std::filesystem::path manifest() const { return root_ / "experiment.toml"; }
    std::filesystem::path run_marker() const { return root_ / ".sage2tp-run"; }
    std::filesystem::path removal_marker() const { return root_ / ".sage2tp-removing"; }
    // Writes run_marker() unless it is there: prepare, holding the lock, before anything else.
    void mark_as_run() const;
    std::filesystem::path pins() const { return root_ / "pins.toml"; }  // time --pin's output SHA-256 pins
    std::filesystem::path last_stop() const { return root_ / "last-stop.toml"; }  // see StageStop
    std::filesystem::path checkpoints() const { return root_ / "checkpoints"; }
    std::filesystem::path trees() const { return root_ / "trees"; }
    std::filesystem::path tree(const std::string &variant) const { return trees() / variant; }
    std::filesystem::path builds() const { return root_ / "builds"; }
    std::filesystem::path logs() const { return root_ / "logs"; }
    std::filesystem::path reports() const { return root_ / "reports"; }
    std::filesystem::path inputs() const { return root_ / "inputs"; }
    // prepare builds its new state here and swaps it in (see sage2tp-prepare(1)); the old trees are
    // moved to prepare_retired() to be deleted.
    std::filesystem::path prepare_staging() const { return root_ / ".prepare-new"; }
    std::filesystem::path prepare_retired() const { return root_ / ".prepare-old"; }
    // build compiles here and swaps it in whole as builds/ (see sage2tp-build(1)); the old builds/ is
    // moved to build_retired() to be deleted.
    std::filesystem::path build_staging() const { return root_ / ".build-new"; }
    std::filesystem::path build_retired() const { return root_ / ".build-old"; }

    // A path relative to the run root for recording; throws if `path` is outside the run.
    std::string relative(const std::filesystem::path &path) const;
    // Resolves a recorded relative path; throws Error(usage) if it would escape the run directory.
    std::filesystem::path resolve(const std::string &recorded) const;

private:
    std::filesystem::path root_;
    int lock_fd_ = -1;
};

// The pid recorded in <run>/.lock while another process holds the run's lock (0 when the file names
// none), nullopt when the lock is free. It probes with a shared flock that it drops at once; lock()
// retries for a moment, so a status probe never makes a starting stage fail.
std::optional<long> lock_holder(const std::filesystem::path &run_root);

// The run directory that `dir` is, or is inside (it holds experiment.toml and .lock), if any.
std::optional<std::filesystem::path> enclosing_run(const std::filesystem::path &dir);

// write_user_file for a file a user named (compare --svg, report --output), refused with Error(usage)
// when `file` would land inside a run: a run holds only what its stages write, and clean removes only
// a directory that holds nothing else.
void write_user_file_outside_runs(const std::filesystem::path &file, const std::string &content);

// True when `path`, taken relative to some root, stays inside it (no absolute path, no "..").
bool stays_inside(const std::filesystem::path &relative_path);

// Which run a command works on: --run DIR, else <root>/<run-id> when an id is given (or SAGE2TP_RUN_ID
// is set; the older SAGE2_TEMPORAL_RUN_ID is still honoured), else the run the working directory is in
// (enclosing_run), else the run <root>/latest points to. Empty when none is known.
struct RunSelection {
    std::optional<std::filesystem::path> run_dir;
    std::optional<std::string> run_id;
    std::filesystem::path runs_root = "sage2tp-runs";
};
// Where runs live when --root is not given: $SAGE2TP_ROOT when set; else the nearest directory named
// sage2tp-runs in the working directory or one above it (as git finds its repository), absolute when
// it is above; else "sage2tp-runs", where prepare makes it.
std::filesystem::path default_runs_root();
// The selection a command's [RUN] word makes: the path when it holds a '/' or something is there (a
// missing path or a file is then "no such run", never "invalid run id"), else the run of that id under
// the selection's root.
RunSelection select_run_word(RunSelection selection, const std::string &word);
std::optional<std::filesystem::path> existing_run(const RunSelection &selection);
// existing_run, for the stages after prepare: Error(precondition) naming 'sage2tp prepare' when none exists.
std::filesystem::path require_existing_run(const RunSelection &selection);
// The run directory prepare should use: as existing_run, else a new <root>/<experiment>-<UTC timestamp>
// (claimed by new_run_id).
std::filesystem::path run_for_prepare(const RunSelection &selection, const std::string &experiment_name);
// A run id for a new run, <experiment>-<UTC timestamp>, e.g. temporal-pair-20261129T135954Z, with -2,
// -3, ... when that run exists. Its directory under `runs_root` is created here, which claims the id
// atomically. Characters of the name that a run id may not hold become '_'.
std::string new_run_id(const std::string &experiment_name, const std::filesystem::path &runs_root);
// Throws Error(usage) naming the character unless `id` is a safe run id: only [A-Za-z0-9._-], not
// starting with '.' or '-', not "latest". Run ids end up in paths that nvcc hands to its own shell.
void check_run_id(const std::string &id);
// The run <root>/latest points to, when it is a link to a directory directly under the runs root
// (canonically); a link to anywhere else is ignored.
std::optional<std::filesystem::path> latest_run(const std::filesystem::path &runs_root);
// The names a run directory may hold (the layout above).
const std::vector<std::string> &run_layout_entries();
// What `prepare --candidate-worktree` names the working tree's diff at the run's root while it runs
// (PREFIX<digest>.patch); a killed prepare leaves it, the next prepare of the run removes it, and until
// then it is part of the run (clean removes it with the rest).
inline constexpr const char *worktree_patch_prefix = ".candidate-worktree-";
// Why `root` may not be removed as a run, "" when it may: it must be provably a run (a directory with
// its marker (see why_not_a_run), holding nothing but the run layout's entries and their temporary
// files), and neither the root directory, the working directory or one holding it,
// $HOME or one holding it, nor a directory with .git.
std::string why_not_removable_run(const std::filesystem::path &root);
// Why the directory `root` is not a run, "" when it is: it holds nothing but the run layout's entries,
// with .lock and its marker .sage2tp-run (or, for a run prepared before the marker existed,
// experiment.toml), or clean's .sage2tp-removing. A run is recognised by its marker, never by the
// names of its folders. An empty directory, or one holding only .lock, is one for prepare to make a
// run in (optional_when_empty).
enum class RunMarkers { required, optional_when_empty };
std::string why_not_a_run(const std::filesystem::path &root, RunMarkers markers);
// Creates `dir` (and its parents) for prepare; true when this process made it, false when it was there
// already. mkdir is atomic, so of two prepares racing for one new directory exactly one made it; that
// one may remove it when its prepare fails, and only while it holds the run's lock (prepare_in_run).
// Error(usage) when it cannot be made.
bool claim_run_directory(const std::filesystem::path &dir);
// Points <root>/latest at `run` (a relative symlink, replaced atomically).
void mark_latest(const RunSelection &selection, const std::filesystem::path &run);

}  // namespace s2tp
