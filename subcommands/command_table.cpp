#include "command_table.h"

#include "stages/time/repeat_protocol.h"
#include "support/did_you_mean.h"

namespace s2tp {
namespace {

CommandEntry stage_command(Stage stage, int (*run)(const Args &), std::string summary) {
    return CommandEntry{stage_name(stage), run, std::move(summary), stage, false};
}

}  // namespace

const std::vector<CommandEntry> &command_table() {
    static const std::vector<CommandEntry> table{
        stage_command(Stage::prepare, prepare_command, "resolve the experiment; make baseline and candidate trees"),
        stage_command(Stage::build, build_command, "compile both trees for the target GPU; read ptxas resources"),
        stage_command(Stage::sanitize, sanitize_command, "run both builds under compute-sanitizer"),
        stage_command(Stage::parity, parity_command, "compare baseline and candidate outputs: byte for byte, or by accuracy (tolerance mode)"),
        stage_command(Stage::time, time_command, "time both on the real workload, interleaved A/B"),
        stage_command(Stage::gate, gate_command, "turn every checkpoint into one verdict"),
        {"run", run_command, "all stages in order, resuming, stopping at the first failure", std::nullopt, false},
        {"status", status_command, "table of the run's checkpoints, and what to run next", std::nullopt, false},
        {"runs", runs_command, "the runs under --root, the latest marked '*', with where each stands", std::nullopt, false},
        {"report", report_command, "time and gate results for a pull request (text, markdown, csv, json)",
         std::nullopt, false},
        {"phases", phases_command, "phase-timed builds of every variant; where each warp's cycles go", std::nullopt, false},
        {"compare", compare_command, "runs and their candidates side by side: table (text, markdown, csv), SVG with --svg",
         std::nullopt, false},
        {"slurm", slurm_command, "the GPU stages as one Slurm job array per arch and GPU kind; 'slurm collect'",
         std::nullopt, false},
        {"clean", clean_command, "remove a run: its worktrees in your repository, then its directory", std::nullopt,
         false},
        {"help", help_command, "this list, or one command's options (sage2tp help CMD)", std::nullopt, false},
        {"exec", exec_command, "internal: one variant's launches, run by sanitize and time --ncu", std::nullopt, true},
        {repeat_child_command, time_repeat_command, "internal: one repeat of time --repeat, in a fresh process", std::nullopt,
         true},
    };
    return table;
}

void print_usage(std::ostream &out) {
    out << "usage: sage2tp [global options] <command> [options]\n\n"
           "A/B experiments for CUDA kernels: build, sanitize, byte parity, interleaved timing and a gate.\n\n"
           "commands:\n";
    for (const auto &entry : command_table())
        if (!entry.internal) out << "  " << entry.name << std::string(10 - entry.name.size(), ' ') << entry.summary << "\n";
    out << "\nglobal options: --run DIR, --run-id ID, --root DIR, --json, -q, -v (see 'sage2tp help <command>')\n"
           "exit status: 0 passed, 1 stop condition, 2 usage, 3 missing tool or device, 4 precondition, 5 internal,\n"
           "             128+N interrupted by signal N (130 for Ctrl-C)\n"
           "see sage2tp(1) and sage2tp-harness(7)\n";
}

const CommandEntry *find_command(const std::string &name) {
    for (const auto &entry : command_table())
        if (entry.name == name) return &entry;
    return nullptr;
}

std::string command_suggestion(const std::string &word) {
    std::vector<std::string> names;
    for (const auto &entry : command_table())
        if (!entry.internal) names.push_back(entry.name);
    return did_you_mean(word, names);
}

}  // namespace s2tp
