// sage2tp run: every stage in order, each resuming from its checkpoint, stopping at the first stage
// that does not pass. Under --json the stages' own output goes to stderr and one summary object goes
// to stdout: each stage's exit code and, from the checkpoint it left, its status, reasons and summary.
#include "command_table.h"
#include "prepare_run.h"
#include "stage_options.h"

#include "support/process_runner.h"

#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"
#include "views/run_overview.h"

#include <iostream>

namespace s2tp {
namespace {

// Sends everything written to std::cout to std::cerr while alive.
class StdoutToStderr {
public:
    explicit StdoutToStderr(bool active) : saved_(active ? std::cout.rdbuf(std::cerr.rdbuf()) : nullptr) {}
    ~StdoutToStderr() {
        if (saved_) std::cout.rdbuf(saved_);
    }

private:
    std::streambuf *saved_;
};

// The stage's status, reasons and key figures (its summary), from the checkpoint it left in the run.
void add_checkpoint_facts(toml::table &outcome, const RunSelection &selection, Stage stage) {
    const std::optional<std::filesystem::path> root = existing_run(selection);
    if (!root) return;
    const RunDirectory run(*root);
    const CheckpointRead read = read_checkpoint(checkpoint_path(run, stage));
    if (!read.checkpoint) return;
    const Checkpoint &c = *read.checkpoint;
    toml::array reasons;
    for (const auto &reason : c.reasons) reasons.push_back(reason);
    outcome.insert("status", to_string(c.status));
    outcome.insert("reasons", reasons);
    outcome.insert("summary", c.figures["summary"].value_or(std::string()));
    outcome.insert("checkpoint", run.relative(checkpoint_path(run, stage)));
}

}  // namespace

int run_command(const Args &args) {
    CommandLine cl("run", "Run every stage in order, resuming, stopping at the first failure.", args);
    // Each stage's options, as the stage's own command declares them (stage_options.h).
    add_option(cl, force_option("re-run every stage"));
    add_run_stage_options(cl);
    if (!cl.parse()) return 0;

    Args common;
    RunSelection selection = cl.selection();
    if (cl.has("quiet")) common.push_back("--quiet");
    if (cl.has("verbose")) common.push_back("--verbose");
    if (cl.has("force")) common.push_back("--force");
    // Prepare finds the run as every command does (--run, --run-id, the run the working directory is
    // in, latest); the stages after it get that run's directory, found once, so that a prepare in
    // another shell, which moves latest, cannot redirect them.
    const auto selection_args = [&] {
        Args words{"--root", selection.runs_root.string()};
        if (selection.run_dir) words.insert(words.end(), {"--run", selection.run_dir->string()});
        if (selection.run_id) words.insert(words.end(), {"--run-id", *selection.run_id});
        return words;
    };

    toml::array stages;
    int code = 0;
    std::string error;  // the last stage's, when it ended with one
    {
        StdoutToStderr redirect(cl.reporter().json());
        for (const CommandEntry &entry : command_table()) {
            if (!entry.stage) continue;
            const Stage stage = *entry.stage;
            Args stage_args = selection_args();
            stage_args.insert(stage_args.end(), common.begin(), common.end());
            // The stage checks them as its own command does (time: against the manifest's ranges).
            for (std::string &word : stage_option_words(cl, stage)) stage_args.push_back(std::move(word));
            cl.reporter().progress("== " + stage_name(stage));
            error.clear();
            try {
                std::filesystem::path prepared_run;
                code = stage == Stage::prepare ? prepare_command(stage_args, prepared_run) : entry.run(stage_args);
                if (!prepared_run.empty()) {
                    selection.run_dir = prepared_run;
                    selection.run_id.reset();
                }
            } catch (const Error &e) {
                code = e.code() == ExitCode::interrupted ? 128 + interrupt_signal() : static_cast<int>(e.code());
                error = e.what();
                std::cerr << "sage2tp " << stage_name(stage) << ": error: " << error << std::endl;
            }
            toml::table outcome{{"stage", stage_name(stage)}, {"exit_code", code}};
            if (!error.empty()) outcome.insert("error", error);
            // A stage that ended with a verdict (0, or 1 for a stop condition) left its checkpoint.
            if (code == 0 || code == static_cast<int>(ExitCode::stop)) add_checkpoint_facts(outcome, selection, stage);
            stages.push_back(outcome);
            if (code != 0) {
                std::cerr << "sage2tp run: stopped at " << stage_name(stage) << " (exit " << code << ")" << std::endl;
                break;
            }
        }
    }
    toml::table result{{"command", "run"}, {"exit_code", code}, {"stages", stages}};
    // What to do next, as status says it: after a stop for want of a GPU, how to go on elsewhere.
    if (const std::optional<std::filesystem::path> root = existing_run(selection); root && code != 0) {
        const RunDirectory run(*root);
        const std::string next = overview_run(run, "--run " + run.root().string()).next;
        result.insert("next", next);
        // The steps of a stop the stage's own error just printed are named, not printed a second time.
        const std::optional<StageStop> stop = last_stop(run);
        const bool printed = stop && !stop->next_step.empty() && error.find(stop->next_step) != std::string::npos;
        if (!cl.reporter().json()) std::cerr << "next: " << (printed ? stop_summary(*stop) + ", as above" : next) << std::endl;
    }
    cl.reporter().emit_json(result);
    return code;
}

}  // namespace s2tp
