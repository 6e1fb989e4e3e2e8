#include "pipeline/stage_pipeline.h"

#include "pipeline/file_artifact.h"
#include "support/file_io.h"
#include "formats/toml_schema.h"

#include "support/errors.h"
#include "support/process_runner.h"

#include <unistd.h>

#include <chrono>
#include <iomanip>
#include <sstream>

namespace s2tp {

const std::vector<Stage> &all_stages() {
    static const std::vector<Stage> stages{Stage::prepare, Stage::build, Stage::sanitize,
                                           Stage::parity,  Stage::time,  Stage::gate};
    return stages;
}

std::string stage_name(Stage stage) {
    switch (stage) {
        case Stage::prepare: return "prepare";
        case Stage::build: return "build";
        case Stage::sanitize: return "sanitize";
        case Stage::parity: return "parity";
        case Stage::time: return "time";
        case Stage::gate: return "gate";
    }
    return "?";
}

std::filesystem::path checkpoint_path(const RunDirectory &run, Stage stage) {
    std::ostringstream name;
    name << std::setw(2) << std::setfill('0') << (static_cast<int>(stage) + 1) << "-" << stage_name(stage) << ".toml";
    return run.checkpoints() / name.str();
}

void record_stop(const RunDirectory &run, const StageStop &stop) {
    toml::table record{{"stage", stage_name(stop.stage)}, {"cause", stop.cause}, {"message", stop.message},
                       {"next_step", stop.next_step}, {"utc", stop.utc}};
    std::ostringstream text;
    text << "# Why the last attempt stopped without a checkpoint (sage2tp status); removed when a stage passes.\n"
         << record << "\n";
    write_file_atomically(run.last_stop(), text.str());
}

std::string stop_summary(const StageStop &stop) { return "stopped at " + stage_name(stop.stage) + ": " + stop.cause; }

std::optional<StageStop> last_stop(const RunDirectory &run) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(run.last_stop(), ec))) return std::nullopt;
    try {
        const toml::table record = parse_toml_file(run.last_stop().string());
        const std::string stage = record["stage"].value_or(std::string());
        for (Stage candidate : all_stages())
            if (stage_name(candidate) == stage)
                return StageStop{candidate, record["cause"].value_or(std::string()), record["message"].value_or(std::string()),
                                 record["next_step"].value_or(std::string()), record["utc"].value_or(std::string())};
    } catch (const Error &) {  // unreadable or not TOML: advice, not a record
    }
    return std::nullopt;
}

namespace {

// Why a recorded artifact ({ path, sha256 } for a file, { path, xxh3 } for a directory tree, anywhere
// in the artifacts table) is not as recorded, or "".
std::string damaged_artifact(const RunDirectory &run, const toml::table &artifacts) {
    for (const auto &[key, node] : artifacts) {
        const toml::table *entry = node.as_table();
        if (!entry) continue;
        auto path = (*entry)["path"].value<std::string>();
        auto sha = (*entry)["sha256"].value<std::string>();
        auto tree_digest = (*entry)["xxh3"].value<std::string>();
        if (path && tree_digest) {
            std::filesystem::path directory;
            try {
                directory = run.resolve(*path);
            } catch (const Error &e) {
                return e.what();
            }
            std::error_code ec;
            if (!std::filesystem::is_directory(directory, ec)) return *path + " is missing";
            if (Fingerprint().add_tree("tree", directory).hex() != *tree_digest)
                return *path + " was modified since it was recorded (its xxh3 differs)";
        } else if (path && sha) {
            if (std::string damage = FileArtifact{*path, *sha}.damage(run); !damage.empty()) return damage;
        } else if (std::string nested = damaged_artifact(run, *entry); !nested.empty()) {
            return nested;
        }
    }
    return "";
}

}  // namespace

std::vector<StageState> inspect_run(const RunDirectory &run) {
    std::vector<StageState> states;
    for (Stage stage : all_stages()) {
        StageState state{stage, read_checkpoint(checkpoint_path(run, stage)), false, ""};
        if (!state.read.exists) {
            state.stale_reason = "no checkpoint";
        } else if (!state.read.checkpoint) {
            state.stale_reason = "not trusted: " + state.read.problem;
        } else if (state.read.checkpoint->stage != stage_name(stage)) {
            state.read.checkpoint.reset();
            state.stale_reason = "not trusted: the file holds another stage's checkpoint";
        } else if (std::string damaged = damaged_artifact(run, state.read.checkpoint->artifacts); !damaged.empty()) {
            // prepare's artifacts are experiment.toml, the inputs it copied and the trees: an edit by hand
            // to any of them (a gate threshold, nvcc flags) makes every stage built on it untrusted.
            state.read.checkpoint.reset();
            state.stale_reason = "not trusted: " + damaged;
        } else if (stage == Stage::prepare) {
            state.fresh = true;
        } else {
            const StageState &previous = states.back();
            const auto &recorded = state.read.checkpoint->previous_digest;
            if (!previous.read.checkpoint)
                state.stale_reason = "stale: the " + stage_name(previous.stage) + " checkpoint it built on is " +
                                     (previous.read.exists ? "not trusted" : "missing");
            else if (previous.read.checkpoint->digest != recorded)
                state.stale_reason = "stale: " + stage_name(previous.stage) + " has been re-run since";
            else if (!previous.fresh)
                state.stale_reason = "stale: " + stage_name(previous.stage) + " is stale";
            else
                state.fresh = true;
        }
        states.push_back(std::move(state));
    }
    return states;
}

const Checkpoint *require_previous(const std::vector<StageState> &states, Stage stage,
                                   const std::optional<StageStop> &stop) {
    if (stage == Stage::prepare) return nullptr;
    const StageState &previous = states[static_cast<std::size_t>(stage) - 1];
    const std::string name = stage_name(previous.stage);
    const std::string fix = "; run 'sage2tp " + name + "' first";
    if (!previous.read.exists && stop && stop->stage <= previous.stage)
        fail(ExitCode::precondition, stage_name(stage) + " needs the " + name + " checkpoint, which is missing: the run " +
                                         stop_summary(*stop) + "; " + stop->next_step);
    if (!previous.read.checkpoint)
        fail(ExitCode::precondition, stage_name(stage) + " needs the " + name + " checkpoint, which is " +
                                         (previous.read.exists ? previous.stale_reason : "missing") + fix);
    if (previous.read.checkpoint->status == StageStatus::failed)
        fail(ExitCode::precondition, stage_name(stage) + " needs a passed " + name + " checkpoint, but " + name +
                                         " failed" + fix + " after fixing: " +
                                         (previous.read.checkpoint->reasons.empty() ? std::string("see its checkpoint")
                                                                                    : previous.read.checkpoint->reasons.front()));
    if (!previous.fresh)
        fail(ExitCode::precondition, stage_name(stage) + " needs a fresh " + name + " checkpoint, but it is " +
                                         previous.stale_reason + fix);
    return &*previous.read.checkpoint;
}

namespace {

std::string hostname() {
    char buffer[256] = {};
    if (::gethostname(buffer, sizeof buffer - 1) != 0) return "unknown";
    return buffer;
}

toml::table json_result(const Checkpoint &checkpoint, const RunDirectory &run, Stage stage, bool up_to_date,
                        ExitCode code) {
    toml::array reasons;
    for (const auto &r : checkpoint.reasons) reasons.push_back(r);
    return toml::table{{"command", stage_name(stage)},
                       {"status", to_string(checkpoint.status)},
                       {"up_to_date", up_to_date},
                       {"exit_code", static_cast<int>(code)},
                       {"run_dir", run.root().string()},
                       {"checkpoint", run.relative(checkpoint_path(run, stage))},
                       {"figures", checkpoint.figures},
                       {"artifacts", checkpoint.artifacts},
                       {"reasons", reasons}};
}

// The up-to-date rule: a stage's own checkpoint stands in for running it when it is intact, fresh and
// did not fail, and, when the current inputs are known, was made from the same inputs.
const Checkpoint *reusable_checkpoint(const StageState &own, const std::optional<std::string> &inputs) {
    const auto &c = own.read.checkpoint;
    if (!c || !own.fresh || c->status == StageStatus::failed) return nullptr;
    if (inputs && c->input_fingerprint != *inputs) return nullptr;
    return &*c;
}

ExitCode exit_code_for(const Checkpoint &checkpoint) {
    return checkpoint.status == StageStatus::failed ? ExitCode::stop : ExitCode::ok;
}

}  // namespace

StageContext::StageContext(Stage stage, const std::filesystem::path &root) : stage_(stage), run_(root) {
    run_.lock();
    previous();
}

StageContext::StageContext(const std::filesystem::path &root, std::optional<Experiment> experiment)
    : stage_(Stage::prepare), run_(root), experiment_(std::move(experiment)) {
    run_.lock();
    run_.mark_as_run();
}

const std::vector<StageState> &StageContext::states() const {
    if (!states_) states_ = inspect_run(run_);
    return *states_;
}

const Experiment &StageContext::experiment() const {
    if (!experiment_) {
        if (stage_ == Stage::prepare) fail(ExitCode::internal, "prepare: this prepare reads no experiment");
        experiment_ = load_experiment(run_.manifest());
    }
    return *experiment_;
}

namespace {

std::optional<ExitCode> keep_intact_checkpoint(StageContext &context, const StageWork &work, const std::string &why,
                                               const Reporter &reporter) {
    const RunDirectory &run = context.run();
    const std::vector<StageState> &states = context.states();
    context.previous();
    const Checkpoint *own = reusable_checkpoint(states[static_cast<std::size_t>(work.stage)], std::nullopt);
    if (!own || (work.verify_outputs && !work.verify_outputs(*own).empty())) return std::nullopt;
    const Checkpoint &c = *own;
    reporter.say(stage_name(work.stage) + ": up to date (passed at " + c.finished_utc + "; " + why + ")");
    if (work.summarize) work.summarize(c, reporter);
    reporter.emit_json(json_result(c, run, work.stage, true, ExitCode::ok));
    return ExitCode::ok;
}

ExitCode execute_stage(StageContext &context, const StageWork &work, const Reporter &reporter) {
    const bool force = work.force;
    const std::string name = stage_name(work.stage);
    if (work.stage != context.stage()) fail(ExitCode::internal, name + " was run in the context of " + stage_name(context.stage()));
    throw_if_interrupted(name);
    const RunDirectory &run = context.run();
    const std::vector<StageState> &states = context.states();
    const Checkpoint *previous = context.previous();

    Fingerprint fingerprint;
    fingerprint.add("stage", name);
    fingerprint.add("previous_digest", previous ? previous->digest : std::string());
    work.add_inputs(fingerprint);
    const std::string inputs = fingerprint.hex();

    const StageState &own = states[static_cast<std::size_t>(work.stage)];
    const Checkpoint *reusable = force ? nullptr : reusable_checkpoint(own, inputs);
    const std::string damaged = reusable && work.verify_outputs ? work.verify_outputs(*reusable) : std::string();
    if (!damaged.empty()) reporter.warn(name + " outputs are not as recorded (" + damaged + "); running the stage again");
    if (reusable && damaged.empty()) {
        const Checkpoint &c = *reusable;
        reporter.say(name + ": up to date (" + to_string(c.status) + " at " + c.finished_utc + "; inputs unchanged)");
        if (work.summarize) work.summarize(c, reporter);
        reporter.emit_json(json_result(c, run, work.stage, true, ExitCode::ok));
        return ExitCode::ok;
    }
    if (own.read.exists && !own.read.checkpoint)
        reporter.warn(name + " checkpoint " + run.relative(checkpoint_path(run, work.stage)) + " is " + own.stale_reason +
                      "; running the stage again");

    Checkpoint checkpoint;
    checkpoint.stage = name;
    checkpoint.started_utc = utc_now();
    auto started = std::chrono::steady_clock::now();
    StageResult result;
    try {
        result = work.run();
    } catch (const Error &e) {
        // A stop condition inside the body is the stage's verdict, recorded like any other failure;
        // every other error (usage, missing tool, internal) ends the command without a checkpoint.
        if (e.code() != ExitCode::stop) throw;
        result = StageResult{};
        result.status = StageStatus::failed;
        result.reasons.push_back(e.what());
    }
    // An interrupted body may have stopped anywhere, even where its result looks complete.
    throw_if_interrupted(name);
    if (result.keep_previous_checkpoint) {
        for (const auto &reason : result.reasons) reporter.say("  " + name + ": " + reason);
        reporter.say(name + ": failed; nothing was changed" +
                     std::string(own.read.exists ? ", the previous checkpoint stands" : ""));
        reporter.emit_json(toml::table{{"command", name},
                                       {"status", "failed"},
                                       {"up_to_date", false},
                                       {"exit_code", static_cast<int>(ExitCode::stop)},
                                       {"run_dir", run.root().string()},
                                       {"reasons", [&] {
                                            toml::array reasons;
                                            for (const auto &r : result.reasons) reasons.push_back(r);
                                            return reasons;
                                        }()}});
        return ExitCode::stop;
    }
    checkpoint.finished_utc = utc_now();
    checkpoint.status = result.status;
    checkpoint.input_fingerprint = inputs;
    checkpoint.previous_digest = previous ? previous->digest : std::string();
    checkpoint.host = toml::table{{"hostname", hostname()}, {"sage2tp_version", sage2tp_version()}};
    checkpoint.host.insert("tools", result.tools);
    checkpoint.artifacts = std::move(result.artifacts);
    checkpoint.figures = std::move(result.figures);
    checkpoint.figures.insert("elapsed_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    checkpoint.reasons = std::move(result.reasons);
    write_checkpoint(checkpoint_path(run, work.stage), checkpoint);
    std::error_code gone;
    std::filesystem::remove(run.last_stop(), gone);  // the run moved on: an earlier stop is history

    if (work.summarize) work.summarize(checkpoint, reporter);
    for (const auto &reason : checkpoint.reasons) reporter.say("  " + name + ": " + reason);
    reporter.say(name + ": " + to_string(checkpoint.status));
    ExitCode code = exit_code_for(checkpoint);
    reporter.emit_json(json_result(checkpoint, run, work.stage, false, code));
    return code;
}

}  // namespace

ExitCode run_stage(StageContext &context, const StageWork &work, const Reporter &reporter) {
    // An interrupt leaves no checkpoint of this stage and keeps every earlier one: the same command
    // picks up from there.
    const std::string resume = "to resume: sage2tp " + stage_name(work.stage) + " --run " + context.run().root().string() +
                               ", with the options given before ('sage2tp status' shows where the run stands)";
    set_interrupt_next_step(resume);
    ExitCode code;
    if (work.unavailable) {
        const std::optional<ExitCode> kept = keep_intact_checkpoint(context, work, work.keep_reason, reporter);
        if (!kept) {
            if (work.stop_unavailable) work.stop_unavailable();
            throw *work.unavailable;
        }
        code = *kept;
    } else {
        try {
            code = execute_stage(context, work, reporter);
        } catch (const Error &e) {
            // Recorded, so that status and runs say the run stopped here instead of showing the last
            // checkpoint as where it stands. Not for prepare, whose run may be half made.
            if (e.code() == ExitCode::interrupted && work.stage != Stage::prepare)
                record_stop(context.run(), StageStop{work.stage, "interrupted", e.what(), resume, utc_now()});
            throw;
        }
    }
    return work.then ? work.then(code) : code;
}

}  // namespace s2tp
