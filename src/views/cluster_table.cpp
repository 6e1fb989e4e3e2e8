#include "views/cluster_table.h"

#include "support/errors.h"
#include "support/number_format.h"
#include "support/table_printer.h"

namespace s2tp {
namespace {

TextTable task_table(const ClusterVerdicts &verdicts) {
    TextTable table{{{"arch"}, {"gpu"}, {"repeat"}, {"task"}, {"node"}, {"slurm"}, {"verdict"}, {"detail"}}, {}};
    for (const ClusterTaskVerdict &t : verdicts.tasks)
        table.rows.push_back({t.arch, t.gpu_kind, std::to_string(t.repeat), std::to_string(t.task),
                              t.node.empty() ? missing_figure : t.node, t.slurm_state, t.verdict, t.detail});
    return table;
}

}  // namespace

std::string cluster_table(const ClusterVerdicts &verdicts, const std::string &format) {
    if (format == "csv") return table_csv(task_table(verdicts));
    if (format == "markdown")
        return "Slurm job " + markdown_cell(verdicts.job) + " (" + markdown_cell(verdicts.submission) + ")\n\n" +
               table_markdown(task_table(verdicts));
    if (format == "text")
        return "Slurm job " + verdicts.job + " (" + verdicts.submission + "), collected " + verdicts.collected_utc +
               "\n" + table_text(task_table(verdicts));
    fail(ExitCode::usage, "--format '" + format + "': expected text, markdown or csv");
}

toml::table cluster_json(const ClusterVerdicts &verdicts) {
    toml::table table = verdicts.to_toml();
    table.insert_or_assign("all_passed", verdicts.all_passed());
    return table;
}

}  // namespace s2tp
