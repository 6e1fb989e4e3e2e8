#include "stages/prepare_options.h"

#include "stages/prepare_stage.h"
#include "support/data_paths.h"
#include "support/errors.h"

namespace fs = std::filesystem;

namespace s2tp {
namespace {

// The run --run or --run-id names, checked: with --new it must not hold a run yet, and a directory that
// is not empty must be a run.
std::optional<fs::path> existing_run_to_prepare(const PrepareOptions &options) {
    const RunSelection &selection = options.selection;
    // --new starts a run: the one --run or --run-id names, which must not hold a run yet, else a new one
    // named after the experiment.
    const bool named = selection.run_dir || selection.run_id;
    const std::optional<fs::path> existing = !options.new_run || named ? existing_run(selection) : std::nullopt;
    std::error_code ec;
    if (options.new_run && named && fs::exists(*existing, ec) && !fs::is_empty(*existing, ec))
        fail(ExitCode::usage, "--new: '" + existing->string() + "' holds a run already; name a new one, or leave out "
                              "--new to prepare that run again");
    if (existing && fs::is_directory(*existing, ec))
        if (const std::string why = why_not_a_run(*existing, RunMarkers::optional_when_empty); !why.empty())
            fail(ExitCode::usage, "will not prepare in '" + existing->string() + "': it is not empty and not a run (" + why +
                                      "); give --run a new or empty directory");
    return existing;
}

// The figures of the run's last prepare, when its checkpoint holds them. Without --manifest, a run
// prepared before whose checkpoint cannot be read is Error(usage): the default manifest would be another
// experiment, prepared silently over this one.
std::optional<PrepareFigures> previous_preparation(const fs::path &existing, bool manifest_given) {
    const fs::path checkpoint = checkpoint_path(RunDirectory(existing), Stage::prepare);
    const CheckpointRead read = read_checkpoint(checkpoint);
    std::error_code ec;
    if (read.checkpoint) try {
            return PrepareFigures::from_toml(read.checkpoint->figures, checkpoint.string());
        } catch (const Error &e) {
            if (!manifest_given)
                fail(ExitCode::usage, "the prepare checkpoint of " + existing.string() + " is not one this sage2tp reads (" +
                                          e.what() + "); pass --manifest to prepare the run again");
        }
    else if (!manifest_given && (read.exists || fs::exists(fs::symlink_status(RunDirectory(existing).manifest(), ec))))
        fail(ExitCode::usage, "the prepare checkpoint of " + existing.string() + " cannot be read (" +
                                  (read.problem.empty() ? std::string("it is missing") : read.problem) +
                                  "), so which manifest it was prepared from is unknown; pass --manifest to prepare it again");
    return std::nullopt;
}

// The options' overrides on top of `overrides` (a reused run's, or none).
void apply_override_options(const PrepareOptions &options, SourceOverrides &overrides) {
    const auto absolute = [](const std::string &path) { return fs::absolute(path).lexically_normal().string(); };
    if (options.repository) overrides.repository = absolute(*options.repository);
    if (options.commit) overrides.commit = *options.commit;
    if (options.candidate_commits) {
        overrides.candidate_commit.reset();
        overrides.candidate_commits.clear();
        for (const std::string &value : *options.candidate_commits) add_candidate_commit_override(overrides, value);
    }
    if (options.patch && options.no_patch) fail(ExitCode::usage, "--patch and --no-patch contradict each other; give one");
    if (options.patch) overrides.candidate_patch = absolute(*options.patch);
    if (options.no_patch) overrides.candidate_patch = "";
    if (options.candidate_worktree && (options.patch || options.no_patch))
        fail(ExitCode::usage, "--candidate-worktree takes the working tree's diff as the patch: give it without --patch or --no-patch");
    if (options.patch || options.no_patch) overrides.candidate_worktree.reset();
    if (options.candidate_worktree) overrides.candidate_worktree = true;
    if (options.name) overrides.experiment_name = *options.name;
    if (options.description) overrides.experiment_description = *options.description;
}

}  // namespace

int prepare_with_options(const PrepareOptions &options, const Reporter &reporter, fs::path &prepared_run) {
    RunSelection selection = options.selection;
    const std::optional<fs::path> existing = existing_run_to_prepare(options);
    const std::optional<PrepareFigures> prepared =
        existing ? previous_preparation(*existing, options.manifest.has_value()) : std::nullopt;
    // Without --manifest, a run prepared before keeps its manifest and overrides, so that `sage2tp
    // prepare` alone redoes the same experiment.
    const bool reuse = !options.manifest && prepared;
    PrepareRequest request;
    request.manifest = options.manifest ? find_manifest(*options.manifest)
                       : reuse          ? fs::path(prepared->manifest)
                                        : default_manifest();
    // A run copied from another host: its experiment.toml and trees are the record now, and it is the
    // run prepared (which `sage2tp run` pins).
    const auto keep_copied = [&](const std::string &absent) {
        const ExitCode kept = keep_copied_run(*existing, absent, reporter);
        if (kept == ExitCode::ok) prepared_run = fs::absolute(*existing).lexically_normal();
        return static_cast<int>(kept);
    };
    if (reuse && !fs::exists(request.manifest)) return keep_copied("the manifest " + prepared->manifest);
    if (reuse) request.overrides = prepared->overrides;
    apply_override_options(options, request.overrides);
    request.experiment = load_experiment(request.manifest, request.overrides);
    if (existing && prepared && options.manifest && !options.force)
        check_same_experiment(*existing, request.experiment.name, request.manifest);
    // The same for its repository, at another path (or nowhere) on this host.
    if (reuse && !options.repository && !options.force)
        if (const auto absent = absent_repository(request.experiment)) return keep_copied("the repository " + *absent);
    // A commit of one's own with the manifest's patch on top is rarely what a branch experiment means.
    for (const CandidateSpec &candidate : request.experiment.candidates)
        if (!candidate.patch.empty() && !candidate.source.same_checkout(request.experiment.baseline_source))
            reporter.warn("candidate '" + candidate.name + "' is commit " + candidate.source.commit + " with the patch " +
                          candidate.patch + " applied on top; pass --no-patch for the commit alone, or --patch FILE");
    const std::optional<WorktreeChange> worktree =
        request.overrides.candidate_worktree ? std::optional(take_worktree_change(request.experiment)) : std::nullopt;
    request.force = options.force;
    request.embedded_kernels = [] { return embedded_kernels(); };

    if (options.new_run && !selection.run_dir && !selection.run_id)
        selection.run_id = new_run_id(request.experiment.name, selection.runs_root);
    // run_for_prepare makes a new run's directory itself; an existing path is claimed by mkdir.
    const fs::path root = existing ? *existing : run_for_prepare(selection, request.experiment.name);
    const bool made_here = existing ? claim_run_directory(*existing) : true;
    if (worktree) {
        const std::string told = use_worktree_change(request, root, *worktree);
        if (!options.quiet) reporter.say(told);
    }
    const PrepareOutcome outcome = prepare_in_run(root, made_here, request, options.quiet ? reporter.without_results() : reporter);
    if (outcome.exit_code != ExitCode::ok) {
        if (options.quiet)
            for (const std::string &reason : outcome.reasons) reporter.warn("prepare: " + reason);
        return static_cast<int>(outcome.exit_code);
    }
    mark_latest(selection, root);
    prepared_run = fs::absolute(root).lexically_normal();
    if (options.quiet) reporter.say(root.string());
    return 0;
}

}  // namespace s2tp
