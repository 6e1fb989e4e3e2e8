#include "views/run_comparison.h"

#include "views/cluster_table.h"

#include "formats/svg_plot.h"
#include "model/ab_timing.h"
#include "pipeline/stage_pipeline.h"
#include "figures/gate_figures.h"
#include "figures/set_time_figures.h"
#include "figures/time_figures.h"
#include "support/errors.h"
#include "support/number_format.h"
#include "support/table_printer.h"

#include <map>
#include <set>
#include <system_error>

namespace s2tp {

namespace fs = std::filesystem;

namespace {

// What a stage's checkpoint can give compare: inspect_run has already decided whether it is intact and
// fresh; a stale or untrusted one is no more evidence than a missing one.
CheckpointUse checkpoint_use(const StageState &state) {
    if (!state.read.exists) return {"missing", ""};
    if (!state.read.checkpoint) return {"untrusted", state.stale_reason};
    if (!state.fresh) return {"stale", state.stale_reason};
    const Checkpoint &c = *state.read.checkpoint;
    if (c.status == StageStatus::passed) return {"ok", ""};
    return {to_string(c.status), c.reasons.empty() ? "" : c.reasons.front()};
}

std::optional<RatioInterval> interval_of(const std::optional<RatioFigures> &ratio) {
    return ratio ? ratio->interval() : std::nullopt;
}

ComparedCandidate &candidate_named(ComparedRun &run, const std::string &name, const std::string &shape = "",
                                   const std::string &gpu = "") {
    for (ComparedCandidate &c : run.candidates)
        if (c.name == name && c.shape == shape && c.gpu == gpu) return c;
    ComparedCandidate added;
    added.name = name;
    added.shape = shape;
    added.gpu = gpu;
    run.candidates.push_back(std::move(added));
    return run.candidates.back();
}

// The shape of a set's combined row.
constexpr const char *combined_row = "geomean";

// A set's time figures: per candidate one row per shape, then the combined (geometric-mean) row.
void read_set_time_figures(const toml::table &figures, ComparedRun &run) {
    const SetTimeFigures f = SetTimeFigures::from_toml(figures);
    run.workload = f.workload_set;
    run.arch = f.arch;
    run.gpu = f.device_name;
    for (const SetCandidateFigures &combined : f.candidates) {
        for (const ShapeTimeFigures &s : f.shapes) {
            ComparedCandidate &row = candidate_named(run, combined.name, s.name);
            if (const CandidateTimeFigures *c = s.figures.candidate(combined.name)) {
                if (c->timing) row.p50_ms = c->timing->p50;
                row.ratio = interval_of(c->ratio);
            }
        }
        candidate_named(run, combined.name, combined_row).ratio = interval_of(combined.geomean);
    }
}

// The time checkpoint's figures that compare shows, read only through TimeFigures.
void read_time_figures(const toml::table &figures, ComparedRun &run) {
    if (SetTimeFigures::holds_set(figures)) return read_set_time_figures(figures, run);
    const TimeFigures f = TimeFigures::from_toml(figures);
    run.workload = f.workload;
    run.arch = f.arch;
    run.gpu = f.device_name;
    run.sm_clock_min_mhz = f.sm_clock_min_mhz;
    run.sm_clock_median_mhz = f.sm_clock_median_mhz;
    run.sm_clock_max_mhz = f.sm_clock_max_mhz;
    if (f.baseline) run.baseline_p50_ms = f.baseline->p50;
    run.aa = interval_of(f.aa);
    if (f.target_half_width) run.aa_tolerance = aa_tolerance(*f.target_half_width, run.baseline_p50_ms.value_or(0.0));
    if (shows_gpu_table(f.gpus)) run.gpu_lines = gpu_table_lines(f.gpus);
    if (const toml::array *gpus = figures["gpus"].as_array()) run.gpus = *gpus;
    if (!f.gpu_results.empty()) {
        // GPUs of several models: a row per candidate and GPU, never one across them.
        for (const CandidateTimeFigures &c : f.candidates)
            for (const GpuTimeResult &g : f.gpu_results) {
                ComparedCandidate &row = candidate_named(run, c.name, "", g.label());
                if (g.baseline) row.gpu_baseline_p50_ms = g.baseline->p50;
                row.gpu_aa = interval_of(g.aa);
                if (const GpuCandidateTiming *own = g.candidate(c.name)) {
                    if (own->timing) row.p50_ms = own->timing->p50;
                    row.ratio = interval_of(own->ratio);
                }
            }
        return;
    }
    for (const CandidateTimeFigures &c : f.candidates) {
        ComparedCandidate &candidate = candidate_named(run, c.name);
        if (c.timing) candidate.p50_ms = c.timing->p50;
        candidate.ratio = interval_of(c.ratio);
    }
}

// The gate checkpoint's verdicts, read only through GateFigures: one per candidate, and the overall line.
void read_gate_verdicts(const toml::table &figures, ComparedRun &run) {
    const GateFigures gate = GateFigures::from_toml(figures);
    run.gate_summary = gate.summary;
    for (const auto &[name, candidate] : gate.candidates) {
        const char *verdict = candidate.result.passed ? "PASS" : "FAIL";
        bool shown = false;
        // Every row of the candidate (over a set, one per shape and the combined one) carries its verdict.
        for (ComparedCandidate &c : run.candidates)
            if (c.name == name) {
                c.verdict = verdict;
                shown = true;
            }
        if (!shown) candidate_named(run, name).verdict = verdict;
    }
}

std::string or_dash(const std::optional<std::string> &text) { return text && !text->empty() ? *text : missing_figure; }

std::string interval_cell(const std::optional<RatioInterval> &ci) {
    if (!ci) return missing_figure;
    return interval_text(*ci);
}

// The workload column: over a set, the set's name and the row's shape ("wan21-14b t2v-720p", "wan21-14b geomean").
std::string workload_cell(const ComparedRun &run, const ComparedCandidate *c) {
    const std::string set_shape = c && !c->shape.empty() ? " " + c->shape : "";
    return run.workload ? *run.workload + set_shape : missing_figure;
}

// The gpu, baseline p50 and A/A columns: the row's GPU's own on GPUs of several models, else the run's.
std::string gpu_cell(const ComparedRun &run, const ComparedCandidate *c) {
    return c && !c->gpu.empty() ? c->gpu : run.gpu.value_or("");
}
std::optional<double> baseline_p50_of(const ComparedRun &run, const ComparedCandidate *c) {
    return c && !c->gpu.empty() ? c->gpu_baseline_p50_ms : run.baseline_p50_ms;
}
std::optional<RatioInterval> aa_of(const ComparedRun &run, const ComparedCandidate *c) {
    return c && !c->gpu.empty() ? c->gpu_aa : run.aa;
}

std::string clock_text(const ComparedRun &run) {
    if (!run.sm_clock_median_mhz) return missing_figure;
    std::string text = fixed(*run.sm_clock_median_mhz, 0);
    if (run.sm_clock_min_mhz && run.sm_clock_max_mhz)
        text += " (" + fixed(*run.sm_clock_min_mhz, 0) + "-" + fixed(*run.sm_clock_max_mhz, 0) + ")";
    return text;
}

std::string state_text(const CheckpointUse &use) { return use.note.empty() ? use.state : use.state + ": " + use.note; }

// The text and markdown columns: each interval in one cell, its confidence level inside it; with several
// runs, the change of each later run's candidates against the first run's.
std::vector<TableColumn> table_columns(bool with_change) {
    std::vector<TableColumn> columns{
        {"run"},    {"candidate"},       {"workload"},         {"arch"},  {"gpu"}, {"sm_mhz"},
        {"baseline_p50_ms"}, {"candidate_p50_ms"}, {"ratio"}, {"aa"},    {"time"}, {"gate"}};
    if (with_change) columns.insert(columns.begin() + 9, TableColumn{"change"});
    return columns;
}

// The CSV columns: each number in a column of its own, so that a spreadsheet can sort and plot them.
std::vector<TableColumn> csv_columns(bool with_change) {
    std::vector<TableColumn> columns{
        {"run"},          {"run_dir"},          {"candidate"},        {"workload"},         {"arch"},
        {"gpu"},          {"sm_clock_min_mhz"}, {"sm_clock_median_mhz"}, {"sm_clock_max_mhz"}, {"baseline_p50_ms"},
        {"candidate_p50_ms"}, {"ratio_median"}, {"ratio_ci_low"},     {"ratio_ci_high"},    {"aa_median"},
        {"aa_ci_low"},    {"aa_ci_high"},       {"time"},             {"gate"}};
    if (with_change)
        for (const char *name : {"change_class", "change_ci_high", "change_ci_low", "change_median"})
            columns.insert(columns.begin() + 14, TableColumn{name});
    return columns;
}

bool with_change(const std::vector<ComparedRun> &runs) { return runs.size() > 1; }

// The change cell: "base" on the first run's rows, "-3.1% FAST" or "UNKNOWN" on a later run's.
std::string change_cell(const ComparedRun &first, const ComparedRun &run, const ComparedCandidate *c) {
    if (&run == &first) return "base";
    if (!c || c->change_class.empty()) return missing_figure;
    return c->change ? signed_percent(c->change->median - 1, 1) + " " + c->change_class : c->change_class;
}

// Calls row(run, candidate) once per candidate of each run, and row(run, nullptr) once for a run that
// names none, so that every run has a row.
template <typename Row>
void for_each_row(const std::vector<ComparedRun> &runs, Row row) {
    for (const ComparedRun &run : runs) {
        if (run.candidates.empty()) row(run, nullptr);
        for (const ComparedCandidate &c : run.candidates) row(run, &c);
    }
}

// The gate cell: the candidate's verdict from a usable gate checkpoint, else `state`, the checkpoint's.
std::string gate_cell(const ComparedRun &run, const ComparedCandidate *c, const std::string &state) {
    return run.gate.usable() && c && !c->verdict.empty() ? c->verdict : state;
}

// The text and markdown rows: the time and gate columns hold the state alone, and the notes follow the
// table (csv carries them in its cells instead, so that every row stands alone).
TextTable comparison_rows(const std::vector<ComparedRun> &runs) {
    TextTable table{table_columns(with_change(runs)), {}};
    for_each_row(runs, [&](const ComparedRun &run, const ComparedCandidate *c) {
        std::vector<std::string> row{run.id, c ? c->name : missing_figure, workload_cell(run, c), or_dash(run.arch),
                                     or_dash(gpu_cell(run, c)), clock_text(run), fixed_or_missing(baseline_p50_of(run, c), 3),
                                     c ? fixed_or_missing(c->p50_ms, 3) : missing_figure, c ? interval_cell(c->ratio) : missing_figure,
                                     interval_cell(aa_of(run, c)), run.time.state,
                                     gate_cell(run, c, run.gate.state)};
        if (with_change(runs)) row.insert(row.begin() + 9, change_cell(runs.front(), run, c));
        table.rows.push_back(std::move(row));
    });
    return table;
}

std::vector<std::string> table_notes(const std::vector<ComparedRun> &runs) {
    std::vector<std::string> notes;
    for (const ComparedRun &run : runs) {
        if (!run.time.note.empty()) notes.push_back(run.id + ": time " + state_text(run.time));
        // A gate that did not pass says why in its overall line, which names each failing candidate.
        if (run.gate.usable() && run.gate.state != "ok" && !run.gate_summary.empty())
            notes.push_back(run.id + ": gate " + run.gate_summary);
        else if (!run.gate.note.empty())
            notes.push_back(run.id + ": gate " + state_text(run.gate));
        if (!run.gpu_lines.empty()) notes.push_back(run.id + ": time per GPU:");
        for (const std::string &line : run.gpu_lines) notes.push_back(run.id + ":   " + line);
    }
    return notes;
}

std::string text_table(const std::vector<ComparedRun> &runs) {
    std::string out = table_text(comparison_rows(runs), TextLayout{"", 2, true});
    for (const std::string &note : table_notes(runs)) out += "  " + note + "\n";
    return out;
}

std::string markdown_table(const std::vector<ComparedRun> &runs) {
    std::string out = "### sage2tp compare: " + std::to_string(runs.size()) + (runs.size() == 1 ? " run" : " runs") +
                      "\n\n" + table_markdown(comparison_rows(runs));
    const std::vector<std::string> notes = table_notes(runs);
    if (!notes.empty()) out += "\n";
    for (const std::string &note : notes) out += "- " + markdown_cell(note) + "\n";
    return out;
}

std::string csv_table(const std::vector<ComparedRun> &runs) {
    TextTable table{csv_columns(with_change(runs)), {}};
    const auto number = [](const std::optional<double> &v) { return v ? shortest(*v) : std::string(); };
    const auto interval = [&](const std::optional<RatioInterval> &ci) -> std::vector<std::string> {
        if (!ci) return {"", "", ""};
        return {shortest(ci->median), shortest(ci->lo), shortest(ci->hi)};
    };
    for_each_row(runs, [&](const ComparedRun &run, const ComparedCandidate *c) {
        std::vector<std::string> row{run.id,
                                     run.root.string(),
                                     c ? c->name : "",
                                     run.workload ? workload_cell(run, c) : "",
                                     run.arch.value_or(""),
                                     gpu_cell(run, c),
                                     number(run.sm_clock_min_mhz),
                                     number(run.sm_clock_median_mhz),
                                     number(run.sm_clock_max_mhz),
                                     number(baseline_p50_of(run, c)),
                                     c ? number(c->p50_ms) : ""};
        for (const std::optional<RatioInterval> &ci : {c ? c->ratio : std::nullopt, aa_of(run, c)})
            for (std::string &cell : interval(ci)) row.push_back(std::move(cell));
        if (with_change(runs)) {
            std::vector<std::string> change = interval(c ? c->change : std::nullopt);
            change.push_back(c ? c->change_class : "");
            row.insert(row.begin() + 14, change.begin(), change.end());
        }
        row.push_back(state_text(run.time));
        row.push_back(gate_cell(run, c, state_text(run.gate)));
        table.rows.push_back(std::move(row));
    });
    return table_csv(table);
}

// The interval's median and ends, keyed as the time checkpoint's ratio tables (RatioFigures).
toml::table interval_table(const RatioInterval &ci) {
    RatioFigures ends;
    ends.median = ci.median;
    ends.ci_low = ci.lo;
    ends.ci_high = ci.hi;
    return ends.to_toml();
}

// The run's SM clock as the time checkpoint keys it ([sm_clock_mhz] of TimeFigures); nothing when none is recorded.
toml::table clock_figures(const ComparedRun &run) {
    TimeFigures clock;
    clock.sm_clock_min_mhz = run.sm_clock_min_mhz;
    clock.sm_clock_median_mhz = run.sm_clock_median_mhz;
    clock.sm_clock_max_mhz = run.sm_clock_max_mhz;
    return clock.to_toml();
}

// Why a run has no time checkpoint: its recorded stop, else the first stage before time that failed or
// has not run; "" when every stage before time stands.
std::string where_stopped(const RunDirectory &run, const std::vector<StageState> &states) {
    if (auto stop = last_stop(run)) return stop_summary(*stop);
    for (const StageState &state : states) {
        if (state.stage == Stage::time) break;
        const Checkpoint *c = state.read.checkpoint ? &*state.read.checkpoint : nullptr;
        if (!c) return stage_name(state.stage) + (state.read.exists ? " untrusted" : " not run");
        if (c->status == StageStatus::failed)
            return stage_name(state.stage) + " failed" + (c->reasons.empty() ? "" : ": " + c->reasons.front());
    }
    return "";
}

}  // namespace

std::vector<fs::path> select_compared_runs(const std::vector<std::string> &words, const RunSelection &selection) {
    std::vector<RunSelection> chosen;
    if (words.empty()) chosen.push_back(selection);
    for (const std::string &word : words) {
        RunSelection one;
        one.runs_root = selection.runs_root;
        std::error_code ec;
        if (!word.empty() && fs::is_directory(word, ec)) {
            // <root>/latest (as a shell glob over the runs root gives it) is a link to a run, not a run.
            one.run_dir = fs::is_symlink(word, ec) ? fs::canonical(word, ec) : fs::path(word);
        } else {
            try {
                check_run_id(word);
            } catch (const Error &e) {
                fail(ExitCode::usage, "'" + word + "' is neither a run directory nor a run id (" + e.what() + ")");
            }
            if (!fs::is_directory(selection.runs_root / word, ec))
                fail(ExitCode::precondition, "no run '" + word + "': not a directory, and no run of that id under '" +
                                                 selection.runs_root.string() + "'");
            one.run_id = word;
        }
        chosen.push_back(one);
    }
    std::vector<fs::path> roots;
    for (const RunSelection &one : chosen) {
        const fs::path root = require_existing_run(one);
        std::error_code ec;
        if (!fs::is_regular_file(root / "experiment.toml", ec))
            fail(ExitCode::precondition, "'" + root.string() + "' is not a run directory: it has no experiment.toml");
        // A run named twice (by its id and through latest) is one run, shown once.
        bool seen = false;
        for (const fs::path &earlier : roots) seen = seen || fs::equivalent(earlier, root, ec);
        if (!seen) roots.push_back(root);
    }
    return roots;
}

ComparedRun compare_run(const fs::path &root) {
    const RunDirectory directory(root);
    const std::vector<StageState> states = inspect_run(directory);
    const StageState &time = states[static_cast<std::size_t>(Stage::time)];
    const StageState &gate = states[static_cast<std::size_t>(Stage::gate)];
    ComparedRun run;
    run.root = fs::absolute(root).lexically_normal();
    if (run.root.filename().empty()) run.root = run.root.parent_path();  // "runs/tp-1/" names tp-1
    run.id = run.root.filename().string();
    run.time = checkpoint_use(time);
    run.gate = checkpoint_use(gate);
    // A run that stopped before these stages says where and why, not only that their checkpoints are missing.
    const std::string stopped = where_stopped(directory, states);
    for (CheckpointUse *use : {&run.time, &run.gate})
        if (use->state == "missing") use->note = stopped;
    if (run.time.usable()) read_time_figures(time.read.checkpoint->figures, run);
    if (run.gate.usable()) read_gate_verdicts(gate.read.checkpoint->figures, run);
    run.cluster = read_cluster_verdicts(directory);
    return run;
}

std::vector<ComparedRun> compare_runs(const std::vector<fs::path> &roots) {
    std::vector<ComparedRun> runs;
    for (const fs::path &root : roots) runs.push_back(compare_run(root));
    // The roots are distinct directories, so some number of trailing components tells them apart.
    for (std::size_t parts = 2;; ++parts) {
        std::map<std::string, int> named;
        for (const ComparedRun &run : runs) ++named[run.id];
        bool lengthened = false;
        for (ComparedRun &run : runs) {
            if (named[run.id] < 2) continue;
            std::vector<std::string> names;
            for (const fs::path &part : run.root) names.push_back(part.string());
            std::string id;
            for (std::size_t i = names.size() - std::min(parts, names.size()); i < names.size(); ++i)
                id += (id.empty() || id == "/" ? "" : "/") + names[i];
            lengthened = lengthened || id != run.id;
            run.id = id;
        }
        if (!lengthened) return runs;
    }
}

std::string comparison_table(const std::vector<ComparedRun> &runs, const std::string &format) {
    if (format == "csv") return csv_table(runs);
    std::string table;
    if (format == "text") table = text_table(runs);
    else if (format == "markdown") table = markdown_table(runs);
    else fail(ExitCode::usage, "--format '" + format + "': expected text, markdown or csv");
    for (const ComparedRun &run : runs)
        if (run.cluster) table += "\n" + run.id + ": " + cluster_table(*run.cluster, format);
    return table;
}

toml::table comparison_json(const std::vector<ComparedRun> &runs) {
    toml::array entries;
    for (const ComparedRun &run : runs) {
        toml::table entry{{"id", run.id},
                          {"run_dir", run.root.string()},
                          {"time", toml::table{{"state", run.time.state}, {"note", run.time.note}}},
                          {"gate", toml::table{{"state", run.gate.state}, {"note", run.gate.note}}}};
        if (!run.gate_summary.empty()) entry["gate"].as_table()->insert("summary", run.gate_summary);
        if (run.workload) entry.insert("workload", *run.workload);
        if (run.arch) entry.insert("arch", *run.arch);
        if (run.gpu) entry.insert("gpu", *run.gpu);
        for (const auto &[key, figure] : clock_figures(run)) entry.insert(key, figure);
        if (run.baseline_p50_ms) entry.insert("baseline_p50_ms", *run.baseline_p50_ms);
        if (run.aa) entry.insert("aa", interval_table(*run.aa));
        toml::array candidates;
        for (const ComparedCandidate &c : run.candidates) {
            toml::table candidate{{"name", c.name}};
            if (!c.shape.empty()) candidate.insert("shape", c.shape);
            if (!c.gpu.empty()) candidate.insert("gpu", c.gpu);
            if (c.gpu_baseline_p50_ms) candidate.insert("baseline_p50_ms", *c.gpu_baseline_p50_ms);
            if (c.gpu_aa) candidate.insert("aa", interval_table(*c.gpu_aa));
            if (c.p50_ms) candidate.insert("p50_ms", *c.p50_ms);
            if (c.ratio) candidate.insert("ratio", interval_table(*c.ratio));
            if (!c.verdict.empty()) candidate.insert("verdict", c.verdict);
            if (c.change) candidate.insert("change", interval_table(*c.change));
            if (!c.change_class.empty()) candidate.insert("change_class", c.change_class);
            candidates.push_back(candidate);
        }
        entry.insert("candidates", candidates);
        if (!run.gpus.empty()) entry.insert("gpus", run.gpus);
        if (run.cluster) entry.insert("cluster", cluster_json(*run.cluster));
        entries.push_back(entry);
    }
    return toml::table{{"runs", entries}};
}

std::string comparison_svg(const std::vector<ComparedRun> &runs) {
    IntervalPlot plot;
    std::size_t candidates = 0;
    std::set<std::string> workloads, gpus;
    for (const ComparedRun &run : runs) {
        if (run.workload) workloads.insert(*run.workload);
        if (run.gpu) gpus.insert(*run.gpu);
    }
    for_each_row(runs, [&](const ComparedRun &run, const ComparedCandidate *c) {
        const std::string gate = "gate " + gate_cell(run, c, run.gate.state);
        IntervalRow row{c ? c->name : missing_figure,
                        run.id + (c && !c->shape.empty() ? " " + c->shape : "") + (c && !c->gpu.empty() ? " " + c->gpu : ""),
                        c ? c->ratio : std::nullopt, ""};
        const std::optional<RatioInterval> aa = aa_of(run, c);
        if (row.interval)
            row.note = (aa ? "A/A " + fixed(aa->median, 4) + (aa->reaches(1.0, run.aa_tolerance) ? " ok" : " excludes 1")
                           : std::string("A/A -")) +
                       ", " + gate;
        else
            row.note = "no interval: time " + run.time.state + ", " + gate;
        // A set's shape rows, and the GPUs' rows of several models, are one candidate's.
        if (c && (c->shape.empty() || c->shape == combined_row) && (c->gpu.empty() || c->gpu == run.candidates.front().gpu))
            ++candidates;
        plot.rows.push_back(row);
    });
    const auto joined = [](const std::set<std::string> &names) {
        std::string text;
        for (const std::string &name : names) text += (text.empty() ? "" : ", ") + name;
        return text.empty() ? std::string(missing_figure) : text;
    };
    plot.title = "sage2tp compare: " + std::to_string(runs.size()) + (runs.size() == 1 ? " run, " : " runs, ") +
                 std::to_string(candidates) + (candidates == 1 ? " candidate" : " candidates");
    plot.subtitle = "workload " + joined(workloads) + "; GPU " + joined(gpus);
    return render_interval_plot_svg(plot);
}

}  // namespace s2tp
