#include "figures/ncu_metrics.h"
#include "support/table_printer.h"
#include "support/number_format.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

namespace s2tp {
namespace {

std::string format_value(const std::optional<double> &value) {
    if (!value) return missing_figure;
    // Tiny rates keep four significant digits (1.234e-05); the rest a fixed point, none from 1000 up.
    const double magnitude = std::fabs(*value);
    if (magnitude != 0 && magnitude < 1e-3) {
        std::ostringstream s;
        s << std::setprecision(4) << *value;
        return s.str();
    }
    return fixed(*value, magnitude >= 1000 ? 0 : 3);
}

std::string format_change(const std::optional<double> &change) {
    if (!change) return "";
    return signed_percent(*change, 1);
}

}  // namespace

std::optional<double> NcuMetricFigure::relative_change() const {
    if (!baseline || !candidate || *baseline == 0) return std::nullopt;
    return (*candidate - *baseline) / std::fabs(*baseline);
}

std::string ncu_metric_label(const std::string &name) {
    static const std::map<std::string, std::string> labels = {
        {"gpu__time_duration.sum", "duration"},
        {"sm__cycles_active.avg", "SM active cycles"},
        {"sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occupancy"},
        {"smsp__warps_active.avg.per_cycle_active", "warps per scheduler"},
        {"smsp__warps_eligible.avg.per_cycle_active", "eligible warps per scheduler"},
        {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "tensor pipe active"},
        {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "FMA pipe active"},
        {"sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active", "ALU pipe active"},
        {"sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", "XU pipe (MUFU)"},
        {"smsp__issue_active.avg.pct_of_peak_sustained_active", "issue slots busy"},
        {"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "stall: barrier"},
        {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "stall: long scoreboard"},
        {"smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio", "stall: short scoreboard"},
        {"smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio", "stall: math pipe throttle"},
        {"smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio", "stall: not selected"},
        {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "shared-memory bank conflicts"},
        {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput"},
        {"lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 throughput"},
        {"lts__t_sector_hit_rate.pct", "L2 hit rate"},
    };
    const auto found = labels.find(name);
    return found == labels.end() ? "" : found->second;
}

NcuComparison compare_ncu_metrics(const std::vector<std::string> &metrics, const NcuRawPage &baseline,
                                  std::size_t baseline_row, const NcuRawPage &candidate, std::size_t candidate_row) {
    NcuComparison comparison;
    for (const std::string &name : metrics) {
        NcuMetricFigure figure;
        figure.name = name;
        figure.unit = baseline.column(name) ? baseline.unit(name) : candidate.unit(name);
        figure.baseline = baseline.number(baseline_row, name);
        figure.candidate = candidate.number(candidate_row, name);
        comparison.metrics.push_back(figure);
    }
    std::vector<const NcuMetricFigure *> changed;
    for (const NcuMetricFigure &figure : comparison.metrics)
        if (figure.relative_change() && *figure.relative_change() != 0) changed.push_back(&figure);
    // Stable: of equal changes (two names of one counter), the one listed first is kept first.
    std::stable_sort(changed.begin(), changed.end(), [](const NcuMetricFigure *a, const NcuMetricFigure *b) {
        return std::fabs(*a->relative_change()) > std::fabs(*b->relative_change());
    });
    for (std::size_t i = 0; i < changed.size() && i < 3; ++i) comparison.largest_changes.push_back(changed[i]->name);
    return comparison;
}

toml::table NcuComparison::to_toml() const {
    toml::array list;
    for (const NcuMetricFigure &figure : metrics) {
        toml::table entry{{"name", figure.name}, {"unit", figure.unit}};
        if (figure.baseline) entry.insert("baseline", *figure.baseline);
        if (figure.candidate) entry.insert("candidate", *figure.candidate);
        if (auto change = figure.relative_change()) entry.insert("relative_change", *change);
        list.push_back(entry);
    }
    toml::array largest;
    for (const std::string &name : largest_changes) largest.push_back(name);
    return toml::table{{"metric", list}, {"largest_changes", largest}};
}

NcuComparison NcuComparison::from_toml(const toml::table &table) {
    NcuComparison comparison;
    if (const toml::array *list = table["metric"].as_array())
        for (const toml::node &node : *list) {
            const toml::table *entry = node.as_table();
            if (!entry) continue;
            NcuMetricFigure figure;
            figure.name = (*entry)["name"].value_or(std::string());
            figure.unit = (*entry)["unit"].value_or(std::string());
            figure.baseline = (*entry)["baseline"].value<double>();
            figure.candidate = (*entry)["candidate"].value<double>();
            comparison.metrics.push_back(figure);
        }
    if (const toml::array *largest = table["largest_changes"].as_array())
        for (const toml::node &node : *largest)
            if (auto name = node.value<std::string>()) comparison.largest_changes.push_back(*name);
    return comparison;
}

namespace {

std::string shown_name(const NcuMetricFigure &figure) {
    const std::string label = ncu_metric_label(figure.name);
    return label.empty() ? figure.name : label;
}

}  // namespace

std::string NcuComparison::largest_changes_text() const {
    std::string text;
    for (const std::string &name : largest_changes) {
        const auto found =
            std::find_if(metrics.begin(), metrics.end(), [&](const NcuMetricFigure &f) { return f.name == name; });
        if (found == metrics.end()) continue;
        text += (text.empty() ? "" : "; ") + shown_name(*found) + " " + format_change(found->relative_change()) +
                " (" + format_value(found->baseline) + " -> " + format_value(found->candidate) +
                (found->unit.empty() ? "" : " " + found->unit) + ")";
    }
    return text;
}

std::string NcuComparison::table_text() const {
    TextTable table{{{"METRIC"}, {"UNIT"}, {"BASELINE", Align::right}, {"CANDIDATE", Align::right}, {"DELTA", Align::right}},
                    {}};
    for (const NcuMetricFigure &figure : metrics)
        table.rows.push_back({shown_name(figure), figure.unit, format_value(figure.baseline), format_value(figure.candidate),
                              format_change(figure.relative_change())});
    std::ostringstream out;
    out << s2tp::table_text(table, TextLayout{"  "});
    const std::string changes = largest_changes_text();
    if (!changes.empty()) out << "  largest relative changes: " << changes << "\n";
    return out.str();
}

}  // namespace s2tp
