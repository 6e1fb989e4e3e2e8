#include "pipeline/run_removal.h"

#include "support/errors.h"
#include "support/file_io.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fs = std::filesystem;

namespace s2tp {

void remove_run_registrations(const std::vector<WorktreeRegistration> &registrations) {
    std::error_code ec;
    for (const WorktreeRegistration &r : registrations)
        if (fs::symlink_status(r.worktree, ec).type() == fs::file_type::not_found) remove_without_following(r.admin);
}

RunRemoval plan_run_removal(const fs::path &run, const RegistrationFinder &registrations_of) {
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
    removal.registrations = registrations_of(removal.root);
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
