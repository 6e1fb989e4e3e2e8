#include "tools/run_removal.h"

#include "model/experiment_manifest.h"
#include "support/errors.h"
#include "support/file_io.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fs = std::filesystem;

namespace s2tp {

RunRemoval plan_run_removal(const fs::path &run) {
    if (const std::string why = why_not_removable_run(run); !why.empty())
        fail(ExitCode::precondition, "no such run: '" + run.string() + "' is not a sage2tp run directory (" + why +
                                         "); nothing was removed");
    RunRemoval removal;
    removal.root = fs::canonical(run);
    std::error_code ec;
    for (const fs::directory_entry &entry : fs::directory_iterator(removal.root, ec))
        if (entry.path().filename() != ".lock") removal.entries.push_back(entry.path());
    std::sort(removal.entries.begin(), removal.entries.end());
    removal.entries.push_back(removal.root / ".lock");
    // Without its experiment.toml (or with one this sage2tp cannot read), the trees' own .git files still
    // name their repositories, believed when they point back into the run.
    Experiment experiment;
    const fs::path manifest = removal.root / "experiment.toml";
    if (fs::is_regular_file(fs::symlink_status(manifest, ec))) try {
            experiment = load_experiment(manifest);
        } catch (const Error &) {
        }
    removal.registrations = run_registrations(removal.root, experiment);
    return removal;
}

void remove_run(const RunRemoval &removal) {
    RunDirectory run(removal.root);
    run.lock(RunDirectory::Links::removed_without_following);
    for (const fs::path &entry : removal.entries) remove_without_following(entry, ExitCode::internal);
    remove_run_registrations(removal.registrations);
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
