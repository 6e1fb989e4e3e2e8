#include "views/pull_request_report.h"
#include "support/number_format.h"

#include "model/ab_timing.h"
#include "pipeline/stage_pipeline.h"
#include "figures/cluster_verdicts.h"
#include "figures/gate_figures.h"
#include "figures/set_time_figures.h"
#include "figures/time_figures.h"
#include "support/errors.h"
#include "support/table_printer.h"

#include <sstream>
#include <utility>
#include <vector>

namespace s2tp {

namespace {

struct Row {
    std::string section;  // time | gate | cluster
    std::string name;
    std::string status;   // "" for a figure, else PASS / FAIL / ... for a gate condition
    std::string value;
};

// The checkpoint's state when it is not current (inspect_run's reason: "stale: time has been re-run
// since"), so that its figures are not read as the run's current ones.
void add_state_row(std::vector<Row> &rows, const std::string &section, const StageState &state) {
    if (!state.fresh) rows.push_back({section, "checkpoint", "", state.stale_reason});
}

// Over a workload set: per candidate, one row per shape and the combined rows (the geometric mean and
// the worst shape); each shape's reasons.
std::vector<Row> set_time_rows(const StageState &state, const Checkpoint &time) {
    const SetTimeFigures f = SetTimeFigures::from_toml(time.figures);
    std::vector<Row> rows;
    add_state_row(rows, "time", state);
    rows.push_back({"time", "status", "", to_string(time.status)});
    rows.push_back({"time", "workload set", "", f.workload_set.value_or("") + ": " + std::to_string(f.shapes.size()) +
                                                    " shapes" + (f.weighted.value_or(false) ? ", weighted" : "")});
    rows.push_back({"time", "device", "", f.device_name.value_or("")});
    for (const SetCandidateFigures &c : f.candidates) {
        for (const ShapeTimeFigures &s : f.shapes) {
            const CandidateTimeFigures *timed = s.figures.candidate(c.name);
            rows.push_back({"time", s.name + " " + c.name + "/baseline", "",
                            timed && timed->ratio ? interval_text(*timed->ratio, false) : missing_figure});
        }
        rows.push_back({"time", "geomean " + c.name + "/baseline", "", c.geomean ? interval_text(*c.geomean, false) : missing_figure});
        rows.push_back({"time", "worst shape " + c.name, "",
                        c.worst_shape && c.worst ? *c.worst_shape + " " + interval_text(*c.worst, false) : missing_figure});
        if (c.geomean && c.geomean->median)
            rows.push_back({"time", c.name + " in words", "", speed_in_words(*c.geomean->median, c.name) + " over the set"});
    }
    for (const auto &reason : time.reasons) rows.push_back({"time", "reason", "", reason});
    return rows;
}

std::vector<Row> time_rows(const StageState &state) {
    if (!state.read.exists) return {{"time", "result", "", "not run"}};
    if (!state.read.checkpoint) return {{"time", "checkpoint", "", state.stale_reason}};
    const Checkpoint *time = &*state.read.checkpoint;
    if (SetTimeFigures::holds_set(time->figures)) return set_time_rows(state, *time);
    const TimeFigures f = TimeFigures::from_toml(time->figures);
    std::vector<Row> rows;
    add_state_row(rows, "time", state);
    for (Row row : std::vector<Row>{{"time", "status", "", to_string(time->status)},
                          {"time", "workload", "", f.workload.value_or("") + ": " + f.shape.value_or("")},
                                    {"time", "device", "", f.device_name.value_or("")}})
        rows.push_back(std::move(row));
    if (f.baseline && f.baseline->p50) rows.push_back({"time", "baseline p50", "", fixed(*f.baseline->p50, 3) + " ms"});
    for (const CandidateTimeFigures &c : f.candidates) {
        if (!c.ratio || !c.ratio->median) continue;
        if (c.timing && c.timing->p50) rows.push_back({"time", c.name + " p50", "", fixed(*c.timing->p50, 3) + " ms"});
        rows.push_back({"time", c.name + "/baseline", "", interval_text(*c.ratio, false)});
        rows.push_back({"time", c.name + " in words", "", speed_in_words(*c.ratio->median, c.name)});
    }
    if (f.aa && f.aa->median) rows.push_back({"time", "A/A control", "", fixed(*f.aa->median, 4)});
    rows.push_back({"time", "timed outputs", "", recheck_text(f)});
    if (shows_gpu_table(f.gpus))
        for (const std::string &gpu : gpu_table_lines(f.gpus)) rows.push_back({"time", "GPU", "", gpu});
    for (const std::string &verdict : gpu_result_lines(f)) rows.push_back({"time", "GPU verdict", "", verdict});
    for (const auto &reason : time->reasons) rows.push_back({"time", "reason", "", reason});
    return rows;
}

// The overall verdict, then per candidate its verdict and its conditions.
std::vector<Row> gate_rows(const StageState &state) {
    const GateFigures f = GateFigures::from_toml(state.read.checkpoint->figures);
    std::vector<Row> rows;
    add_state_row(rows, "gate", state);
    rows.push_back({"gate", "verdict", "", f.summary});
    for (const auto &[name, c] : f.candidates) {
        rows.push_back({"gate", "candidate " + name, c.result.passed ? "PASS" : "FAIL", c.summary});
        for (const GateCondition &condition : c.result.conditions)
            rows.push_back({"gate", condition.name, condition_status_text(condition), condition_figure_text(condition)});
    }
    return rows;
}

// One row per task of the run's Slurm job array (reports/cluster.toml), Slurm's state as its status.
std::vector<Row> cluster_rows(const ClusterVerdicts &cluster) {
    std::vector<Row> rows;
    for (const ClusterTaskVerdict &t : cluster.tasks)
        rows.push_back({"cluster", t.arch + " " + t.gpu_kind + " #" + std::to_string(t.repeat) + " (task " + std::to_string(t.task) + ")",
                        t.slurm_state, t.verdict + (t.detail.empty() ? "" : ": " + t.detail)});
    return rows;
}

}  // namespace

void check_report_format(const std::string &format) {
    if (format != "text" && format != "markdown" && format != "csv" && format != "json")
        fail(ExitCode::usage, "--format '" + format + "': expected text, markdown, csv or json");
}

std::string pull_request_report(const RunDirectory &run, const std::string &format) {
    check_report_format(format);
    // Through inspect_run, as status and compare read a run: a checkpoint is intact and fresh, or says
    // why not. A run judged on a Slurm cluster has its verdicts in the tasks' copies, collected into one
    // table, and needs no gate checkpoint of its own.
    const std::vector<StageState> states = inspect_run(run);
    const StageState &gate = states[static_cast<std::size_t>(Stage::gate)];
    const std::optional<ClusterVerdicts> cluster = read_cluster_verdicts(run);
    if (!gate.read.exists && !cluster)
        if (auto stop = last_stop(run)) fail(ExitCode::precondition, "no gate verdict: the run " + stop_summary(*stop) + "; " + stop->next_step);
    if (!gate.read.checkpoint && !cluster)
        fail(ExitCode::precondition, std::string("the gate checkpoint is ") +
                                         (gate.read.exists ? gate.stale_reason : "missing") +
                                         "; run 'sage2tp gate' (or 'sage2tp slurm collect') first");
    std::vector<Row> rows;
    if (gate.read.checkpoint) {
        rows = time_rows(states[static_cast<std::size_t>(Stage::time)]);
        for (Row &row : gate_rows(gate)) rows.push_back(std::move(row));
    }
    if (cluster)
        for (Row &row : cluster_rows(*cluster)) rows.push_back(std::move(row));

    // Text and markdown print the same tables: the time figures' rows, then the gate's conditions and the
    // cluster's tasks, each its own table.
    const auto section_table = [&rows](const std::string &section, std::vector<TableColumn> columns) {
        TextTable table{std::move(columns), {}};
        for (const Row &row : rows)
            if (row.section == section)
                table.rows.push_back(table.columns.size() == 2 ? std::vector<std::string>{row.name, row.value}
                                                               : std::vector<std::string>{row.name, row.status, row.value});
        return std::pair{section, table};
    };
    const std::vector<std::pair<std::string, TextTable>> tables{
        section_table("time", {{"time"}, {"value"}}), section_table("gate", {{"gate condition"}, {"status"}, {"figure"}}),
        section_table("cluster", {{"cluster task"}, {"slurm"}, {"verdict"}})};

    std::ostringstream out;
    if (format == "json") {
        toml::table sections{{"command", "report"}, {"run_dir", run.root().string()}};
        for (const char *section : {"time", "gate", "cluster"}) {
            TextTable table{{{"name"}, {"value"}, {"status", Align::left, true}}, {}};
            for (const Row &row : rows)
                if (row.section == section) table.rows.push_back({row.name, row.value, row.status});
            if (section != std::string("cluster") || cluster) sections.insert(section, table_json(table));
        }
        out << toml::json_formatter{sections} << "\n";
    } else if (format == "csv") {
        TextTable table{{{"section"}, {"name"}, {"status"}, {"value"}}, {}};
        for (const Row &row : rows) table.rows.push_back({row.section, row.name, row.status, row.value});
        out << table_csv(table);
    } else if (format == "markdown") {
        out << "### sage2tp: candidate vs baseline\n";
        for (const auto &[section, table] : tables)
            if (!table.rows.empty() || (section == "time" && gate.read.checkpoint)) out << "\n" << table_markdown(table);
    } else {
        bool first = true;
        for (const auto &[section, table] : tables)
            if (!table.rows.empty()) out << (std::exchange(first, false) ? "" : "\n") << table_text(table, TextLayout{"", 2, true});
    }
    return out.str();
}

}  // namespace s2tp
