// sage2tp prepare: option parsing and wiring of the prepare stage (stages/prepare_stage.h).
#include "prepare_run.h"
#include "stage_options.h"

#include "pipeline/cli.h"
#include "pipeline/run_directory.h"
#include "stages/prepare_stage.h"
#include "support/data_paths.h"

namespace fs = std::filesystem;

namespace s2tp {

int prepare_command(const Args &args) {
    fs::path prepared_run;
    return prepare_command(args, prepared_run);
}

int prepare_command(const Args &args, fs::path &prepared_run) {
    CommandLine cl("prepare", "Resolve the experiment and make the baseline and candidate source trees.", args);
    add_stage_options(cl, Stage::prepare);
    add_option(cl, force_option("run"));
    if (!cl.parse()) return 0;

    RunSelection selection = cl.selection();
    // --new starts a run: the one --run or --run-id names, which must not hold a run yet, else a new one
    // named after the experiment.
    const bool named = selection.run_dir || selection.run_id;
    const std::optional<fs::path> existing = !cl.has("new") || named ? existing_run(selection) : std::nullopt;
    std::error_code ec;
    if (cl.has("new") && named && fs::exists(*existing, ec) && !fs::is_empty(*existing, ec))
        fail(ExitCode::usage, "--new: '" + existing->string() + "' holds a run already; name a new one, or leave out "
                              "--new to prepare that run again");
    if (existing && fs::is_directory(*existing, ec))
        if (const std::string why = why_not_a_run(*existing, RunMarkers::optional_when_empty); !why.empty())
            fail(ExitCode::usage, "will not prepare in '" + existing->string() + "': it is not empty and not a run (" + why +
                                      "); give --run a new or empty directory");
    std::optional<PrepareFigures> prepared;
    if (existing) {
        const fs::path checkpoint = checkpoint_path(RunDirectory(*existing), Stage::prepare);
        const CheckpointRead read = read_checkpoint(checkpoint);
        if (read.checkpoint) try {
                prepared = PrepareFigures::from_toml(read.checkpoint->figures, checkpoint.string());
            } catch (const Error &e) {
                if (!cl.has("manifest"))
                    fail(ExitCode::usage, "the prepare checkpoint of " + existing->string() + " is not one this sage2tp reads (" +
                                              e.what() + "); pass --manifest to prepare the run again");
            }
        // A run prepared before whose checkpoint cannot be read: the default manifest would be another
        // experiment, prepared silently over this one.
        else if (!cl.has("manifest") && (read.exists || fs::exists(fs::symlink_status(RunDirectory(*existing).manifest(), ec))))
            fail(ExitCode::usage, "the prepare checkpoint of " + existing->string() + " cannot be read (" +
                                      (read.problem.empty() ? std::string("it is missing") : read.problem) +
                                      "), so which manifest it was prepared from is unknown; pass --manifest to prepare it again");
    }
    // Without --manifest, a run prepared before keeps its manifest and overrides, so that `sage2tp
    // prepare` alone redoes the same experiment.
    const bool reuse = !cl.has("manifest") && prepared;
    PrepareRequest request;
    request.manifest = cl.has("manifest") ? find_manifest(cl.result()["manifest"].as<std::string>())
                       : reuse            ? fs::path(prepared->manifest)
                                          : default_manifest();
    // A run copied from another host: its experiment.toml and trees are the record now, and it is the
    // run prepared (which `sage2tp run` pins).
    const auto keep_copied = [&](const std::string &absent) {
        const ExitCode kept = keep_copied_run(*existing, absent, cl.reporter());
        if (kept == ExitCode::ok) prepared_run = fs::absolute(*existing).lexically_normal();
        return static_cast<int>(kept);
    };
    if (reuse && !fs::exists(request.manifest)) return keep_copied("the manifest " + prepared->manifest);
    if (reuse) request.overrides = prepared->overrides;
    if (cl.has("repository")) request.overrides.repository = fs::absolute(cl.result()["repository"].as<std::string>()).lexically_normal().string();
    if (cl.has("commit")) request.overrides.commit = cl.result()["commit"].as<std::string>();
    if (cl.has("candidate-commit")) {
        request.overrides.candidate_commit.reset();
        request.overrides.candidate_commits.clear();
        for (const std::string &value : cl.result()["candidate-commit"].as<std::vector<std::string>>())
            add_candidate_commit_override(request.overrides, value);
    }
    if (cl.has("patch") && cl.has("no-patch")) fail(ExitCode::usage, "--patch and --no-patch contradict each other; give one");
    if (cl.has("patch")) request.overrides.candidate_patch = fs::absolute(cl.result()["patch"].as<std::string>()).lexically_normal().string();
    if (cl.has("no-patch")) request.overrides.candidate_patch = "";
    if (cl.has("candidate-worktree") && (cl.has("patch") || cl.has("no-patch")))
        fail(ExitCode::usage, "--candidate-worktree takes the working tree's diff as the patch: give it without --patch or --no-patch");
    if (cl.has("patch") || cl.has("no-patch")) request.overrides.candidate_worktree.reset();
    if (cl.has("candidate-worktree")) request.overrides.candidate_worktree = true;
    if (cl.has("name")) request.overrides.experiment_name = cl.result()["name"].as<std::string>();
    if (cl.has("description")) request.overrides.experiment_description = cl.result()["description"].as<std::string>();
    request.experiment = load_experiment(request.manifest, request.overrides);
    if (existing && prepared && cl.has("manifest") && !cl.has("force"))
        check_same_experiment(*existing, request.experiment.name, request.manifest);
    // The same for its repository, at another path (or nowhere) on this host.
    if (reuse && !cl.has("repository") && !cl.has("force"))
        if (const auto absent = absent_repository(request.experiment))
            return keep_copied("the repository " + *absent);
    // A commit of one's own with the manifest's patch on top is rarely what a branch experiment means.
    for (const CandidateSpec &candidate : request.experiment.candidates)
        if (!candidate.patch.empty() && !candidate.source.same_checkout(request.experiment.baseline_source))
            cl.reporter().warn("candidate '" + candidate.name + "' is commit " + candidate.source.commit + " with the patch " +
                               candidate.patch + " applied on top; pass --no-patch for the commit alone, or --patch FILE");
    const std::optional<WorktreeChange> worktree =
        request.overrides.candidate_worktree ? std::optional(take_worktree_change(request.experiment)) : std::nullopt;
    request.force = cl.has("force");
    request.embedded_kernels = [] { return embedded_kernels(); };

    if (cl.has("new") && !named) selection.run_id = new_run_id(request.experiment.name, selection.runs_root);
    // run_for_prepare makes a new run's directory itself; an existing path is claimed by mkdir.
    const fs::path root = existing ? *existing : run_for_prepare(selection, request.experiment.name);
    const bool made_here = existing ? claim_run_directory(*existing) : true;
    const bool quiet = cl.result().count("quiet") > 0;
    if (worktree) {
        const std::string told = use_worktree_change(request, root, *worktree);
        if (!quiet) cl.reporter().say(told);
    }
    const PrepareOutcome outcome = prepare_in_run(root, made_here, request, quiet ? cl.reporter().without_results() : cl.reporter());
    if (outcome.exit_code != ExitCode::ok) {
        if (quiet)
            for (const std::string &reason : outcome.reasons) cl.reporter().warn("prepare: " + reason);
        return static_cast<int>(outcome.exit_code);
    }
    mark_latest(selection, root);
    prepared_run = fs::absolute(root).lexically_normal();
    if (quiet) cl.reporter().say(root.string());
    return 0;
}

}  // namespace s2tp
