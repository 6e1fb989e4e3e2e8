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

std::vector<Row> time_rows(const std::optional<Checkpoint> &time) {
    if (!time) return {{"time", "result", "", "not run"}};
    const TimeFigures f = TimeFigures::from_toml(time->figures);
    std::vector<Row> rows{{"time", "status", "", to_string(time->status)},
                          {"time", "workload", "", f.workload.value_or("") + ": " + f.shape.value_or("")},
                          {"time", "device", "", f.device_name.value_or("")}};
    if (f.baseline && f.baseline->p50) rows.push_back({"time", "baseline p50", "", fixed(*f.baseline->p50, 3) + " ms"});
    for (const CandidateTimeFigures &c : f.candidates) {
        if (!c.ratio || !c.ratio->median) continue;
        if (c.timing && c.timing->p50) rows.push_back({"time", c.name + " p50", "", fixed(*c.timing->p50, 3) + " ms"});
        rows.push_back({"time", c.name + "/baseline", "",
                        fixed(*c.ratio->median, 4) + " (95% CI " + fixed(c.ratio->ci_low.value_or(0.0), 4) + " .. " +
                            fixed(c.ratio->ci_high.value_or(0.0), 4) + ")"});
        rows.push_back({"time", c.name + " in words", "", speed_in_words(*c.ratio->median)});
    }
    if (f.aa && f.aa->median) rows.push_back({"time", "A/A control", "", fixed(*f.aa->median, 4)});
    for (const auto &reason : time->reasons) rows.push_back({"time", "reason", "", reason});
    return rows;
}

// The overall verdict, then per candidate its verdict and its conditions.
std::vector<Row> gate_rows(const Checkpoint &gate) {
    const GateFigures f = GateFigures::from_toml(gate.figures);
    std::vector<Row> rows{{"gate", "verdict", "", f.summary}};
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

void check_report_format(const std::string &format) {
    if (format != "text" && format != "markdown" && format != "csv" && format != "json")
        fail(ExitCode::usage, "--format '" + format + "': expected text, markdown, csv or json");
}

std::string pull_request_report(const RunDirectory &run, const std::string &format) {
    check_report_format(format);
    const CheckpointRead gate = read_checkpoint(checkpoint_path(run, Stage::gate));
    if (!gate.exists)
        if (auto stop = last_stop(run)) fail(ExitCode::precondition, "no gate verdict: the run " + stop_summary(*stop) + "; " + stop->next_step);
    if (!gate.checkpoint)
        fail(ExitCode::precondition, std::string("the gate checkpoint is ") +
                                         (gate.exists ? "not trusted: " + gate.problem : "missing") +
                                         "; run 'sage2tp gate' first");
    const CheckpointRead time = read_checkpoint(checkpoint_path(run, Stage::time));
    std::vector<Row> rows = time_rows(time.checkpoint);
    for (Row &row : gate_rows(*gate.checkpoint)) rows.push_back(std::move(row));

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
