// sage2tp runs: the runs under --root, one line each, as `git branch` lists branches: '*' for the
// latest, the run id, its experiment, where it stands and when its last stage finished. Read-only.
#include "subcommands.h"

#include "formats/toml_schema.h"
#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"
#include "support/number_format.h"
#include "support/table_printer.h"
#include "views/run_overview.h"

#include <algorithm>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

struct RunLine {
    std::string id, experiment, state, finished_utc;
    bool latest = false;
};

// Where the run stands, in the words of status: another process at work on it, the stop that status
// remembers, else its last stage with a checkpoint and that checkpoint's status.
RunLine describe_run(const fs::path &root) {
    const RunDirectory run(root);
    RunLine line;
    line.id = root.filename().string();
    line.state = "not prepared";
    line.finished_utc = missing_figure;
    try {
        line.experiment = parse_toml_file(run.manifest().string())["experiment"]["name"].value_or(std::string(missing_figure));
    } catch (const Error &) {  // unreadable or not TOML: the list still shows the run
        line.experiment = missing_figure;
    }
    const RunOverview overview = overview_run(run, "");
    for (const StageOverview &stage : overview.stages) {
        if (stage.finished_utc == missing_figure) continue;
        line.state = stage_name(stage.stage) + " " + stage.status + (stage.fresh == "no" ? " (stale)" : "");
        line.finished_utc = stage.finished_utc;
    }
    if (overview.stop) line.state = stop_summary(*overview.stop);
    if (overview.running_pid) line.state = "running (pid " + std::to_string(*overview.running_pid) + ")";
    return line;
}

}  // namespace

int runs_command(const Args &args) {
    CommandLine cl("runs", "List the runs under --root: the latest marked '*', each run's experiment, where it "
                           "stands and when its last stage finished.", args);
    if (!cl.parse()) return 0;
    const fs::path root = cl.selection().runs_root;
    std::error_code ec;
    std::optional<fs::path> latest;
    if (fs::is_symlink(root / "latest", ec)) latest = fs::canonical(root / "latest", ec);
    std::vector<RunLine> lines;
    if (fs::is_directory(root, ec))
        for (const auto &entry : fs::directory_iterator(root, ec)) {
            const std::string name = entry.path().filename().string();
            if (name == "latest" || name.front() == '.' || entry.is_symlink(ec) || !entry.is_directory(ec)) continue;
            if (!fs::is_regular_file(entry.path() / "experiment.toml", ec)) continue;
            RunLine line = describe_run(entry.path());
            line.latest = latest && fs::equivalent(*latest, entry.path(), ec);
            lines.push_back(line);
        }
    std::sort(lines.begin(), lines.end(), [](const RunLine &a, const RunLine &b) { return a.id < b.id; });

    // The latest run's marker leads its id, as `git branch` marks the branch checked out.
    TextTable table{{{"  RUN"}, {"EXPERIMENT"}, {"STATE"}, {"FINISHED (UTC)"}}, {}};
    toml::array entries;
    for (const RunLine &line : lines) {
        table.rows.push_back({(line.latest ? "* " : "  ") + line.id, line.experiment, line.state, line.finished_utc});
        entries.push_back(toml::table{{"id", line.id}, {"experiment", line.experiment}, {"state", line.state},
                                      {"finished_utc", line.finished_utc}, {"latest", line.latest}});
    }
    const std::string text = table_text(table);
    if (lines.empty()) cl.reporter().say("no runs under '" + root.string() + "'; 'sage2tp prepare' makes one");
    else cl.reporter().say("runs under " + root.string() + "\n" + text.substr(0, text.size() - 1));
    cl.reporter().emit_json(toml::table{{"command", "runs"}, {"root", root.string()}, {"runs", entries}});
    return 0;
}

}  // namespace s2tp
