#include "tools/source_trees.h"

#include "formats/unified_diff.h"
#include "support/errors.h"
#include "support/file_io.h"
#include "support/hashing.h"
#include "support/process_runner.h"
#include "support/text_lines.h"
#include "support/text_scan.h"

#include <algorithm>
#include <utility>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

// Commits made by sage2tp itself are reproducible: same content, same id.
const std::map<std::string, std::string> fixed_identity = {
    {"GIT_AUTHOR_NAME", "sage2tp"},          {"GIT_AUTHOR_EMAIL", "sage2tp@localhost"},
    {"GIT_COMMITTER_NAME", "sage2tp"},       {"GIT_COMMITTER_EMAIL", "sage2tp@localhost"},
    {"GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z"}, {"GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z"},
    {"GIT_CONFIG_NOSYSTEM", "1"},            {"GIT_TERMINAL_PROMPT", "0"}};

ProcessResult git(const std::vector<std::string> &args, const std::optional<fs::path> &cwd = std::nullopt) {
    std::vector<std::string> argv{"git"};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessOptions options;
    options.working_directory = cwd;
    options.extra_environment = fixed_identity;
    return run_process(argv, options);
}

std::string first_line(const std::string &text) {
    auto end = text.find('\n');
    return text.substr(0, end);
}

ProcessResult git_or_fail(const std::vector<std::string> &args, const std::optional<fs::path> &cwd,
                          const std::string &what) {
    ProcessResult r = git(args, cwd);
    if (r.exit_code != 0) fail(ExitCode::stop, what + ": " + trimmed(r.err.empty() ? r.out : r.err));
    return r;
}

void copy_tree(const fs::path &from, const fs::path &to) {
    fs::create_directories(to);
    fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

}  // namespace

std::string git_version() {
    if (!find_program("git"))
        fail(ExitCode::missing_tool, "git is not installed; prepare needs it for the source trees (apt-get install git)");
    return trimmed(git({"--version"}).out);
}

std::string resolve_commit(const std::string &repository, const std::string &commit) {
    if (!fs::is_directory(repository))
        fail(ExitCode::usage, "source repository '" + repository + "' is not a directory");
    if (const ProcessResult probe = git({"-C", repository, "rev-parse", "--git-dir"}); probe.exit_code != 0)
        fail(ExitCode::usage, "source repository '" + repository + "' is not a git repository (git: " +
                                  trimmed(probe.err.empty() ? probe.out : probe.err) + "); pass --repository your checkout");
    ProcessResult r = git({"-C", repository, "rev-parse", "--verify", "--quiet", "--end-of-options", commit + "^{commit}"});
    if (r.exit_code != 0)
        fail(ExitCode::usage, "commit '" + commit + "' does not exist in repository '" + repository +
                                  "'; to build another commit of your checkout, pass --commit REV for the baseline "
                                  "or --candidate-commit REV for a candidate (HEAD takes the checkout as committed)");
    return trimmed(r.out);
}

std::string worktree_diff(const std::string &repository, const std::string &commit) {
    return git_or_fail({"-C", repository, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-relative", "--binary",
                        "--src-prefix=a/", "--dst-prefix=b/", "--end-of-options", resolve_commit(repository, commit), "--"},
                       std::nullopt, "git diff of the working tree of '" + repository + "'")
        .out;
}

namespace {

// The user repositories a run's trees are worktrees of (each once).
std::vector<std::string> user_repositories(const Experiment &experiment) {
    std::vector<std::string> repositories;
    std::vector<const SourceSpec *> sources{&experiment.baseline_source};
    for (const CandidateSpec &c : experiment.candidates) sources.push_back(&c.source);
    for (const SourceSpec *source : sources)
        if (source->kind == "git" &&
            std::find(repositories.begin(), repositories.end(), source->repository) == repositories.end())
            repositories.push_back(source->repository);
    return repositories;
}

// An embedded source: the kernels/ shipped with sage2tp committed once into a fresh repository at
// `tree`, with a fixed identity so that the same sources give the same commit id.
std::string commit_embedded_kernels(const fs::path &tree, const std::function<fs::path()> &embedded_kernels) {
    const fs::path kernels = embedded_kernels();
    if (!fs::is_directory(kernels))
        fail(ExitCode::usage, "embedded kernels directory '" + kernels.string() + "' is missing");
    copy_tree(kernels, tree / "kernels");
    git_or_fail({"init", "--quiet", "--initial-branch=embedded", tree.string()}, std::nullopt, "git init failed");
    git_or_fail({"-C", tree.string(), "add", "--all"}, std::nullopt, "git add failed");
    git_or_fail({"-C", tree.string(), "commit", "--quiet", "--no-gpg-sign", "-m", "sage2tp embedded kernels"},
                std::nullopt, "git commit failed");
    return trimmed(git_or_fail({"-C", tree.string(), "rev-parse", "HEAD"}, std::nullopt, "git rev-parse failed").out);
}

void require_sources(const fs::path &tree, const std::vector<std::string> &sources, const std::string &variant,
                     const std::string &commit) {
    for (const auto &source : sources)
        if (!fs::is_regular_file(tree / source))
            fail(ExitCode::usage, variant + " source '" + source + "' (from the manifest's kernel_sources) is not in the tree at " +
                                      commit);
}

}  // namespace

namespace {

// True when `path` is `outer` or inside it; `path` is taken as git records it (absolute, resolved) and
// compared with `outer` both as given and resolved.
bool recorded_inside(const fs::path &path, const fs::path &outer) {
    std::error_code ec;
    const fs::path normal = fs::absolute(path, ec).lexically_normal();
    for (const fs::path &root : {fs::absolute(outer, ec).lexically_normal(), fs::weakly_canonical(outer, ec)}) {
        const fs::path rel = normal.lexically_relative(root);
        if (!rel.empty() && (rel == "." || stays_inside(rel))) return true;
    }
    return false;
}

// The first line of a small regular file (never through a link), "" when there is none.
std::string first_line_of_small_file(const fs::path &file) {
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(file, ec);
    if (ec || !fs::is_regular_file(status) || fs::file_size(file, ec) > 4096 || ec) return {};
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    return trimmed(line);
}

// The file sage2tp puts in the admin directory of each worktree it adds (<git directory>/worktrees/<id>),
// so that it removes the stale registrations of its own worktrees only, never the user's.
constexpr const char *worktree_mark = "sage2tp-worktree";

// Marks the worktree just added at `tree` (its .git file names its admin directory) as sage2tp's.
void mark_own_worktree(const fs::path &tree) {
    const std::string line = first_line_of_small_file(tree / ".git");
    const std::string prefix = "gitdir: ";
    if (line.rfind(prefix, 0) != 0) return;
    const fs::path admin = fs::path(line.substr(prefix.size())).lexically_normal();
    std::error_code ec;
    if (admin.parent_path().filename() == "worktrees" && fs::is_directory(fs::symlink_status(admin, ec)))
        write_file_atomically(admin / worktree_mark, "added by sage2tp prepare for " + tree.string() + "\n");
}

// The worktree a registration <git-common-dir>/worktrees/<id> is for: its gitdir file names the
// worktree's .git file.
fs::path registered_worktree(const fs::path &admin) {
    const fs::path git_file(first_line_of_small_file(admin / "gitdir"));
    return git_file.empty() ? fs::path() : git_file.parent_path();
}

// The registration of the linked worktree at `tree` in its repository (its .git file says "gitdir:
// <repository>/.git/worktrees/<id>"), or "" when `tree` is no linked worktree of the run. The .git file
// is believed only when the registration is inside the run or is one for a worktree inside the run, so
// that a planted .git file can make sage2tp touch no other repository. An admin directory inside
// `moved_from` (an embedded baseline that moved along with its candidates) is looked for under `trees`.
fs::path own_worktree_admin(const fs::path &tree, const fs::path &run_root, const fs::path &trees = {},
                            const fs::path &moved_from = {}) {
    const std::string line = first_line_of_small_file(tree / ".git");
    const std::string prefix = "gitdir: ";
    if (line.rfind(prefix, 0) != 0) return {};
    fs::path admin = fs::path(line.substr(prefix.size())).lexically_normal();
    if (!moved_from.empty()) {
        const fs::path inside = admin.lexically_relative(moved_from);
        if (!inside.empty() && *inside.begin() != "..") admin = trees / inside;
    }
    if (recorded_inside(admin, run_root)) return admin;
    if (admin.parent_path().filename() != "worktrees") return {};
    const fs::path worktree = registered_worktree(admin);
    return !worktree.empty() && recorded_inside(worktree, run_root) ? admin : fs::path();
}

// Every tree directory under `trees` (never a link): the baseline, each candidate (whatever the
// manifest that made them named them) and support.
std::vector<fs::path> tree_directories(const fs::path &trees) {
    std::vector<fs::path> directories;
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(trees, ec))) return directories;
    for (fs::directory_iterator it(trees, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_directory(ec) && !it->is_symlink(ec)) directories.push_back(it->path());
    std::sort(directories.begin(), directories.end());
    return directories;
}

// The git directories (common to all their worktrees) of the experiment's repositories and of those
// the run's trees are worktrees of, as own_worktree_admin believes them.
std::vector<fs::path> git_directories(const std::vector<fs::path> &trees_directories, const fs::path &run_root,
                                      const Experiment &experiment) {
    std::vector<fs::path> directories;
    auto add = [&](const fs::path &directory) {
        if (!directory.empty() && std::find(directories.begin(), directories.end(), directory) == directories.end())
            directories.push_back(directory);
    };
    std::error_code ec;
    for (const std::string &repository : user_repositories(experiment)) {
        if (!fs::is_directory(repository, ec)) continue;  // a run copied from a host with the repository
        const ProcessResult r = git({"-C", repository, "rev-parse", "--path-format=absolute", "--git-common-dir"});
        if (r.exit_code == 0) add(fs::path(trimmed(r.out)).lexically_normal());
    }
    for (const fs::path &trees : trees_directories)
        for (const fs::path &tree : tree_directories(trees)) {
            const fs::path admin = own_worktree_admin(tree, run_root);
            if (!admin.empty() && admin.parent_path().filename() == "worktrees") add(admin.parent_path().parent_path());
        }
    return directories;
}

// The registrations in `git_directory` of worktrees inside `run_root` (git keeps them outside the
// run, in <git directory>/worktrees/<id>).
std::vector<WorktreeRegistration> registrations_inside(const fs::path &git_directory, const fs::path &run_root) {
    std::vector<WorktreeRegistration> found;
    std::error_code ec;
    const fs::path worktrees = git_directory / "worktrees";
    if (!fs::is_directory(fs::symlink_status(worktrees, ec))) return found;
    for (fs::directory_iterator it(worktrees, ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_directory(ec) || it->is_symlink(ec)) continue;
        const fs::path worktree = registered_worktree(it->path());
        if (!worktree.empty() && recorded_inside(worktree, run_root)) found.push_back({it->path(), worktree});
    }
    std::sort(found.begin(), found.end(), [](const auto &a, const auto &b) { return a.admin < b.admin; });
    return found;
}

void remove_registrations_of_missing_worktrees(const std::vector<fs::path> &git_directories, const fs::path &run_root) {
    std::error_code ec;
    for (const fs::path &directory : git_directories)
        for (const WorktreeRegistration &r : registrations_inside(directory, run_root))
            if (fs::symlink_status(r.worktree, ec).type() == fs::file_type::not_found) remove_without_following(r.admin);
}

}  // namespace

std::vector<WorktreeRegistration> run_registrations(const fs::path &run_root, const Experiment &experiment) {
    const fs::path root = fs::absolute(run_root).lexically_normal();
    const std::vector<fs::path> trees{root / "trees", root / ".prepare-new" / "trees", root / ".prepare-old"};
    std::vector<WorktreeRegistration> registrations;
    for (const fs::path &directory : git_directories(trees, root, experiment))
        if (!recorded_inside(directory, root))  // a repository inside the run goes with it
            for (WorktreeRegistration &r : registrations_inside(directory, root)) registrations.push_back(std::move(r));
    return registrations;
}

void remove_trees(const fs::path &trees, const Experiment &experiment, const fs::path &run_root) {
    const std::vector<fs::path> directories = git_directories({trees}, run_root, experiment);
    remove_without_following(trees);
    // A worktree whose directory is gone stays registered in its repository until its registration
    // goes too. Only the run's own: a registration is removed when it names a worktree inside the run
    // that no longer exists, as `git worktree prune` would (locked or not).
    remove_registrations_of_missing_worktrees(directories, run_root);
    // The manifest's repositories also keep registrations of runs deleted by hand: those of sage2tp's
    // own worktrees (marked when they were added) go; the user's, stale or not, are never touched.
    std::error_code ec;
    for (const fs::path &directory : git_directories({}, run_root, experiment)) {
        const fs::path worktrees = directory / "worktrees";
        if (!fs::is_directory(fs::symlink_status(worktrees, ec))) continue;
        for (fs::directory_iterator it(worktrees, ec), end; !ec && it != end; it.increment(ec)) {
            if (!fs::is_directory(fs::symlink_status(it->path(), ec)) ||
                !fs::is_regular_file(fs::symlink_status(it->path() / worktree_mark, ec)))
                continue;
            const fs::path worktree = registered_worktree(it->path());
            if (!worktree.empty() && fs::symlink_status(worktree, ec).type() == fs::file_type::not_found)
                remove_without_following(it->path());
        }
    }
}

std::vector<WorktreeRegistration> run_worktree_registrations(const fs::path &root) {
    std::error_code ec;
    // Without its experiment.toml (or with one this sage2tp cannot read), the trees' own .git files still
    // name their repositories, believed when they point back into the run.
    Experiment experiment;
    const RunDirectory layout(root);
    if (fs::is_regular_file(fs::symlink_status(layout.manifest(), ec))) try {
            experiment = load_experiment(layout.manifest());
        } catch (const Error &) {
        }
    std::vector<WorktreeRegistration> registrations = run_registrations(root, experiment);
    // A clean killed midway recorded the repositories before it removed the trees and experiment.toml
    // that name them; their registrations of worktrees inside this run are found there.
    if (fs::is_regular_file(fs::symlink_status(layout.removal_marker(), ec))) try {
            std::istringstream lines(read_text_file(layout.removal_marker(), max_toml_bytes));
            for (std::string line; std::getline(lines, line);) {
                if (line.empty()) continue;
                for (WorktreeRegistration &r : registrations_inside(line, root))
                    if (std::none_of(registrations.begin(), registrations.end(),
                                     [&](const WorktreeRegistration &known) { return known.admin == r.admin; }))
                        registrations.push_back(std::move(r));
            }
        } catch (const Error &) {
            // Unreadable: the registrations the trees still name are removed all the same.
        }
    return registrations;
}

void relink_trees(const fs::path &trees, const fs::path &moved_from, const fs::path &run_root) {
    // Worktrees are registered by absolute path in both directions. A main repository that moved along
    // (an embedded baseline whose candidate is its worktree) is found under `trees`.
    std::vector<std::pair<fs::path, fs::path>> moved;  // tree, its registration
    std::error_code ec;
    for (const fs::path &tree : tree_directories(trees)) {
        const fs::path admin = own_worktree_admin(tree, run_root, trees, moved_from);
        // An empty one: pruned, or a run copied to a host without the repository.
        if (!admin.empty() && fs::is_directory(admin, ec)) moved.emplace_back(tree, admin);
    }
    // git reads every registration of the repository to repair one, so a registration that a killed
    // `git worktree add` of this run left half-written (its commondir empty) fails the repair. Such a one
    // names a worktree inside the run, and no tree being moved is its: it goes when that worktree is no
    // longer there, or when git could not read it anyway (its commondir empty or missing).
    for (const auto &[tree, admin] : moved)
        for (const WorktreeRegistration &r : registrations_inside(admin.parent_path().parent_path(), run_root)) {
            const bool moving = std::any_of(moved.begin(), moved.end(), [&](const auto &m) { return m.second == r.admin; });
            const bool gone = fs::symlink_status(r.worktree, ec).type() == fs::file_type::not_found;
            if (!moving && (gone || first_line_of_small_file(r.admin / "commondir").empty()))
                remove_without_following(r.admin);
        }
    for (const auto &[tree, admin] : moved)
        git_or_fail({"--git-dir=" + admin.parent_path().parent_path().string(), "worktree", "repair", tree.string()},
                    std::nullopt, "git worktree repair failed");
}

void move_trees(const fs::path &from, const fs::path &to, const fs::path &run_root) {
    std::error_code ec;
    fs::rename(from, to, ec);
    if (ec) fail(ExitCode::usage, "cannot move '" + from.string() + "' to '" + to.string() + "': " + ec.message());
    relink_trees(to, from, run_root);
}

PreparedTrees make_trees(const fs::path &trees_directory, const Experiment &experiment,
                         const std::function<fs::path()> &embedded_kernels) {
    PreparedTrees trees;
    trees.git_version = git_version();
    for (const CandidateSpec &c : experiment.candidates) {
        PreparedCandidateTree tree{c.name, "", "", ""};
        if (!c.patch.empty()) {
            patch_paths(c.patch);  // refuse an escaping patch before touching anything
            tree.patch_sha256 = sha256_file(c.patch);
        }
        trees.candidates.push_back(tree);
    }

    remove_trees(trees_directory, experiment, trees_directory);
    fs::create_directories(trees_directory);
    const fs::path baseline = trees_directory / "baseline";
    const SourceSpec &base = experiment.baseline_source;

    // The baseline's repository, for a candidate that is the same checkout (a patch on top).
    std::string baseline_repository;
    if (base.kind == "git") {
        baseline_repository = base.repository;
        trees.commit = resolve_commit(base.repository, base.commit);
        git_or_fail({"-C", base.repository, "worktree", "add", "-f", "-f", "--detach", baseline.string(), trees.commit}, std::nullopt,
                    "git worktree add (baseline) failed");
        mark_own_worktree(baseline);
    } else {
        trees.commit = commit_embedded_kernels(baseline, embedded_kernels);
        baseline_repository = baseline.string();
    }
    std::vector<fs::path> checkouts{baseline};
    for (std::size_t i = 0; i < experiment.candidates.size(); ++i) {
        const SourceSpec &cand = experiment.candidates[i].source;
        PreparedCandidateTree &tree = trees.candidates[i];
        const fs::path directory = trees_directory / tree.name;
        const std::string failure = "git worktree add (candidate " + tree.name + ") failed";
        if (cand.same_checkout(base)) {
            tree.commit = trees.commit;
            git_or_fail({"-C", baseline_repository, "worktree", "add", "-f", "-f", "--detach", directory.string(), trees.commit},
                        std::nullopt, failure);
            mark_own_worktree(directory);
        } else if (cand.kind == "git") {
            tree.commit = resolve_commit(cand.repository, cand.commit);
            git_or_fail({"-C", cand.repository, "worktree", "add", "-f", "-f", "--detach", directory.string(), tree.commit},
                        std::nullopt, failure);
            mark_own_worktree(directory);
        } else {
            tree.commit = commit_embedded_kernels(directory, embedded_kernels);
        }
        checkouts.push_back(directory);
    }
    for (const fs::path &tree : checkouts) {
        ProcessResult status = git_or_fail({"-C", tree.string(), "status", "--porcelain"}, std::nullopt, "git status failed");
        if (!trimmed(status.out).empty())
            fail(ExitCode::stop, "the checkout in '" + tree.string() + "' is not clean: " + first_line(status.out));
    }
    require_sources(baseline, base.kernel_sources, "baseline", trees.commit);
    require_sources(baseline, base.support_sources, "baseline", trees.commit);

    for (std::size_t i = 0; i < experiment.candidates.size(); ++i) {
        const CandidateSpec &c = experiment.candidates[i];
        const PreparedCandidateTree &tree = trees.candidates[i];
        const fs::path directory = trees_directory / c.name;
        if (!c.patch.empty()) {
            const std::string patch = fs::absolute(c.patch).string();
            ProcessResult check = git({"apply", "--check", patch}, directory);
            if (check.exit_code != 0) {
                trees.failed_candidate = c.name;
                trees.patch_error = trimmed(check.err);
                remove_trees(trees_directory, experiment, trees_directory);  // nothing half-made stays behind
                return trees;
            }
            git_or_fail({"apply", patch}, directory, "git apply (candidate " + c.name + ") failed");
        }
        require_sources(directory, c.source.kernel_sources, "candidate " + c.name, tree.commit);
        require_sources(directory, c.source.support_sources, "candidate " + c.name, tree.commit);
    }
    trees.patch_applied = true;
    if (experiment.needs_support_tree()) {
        // A plain copy: it is never patched or compared, only built for the quantization kernels.
        copy_tree(embedded_kernels(), trees_directory / "support" / "kernels");
        trees.support_digest = Fingerprint().add_tree("tree", trees_directory / "support").hex();
    }
    trees.baseline_digest = Fingerprint().add_tree("tree", baseline).hex();
    for (PreparedCandidateTree &tree : trees.candidates)
        tree.digest = Fingerprint().add_tree("tree", trees_directory / tree.name).hex();
    return trees;
}

}  // namespace s2tp
