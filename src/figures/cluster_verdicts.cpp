#include "figures/cluster_verdicts.h"

#include "figures/figure_fields.h"
#include "formats/toml_schema.h"
#include "support/errors.h"
#include "pipeline/run_directory.h"

#include <algorithm>
#include <cctype>

namespace s2tp {
namespace {

std::string lowercase(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

std::string times(int count) { return std::to_string(count) + (count == 1 ? " time" : " times"); }

// The verdict of a task whose process finished every stage it reached.
void judge_finished_stages(const ClusterTaskResult &result, ClusterTaskVerdict &verdict) {
    for (const ClusterStageOutcome &outcome : result.stages) {
        if (outcome.exit_code == 0) continue;
        verdict.detail = outcome.message;
        if (outcome.stage == "gate" && outcome.exit_code == 1)
            verdict.verdict = "FAIL";
        else if (outcome.exit_code == 3)
            verdict.verdict = "no GPU or tool (exit 3) at " + outcome.stage;
        else
            verdict.verdict = "failed at " + outcome.stage + " (exit " + std::to_string(outcome.exit_code) + ")";
        return;
    }
    const bool gate_ran = !result.stages.empty() && result.stages.back().stage == "gate";
    verdict.verdict = gate_ran ? "PASS" : "incomplete";
    if (!gate_ran) verdict.detail = "the task ended before the gate";
}

}  // namespace

bool slurm_state_final(const std::string &state) {
    static const std::vector<std::string> final_states{"COMPLETED", "FAILED",  "CANCELLED",     "TIMEOUT",
                                                       "NODE_FAIL", "BOOT_FAIL", "OUT_OF_MEMORY", "DEADLINE",
                                                       "PREEMPTED", "REVOKED"};
    return std::find(final_states.begin(), final_states.end(), state) != final_states.end();
}

std::filesystem::path cluster_verdicts_path(const RunDirectory &run) { return run.reports() / "cluster.toml"; }

std::optional<ClusterVerdicts> read_cluster_verdicts(const RunDirectory &run) {
    const std::filesystem::path file = cluster_verdicts_path(run);
    if (!std::filesystem::exists(file)) return std::nullopt;
    return ClusterVerdicts::from_toml(parse_toml_file(file.string()), file.string());
}

ClusterTaskVerdict judge_cluster_task(const ClusterTaskIdentity &identity, const std::optional<ClusterSlurmState> &slurm,
                                      const std::optional<ClusterTaskResult> &result) {
    ClusterTaskVerdict verdict;
    verdict.task = identity.task;
    verdict.arch = identity.arch;
    verdict.gpu_kind = identity.gpu_kind;
    verdict.repeat = identity.repeat;
    verdict.run = identity.run;
    verdict.slurm_state = slurm ? slurm->state : "unknown";
    verdict.node = result && !result->node.empty() ? result->node : slurm ? slurm->node : "";
    const std::string state = slurm ? slurm->state : "";
    const std::string last_stage = result && !result->stages.empty() ? result->stages.back().stage : "";

    const bool final = !slurm || slurm_state_final(state);
    if (!final) {
        // PENDING, RUNNING, REQUEUED, SUSPENDED, ...: not over yet; Slurm's reason says why it waits.
        verdict.verdict = lowercase(state);
        verdict.detail = slurm->reason;
    } else if (state == "CANCELLED") {
        verdict.verdict = "cancelled";
        verdict.detail = !result ? "before it started" : "during " + (last_stage.empty() ? "its start" : last_stage);
    } else if (!result) {
        verdict.verdict = slurm ? lowercase(state) : "lost";
        verdict.detail = slurm ? "the task left no result" : "Slurm no longer knows the task and it left no result";
    } else if (!result->finished) {
        verdict.verdict = slurm ? lowercase(state) : "stopped";
        verdict.detail = "stopped during " + (last_stage.empty() ? "its start" : last_stage);
    } else {
        judge_finished_stages(*result, verdict);
        // The process said pass but Slurm did not complete the job (killed after its last write).
        if (verdict.verdict == "PASS" && slurm && state != "COMPLETED") verdict.verdict = lowercase(state);
    }
    if (result && result->restart_count > 0) verdict.verdict += ", requeued " + times(result->restart_count);
    verdict.passed = verdict.verdict == "PASS";
    return verdict;
}

bool ClusterVerdicts::all_passed() const {
    return !tasks.empty() && std::all_of(tasks.begin(), tasks.end(), [](const ClusterTaskVerdict &t) { return t.passed; });
}

toml::table ClusterVerdicts::to_toml() const {
    toml::array rows;
    for (const ClusterTaskVerdict &t : tasks) {
        toml::table row{{"task", t.task},       {"arch", t.arch},       {"gpu_kind", t.gpu_kind},
                        {"repeat", t.repeat},   {"run", t.run},         {"slurm_state", t.slurm_state},
                        {"verdict", t.verdict}, {"passed", t.passed}};
        figure_fields::put(row, "node", t.node);
        figure_fields::put(row, "detail", t.detail);
        rows.push_back(row);
    }
    return toml::table{{"job", job}, {"submission", submission}, {"collected_utc", collected_utc}, {"task", rows}};
}

ClusterVerdicts ClusterVerdicts::from_toml(const toml::table &table, const std::string &where) {
    auto required = [&](const toml::table &t, const char *key, const std::string &row) {
        if (!t[key]) fail(ExitCode::usage, where + ": " + row + "lacks '" + key + "'");
    };
    ClusterVerdicts verdicts;
    for (const char *key : {"job", "submission"}) required(table, key, "");
    verdicts.job = figure_fields::string_of(table, "job");
    verdicts.submission = figure_fields::string_of(table, "submission");
    verdicts.collected_utc = figure_fields::string_of(table, "collected_utc");
    if (const toml::array *rows = table["task"].as_array())
        for (const toml::node &node : *rows) {
            const toml::table *row = node.as_table();
            if (!row) fail(ExitCode::usage, where + ": [[task]] holds something other than a table");
            const std::string name = "[[task]] " + std::to_string(verdicts.tasks.size() + 1) + " ";
            for (const char *key : {"task", "arch", "gpu_kind", "slurm_state", "verdict", "passed"})
                required(*row, key, name);
            ClusterTaskVerdict t;
            t.task = static_cast<int>((*row)["task"].value_or(std::int64_t{-1}));
            t.arch = figure_fields::string_of(*row, "arch");
            t.gpu_kind = figure_fields::string_of(*row, "gpu_kind");
            t.repeat = static_cast<int>((*row)["repeat"].value_or(std::int64_t{1}));
            t.run = figure_fields::string_of(*row, "run");
            t.node = figure_fields::string_of(*row, "node");
            t.slurm_state = figure_fields::string_of(*row, "slurm_state");
            t.verdict = figure_fields::string_of(*row, "verdict");
            t.detail = figure_fields::string_of(*row, "detail");
            t.passed = (*row)["passed"].value_or(false);
            verdicts.tasks.push_back(std::move(t));
        }
    return verdicts;
}

toml::table cluster_task_result_to_toml(const ClusterTaskResult &result) {
    toml::array stages;
    for (const ClusterStageOutcome &s : result.stages)
        stages.push_back(toml::table{{"stage", s.stage}, {"exit_code", s.exit_code}, {"message", s.message}});
    toml::table table{{"restart_count", result.restart_count}, {"finished", result.finished}, {"stage", stages}};
    figure_fields::put(table, "node", result.node);
    return table;
}

ClusterTaskResult cluster_task_result_from_toml(const toml::table &table) {
    ClusterTaskResult result;
    result.node = figure_fields::string_of(table, "node");
    result.restart_count = static_cast<int>(table["restart_count"].value_or(std::int64_t{0}));
    result.finished = table["finished"].value_or(false);
    if (const toml::array *stages = table["stage"].as_array())
        for (const toml::node &node : *stages)
            if (const toml::table *s = node.as_table())
                result.stages.push_back({figure_fields::string_of(*s, "stage"),
                                         static_cast<int>((*s)["exit_code"].value_or(std::int64_t{-1})),
                                         figure_fields::string_of(*s, "message")});
    return result;
}

}  // namespace s2tp
