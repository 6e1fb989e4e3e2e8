// sage2tp status: a table of the run's checkpoints (stage, status, when, key figures, fresh or stale).
// Read-only: it takes no lock, so it can watch a run that another process is working on.
#include "subcommands.h"

#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"

#include <iomanip>
#include <sstream>

namespace s2tp {

int status_command(const Args &args) {
    CommandLine cl("status", "Show the run's checkpoints: stage, status, when, key figures, fresh or stale.", args);
    if (!cl.parse()) return 0;
    RunDirectory run(require_existing_run(cl.selection()));

    toml::array stages;
    std::ostringstream table;
    table << std::left << std::setw(10) << "STAGE" << std::setw(11) << "STATUS" << std::setw(22) << "FINISHED (UTC)"
          << std::setw(7) << "FRESH" << "FIGURES\n";
    for (const StageState &state : inspect_run(run)) {
        std::string status = "-", finished = "-", summary, freshness = "-";
        if (state.read.checkpoint) {
            const Checkpoint &c = *state.read.checkpoint;
            status = to_string(c.status);
            finished = c.finished_utc;
            summary = c.figures["summary"].value_or(std::string());
            freshness = state.fresh ? "yes" : "no";
        } else if (state.read.exists) {
            status = "untrusted";
        }
        if (!state.fresh && state.read.exists) summary += (summary.empty() ? "" : "; ") + state.stale_reason;
        table << std::setw(10) << stage_name(state.stage) << std::setw(11) << status << std::setw(22) << finished
              << std::setw(7) << freshness << summary << "\n";
        toml::table entry{{"stage", stage_name(state.stage)}, {"status", status}, {"finished_utc", finished},
                          {"fresh", state.fresh}, {"summary", summary}};
        if (!state.fresh) entry.insert("stale_reason", state.stale_reason);
        stages.push_back(entry);
    }
    cl.reporter().say("run " + run.root().string());
    cl.reporter().say(table.str());
    cl.reporter().emit_json(toml::table{{"command", "status"}, {"run_dir", run.root().string()}, {"stages", stages}});
    return 0;
}

}  // namespace s2tp
