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

// The trees on disk are still the ones the checkpoint describes; "" when intact.
std::string damaged_trees(const RunDirectory &run, const Checkpoint &c) {
    for (const char *variant : {"baseline", "candidate", "support"}) {
        const std::string recorded = c.figures[std::string(variant) + "_tree_xxh3"].value_or(std::string());
        if (recorded.empty() && std::string(variant) == "support") continue;
        std::error_code ec;
        if (!fs::is_directory(run.tree(variant), ec)) return std::string("trees/") + variant + " is missing";
        if (Fingerprint().add_tree("tree", run.tree(variant)).hex() != recorded)
            return std::string("trees/") + variant + " was modified";
    }
    return "";
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
        RunDirectory run(*existing);
        run.lock();
        StageWork kept{Stage::prepare, nullptr, nullptr,
                       [&](const Checkpoint &c) { return damaged_trees(run, c); }, print_summary};
        if (auto code = keep_intact_checkpoint(run, kept, "prepared from " + manifest.string() + ", which is not on this host",
                                               cl.reporter()))
            return static_cast<int>(*code);
        fail(ExitCode::usage, "the run was prepared from " + manifest.string() +
                                  ", which is not on this host, and its prepare checkpoint is not a passed, intact one; "
                                  "pass --manifest to prepare it again");
    }
    const SourceOverrides overrides = source_overrides(cl, prepared);
    const Experiment experiment = load_experiment(manifest, overrides);
    // The run keeps its own copy of the patch, so that it stays complete when copied to another host.
    Experiment recorded = experiment;
    if (!experiment.patch.empty()) recorded.patch = "inputs/candidate.patch";
    const std::string resolved = experiment_to_toml(recorded);

    if (cl.has("new")) selection.run_id = new_run_id(experiment.name, selection.runs_root);
    RunDirectory run(existing ? *existing : run_for_prepare(selection, experiment.name));
    run.lock();
    mark_latest(selection, run.root());
    cl.reporter().progress("run directory: " + run.root().string());

    StageWork work;
    work.stage = Stage::prepare;
    work.add_inputs = [&](Fingerprint &f) {
        f.add("experiment", resolved);
        if (!experiment.patch.empty()) f.add_file("patch", experiment.patch);
        bool uses_embedded = experiment.needs_support_tree();
        for (const SourceSpec *source : {&experiment.baseline_source, &experiment.candidate_source}) {
            if (source->kind == "git") f.add("commit", resolve_commit(source->repository, source->commit));
            else uses_embedded = true;
        }
        if (uses_embedded) f.add_tree("embedded_kernels", embedded_kernels());
    };
    work.run = [&] {
        std::error_code ec;
        fs::remove(run.inputs() / "candidate.patch", ec);
        if (!experiment.patch.empty())
            write_file_atomically(run.inputs() / "candidate.patch", read_text_file(experiment.patch));
        write_file_atomically(run.manifest(), resolved);
        PreparedTrees trees = make_trees(run, experiment, embedded_kernels);
        StageResult result;
        result.tools.insert("git", trees.git_version);
        result.artifacts.insert("experiment", toml::table{{"path", run.relative(run.manifest())},
                                                          {"sha256", sha256_hex(resolved)}});
        toml::table recorded_overrides;
        if (overrides.repository) recorded_overrides.insert("repository", *overrides.repository);
        if (overrides.commit) recorded_overrides.insert("commit", *overrides.commit);
        if (overrides.candidate_commit) recorded_overrides.insert("candidate_commit", *overrides.candidate_commit);
        result.figures = toml::table{{"manifest", fs::absolute(manifest).lexically_normal().string()},
                                     {"overrides", recorded_overrides},
                                     {"source", experiment.baseline_source.kind},
                                     {"commit", trees.commit},
                                     {"candidate_source", experiment.candidate_source.kind},
                                     {"candidate_commit", trees.candidate_commit},
                                     {"patch", experiment.patch},
                                     {"patch_sha256", trees.patch_sha256},
                                     {"arch", experiment.arch}};
        if (!trees.patch_applied) {
            result.status = StageStatus::failed;
            result.reasons.push_back("the candidate patch " + experiment.patch + " does not apply at " + trees.candidate_commit +
                                     ": " + trees.patch_error);
            return result;
        }
        result.figures.insert("baseline_tree_xxh3", trees.baseline_digest);
        result.figures.insert("candidate_tree_xxh3", trees.candidate_digest);
        if (!trees.support_digest.empty()) result.figures.insert("support_tree_xxh3", trees.support_digest);
        std::string summary = describe(experiment.baseline_source, trees.commit);
        if (!experiment.candidate_source.same_checkout(experiment.baseline_source))
            summary += " vs " + describe(experiment.candidate_source, trees.candidate_commit);
        summary += trees.patch_sha256.empty() ? ", no patch" : ", patch " + trees.patch_sha256.substr(0, 12);
        result.figures.insert("summary", summary);
        return result;
    };
    work.verify_outputs = [&](const Checkpoint &c) { return damaged_trees(run, c); };
    work.summarize = print_summary;
    return static_cast<int>(execute_stage(run, work, cl.has("force"), cl.reporter()));
}

}  // namespace s2tp
