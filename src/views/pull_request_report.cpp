#include "views/pull_request_report.h"
#include "support/number_format.h"

#include "model/ab_timing.h"
#include "pipeline/stage_pipeline.h"
#include "figures/gate_figures.h"
#include "figures/time_figures.h"
#include "support/errors.h"

#include <iomanip>
#include <sstream>
#include <vector>

namespace s2tp {

namespace {

struct Row {
    std::string section;  // time | gate
    std::string name;
    std::string status;   // "" for a figure, else PASS / FAIL / ... for a gate condition
    std::string value;
};

// A figure the checkpoint does not record.
std::string number_or_missing(const std::optional<double> &value, int decimals) {
    return value ? fixed(*value, decimals) : "-";
}

// The checkpoint's state when it is not current (inspect_run's reason: "stale: time has been re-run
// since"), so that its figures are not read as the run's current ones.
void add_state_row(std::vector<Row> &rows, const std::string &section, const StageState &state) {
    if (!state.fresh) rows.push_back({section, "checkpoint", "", state.stale_reason});
}

std::vector<Row> time_rows(const StageState &state) {
    if (!state.read.exists) return {{"time", "result", "", "not run"}};
    if (!state.read.checkpoint) return {{"time", "checkpoint", "", state.stale_reason}};
    const Checkpoint *time = &*state.read.checkpoint;
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
        rows.push_back({"time", c.name + "/baseline", "",
                        fixed(*c.ratio->median, 4) + " (95% CI " + number_or_missing(c.ratio->ci_low, 4) + " .. " +
                            number_or_missing(c.ratio->ci_high, 4) + ")"});
        rows.push_back({"time", c.name + " in words", "", speed_in_words(*c.ratio->median)});
    }
    if (f.aa && f.aa->median) rows.push_back({"time", "A/A control", "", fixed(*f.aa->median, 4)});
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
            rows.push_back({"gate", condition.name, gate_status_text(condition.status),
                            condition.figure + (condition.detail.empty() ? "" : " (" + condition.detail + ")")});
    }
    return rows;
}

}  // namespace

std::string csv_field(const std::string &text) {
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return quoted + "\"";
}

std::string markdown_cell(const std::string &text) {
    std::string cell;
    for (char ch : text) cell += ch == '|' ? std::string("\\|") : ch == '\n' ? std::string(" ") : std::string(1, ch);
    return cell;
}

std::string pull_request_report(const RunDirectory &run, const std::string &format) {
    if (format != "text" && format != "markdown" && format != "csv" && format != "json")
        fail(ExitCode::usage, "--format '" + format + "': expected text, markdown, csv or json");
    // Through inspect_run, as status and compare read a run: a checkpoint is intact and fresh, or says
    // why not.
    const std::vector<StageState> states = inspect_run(run);
    const StageState &gate = states[static_cast<std::size_t>(Stage::gate)];
    if (!gate.read.checkpoint)
        fail(ExitCode::precondition, std::string("the gate checkpoint is ") +
                                         (gate.read.exists ? gate.stale_reason : "missing") +
                                         "; run 'sage2tp gate' first");
    std::vector<Row> rows = time_rows(states[static_cast<std::size_t>(Stage::time)]);
    for (Row &row : gate_rows(gate)) rows.push_back(std::move(row));

    std::ostringstream out;
    if (format == "json") {
        toml::array time_rows_json, gate_rows_json;
        for (const Row &row : rows) {
            toml::table entry{{"name", row.name}, {"value", row.value}};
            if (!row.status.empty()) entry.insert("status", row.status);
            (row.section == "time" ? time_rows_json : gate_rows_json).push_back(entry);
        }
        out << toml::json_formatter{toml::table{{"run_dir", run.root().string()}, {"time", time_rows_json},
                                                {"gate", gate_rows_json}}}
            << "\n";
    } else if (format == "csv") {
        out << "section,name,status,value\n";
        for (const Row &row : rows)
            out << row.section << "," << csv_field(row.name) << "," << csv_field(row.status) << "," << csv_field(row.value) << "\n";
    } else if (format == "markdown") {
        out << "### sage2tp: candidate vs baseline\n\n| time | |\n|---|---|\n";
        for (const Row &row : rows)
            if (row.section == "time") out << "| " << markdown_cell(row.name) << " | " << markdown_cell(row.value) << " |\n";
        out << "\n| gate condition | status | figure |\n|---|---|---|\n";
        for (const Row &row : rows)
            if (row.section == "gate")
                out << "| " << markdown_cell(row.name) << " | " << markdown_cell(row.status) << " | "
                    << markdown_cell(row.value) << " |\n";
    } else {
        std::string section;
        for (const Row &row : rows) {
            if (row.section != section) out << (section.empty() ? "" : "\n") << (section = row.section) << ":\n";
            out << "  " << std::left << std::setw(20) << row.name;
            if (!row.status.empty()) out << std::setw(13) << row.status;
            out << row.value << "\n";
        }
    }
    return out.str();
}

}  // namespace s2tp
