#include "views/run_overview.h"
#include "support/number_format.h"

#include "figures/build_figures.h"
#include "figures/gate_figures.h"
#include "figures/parity_figures.h"
#include "figures/sanitize_figures.h"
#include "figures/time_figures.h"

namespace s2tp {

namespace {

// The one-line summary each stage's typed figures record (prepare's figures have no struct yet).
std::string stage_summary(Stage stage, const toml::table &figures) {
    switch (stage) {
    case Stage::build: return BuildFigures::from_toml(figures).summary;
    case Stage::sanitize: return SanitizeFigures::from_toml(figures).summary;
    case Stage::parity: return ParityFigures::from_toml(figures).summary;
    case Stage::time: return TimeFigures::from_toml(figures).summary.value_or("");
    case Stage::gate: return GateFigures::from_toml(figures).summary;
    default: return figures["summary"].value_or(std::string());
    }
}

// The per-GPU table of a GPU stage's figures, when it shows one (several GPUs, or one lost), and on
// GPUs of several models time's verdict per GPU after it.
std::vector<std::string> stage_gpus(Stage stage, const toml::table &figures) {
    std::vector<GpuFigures> gpus;
    std::vector<std::string> verdicts;
    if (stage == Stage::sanitize) gpus = SanitizeFigures::from_toml(figures).gpus;
    if (stage == Stage::parity) gpus = ParityFigures::from_toml(figures).gpus;
    if (stage == Stage::time) {
        const TimeFigures time = TimeFigures::from_toml(figures);
        gpus = time.gpus;
        verdicts = gpu_result_lines(time);
    }
    std::vector<std::string> lines = shows_gpu_table(gpus) ? gpu_table_lines(gpus) : std::vector<std::string>{};
    lines.insert(lines.end(), verdicts.begin(), verdicts.end());
    return lines;
}

bool entry_failed(const toml::table &entry) {
    if (entry.contains("log") && entry.contains("command") && !entry.contains("path")) return true;  // a compile
    if (entry["exit_code"].value_or<std::int64_t>(0) != 0) return true;
    return entry["errors"].value_or<std::int64_t>(0) != 0;
}

// Depth-first over tables and arrays: the first log of a failed entry, and the first log of any.
void find_logs(const toml::node &node, std::string &failed, std::string &any) {
    if (const toml::table *table = node.as_table()) {
        if (auto log = (*table)["log"].value<std::string>()) {
            if (any.empty()) any = *log;
            if (failed.empty() && entry_failed(*table)) failed = *log;
        }
        for (const auto &[key, child] : *table) find_logs(child, failed, any);
    } else if (const toml::array *array = node.as_array()) {
        for (const auto &child : *array) find_logs(child, failed, any);
    }
}

std::string command(const std::string &words, const std::string &run_option) {
    return "sage2tp " + words + (run_option.empty() ? "" : " " + run_option);
}

}  // namespace

std::string failure_log(const Checkpoint &checkpoint) {
    std::string failed, any;
    find_logs(checkpoint.artifacts, failed, any);
    find_logs(checkpoint.figures, failed, any);
    return failed.empty() ? any : failed;
}

RunOverview overview_run(const RunDirectory &run, const std::string &run_option) {
    RunOverview overview;
    overview.running_pid = lock_holder(run.root());
    const std::vector<StageState> states = inspect_run(run);
    std::optional<std::size_t> open;  // the first stage not passed (or skipped) and fresh
    for (std::size_t i = 0; i < states.size(); ++i) {
        const StageState &state = states[i];
        StageOverview line{state.stage, missing_figure, missing_figure, missing_figure, "", "", "", state.stale_reason, {}};
        const Checkpoint *c = state.read.checkpoint ? &*state.read.checkpoint : nullptr;
        if (c) {
            line.status = to_string(c->status);
            line.finished_utc = c->finished_utc;
            line.summary = stage_summary(state.stage, c->figures);
            line.gpus = stage_gpus(state.stage, c->figures);
            line.fresh = state.fresh ? "yes" : "no";
            if (c->status != StageStatus::passed && !c->reasons.empty()) line.first_reason = c->reasons.front();
            if (c->status == StageStatus::failed) line.log = failure_log(*c);
        } else if (state.read.exists) {
            line.status = "untrusted";
        }
        if (!state.fresh && state.read.exists) line.summary += (line.summary.empty() ? "" : "; ") + state.stale_reason;
        const bool done = c && state.fresh && (c->status == StageStatus::passed || c->status == StageStatus::skipped);
        if (!done && !open) open = i;
        overview.stages.push_back(line);
    }

    if (overview.running_pid) {
        const std::string pid = std::to_string(*overview.running_pid);
        if (open) overview.stages[*open].status = "running (pid " + pid + ")";
        overview.next = "wait: pid " + pid + " is working on this run (its own output shows its progress; " +
                        command("status", run_option) + " again when it is done)";
        return overview;
    }
    if (!open) {
        overview.next = "nothing to run: every stage passed and is fresh; " + command("report", run_option) +
                        " prints time and gate for a pull request";
        return overview;
    }
    StageOverview &line = overview.stages[*open];
    const std::string name = stage_name(line.stage);
    // Running the same command again on this host stops the same way: say why, and what to do instead.
    if (auto stop = last_stop(run); stop && stop->stage == line.stage) {
        overview.stop = stop;
        if (line.summary.empty()) line.summary = stop_summary(*stop) + " (" + stop->utc + ")";
        overview.next = stop_summary(*stop) + "; " + stop->next_step;
        return overview;
    }
    if (line.status == "failed" && line.fresh == "yes") {
        // A fresh failure is the stage's verdict on these inputs: running it again changes nothing.
        const std::string where = line.log.empty() ? "" : " (log: " + line.log + ")";
        if (line.stage == Stage::gate)
            overview.next = "the gate rejected the candidate" + where + "; " + command("gate", run_option) +
                            " shows the evidence, and a changed candidate needs " +
                            command("prepare --new", "") + " (or --force on the stage that changed)";
        else
            overview.next = "fix what " + name + " reports" + where + ", then " + command(name + " --force", run_option);
        return overview;
    }
    overview.next = command(line.stage == Stage::prepare ? "prepare" : "run", run_option) +
                    "   (or " + command(name, run_option) + " for " + name + " alone)";
    return overview;
}

}  // namespace s2tp
