// The resume rules, defined once. Stages run in a fixed order; each writes one checkpoint.
//
//  * A stage runs only when the previous stage's checkpoint exists, is intact, passed (or was
//    skipped on purpose) and is fresh; otherwise Error(precondition) names what to run.
//  * A checkpoint is fresh when its previous_digest equals the digest of the previous stage's
//    current checkpoint and that one is fresh too. Re-running a stage therefore makes every later
//    checkpoint stale.
//  * A stage whose own checkpoint passed with an unchanged input fingerprint (which includes the
//    previous checkpoint's digest) is "up to date" and does nothing, unless forced.
#pragma once

#include "formats/checkpoint_store.h"
#include "model/experiment_manifest.h"
#include "pipeline/cli.h"
#include "support/hashing.h"
#include "pipeline/run_directory.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

enum class Stage { prepare, build, sanitize, parity, time, gate };

const std::vector<Stage> &all_stages();
std::string stage_name(Stage stage);
std::filesystem::path checkpoint_path(const RunDirectory &run, Stage stage);

struct StageState {
    Stage stage;
    CheckpointRead read;
    bool fresh = false;
    std::string stale_reason;  // why it is not fresh (or not trusted); empty when fresh
};

// Why the last attempt at a stage ended without a checkpoint: a cause that running the same command
// again on this host does not fix (no GPU here), or an interrupt (the same command resumes). Kept in
// <run>/last-stop.toml, so that status, report, runs and compare can say why the run stands where it
// does; execute_stage removes it when any stage writes its checkpoint.
struct StageStop {
    Stage stage;
    std::string cause;      // a few words: "no GPU", "interrupted"
    std::string message;    // the error the command printed, next step included
    std::string next_step;  // what to do instead, one sentence
    std::string utc;
};
void record_stop(const RunDirectory &run, const StageStop &stop);
// "stopped at sanitize: no GPU": how status, report and compare name a recorded stop.
std::string stop_summary(const StageStop &stop);
// The recorded stop, if any (nullopt too when the file cannot be read: it is advice, not a record).
std::optional<StageStop> last_stop(const RunDirectory &run);

// Reads every checkpoint of the run and works out freshness along the chain.
std::vector<StageState> inspect_run(const RunDirectory &run);

// What a stage's body returns. The stage framework writes it into the checkpoint.
struct StageResult {
    StageStatus status = StageStatus::passed;
    toml::table figures;
    toml::table artifacts;
    toml::table tools;                 // tool name -> version string
    std::vector<std::string> reasons;  // why it failed or was skipped
    // A failed body that changed nothing on disk (prepare whose patch does not apply): the command
    // exits 1 with the reasons and the stage's checkpoint, if any, is left as it was.
    bool keep_previous_checkpoint = false;
};

// What a stage command hands the one runner (run_stage): each stage body builds one with
// `StageWork x_stage_work(StageContext &, const XRequest &, const Reporter &)`. Its functions may refer to
// the context, the request and the reporter, which outlive the run; whatever else they use, they own.
struct StageWork {
    Stage stage;
    // Adds everything the stage consumes (files, settings) to the fingerprint. The previous
    // checkpoint's digest is added by the framework.
    std::function<void(Fingerprint &)> add_inputs;
    std::function<StageResult()> run;
    // Optional: checks that what a passed checkpoint describes is still on disk as recorded (e.g. the
    // source trees). Returns why not, or "" when intact; a non-empty answer makes the stage run again.
    std::function<std::string(const Checkpoint &)> verify_outputs;
    // Prints the human summary of a checkpoint (after running, or when up to date).
    std::function<void(const Checkpoint &, const Reporter &)> summarize;
    // Run even when the checkpoint is up to date (--force; time --pin).
    bool force = false;
    // Set when this host lacks what running the stage needs (nvcc, a GPU, the manifest a copied run was
    // prepared from): the error the command ends with, unless the stage's own checkpoint may stand in
    // (see keep_unavailable_stage). `keep_reason` says why in the up-to-date line.
    std::optional<Error> unavailable;
    std::string keep_reason;
    // Optional: called when the checkpoint cannot stand in, before work.unavailable is thrown (the
    // no-GPU stop records itself in the run and throws its own error, which says how to go on).
    std::function<void()> stop_unavailable;
    // Optional: what the command does once the stage's checkpoint stands, given the exit code so far
    // (build --sass counts the opcodes of an up-to-date build's cubins).
    std::function<ExitCode(ExitCode)> then;
};

// The precondition check alone: throws Error(precondition) unless the stage before `stage` is usable.
// When the run recorded a stop at or before that stage (`stop`: "stopped at sanitize: no GPU"), a
// missing checkpoint is explained by the stop and its next step, not by "run the stage first".
const Checkpoint *require_previous(const std::vector<StageState> &states, Stage stage,
                                   const std::optional<StageStop> &stop = std::nullopt);

// What a stage command opens once: its run, locked for the command's lifetime; every checkpoint of the
// run, read and digest-checked once (on first use, so that prepare can clear a killed prepare's
// leftovers under the lock first); and the run's resolved manifest, parsed once. A stage after prepare
// has its precondition checked on opening, so nothing runs on a run that is not ready for it.
class StageContext {
public:
    // A stage after prepare: `root` is an existing run; its experiment.toml is parsed on first use.
    StageContext(Stage stage, const std::filesystem::path &root);
    // prepare: the run may be new, and the experiment comes from the user's manifest (nullopt when
    // prepare only keeps an intact checkpoint and reads no manifest).
    StageContext(const std::filesystem::path &root, std::optional<Experiment> experiment);

    Stage stage() const { return stage_; }
    RunDirectory &run() { return run_; }
    const RunDirectory &run() const { return run_; }
    const std::vector<StageState> &states() const;
    const Experiment &experiment() const;
    // The checkpoint this stage resumes from (nullptr for prepare); checked by require_previous.
    const Checkpoint *previous() const { return require_previous(states(), stage_, last_stop(run_)); }

private:
    Stage stage_;
    RunDirectory run_;
    mutable std::optional<Experiment> experiment_;
    mutable std::optional<std::vector<StageState>> states_;
};

// The one runner of every stage command. Without work.unavailable: decides up-to-date, runs, writes
// the checkpoint, reports. With it, the keep-the-intact-checkpoint policy of every stage: when the
// stage's own checkpoint is up to date but for the inputs, which this host cannot work out, and its
// outputs verify, it is reported up to date with work.keep_reason; otherwise work.stop_unavailable is
// called, when set, and work.unavailable thrown. Then work.then, when set. Returns the command's exit
// code: 0 passed/skipped/up to date, 1 failed.
ExitCode run_stage(StageContext &context, const StageWork &work, const Reporter &reporter);

}  // namespace s2tp
