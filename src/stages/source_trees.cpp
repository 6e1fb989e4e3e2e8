#include "stages/source_trees.h"

#include "support/errors.h"
#include "support/hashing.h"
#include "support/process_runner.h"

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

std::string strip_prefix(const std::string &path) {
    if (path.rfind("a/", 0) == 0 || path.rfind("b/", 0) == 0) return path.substr(2);
    return path;
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

std::vector<std::string> patch_paths(const fs::path &patch) {
    std::ifstream in(patch);
    if (!in) fail(ExitCode::usage, "cannot read patch '" + patch.string() + "'");
    std::vector<std::string> paths;
    std::string line;
    int number = 0;
    auto check = [&](std::string path) {
        auto tab = path.find('\t');  // "--- a/x\t2026-..." from diff -u
        if (tab != std::string::npos) path = path.substr(0, tab);
        path = trimmed(path);
        if (path == "/dev/null") return;
        std::string stripped = strip_prefix(path);
        fs::path p(stripped);
        bool escapes = p.is_absolute() || stripped.empty();
        for (const auto &part : p) escapes = escapes || part == ".." || part == ".git";
        if (escapes)
            fail(ExitCode::usage, patch.string() + ":" + std::to_string(number) + ": the patch touches '" + path +
                                      "', which is outside the source tree; refusing to apply it");
        paths.push_back(stripped);
    };
    while (std::getline(in, line)) {
        ++number;
        if (line.rfind("--- ", 0) == 0 || line.rfind("+++ ", 0) == 0) check(line.substr(4));
        else if (line.rfind("rename from ", 0) == 0 || line.rfind("copy from ", 0) == 0) check(line.substr(line.find("from ") + 5));
        else if (line.rfind("rename to ", 0) == 0 || line.rfind("copy to ", 0) == 0) check(line.substr(line.find("to ") + 3));
        else if (line.rfind("diff --git ", 0) == 0) {
            std::string rest = line.substr(11);
            auto split = rest.find(" b/");
            if (split == std::string::npos) split = rest.find(' ');
            if (split == std::string::npos) fail(ExitCode::usage, patch.string() + ":" + std::to_string(number) + ": malformed 'diff --git' line");
            check(rest.substr(0, split));
            check(rest.substr(split + 1));
        }
    }
    if (paths.empty()) fail(ExitCode::usage, patch.string() + ": not a unified diff (no ---/+++ file lines)");
    return paths;
}

std::string resolve_commit(const std::string &repository, const std::string &commit) {
    if (!fs::is_directory(repository))
        fail(ExitCode::usage, "source repository '" + repository + "' is not a directory");
    ProcessResult r = git({"-C", repository, "rev-parse", "--verify", "--quiet", "--end-of-options", commit + "^{commit}"});
    if (r.exit_code != 0)
        fail(ExitCode::usage, "commit '" + commit + "' does not exist in repository '" + repository + "'");
    return trimmed(r.out);
}

void remove_trees(const RunDirectory &run, const Experiment &experiment) {
    std::error_code ec;
    fs::remove_all(run.trees(), ec);
    if (ec) fail(ExitCode::internal, "cannot remove '" + run.trees().string() + "': " + ec.message());
    // A removed worktree stays registered in its repository until pruned. One whose `git worktree add`
    // was killed stays locked ("initializing") and is not pruned: the adds below override that with -f -f.
    if (experiment.source_kind == "git") git({"-C", experiment.repository, "worktree", "prune"});
}

PreparedTrees make_trees(const RunDirectory &run, const Experiment &experiment,
                         const std::function<fs::path()> &embedded_kernels) {
    PreparedTrees trees;
    trees.git_version = git_version();
    patch_paths(experiment.patch);  // refuse an escaping patch before touching anything
    trees.patch_sha256 = sha256_file(experiment.patch);

    remove_trees(run, experiment);
    fs::create_directories(run.trees());
    const fs::path baseline = run.tree("baseline");
    const fs::path candidate = run.tree("candidate");

    std::string repository;
    if (experiment.source_kind == "git") {
        repository = experiment.repository;
        trees.commit = resolve_commit(repository, experiment.commit);
        git_or_fail({"-C", repository, "worktree", "add", "-f", "-f", "--detach", baseline.string(), trees.commit}, std::nullopt,
                    "git worktree add (baseline) failed");
    } else {
        const fs::path kernels = embedded_kernels();
        if (!fs::is_directory(kernels))
            fail(ExitCode::usage, "embedded kernels directory '" + kernels.string() + "' is missing");
        copy_tree(kernels, baseline / "kernels");
        git_or_fail({"init", "--quiet", "--initial-branch=embedded", baseline.string()}, std::nullopt, "git init failed");
        git_or_fail({"-C", baseline.string(), "add", "--all"}, std::nullopt, "git add failed");
        git_or_fail({"-C", baseline.string(), "commit", "--quiet", "--no-gpg-sign", "-m", "sage2tp embedded kernels"},
                    std::nullopt, "git commit failed");
        repository = baseline.string();
        trees.commit = trimmed(git_or_fail({"-C", repository, "rev-parse", "HEAD"}, std::nullopt, "git rev-parse failed").out);
    }
    git_or_fail({"-C", repository, "worktree", "add", "-f", "-f", "--detach", candidate.string(), trees.commit}, std::nullopt,
                "git worktree add (candidate) failed");
    for (const fs::path &tree : {baseline, candidate}) {
        ProcessResult status = git_or_fail({"-C", tree.string(), "status", "--porcelain"}, std::nullopt, "git status failed");
        if (!trimmed(status.out).empty())
            fail(ExitCode::stop, "the checkout in '" + tree.string() + "' is not clean: " + first_line(status.out));
    }
    for (const auto &source : experiment.kernel_sources)
        if (!fs::is_regular_file(baseline / source))
            fail(ExitCode::usage, "kernel source '" + source + "' (from [source] kernel_sources) is not in the tree at " + trees.commit);

    ProcessResult check = git({"apply", "--check", fs::absolute(experiment.patch).string()}, candidate);
    if (check.exit_code != 0) {
        trees.patch_error = trimmed(check.err);
        remove_trees(run, experiment);  // nothing half-made stays behind
        return trees;
    }
    git_or_fail({"apply", fs::absolute(experiment.patch).string()}, candidate, "git apply failed");
    trees.patch_applied = true;
    trees.baseline_digest = Fingerprint().add_tree("tree", baseline).hex();
    trees.candidate_digest = Fingerprint().add_tree("tree", candidate).hex();
    return trees;
}

}  // namespace s2tp
