#include "views/cluster_table.h"

#include "support/errors.h"
#include "views/pull_request_report.h"

#include <iomanip>
#include <sstream>
#include <vector>

namespace s2tp {
namespace {

std::vector<std::string> cells(const ClusterTaskVerdict &t) {
    return {t.arch, t.gpu_kind, std::to_string(t.repeat), std::to_string(t.task), t.node.empty() ? "-" : t.node,
            t.slurm_state, t.verdict, t.detail};
}

const std::vector<std::string> kHeadings{"arch", "gpu", "repeat", "task", "node", "slurm", "verdict", "detail"};

}  // namespace

std::string cluster_table(const ClusterVerdicts &verdicts, const std::string &format) {
    std::ostringstream out;
    if (format == "csv") {
        for (std::size_t i = 0; i < kHeadings.size(); ++i) out << (i ? "," : "") << kHeadings[i];
        out << "\n";
        for (const ClusterTaskVerdict &t : verdicts.tasks) {
            const std::vector<std::string> row = cells(t);
            for (std::size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << csv_field(row[i]);
            out << "\n";
        }
    } else if (format == "markdown") {
        out << "Slurm job " << markdown_cell(verdicts.job) << " (" << markdown_cell(verdicts.submission) << ")\n\n|";
        for (const auto &heading : kHeadings) out << " " << heading << " |";
        out << "\n|";
        for (std::size_t i = 0; i < kHeadings.size(); ++i) out << "---|";
        out << "\n";
        for (const ClusterTaskVerdict &t : verdicts.tasks) {
            out << "|";
            for (const auto &cell : cells(t)) out << " " << markdown_cell(cell) << " |";
            out << "\n";
        }
    } else if (format == "text") {
        std::vector<std::vector<std::string>> rows{kHeadings};
        for (const ClusterTaskVerdict &t : verdicts.tasks) rows.push_back(cells(t));
        std::vector<std::size_t> widths(kHeadings.size(), 0);
        for (const auto &row : rows)
            for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
        out << "Slurm job " << verdicts.job << " (" << verdicts.submission << "), collected " << verdicts.collected_utc << "\n";
        for (const auto &row : rows) {
            for (std::size_t i = 0; i + 1 < row.size(); ++i) out << std::left << std::setw(static_cast<int>(widths[i] + 2)) << row[i];
            out << row.back() << "\n";
        }
    } else {
        fail(ExitCode::usage, "--format '" + format + "': expected text, markdown or csv");
    }
    return out.str();
}

toml::table cluster_json(const ClusterVerdicts &verdicts) {
    toml::table table = verdicts.to_toml();
    table.insert_or_assign("all_passed", verdicts.all_passed());
    return table;
}

}  // namespace s2tp
