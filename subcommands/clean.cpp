// sage2tp clean [-n] [--yes] [RUN]: remove a run (tools/run_removal.h): only a provable run, entry by
// entry, with exactly its own worktree registrations; -n lists what would go, and without --yes it asks
// on a terminal and refuses elsewhere, as `git clean` refuses without -f.
#include "subcommands.h"

#include "pipeline/cli.h"
#include "pipeline/run_directory.h"
#include "pipeline/run_removal.h"
#include "tools/source_trees.h"

#include <unistd.h>

#include <iostream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

bool confirmed_at_terminal(const RunRemoval &removal) {
    std::cerr << "remove the run " << removal.root.string() << " (" << removal.entries.size() << " entries";
    if (!removal.registrations.empty())
        std::cerr << ", and " << removal.registrations.size() << " worktree registrations outside it";
    std::cerr << ")? [y/N] " << std::flush;
    std::string answer;
    std::getline(std::cin, answer);
    return answer == "y" || answer == "Y" || answer == "yes";
}

}  // namespace

int clean_command(const Args &args) {
    CommandLine cl("clean", "Remove a run: its worktrees (unregistered from your repository) and its directory.", args);
    cl.add_options()("n,dry-run", "list what would be removed, and remove nothing")(
        "y,yes", "remove without asking (needed where standard input is not a terminal)")(
        "target", "the run: a run directory, or a run id under --root (default: --run, --run-id, else the latest run)",
        cxxopts::value<std::string>(), "RUN");
    cl.positional("target");
    cl.positional_help("[RUN]");
    if (!cl.parse()) return 0;

    const RunSelection selection =
        cl.has("target") ? select_run_word(cl.selection(), cl.result()["target"].as<std::string>()) : cl.selection();
    const RunRemoval removal = plan_run_removal(require_existing_run(selection), run_worktree_registrations);
    const Reporter &reporter = cl.reporter();
    toml::array entries, registrations;
    for (const fs::path &entry : removal.entries) entries.push_back(entry.string());
    for (const WorktreeRegistration &r : removal.registrations) registrations.push_back(r.admin.string());

    if (cl.has("dry-run")) {
        reporter.say("would remove " + removal.root.string() + ":");
        for (const fs::path &entry : removal.entries) reporter.say("  " + entry.filename().string());
        for (const WorktreeRegistration &r : removal.registrations)
            reporter.say("would unregister the worktree " + r.worktree.string() + " (" + r.admin.string() + ")");
        reporter.emit_json(toml::table{{"command", "clean"}, {"run_dir", removal.root.string()}, {"status", "would remove"},
                                       {"entries", entries}, {"registrations", registrations}});
        return 0;
    }
    if (!cl.has("yes")) {
        if (!::isatty(STDIN_FILENO) || reporter.json())
            fail(ExitCode::usage, "clean removes the run " + removal.root.string() +
                                      "; pass --yes to remove it, or -n to list what would go (nothing was removed)");
        if (!confirmed_at_terminal(removal)) {
            reporter.say("nothing removed");
            return static_cast<int>(ExitCode::stop);
        }
    }
    const bool latest_points_here = latest_run(selection.runs_root) == removal.root;
    remove_run(removal);
    std::error_code ec;
    if (latest_points_here) fs::remove(selection.runs_root / "latest", ec);
    reporter.say("removed " + removal.root.string());
    for (const WorktreeRegistration &r : removal.registrations) reporter.detail("unregistered " + r.worktree.string());
    reporter.emit_json(toml::table{{"command", "clean"}, {"run_dir", removal.root.string()}, {"status", "removed"},
                                   {"entries", entries}, {"registrations", registrations}});
    return 0;
}

}  // namespace s2tp
