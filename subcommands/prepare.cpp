// sage2tp prepare: resolve the experiment manifest into the run directory and make the baseline and
// candidate source trees (the candidate with the experiment's patch applied).
#include "subcommands.h"
#include "support/file_io.h"

#include "formats/checkpoint_store.h"
#include "pipeline/cli.h"
#include "support/data_paths.h"
#include "model/experiment_manifest.h"
#include "support/hashing.h"
#include "pipeline/run_directory.h"
#include "stages/gpu_stage.h"
#include "stages/source_trees.h"
#include "pipeline/stage_pipeline.h"

#include <fstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

fs::path default_manifest_unless_recorded(const CommandLine &cl, const std::optional<Checkpoint> &prepared) {
    if (cl.has("manifest")) return cl.result()["manifest"].as<std::string>();
    if (prepared)
        if (auto recorded = prepared->figures["manifest"].value<std::string>()) return *recorded;
    return default_manifest();
}

// --repository, --commit and --candidate-commit; without --manifest, a run prepared before keeps the
// ones it was prepared with, so that `sage2tp prepare` alone redoes the same experiment.
SourceOverrides source_overrides(const CommandLine &cl, const std::optional<Checkpoint> &prepared) {
    SourceOverrides overrides;
    const bool reuse = !cl.has("manifest") && prepared;
    auto take = [&](const char *option, const char *figure, std::optional<std::string> &into) {
        if (cl.has(option)) into = cl.result()[option].as<std::string>();
        else if (reuse) into = prepared->figures["overrides"][figure].value<std::string>();
    };
    take("repository", "repository", overrides.repository);
    take("commit", "commit", overrides.commit);
    take("candidate-commit", "candidate_commit", overrides.candidate_commit);
    if (overrides.repository) overrides.repository = fs::absolute(*overrides.repository).lexically_normal().string();
    return overrides;
}

std::string describe(const SourceSpec &source, const std::string &commit) {
    return source.kind + " @ " + commit.substr(0, 12);
}

// prepare is transactional. It makes the new experiment.toml, input copies and trees in
// <run>/.prepare-new and swaps them in only once all of them are complete; the new checkpoint is then
// written by the stage framework. Every file and tree is recorded in that checkpoint with its digest,
// and every stage checks them before trusting prepare (inspect_run), so a kill during the swap leaves
// a state that no checkpoint describes: untrusted, and the next prepare cleans it up.
fs::path staging_directory(const RunDirectory &run) { return run.prepare_staging(); }
fs::path retired_trees(const RunDirectory &run) { return run.prepare_retired(); }
// The workload tensors prepare copies into the run.
const char *const workload_copies = "inputs/workload";

void discard_leftovers(const RunDirectory &run, const Experiment &experiment) {
    // First, while git still has their registrations: trees a killed swap moved but did not re-link.
    std::error_code ec;
    if (fs::is_directory(run.trees(), ec)) relink_trees(run.trees(), staging_directory(run) / "trees");
    remove_trees(staging_directory(run) / "trees", experiment);
    remove_trees(retired_trees(run), experiment);
    fs::remove_all(staging_directory(run), ec);
    if (ec) fail(ExitCode::usage, "cannot remove '" + staging_directory(run).string() + "': " + ec.message());
}

void rename_or_fail(const fs::path &from, const fs::path &to) {
    std::error_code ec;
    fs::rename(from, to, ec);
    if (ec) fail(ExitCode::usage, "cannot move '" + from.string() + "' to '" + to.string() + "': " + ec.message());
}

// Replaces the run's prepare outputs with the staged ones. Only renames and deletions of the old.
void swap_in(const RunDirectory &run, const Experiment &experiment) {
    const fs::path staging = staging_directory(run);
    std::error_code ec;
    if (fs::exists(run.trees(), ec)) {
        rename_or_fail(run.trees(), retired_trees(run));
        // Pruned before the new trees take the old paths: git would otherwise still see the old
        // registrations as alive.
        remove_trees(retired_trees(run), experiment);
    }
    move_trees(staging / "trees", run.trees());
    fs::create_directories(run.inputs(), ec);
    if (ec) fail(ExitCode::usage, "cannot create '" + run.inputs().string() + "': " + ec.message());
    for (const fs::path relative : {fs::path("inputs/candidate.patch"), fs::path(workload_copies)}) {
        fs::remove_all(run.root() / relative, ec);
        if (fs::exists(staging / relative, ec)) rename_or_fail(staging / relative, run.root() / relative);
    }
    rename_or_fail(staging / "experiment.toml", run.manifest());
    fs::remove_all(staging, ec);
}

// Checks the workload's captured tensors against its problem (header, dtype, shape, finite) and copies
// them into the staging directory; returns the experiment with the paths of the copies, relative to
// the run.
Experiment stage_workload_tensors(const Experiment &experiment, const fs::path &staging) {
    Experiment recorded = experiment;
    WorkloadSpec &workload = recorded.workload;
    if (!workload.q_file) return recorded;
    workload_inputs(experiment.workload);  // refuses a bad file, naming it
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
    return recorded;
}

void print_summary(const Checkpoint &c, const Reporter &reporter) {
    reporter.say("  baseline  " + c.figures["source"].value_or(std::string()) + " at commit " +
                 c.figures["commit"].value_or(std::string()));
    reporter.say("  candidate " + c.figures["candidate_source"].value_or(std::string()) + " at commit " +
                 c.figures["candidate_commit"].value_or(std::string()));
    const std::string patch = c.figures["patch"].value_or(std::string());
    if (patch.empty()) reporter.say("  patch     none");
    else reporter.say("  patch     " + patch + " (sha256 " + c.figures["patch_sha256"].value_or(std::string()) + ")");
}

}  // namespace

int prepare_command(const Args &args) {
    CommandLine cl("prepare", "Resolve the experiment and make the baseline and candidate source trees.", args);
    cl.add_options()
        ("manifest", "experiment manifest (default: the installed temporal-pair.toml)", cxxopts::value<std::string>(), "FILE")
        ("repository", "the git repository of the manifest's git sources (e.g. your SageAttention checkout)",
         cxxopts::value<std::string>(), "DIR")
        ("commit", "the baseline's commit (a candidate without its own commit follows it); default: the manifest's",
         cxxopts::value<std::string>(), "REV")
        ("candidate-commit", "the candidate's commit, for a branch experiment", cxxopts::value<std::string>(), "REV")
        ("new", "start a new run directory even when a latest run exists")
        ("force", "run even when the checkpoint is up to date");
    if (!cl.parse()) return 0;

    RunSelection selection = cl.selection();
    const std::optional<fs::path> existing = cl.has("new") ? std::nullopt : existing_run(selection);
    std::optional<Checkpoint> prepared;
    if (existing) prepared = read_checkpoint(checkpoint_path(RunDirectory(*existing), Stage::prepare)).checkpoint;

    // Without --manifest an existing run keeps the manifest it was prepared from.
    fs::path manifest = default_manifest_unless_recorded(cl, prepared);
    if (!cl.has("manifest") && prepared && !fs::exists(manifest)) {
        // A run copied from another host: its experiment.toml and trees are the record now.
        StageContext context(*existing, std::nullopt);
        StageWork kept{Stage::prepare, nullptr, nullptr, nullptr, print_summary};
        if (auto code = keep_intact_checkpoint(context, kept, "prepared from " + manifest.string() + ", which is not on this host",
                                               cl.reporter()))
            return static_cast<int>(*code);
        fail(ExitCode::usage, "the run was prepared from " + manifest.string() +
                                  ", which is not on this host, and its prepare checkpoint is not a passed, intact one; "
                                  "pass --manifest to prepare it again");
    }
    const SourceOverrides overrides = source_overrides(cl, prepared);
    const Experiment experiment = load_experiment(manifest, overrides);

    if (cl.has("new")) selection.run_id = new_run_id(experiment.name, selection.runs_root);
    // Made by this prepare (a run id or --run DIR that did not exist yet): removed again if it fails.
    std::error_code ec;
    const bool new_run = !existing || !fs::exists(*existing, ec);
    const fs::path root = existing ? *existing : run_for_prepare(selection, experiment.name);
    auto forget_new_run = [&] {
        if (!new_run) return;
        std::error_code ec;
        fs::remove_all(root, ec);
    };
    std::optional<StageContext> opened;
    try {
        opened.emplace(root, experiment);
    } catch (...) {
        forget_new_run();
        throw;
    }
    StageContext &context = *opened;
    RunDirectory &run = context.run();
    cl.reporter().progress("run directory: " + run.root().string());

    // Filled in by the body once the staged copies exist: what experiment.toml will say.
    std::string resolved;
    StageWork work;
    work.stage = Stage::prepare;
    work.add_inputs = [&](Fingerprint &f) {
        f.add("experiment", experiment_to_toml(experiment));
        if (!experiment.candidates.front().patch.empty()) f.add_file("patch", experiment.candidates.front().patch);
        if (experiment.workload.q_file)
            f.add_file("q", *experiment.workload.q_file).add_file("k", *experiment.workload.k_file).add_file("v", *experiment.workload.v_file);
        bool uses_embedded = experiment.needs_support_tree();
        for (const SourceSpec *source : {&experiment.baseline_source, &experiment.candidates.front().source}) {
            if (source->kind == "git") f.add("commit", resolve_commit(source->repository, source->commit));
            else uses_embedded = true;
        }
        if (uses_embedded) f.add_tree("embedded_kernels", embedded_kernels());
    };
    work.run = [&] {
        const fs::path staging = staging_directory(run);
        StageResult result;
        PreparedTrees trees;
        Experiment recorded;
        try {
            recorded = stage_workload_tensors(experiment, staging);
            // The run keeps its own copy of the patch, so that it stays complete when copied to another host.
            if (!experiment.candidates.front().patch.empty()) {
                recorded.candidates.front().patch = "inputs/candidate.patch";
                write_file_atomically(staging / recorded.candidates.front().patch, read_text_file(experiment.candidates.front().patch));
            }
            resolved = experiment_to_toml(recorded);
            write_file_atomically(staging / "experiment.toml", resolved);
            trees = make_trees(staging / "trees", experiment, embedded_kernels);
            if (!trees.patch_applied) {
                discard_leftovers(run, experiment);
                result.status = StageStatus::failed;
                result.keep_previous_checkpoint = true;
                result.reasons.push_back("the candidate patch " + experiment.candidates.front().patch + " does not apply at " +
                                         trees.candidate_commit + ": " + trees.patch_error);
                return result;
            }
        } catch (const Error &e) {
            discard_leftovers(run, experiment);
            if (e.code() != ExitCode::stop) throw;
            // git itself failed: nothing was changed, so the previous checkpoint still describes the run.
            result.status = StageStatus::failed;
            result.keep_previous_checkpoint = true;
            result.reasons.push_back(e.what());
            return result;
        } catch (...) {
            discard_leftovers(run, experiment);
            throw;
        }
        swap_in(run, experiment);

        result.tools.insert("git", trees.git_version);
        result.artifacts.insert("experiment", toml::table{{"path", run.relative(run.manifest())},
                                                          {"sha256", sha256_hex(resolved)}});
        if (!experiment.candidates.front().patch.empty())
            result.artifacts.insert("patch", toml::table{{"path", recorded.candidates.front().patch}, {"sha256", trees.patch_sha256}});
        if (recorded.workload.q_file) {
            toml::table tensors;
            for (auto [name, file] : {std::pair<const char *, const std::optional<std::string> *>{"q", &recorded.workload.q_file},
                                      {"k", &recorded.workload.k_file},
                                      {"v", &recorded.workload.v_file}})
                tensors.insert(name, toml::table{{"path", **file}, {"sha256", sha256_file(run.resolve(**file))}});
            result.artifacts.insert("workload_tensors", tensors);
        }
        toml::table tree_artifacts{{"baseline", toml::table{{"path", "trees/baseline"}, {"xxh3", trees.baseline_digest}}},
                                   {"candidate", toml::table{{"path", "trees/candidate"}, {"xxh3", trees.candidate_digest}}}};
        if (!trees.support_digest.empty())
            tree_artifacts.insert("support", toml::table{{"path", "trees/support"}, {"xxh3", trees.support_digest}});
        result.artifacts.insert("trees", tree_artifacts);
        toml::table recorded_overrides;
        if (overrides.repository) recorded_overrides.insert("repository", *overrides.repository);
        if (overrides.commit) recorded_overrides.insert("commit", *overrides.commit);
        if (overrides.candidate_commit) recorded_overrides.insert("candidate_commit", *overrides.candidate_commit);
        result.figures = toml::table{{"manifest", fs::absolute(manifest).lexically_normal().string()},
                                     {"overrides", recorded_overrides},
                                     {"source", experiment.baseline_source.kind},
                                     {"commit", trees.commit},
                                     {"candidate_source", experiment.candidates.front().source.kind},
                                     {"candidate_commit", trees.candidate_commit},
                                     {"patch", experiment.candidates.front().patch},
                                     {"patch_sha256", trees.patch_sha256},
                                     {"arch", experiment.arch}};
        result.figures.insert("baseline_tree_xxh3", trees.baseline_digest);
        result.figures.insert("candidate_tree_xxh3", trees.candidate_digest);
        if (!trees.support_digest.empty()) result.figures.insert("support_tree_xxh3", trees.support_digest);
        std::string summary = describe(experiment.baseline_source, trees.commit);
        if (!experiment.candidates.front().source.same_checkout(experiment.baseline_source))
            summary += " vs " + describe(experiment.candidates.front().source, trees.candidate_commit);
        summary += trees.patch_sha256.empty() ? ", no patch" : ", patch " + trees.patch_sha256.substr(0, 12);
        result.figures.insert("summary", summary);
        return result;
    };
    work.summarize = print_summary;
    // A prepare that fails in a run directory it made leaves nothing: no directory, `latest` unmoved.
    ExitCode code;
    try {
        // Also when the run turns out up to date: a prepare killed before its swap left the old state
        // intact, and its staging behind.
        discard_leftovers(run, experiment);
        code = execute_stage(context, work, cl.has("force"), cl.reporter());
    } catch (...) {
        forget_new_run();
        throw;
    }
    if (code != ExitCode::ok) forget_new_run();
    else mark_latest(selection, run.root());
    return static_cast<int>(code);
}

}  // namespace s2tp
