// sage2tp gate: turn the run's checkpoints into a verdict per candidate and one overall verdict
// (exit 0 only when every candidate passes). Thresholds come from the run's manifest
// ([gate]) and may be overridden on the command line; the conditions themselves live in gate_rules.
//
// The gate is a stage like the others, under the same resume rule: it needs a passed, fresh time
// checkpoint (which in turn means every earlier stage passed, or was skipped on purpose, and is
// fresh). A run that stopped earlier has no verdict to give; `sage2tp status` is the tool that shows
// such a partial run stage by stage. The gate still evaluates every condition from the checkpoints,
// so a resource, speed or output-digest condition can fail a run whose stages all passed.
#include "subcommands.h"
#include "support/file_io.h"

#include "formats/checkpoint_store.h"
#include "pipeline/cli.h"
#include "support/errors.h"
#include "model/experiment_manifest.h"
#include "stages/gate_evidence.h"
#include "stages/gate_figures.h"
#include "model/gate_rules.h"
#include "support/hashing.h"
#include "pipeline/run_directory.h"
#include "pipeline/stage_pipeline.h"

#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

// Shortest text that reads back as the same double, so a fingerprint changes exactly when a
// threshold does.
std::string exact(double value) {
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

GateThresholds thresholds_for(const Experiment &experiment, const CommandLine &cl) {
    GateThresholds thresholds;
    thresholds.max_candidate_p50_ms = experiment.max_candidate_p50_ms;
    thresholds.max_spill_growth_bytes = experiment.max_spill_growth_bytes;
    thresholds.ratio_upper_bound = experiment.max_ratio_upper;
    thresholds.require_sanitizer = experiment.require_sanitizer;

    // The same ranges as the manifest's [gate] table accepts.
    if (cl.has("max-p50-ms")) {
        const double value = cl.result()["max-p50-ms"].as<double>();
        if (!std::isfinite(value) || value <= 0 || value > 1e9)
            fail(ExitCode::usage, "--max-p50-ms " + exact(value) + ": expected milliseconds above 0 and at most 1e9");
        thresholds.max_candidate_p50_ms = value;
    }
    if (cl.has("max-spill-growth-bytes")) {
        const std::int64_t value = cl.result()["max-spill-growth-bytes"].as<std::int64_t>();
        if (value < 0 || value > (std::int64_t{1} << 30))
            fail(ExitCode::usage, "--max-spill-growth-bytes " + std::to_string(value) +
                                      ": expected a byte count from 0 to 1073741824");
        thresholds.max_spill_growth_bytes = value;
    }
    if (cl.has("max-ratio")) {
        const double value = cl.result()["max-ratio"].as<double>();
        if (!std::isfinite(value) || value < 0.01 || value > 100)
            fail(ExitCode::usage, "--max-ratio " + exact(value) + ": expected a candidate/baseline ratio from 0.01 to 100");
        thresholds.ratio_upper_bound = value;
    }
    if (cl.has("require-sanitizer")) thresholds.require_sanitizer = cl.result()["require-sanitizer"].as<bool>();
    return thresholds;
}

}  // namespace

int gate_command(const Args &args) {
    CommandLine cl("gate",
                   "Turn every checkpoint into a verdict per candidate and one overall verdict. Needs a passed, "
                   "fresh time checkpoint; "
                   "'sage2tp status' shows a run that stopped earlier.",
                   args);
    cl.add_options()
        ("max-p50-ms", "the candidate's p50 must be below this (default: the manifest's [gate] max_candidate_p50_ms)",
         cxxopts::value<double>(), "MS")
        ("max-spill-growth-bytes", "candidate spill bytes minus the baseline's may be at most this "
                                   "(default: the manifest's max_spill_growth_bytes)",
         cxxopts::value<std::int64_t>(), "BYTES")
        ("max-ratio", "relative speed gate: the candidate/baseline ratio interval must lie entirely below this "
                      "(default: the manifest's max_ratio_upper, else off)",
         cxxopts::value<double>(), "RATIO")
        ("require-sanitizer", "a skipped sanitizer fails the gate (=false to allow it; default: the manifest's)",
         cxxopts::value<bool>(), "BOOL")
        ("force", "evaluate even when the checkpoint is up to date");
    if (!cl.parse()) return 0;

    // Under the lock no other process writes checkpoints, so the context's one reading serves the
    // precondition, the fingerprint and the evidence alike.
    std::optional<StageContext> opened;
    try {
        opened.emplace(Stage::gate, require_existing_run(cl.selection()));
    } catch (const Error &e) {
        if (e.code() != ExitCode::precondition) throw;
        fail(ExitCode::precondition, std::string(e.what()) + " ('sage2tp status' shows every stage of this run)");
    }
    StageContext &context = *opened;
    RunDirectory &run = context.run();
    const std::vector<StageState> &states = context.states();
    const Experiment &experiment = context.experiment();
    const GateThresholds thresholds = thresholds_for(experiment, cl);
    const fs::path report = run.reports() / "gate.json";

    StageWork work;
    work.stage = Stage::gate;
    work.add_inputs = [&](Fingerprint &f) {
        for (const StageState &state : states) {
            if (state.stage == Stage::gate) continue;
            f.add(stage_name(state.stage) + "_digest", state.read.checkpoint ? state.read.checkpoint->digest : "");
        }
        f.add("max_candidate_p50_ms", exact(thresholds.max_candidate_p50_ms));
        f.add("max_spill_growth_bytes", thresholds.max_spill_growth_bytes);
        f.add("max_ratio_upper", thresholds.ratio_upper_bound ? exact(*thresholds.ratio_upper_bound) : "off");
        f.add("require_sanitizer", thresholds.require_sanitizer ? "yes" : "no");
    };
    std::vector<std::string> candidates;
    for (const CandidateSpec &candidate : experiment.candidates) candidates.push_back(candidate.name);
    work.run = [&] {
        std::map<std::string, GateResult> verdicts;
        for (const auto &[name, evidence] : gather_gate_evidence(states, candidates))
            verdicts[name] = evaluate_gate(evidence, thresholds);
        const GateFigures figures = GateFigures::of(verdicts, thresholds);
        StageResult result;
        result.status = figures.passed ? StageStatus::passed : StageStatus::failed;
        result.figures = figures.to_toml();
        result.reasons = figures.reasons();
        std::ostringstream json;
        json << toml::json_formatter{result.figures} << "\n";
        write_file_atomically(report, json.str());
        result.artifacts.insert("report", toml::table{{"path", run.relative(report)}, {"sha256", sha256_hex(json.str())}});
        return result;
    };
    work.verify_outputs = [&](const Checkpoint &c) -> std::string {
        std::error_code ec;
        if (!fs::is_regular_file(report, ec)) return run.relative(report) + " is missing";
        if (sha256_file(report) != c.artifacts["report"]["sha256"].value_or(std::string()))
            return run.relative(report) + " changed since the gate wrote it";
        return "";
    };
    work.summarize = [](const Checkpoint &c, const Reporter &reporter) {
        reporter.say(GateFigures::from_toml(c.figures).text());
    };
    return static_cast<int>(execute_stage(context, work, cl.has("force"), cl.reporter()));
}

}  // namespace s2tp
