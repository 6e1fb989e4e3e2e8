#include "stages/prepare_stage.h"

#include "gpu/kernel_abi.h"

#include "formats/toml_schema.h"
#include "pipeline/file_artifact.h"

#include "tools/gpu_session/gpu_session.h"
#include "tools/source_trees.h"
#include "support/errors.h"
#include "support/file_io.h"
#include "support/hashing.h"

#include <memory>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

// The workload tensors prepare copies into the run.
const char *const workload_copies = "inputs/workload";

// Removes what a killed prepare --candidate-worktree left at the root of the run.
void remove_worktree_patches(const fs::path &root) {
    std::error_code ec;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().filename().string().rfind(worktree_patch_prefix, 0) == 0) remove_without_following(it->path());
}

// The run's own copy of a candidate's patch, so that the run stays complete when copied to another host.
std::string patch_copy(const CandidateSpec &candidate) { return "inputs/" + candidate.name + ".patch"; }

void discard_leftovers(const RunDirectory &run, const Experiment &experiment) {
    // First, while git still has their registrations: trees a killed swap moved but did not re-link.
    std::error_code ec;
    if (fs::is_directory(run.trees(), ec)) relink_trees(run.trees(), run.prepare_staging() / "trees", run.root());
    remove_trees(run.prepare_staging() / "trees", experiment, run.root());
    remove_trees(run.prepare_retired(), experiment, run.root());
    remove_without_following(run.prepare_staging());
}

void rename_or_fail(const fs::path &from, const fs::path &to) {
    std::error_code ec;
    fs::rename(from, to, ec);
    if (ec) fail(ExitCode::usage, "cannot move '" + from.string() + "' to '" + to.string() + "': " + ec.message());
}

// Replaces the run's prepare outputs with the staged ones. Only renames and deletions of the old.
void swap_in(const RunDirectory &run, const Experiment &experiment) {
    const fs::path staging = run.prepare_staging();
    std::error_code ec;
    if (fs::exists(run.trees(), ec)) {
        rename_or_fail(run.trees(), run.prepare_retired());
        // Pruned before the new trees take the old paths: git would otherwise still see the old
        // registrations as alive.
        remove_trees(run.prepare_retired(), experiment, run.root());
    }
    move_trees(staging / "trees", run.trees(), run.root());
    fs::create_directories(run.inputs(), ec);
    if (ec) fail(ExitCode::usage, "cannot create '" + run.inputs().string() + "': " + ec.message());
    // The previous prepare's copies go, whatever its candidates were named.
    std::vector<fs::path> old{run.root() / workload_copies};
    for (fs::directory_iterator it(run.inputs(), ec), end; !ec && it != end; it.increment(ec))
        if (it->path().extension() == ".patch") old.push_back(it->path());
    for (const fs::path &file : old) fs::remove_all(file, ec);
    std::vector<fs::path> staged{workload_copies};
    for (const CandidateSpec &c : experiment.candidates) staged.push_back(patch_copy(c));
    for (const fs::path &relative : staged)
        if (fs::exists(staging / relative, ec)) rename_or_fail(staging / relative, run.root() / relative);
    rename_or_fail(staging / "experiment.toml", run.manifest());
    fs::remove_all(staging, ec);
}

// Checks the workload's captured tensors against its problem (header, dtype, shape, finite) and copies
// them into the staging directory; records the paths of the copies, relative to the run.
void stage_workload_tensors(Experiment &recorded, const fs::path &staging) {
    WorkloadSpec &workload = recorded.workload;
    if (!workload.q_file) return;
    workload_inputs(workload);  // refuses a bad file, naming it
    std::error_code ec;
    fs::create_directories(staging / workload_copies, ec);
    if (ec) fail(ExitCode::usage, "cannot create '" + (staging / workload_copies).string() + "': " + ec.message());
    for (auto [name, file] : {std::pair<const char *, std::optional<std::string> *>{"q", &workload.q_file},
                              {"k", &workload.k_file},
                              {"v", &workload.v_file}}) {
        const std::string relative = std::string(workload_copies) + "/" + name + fs::path(**file).extension().string();
        write_file_atomically(staging / relative, read_text_file(**file));
        *file = relative;
    }
}

// Stages experiment.toml, the input copies and the trees; returns the experiment as recorded (paths
// of the copies, relative to the run).
Experiment stage_new_state(const fs::path &staging, const Experiment &experiment,
                           const std::function<fs::path()> &embedded_kernels, PreparedTrees &trees,
                           std::string &resolved) {
    Experiment recorded = experiment;
    stage_workload_tensors(recorded, staging);
    for (CandidateSpec &c : recorded.candidates) {
        if (c.patch.empty()) continue;
        write_file_atomically(staging / patch_copy(c), read_text_file(c.patch));
        c.patch = patch_copy(c);
    }
    resolved = experiment_to_toml(recorded);
    write_file_atomically(staging / "experiment.toml", resolved);
    trees = make_trees(staging / "trees", experiment, embedded_kernels);
    return recorded;
}

std::string describe(const SourceSpec &source, const std::string &commit) {
    return source.kind + " @ " + commit.substr(0, 12);
}

StageResult passed_result(const RunDirectory &run, const PrepareRequest &request, const Experiment &recorded,
                          const PreparedTrees &trees, const std::string &resolved) {
    const Experiment &experiment = request.experiment;
    StageResult result;
    result.tools.insert("git", trees.git_version);
    result.artifacts.insert("experiment", FileArtifact{run.relative(run.manifest()), sha256_hex(resolved)}.to_toml());
    toml::table patches;
    for (std::size_t i = 0; i < recorded.candidates.size(); ++i)
        if (!recorded.candidates[i].patch.empty())
            patches.insert(recorded.candidates[i].name, FileArtifact{recorded.candidates[i].patch, trees.candidates[i].patch_sha256}.to_toml());
    if (!patches.empty()) result.artifacts.insert("patches", patches);
    if (recorded.workload.q_file) {
        toml::table tensors;
        for (auto [name, file] : {std::pair<const char *, const std::optional<std::string> *>{"q", &recorded.workload.q_file},
                                  {"k", &recorded.workload.k_file},
                                  {"v", &recorded.workload.v_file}})
            tensors.insert(name, FileArtifact{**file, sha256_file(run.resolve(**file))}.to_toml());
        result.artifacts.insert("workload_tensors", tensors);
    }
    auto tree = [](const std::string &name, const std::string &digest) {
        return toml::table{{"path", "trees/" + name}, {"xxh3", digest}};
    };
    toml::table tree_artifacts{{"baseline", tree("baseline", trees.baseline_digest)}};
    for (const PreparedCandidateTree &t : trees.candidates) tree_artifacts.insert(t.name, tree(t.name, t.digest));
    if (!trees.support_digest.empty()) tree_artifacts.insert("support", tree("support", trees.support_digest));
    result.artifacts.insert("trees", tree_artifacts);

    PrepareFigures figures;
    figures.manifest = fs::absolute(request.manifest).lexically_normal().string();
    figures.overrides = request.overrides;
    figures.source = experiment.baseline_source.kind;
    figures.commit = trees.commit;
    figures.arch = experiment.arch;
    figures.baseline_tree_xxh3 = trees.baseline_digest;
    figures.support_tree_xxh3 = trees.support_digest;
    figures.summary = describe(experiment.baseline_source, trees.commit);
    for (std::size_t i = 0; i < experiment.candidates.size(); ++i) {
        const CandidateSpec &c = experiment.candidates[i];
        const PreparedCandidateTree &t = trees.candidates[i];
        // The working tree's diff is removed once prepare is over; the run's copy of it stands for it.
        const std::string patch_file = request.candidate_worktree_diff.empty()
                                           ? c.patch
                                           : fs::absolute(run.resolve(recorded.candidates[i].patch)).lexically_normal().string();
        figures.candidates.push_back({c.name, c.source.kind, t.commit, patch_file, t.patch_sha256, t.digest});
        const std::string own_source = c.source.same_checkout(experiment.baseline_source) ? "" : describe(c.source, t.commit);
        const std::string patch = t.patch_sha256.empty() ? "no patch" : "patch " + t.patch_sha256.substr(0, 12);
        if (experiment.candidates.size() == 1) figures.summary += (own_source.empty() ? "" : " vs " + own_source) + ", " + patch;
        else figures.summary += "; " + c.name + ": " + (own_source.empty() ? "" : own_source + ", ") + patch;
    }
    result.figures = figures.to_toml();
    return result;
}

// prepare for run_stage; what it decided goes to `outcome`, for the command's own reporting.
StageWork prepare_stage_work(StageContext &context, const PrepareRequest &request,
                             const std::shared_ptr<PrepareOutcome> &outcome) {
    RunDirectory &run = context.run();
    const Experiment &experiment = request.experiment;
    // An abi that names no adapter is the manifest's mistake: said here, before any tree is made.
    for (const std::string &variant : experiment.variant_names())
        kernel_abi(experiment.abi(variant), "the manifest's " + (variant == "baseline" ? std::string("[source]")
                                                                                        : "candidate " + variant) + " abi");
    StageWork work;
    work.stage = Stage::prepare;
    work.force = request.force;
    work.add_inputs = [&experiment, &request](Fingerprint &f) {
        // A checkpoint whose figures predate per-candidate figures is never up to date, so that its
        // figures are never read as PrepareFigures.
        f.add("figures", "per candidate");
        f.add("experiment", experiment_to_toml(experiment));
        for (const CandidateSpec &c : experiment.candidates)
            if (!c.patch.empty()) f.add_file("patch", c.patch);
        if (experiment.workload.q_file)
            f.add_file("q", *experiment.workload.q_file).add_file("k", *experiment.workload.k_file).add_file("v", *experiment.workload.v_file);
        bool uses_embedded = experiment.needs_support_tree();
        std::vector<const SourceSpec *> sources{&experiment.baseline_source};
        for (const CandidateSpec &c : experiment.candidates) sources.push_back(&c.source);
        for (const SourceSpec *source : sources) {
            if (source->kind == "git") f.add("commit", resolve_commit(source->repository, source->commit));
            else uses_embedded = true;
        }
        if (uses_embedded) f.add_tree("embedded_kernels", request.embedded_kernels());
    };
    work.run = [&run, &experiment, &request, outcome] {
        StageResult failed;
        failed.status = StageStatus::failed;
        failed.keep_previous_checkpoint = true;
        PreparedTrees trees;
        Experiment recorded;
        std::string resolved;
        try {
            recorded = stage_new_state(run.prepare_staging(), experiment, request.embedded_kernels, trees, resolved);
        } catch (const Error &e) {
            discard_leftovers(run, experiment);
            if (e.code() != ExitCode::stop) throw;
            // git itself failed: nothing was changed, so the previous checkpoint still describes the run.
            failed.reasons.push_back(e.what());
            outcome->reasons = failed.reasons;
            return failed;
        } catch (...) {
            discard_leftovers(run, experiment);
            throw;
        }
        if (!trees.patch_applied) {
            discard_leftovers(run, experiment);
            const CandidateSpec &c = experiment.candidate(trees.failed_candidate);
            std::string commit;
            for (const PreparedCandidateTree &t : trees.candidates)
                if (t.name == c.name) commit = t.commit;
            failed.reasons.push_back("the patch " + c.patch + " of candidate '" + c.name + "' does not apply at " + commit +
                                     ": " + trees.patch_error);
            outcome->reasons = failed.reasons;
            return failed;
        }
        // The checkpoint's directory must be there before the swap: a prepare that could not write its
        // checkpoint afterwards would leave new trees that no checkpoint describes.
        std::error_code ec;
        fs::create_directories(run.checkpoints(), ec);
        if (ec || !fs::is_directory(fs::symlink_status(run.checkpoints(), ec))) {
            discard_leftovers(run, experiment);
            fail(ExitCode::usage, "cannot create '" + run.checkpoints().string() + "': " +
                                      (ec ? ec.message() : std::string("something else is there")) + "; nothing was changed");
        }
        swap_in(run, experiment);
        return passed_result(run, request, recorded, trees, resolved);
    };
    work.summarize = [outcome, &run](const Checkpoint &c, const Reporter &to) {
        const PrepareFigures figures = PrepareFigures::from_toml(c.figures, checkpoint_path(run, Stage::prepare).string());
        if (c.status == StageStatus::passed) outcome->figures = figures;
        print_prepare_figures(figures, to);
    };
    return work;
}

}  // namespace

PrepareOutcome prepare_stage(StageContext &context, const PrepareRequest &request, const Reporter &reporter) {
    const auto outcome = std::make_shared<PrepareOutcome>();
    const StageWork work = prepare_stage_work(context, request, outcome);
    // Also when the run turns out up to date: a prepare killed before its swap left the old state
    // intact, and its staging behind.
    discard_leftovers(context.run(), request.experiment);
    outcome->exit_code = run_stage(context, work, reporter);
    return *outcome;
}

PrepareOutcome prepare_in_run(const fs::path &root, bool made_here, const PrepareRequest &request, const Reporter &reporter) {
    PrepareOutcome outcome;
    try {
        // Inside: a lock or a marker that cannot be written (a full disk) must not leave the new
        // directory behind either.
        StageContext context(root, request.experiment);
        reporter.progress("run directory: " + root.string());
        remove_worktree_patches(root);
        if (!request.candidate_worktree_diff.empty())
            write_file_atomically(request.experiment.candidates.front().patch, request.candidate_worktree_diff);
        try {
            outcome = prepare_stage(context, request, reporter);
        } catch (...) {
            remove_worktree_patches(root);
            throw;
        }
        remove_worktree_patches(root);
    } catch (...) {
        // Never while another process holds the run: a directory made here is no one else's, but a
        // prepare that lost the race for its lock must leave it to the winner.
        if (made_here && !lock_holder(root)) remove_without_following(root);
        throw;
    }
    if (outcome.exit_code != ExitCode::ok && made_here) remove_without_following(root);
    return outcome;
}

ExitCode keep_copied_run(const fs::path &root, const std::string &absent, const Reporter &reporter) {
    StageContext context(root, std::nullopt);
    StageWork kept;
    kept.stage = Stage::prepare;
    kept.summarize = [checkpoint = checkpoint_path(context.run(), Stage::prepare).string()](const Checkpoint &c,
                                                                                          const Reporter &to) {
        print_prepare_figures(PrepareFigures::from_toml(c.figures, checkpoint), to);
    };
    kept.unavailable = Error(ExitCode::usage, "the run was prepared from " + absent +
                                                  ", which is not on this host, and its prepare checkpoint is not a "
                                                  "passed, intact one; pass --manifest (and --repository) to prepare it again");
    kept.keep_reason = "prepared from " + absent + ", which is not on this host";
    return run_stage(context, kept, reporter);
}

WorktreeChange take_worktree_change(const Experiment &experiment) {
    const SourceSpec &baseline = experiment.baseline_source;
    if (baseline.kind != "git")
        fail(ExitCode::usage, "--candidate-worktree: the baseline is an " + baseline.kind +
                                  " source, which has no working tree; pass --manifest with a git source and --repository your checkout");
    if (experiment.candidates.size() != 1)
        fail(ExitCode::usage, "--candidate-worktree: the manifest has " + std::to_string(experiment.candidates.size()) +
                                  " candidates; the working tree is the candidate of a manifest with one");
    const CandidateSpec &candidate = experiment.candidates.front();
    if (!candidate.source.same_checkout(baseline))
        fail(ExitCode::usage, "--candidate-worktree: candidate '" + candidate.name + "' is commit " + candidate.source.commit +
                                  " of its own, but the working tree's diff is taken against the baseline commit " +
                                  baseline.commit + "; leave out --candidate-commit, or use a manifest whose candidate "
                                  "has no commit of its own");
    WorktreeChange change{baseline.repository, resolve_commit(baseline.repository, baseline.commit), ""};
    change.diff = worktree_diff(change.repository, change.commit);
    if (change.diff.empty())
        fail(ExitCode::usage, "--candidate-worktree: the working tree of " + change.repository +
                                  " has no change against commit " + change.commit.substr(0, 12) +
                                  " (untracked files are not part of it: 'git add' them)");
    return change;
}

std::string use_worktree_change(PrepareRequest &request, const fs::path &root, const WorktreeChange &change) {
    CandidateSpec &candidate = request.experiment.candidates.front();
    const std::string digest = sha256_hex(change.diff);
    candidate.patch = (fs::absolute(root) / (std::string(worktree_patch_prefix) + digest.substr(0, 16) + ".patch")).lexically_normal().string();
    request.candidate_worktree_diff = change.diff;
    return "candidate '" + candidate.name + "': the working tree of " + change.repository + ", as 'git diff " +
           change.commit.substr(0, 12) + "' gives it (untracked files are not in it), recorded as its patch " +
           patch_copy(candidate) + " (sha256 " + digest.substr(0, 12) + ")";
}

void check_same_experiment(const fs::path &run, const std::string &experiment_name, const fs::path &manifest) {
    const RunDirectory directory(run);
    const toml::table resolved = parse_toml_file(directory.manifest().string());
    const std::string held = resolved["experiment"]["name"].value_or(std::string());
    if (held.empty() || held == experiment_name) return;
    fail(ExitCode::usage, "the run " + run.string() + " holds the experiment '" + held + "'; --manifest " +
                              manifest.string() + " is the experiment '" + experiment_name +
                              "': preparing it there would make that run's later stages stale. Pass --new for a "
                              "run of its own, or --force to prepare it over this one");
}

std::optional<std::string> absent_repository(const Experiment &experiment) {
    std::vector<const SourceSpec *> sources{&experiment.baseline_source};
    for (const CandidateSpec &c : experiment.candidates) sources.push_back(&c.source);
    std::error_code ec;
    for (const SourceSpec *source : sources)
        if (source->kind == "git" && !fs::exists(fs::path(source->repository) / ".git", ec)) return source->repository;
    return std::nullopt;
}

}  // namespace s2tp
