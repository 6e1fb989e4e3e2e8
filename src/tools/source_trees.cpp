#include "tools/source_trees.h"

#include "formats/unified_diff.h"
#include "support/errors.h"
#include "support/hashing.h"
#include "support/process_runner.h"
#include "support/text_lines.h"

#include <algorithm>
#include <fstream>

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

std::string trimmed(const std::string &text) {
    auto begin = text.find_first_not_of(" \t\r\n");
    auto end = text.find_last_not_of(" \t\r\n");
    return begin == std::string::npos ? std::string() : text.substr(begin, end - begin + 1);
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
    ProcessResult r = git({"-C", repository, "rev-parse", "--verify", "--quiet", "--end-of-options", commit + "^{commit}"});
    if (r.exit_code != 0)
        fail(ExitCode::usage, "commit '" + commit + "' does not exist in repository '" + repository + "'");
    return trimmed(r.out);
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

// The git directory of the repository that a linked worktree at `tree` belongs to (its .git file says
// "gitdir: <repository>/.git/worktrees/<id>"), or "" when `tree` is no linked worktree.
fs::path worktree_admin_directory(const fs::path &tree) {
    std::error_code ec;
    if (!fs::is_regular_file(tree / ".git", ec)) return {};
    std::ifstream in(tree / ".git");
    std::string line;
    std::getline(in, line);
    const std::string prefix = "gitdir: ";
    if (line.rfind(prefix, 0) != 0) return {};
    return fs::path(trimmed(line.substr(prefix.size())));
}

// Every tree directory under `trees`: the baseline, each candidate (whatever the manifest that made
// them named them) and support.
std::vector<fs::path> tree_directories(const fs::path &trees) {
    std::vector<fs::path> directories;
    std::error_code ec;
    for (fs::directory_iterator it(trees, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_directory(ec)) directories.push_back(it->path());
    std::sort(directories.begin(), directories.end());
    return directories;
}

}  // namespace

void remove_trees(const fs::path &trees, const Experiment &experiment) {
    std::vector<std::string> repositories = user_repositories(experiment);
    std::error_code ec;
    // Also the repositories the trees on disk are worktrees of: an earlier prepare may have used others.
    for (const fs::path &tree : tree_directories(trees)) {
        const fs::path admin = worktree_admin_directory(tree);
        if (admin.empty()) continue;
        const std::string git_directory = admin.parent_path().parent_path().string();
        if (std::find(repositories.begin(), repositories.end(), git_directory) == repositories.end())
            repositories.push_back(git_directory);
    }
    // A worktree whose `git worktree add` was killed stays locked ("initializing") and would survive the
    // prune: unlock those registered under `trees`.
    const std::string inside = (fs::absolute(trees).lexically_normal() / "").string();
    for (const auto &repository : repositories) {
        if (!fs::is_directory(repository, ec)) continue;
        std::string path;
        for (std::string_view line : split_lines(git({"-C", repository, "worktree", "list", "--porcelain"}).out)) {
            if (line.rfind("worktree ", 0) == 0) path = std::string(line.substr(9));
            else if (line.rfind("locked", 0) == 0 && path.rfind(inside, 0) == 0)
                git({"-C", repository, "worktree", "unlock", path});
        }
    }
    fs::remove_all(trees, ec);
    if (ec) fail(ExitCode::usage, "cannot remove '" + trees.string() + "': " + ec.message());
    // A worktree whose directory is gone stays registered in its repository until pruned (so does one
    // of a run deleted by hand).
    for (const auto &repository : repositories)
        if (fs::is_directory(repository, ec)) git({"-C", repository, "worktree", "prune"});
}

void remove_trees(const RunDirectory &run, const Experiment &experiment) { remove_trees(run.trees(), experiment); }

void relink_trees(const fs::path &trees, const fs::path &moved_from) {
    // Worktrees are registered by absolute path in both directions. A main repository that moved along
    // (an embedded baseline whose candidate is its worktree) is found under `trees`.
    for (const fs::path &tree : tree_directories(trees)) {
        fs::path admin = worktree_admin_directory(tree);
        if (admin.empty()) continue;
        const fs::path inside = admin.lexically_relative(moved_from);
        if (!inside.empty() && *inside.begin() != "..") admin = trees / inside;
        std::error_code ec;
        if (!fs::is_directory(admin, ec)) continue;  // pruned, or a run copied to a host without the repository
        git_or_fail({"--git-dir=" + admin.parent_path().parent_path().string(), "worktree", "repair", tree.string()},
                    std::nullopt, "git worktree repair failed");
    }
}

void move_trees(const fs::path &from, const fs::path &to) {
    std::error_code ec;
    fs::rename(from, to, ec);
    if (ec) fail(ExitCode::usage, "cannot move '" + from.string() + "' to '" + to.string() + "': " + ec.message());
    relink_trees(to, from);
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

    remove_trees(trees_directory, experiment);
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
        } else if (cand.kind == "git") {
            tree.commit = resolve_commit(cand.repository, cand.commit);
            git_or_fail({"-C", cand.repository, "worktree", "add", "-f", "-f", "--detach", directory.string(), tree.commit},
                        std::nullopt, failure);
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
                remove_trees(trees_directory, experiment);  // nothing half-made stays behind
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
