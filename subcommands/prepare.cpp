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

// The trees on disk are still the ones the checkpoint describes; "" when intact.
std::string damaged_trees(const RunDirectory &run, const Checkpoint &c) {
    for (const char *variant : {"baseline", "candidate"}) {
        std::error_code ec;
        if (!fs::is_directory(run.tree(variant), ec)) return std::string("trees/") + variant + " is missing";
        if (Fingerprint().add_tree("tree", run.tree(variant)).hex() !=
            c.figures[std::string(variant) + "_tree_xxh3"].value_or(std::string()))
            return std::string("trees/") + variant + " was modified";
    }
    return "";
}

void print_summary(const Checkpoint &c, const Reporter &reporter) {
    reporter.say("  source " + c.figures["source"].value_or(std::string()) + " at commit " +
                 c.figures["commit"].value_or(std::string()));
    reporter.say("  patch  " + c.figures["patch"].value_or(std::string()) + " (sha256 " +
                 c.figures["patch_sha256"].value_or(std::string()) + ")");
}

}  // namespace

int prepare_command(const Args &args) {
    CommandLine cl("prepare", "Resolve the experiment and make the baseline and candidate source trees.", args);
    cl.add_options()
        ("manifest", "experiment manifest (default: the installed temporal-pair.toml)", cxxopts::value<std::string>(), "FILE")
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
    const Experiment experiment = load_experiment(manifest);
    // The run keeps its own copy of the patch, so that it stays complete when copied to another host.
    Experiment recorded = experiment;
    recorded.patch = "inputs/candidate.patch";
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
        f.add_file("patch", experiment.patch);
        if (experiment.source_kind == "git") f.add("commit", resolve_commit(experiment.repository, experiment.commit));
        else f.add_tree("embedded_kernels", embedded_kernels());
    };
    work.run = [&] {
        write_file_atomically(run.inputs() / "candidate.patch", read_text_file(experiment.patch));
        write_file_atomically(run.manifest(), resolved);
        PreparedTrees trees = make_trees(run, experiment, embedded_kernels);
        StageResult result;
        result.tools.insert("git", trees.git_version);
        result.artifacts.insert("experiment", toml::table{{"path", run.relative(run.manifest())},
                                                          {"sha256", sha256_hex(resolved)}});
        result.figures = toml::table{{"manifest", fs::absolute(manifest).lexically_normal().string()},
                                     {"source", experiment.source_kind},
                                     {"commit", trees.commit},
                                     {"patch", experiment.patch},
                                     {"patch_sha256", trees.patch_sha256},
                                     {"arch", experiment.arch}};
        if (!trees.patch_applied) {
            result.status = StageStatus::failed;
            result.reasons.push_back("the candidate patch " + experiment.patch + " does not apply at " + trees.commit +
                                     ": " + trees.patch_error);
            return result;
        }
        result.figures.insert("baseline_tree_xxh3", trees.baseline_digest);
        result.figures.insert("candidate_tree_xxh3", trees.candidate_digest);
        result.figures.insert("summary", experiment.source_kind + " @ " + trees.commit.substr(0, 12) + ", patch " +
                                             trees.patch_sha256.substr(0, 12));
        return result;
    };
    work.verify_outputs = [&](const Checkpoint &c) { return damaged_trees(run, c); };
    work.summarize = print_summary;
    return static_cast<int>(execute_stage(run, work, cl.has("force"), cl.reporter()));
}

}  // namespace s2tp
