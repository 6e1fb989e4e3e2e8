// sage2tp clean [RUN]: remove a run: its source trees with their worktree registrations in the
// user's repositories, then the run directory itself (and the latest link when it points there).
#include "subcommands.h"

#include "model/experiment_manifest.h"
#include "pipeline/cli.h"
#include "pipeline/run_directory.h"
#include "tools/source_trees.h"

#include <system_error>

namespace fs = std::filesystem;

namespace s2tp {

int clean_command(const Args &args) {
    CommandLine cl("clean", "Remove a run: its worktrees (unregistered from your repository) and its directory.", args);
    cl.add_options()("target", "the run: a run directory, or a run id under --root (default: --run, --run-id, else "
                               "the latest run)",
                     cxxopts::value<std::string>(), "RUN");
    cl.positional("target");
    cl.positional_help("[RUN]");
    if (!cl.parse()) return 0;

    const RunSelection selection =
        cl.has("target") ? select_run_word(cl.selection(), cl.result()["target"].as<std::string>()) : cl.selection();
    const fs::path root = fs::absolute(require_existing_run(selection)).lexically_normal();
    {
        RunDirectory run(root);
        run.lock();
        std::error_code ec;
        // Without its experiment.toml, the trees' own .git files still name their repositories.
        const Experiment experiment = fs::is_regular_file(run.manifest(), ec) ? load_experiment(run.manifest()) : Experiment{};
        for (const fs::path &trees : {run.trees(), run.prepare_staging() / "trees", run.prepare_retired()})
            remove_trees(trees, experiment);
        fs::remove_all(root, ec);
        if (ec) fail(ExitCode::internal, "cannot remove '" + root.string() + "': " + ec.message());
    }
    const fs::path latest = selection.runs_root / "latest";
    std::error_code ec;
    if (fs::is_symlink(latest, ec) &&
        (fs::absolute(latest.parent_path()) / fs::read_symlink(latest, ec)).lexically_normal() == root)
        fs::remove(latest, ec);
    cl.reporter().say("removed " + root.string());
    cl.reporter().emit_json(toml::table{{"command", "clean"}, {"run_dir", root.string()}, {"status", "removed"}});
    return 0;
}

}  // namespace s2tp
