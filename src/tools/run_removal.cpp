#include "tools/run_removal.h"

#include "model/experiment_manifest.h"
#include "support/errors.h"
#include "support/file_io.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {

RunRemoval plan_run_removal(const fs::path &run) {
    if (const std::string why = why_not_removable_run(run); !why.empty())
        fail(ExitCode::precondition, "no such run: '" + run.string() + "' is not a sage2tp run directory (" + why +
                                         "); nothing was removed");
    RunRemoval removal;
    removal.root = fs::canonical(run);
    const RunDirectory layout(removal.root);
    // The markers last, the removal marker very last: until it goes, a later clean knows the run.
    const std::vector<fs::path> last{layout.run_marker(), removal.root / ".lock", layout.removal_marker()};
    std::error_code ec;
    for (const fs::directory_entry &entry : fs::directory_iterator(removal.root, ec))
        if (std::find(last.begin(), last.end(), entry.path()) == last.end()) removal.entries.push_back(entry.path());
    std::sort(removal.entries.begin(), removal.entries.end());
    removal.entries.insert(removal.entries.end(), last.begin(), last.end());
    // Without its experiment.toml (or with one this sage2tp cannot read), the trees' own .git files still
    // name their repositories, believed when they point back into the run.
    Experiment experiment;
    const fs::path manifest = removal.root / "experiment.toml";
    if (fs::is_regular_file(fs::symlink_status(manifest, ec))) try {
            experiment = load_experiment(manifest);
        } catch (const Error &) {
        }
    removal.registrations = run_registrations(removal.root, experiment);
    // A clean killed midway recorded the repositories before it removed the trees and experiment.toml
    // that name them; their registrations of worktrees inside this run are found there.
    if (fs::is_regular_file(fs::symlink_status(layout.removal_marker(), ec))) try {
            std::istringstream lines(read_text_file(layout.removal_marker(), max_toml_bytes));
            for (std::string line; std::getline(lines, line);) {
                if (line.empty()) continue;
                for (WorktreeRegistration &r : registrations_in(line, removal.root))
                    if (std::none_of(removal.registrations.begin(), removal.registrations.end(),
                                     [&](const WorktreeRegistration &known) { return known.admin == r.admin; }))
                        removal.registrations.push_back(std::move(r));
            }
        } catch (const Error &) {
            // Unreadable: the registrations the trees still name are removed all the same.
        }
    return removal;
}

void remove_run(const RunRemoval &removal) {
    RunDirectory run(removal.root);
    run.lock(RunDirectory::Links::removed_without_following);
    // Before anything goes: the marker that keeps the run a run for a later clean should this one be
    // killed or fail midway, with the repositories whose registrations it is to remove.
    run.mark_as_run();
    std::string repositories;
    for (const WorktreeRegistration &r : removal.registrations) {
        const std::string line = r.admin.parent_path().parent_path().string() + "\n";
        if (repositories.find(line) == std::string::npos) repositories += line;
    }
    write_file_atomically(run.removal_marker(), repositories);
    const auto is_marker = [&](const fs::path &entry) {
        return entry == run.run_marker() || entry == run.removal_marker() || entry == removal.root / ".lock";
    };
    for (const fs::path &entry : removal.entries)
        if (!is_marker(entry)) remove_without_following(entry, ExitCode::internal);
    remove_run_registrations(removal.registrations);
    for (const fs::path &entry : removal.entries)
        if (is_marker(entry)) remove_without_following(entry, ExitCode::internal);
    if (::rmdir(removal.root.c_str()) != 0) {
        std::string left;
        std::error_code ec;
        for (const fs::directory_entry &entry : fs::directory_iterator(removal.root, ec))
            left += (left.empty() ? "" : ", ") + entry.path().filename().string();
        fail(ExitCode::internal, "cannot remove '" + removal.root.string() + "': " + std::strerror(errno) +
                                     (left.empty() ? "" : " (it now holds " + left + ", which appeared meanwhile)"));
    }
}

}  // namespace s2tp
