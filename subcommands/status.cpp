// sage2tp status: a table of the run's checkpoints (stage, status, when, key figures, fresh or stale),
// the first reason and log of a failed stage, and the command to run next.
// Read-only: it only probes the lock, so it can watch a run that another process is working on.
#include "subcommands.h"

#include "pipeline/cli.h"
#include "support/number_format.h"
#include "pipeline/stage_pipeline.h"
#include "stages/gate_stage.h"
#include "support/table_printer.h"
#include "views/run_overview.h"

#include <sstream>
#include <system_error>

namespace s2tp {

namespace {

namespace fs = std::filesystem;

// "" when a plain command would pick this run too, else "--run DIR" (relative to the working
// directory when the run is below it).
std::string run_option(const fs::path &root, const RunSelection &selection) {
    std::error_code ec;
    RunSelection plain;
    plain.runs_root = selection.runs_root;
    if (auto chosen = existing_run(plain); chosen && fs::equivalent(*chosen, root, ec)) return "";
    fs::path shown = fs::absolute(root, ec).lexically_normal();
    fs::path below = shown.lexically_relative(fs::current_path(ec));
    if (!below.empty() && *below.begin() != "..") shown = below;
    return "--run " + shown.string();
}

}  // namespace

int status_command(const Args &args) {
    CommandLine cl("status", "Show the run's checkpoints: stage, status, when, key figures, fresh or stale; and what to run next.", args);
    if (!cl.parse()) return 0;
    RunDirectory run(require_existing_run(cl.selection()));
    const RunOverview overview = overview_run(run, run_option(run.root(), cl.selection()));

    toml::array stages;
    TextTable rows{{{"stage"}, {"status"}, {"finished (utc)"}, {"fresh"}, {"figures"}}, {}};
    for (const StageOverview &line : overview.stages)
        rows.rows.push_back({stage_name(line.stage), line.status, line.finished_utc, line.fresh, line.summary});
    // The printer lays the stages out; under each stage's line, its GPUs and a failure's reason and log.
    std::istringstream printed(table_text(rows, TextLayout{"", 2, true}));
    std::ostringstream table;
    std::string printed_line;
    std::getline(printed, printed_line);
    table << printed_line << "\n";
    for (const StageOverview &line : overview.stages) {
        std::getline(printed, printed_line);
        table << printed_line << "\n";
        for (const std::string &gpu : line.gpus) table << "  " << gpu << "\n";
        if (line.status == "failed") {
            if (!line.first_reason.empty()) table << "  reason: " << line.first_reason << "\n";
            if (!line.log.empty()) table << "  log: " << (run.root() / line.log).string() << "\n";
        }
        // JSON has no "-": a stage without a checkpoint is "missing" and has no finished_utc.
        const bool recorded = line.finished_utc != missing_figure;
        toml::table entry{{"stage", stage_name(line.stage)},
                          {"status", line.status == missing_figure ? std::string("missing") : line.status},
                          {"fresh", line.fresh == "yes"},
                          {"summary", line.summary}};
        if (recorded) entry.insert("finished_utc", line.finished_utc);
        if (!line.first_reason.empty()) entry.insert("first_reason", line.first_reason);
        if (!line.log.empty()) entry.insert("log", line.log);
        if (!line.stale_reason.empty()) entry.insert("stale_reason", line.stale_reason);
        if (!line.gpus.empty()) {
            toml::array gpus;
            for (const std::string &gpu : line.gpus) gpus.push_back(gpu);
            entry.insert("gpus", gpus);
        }
        stages.push_back(entry);
    }
    // The gate's thresholds, from the run's manifest: what "worth shipping" will mean for this run.
    std::string gate;
    try {
        gate = thresholds_text(gate_thresholds(load_experiment(run.manifest()), {}));
    } catch (const Error &) {
        // A run whose manifest cannot be read shows its stages all the same; the stage tells why.
    }
    cl.reporter().say("run " + run.root().string());
    cl.reporter().say(table.str() + (gate.empty() ? "" : "gate: " + gate + "\n") + "next: " + overview.next);
    toml::table result{{"command", "status"}, {"run_dir", run.root().string()}, {"stages", stages}, {"next", overview.next}};
    if (!gate.empty()) result.insert("gate_thresholds", gate);
    if (overview.stop)
        result.insert("last_stop", toml::table{{"stage", stage_name(overview.stop->stage)}, {"cause", overview.stop->cause},
                                               {"utc", overview.stop->utc}, {"message", overview.stop->message}});
    if (overview.running_pid) result.insert("running_pid", *overview.running_pid);
    cl.reporter().emit_json(result);
    return 0;
}

}  // namespace s2tp
