#include "stages/gate_stage.h"

#include "pipeline/file_artifact.h"

#include "stages/gate_evidence.h"
#include "figures/gate_figures.h"
#include "support/file_io.h"
#include "support/hashing.h"
#include "support/number_format.h"

#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {

GateThresholds gate_thresholds(const Experiment &experiment, const GateOverrides &overrides) {
    GateThresholds thresholds;
    thresholds.max_candidate_p50_ms =
        overrides.max_candidate_p50_ms ? overrides.max_candidate_p50_ms : experiment.max_candidate_p50_ms;
    thresholds.default_max_candidate_p50_ms = Experiment::default_max_candidate_p50_ms;
    thresholds.max_spill_growth_bytes = overrides.max_spill_growth_bytes.value_or(experiment.max_spill_growth_bytes);
    thresholds.ratio_upper_bound = overrides.max_ratio_off     ? std::nullopt
                                   : overrides.max_ratio_upper ? overrides.max_ratio_upper
                                                               : experiment.max_ratio_upper;
    thresholds.geomean_ratio_upper_bound = overrides.max_geomean_ratio_upper ? overrides.max_geomean_ratio_upper
                                                                             : experiment.max_geomean_ratio_upper;
    thresholds.worst_ratio_upper_bound =
        overrides.max_worst_ratio_upper ? overrides.max_worst_ratio_upper : experiment.max_worst_ratio_upper;
    thresholds.require_sanitizer = overrides.require_sanitizer.value_or(experiment.require_sanitizer);
    thresholds.waivers = experiment.gate_waivers;
    return thresholds;
}

StageWork gate_stage_work(StageContext &context, const GateRequest &request, const Reporter &) {
    const RunDirectory &run = context.run();
    const GateThresholds thresholds = gate_thresholds(context.experiment(), request.overrides);
    const fs::path report = run.reports() / "gate.json";
    StageWork work;
    work.stage = Stage::gate;
    work.force = request.force;
    // Under the run's lock no other process writes checkpoints, so the context's one reading serves the
    // fingerprint and the evidence alike. Thresholds enter by their shortest exact text, so the
    // fingerprint changes exactly when one does.
    work.add_inputs = [&context, thresholds](Fingerprint &f) {
        for (const StageState &state : context.states()) {
            if (state.stage == Stage::gate) continue;
            f.add(stage_name(state.stage) + "_digest", state.read.checkpoint ? state.read.checkpoint->digest : "");
        }
        f.add("max_candidate_p50_ms", shortest(thresholds.candidate_p50_bound()));
        // Whose bound it is changes the verdict (a set's shapes) and its words, so it is an input too.
        f.add("max_candidate_p50_ms_is_default", thresholds.max_candidate_p50_ms ? "no" : "yes");
        f.add("max_spill_growth_bytes", thresholds.max_spill_growth_bytes);
        f.add("max_ratio_upper", thresholds.ratio_upper_bound ? shortest(*thresholds.ratio_upper_bound) : "off");
        f.add("require_sanitizer", thresholds.require_sanitizer ? "yes" : "no");
        // Only when set, so that a run without set bounds keeps the fingerprint it had before they existed.
        if (thresholds.geomean_ratio_upper_bound)
            f.add("max_geomean_ratio_upper", shortest(*thresholds.geomean_ratio_upper_bound));
        if (thresholds.worst_ratio_upper_bound)
            f.add("max_worst_ratio_upper", shortest(*thresholds.worst_ratio_upper_bound));
        for (const GateWaiver &waiver : thresholds.waivers) f.add("waiver", waiver.condition).add("waiver_reason", waiver.reason);
    };
    work.run = [&context, thresholds, &run, report] {
        std::vector<std::string> candidates;
        for (const CandidateSpec &candidate : context.experiment().candidates) candidates.push_back(candidate.name);
        std::map<std::string, GateResult> verdicts;
        for (const auto &[name, evidence] : gather_gate_evidence(context.states(), candidates))
            verdicts[name] = evaluate_gate(evidence, thresholds);
        const GateFigures figures = GateFigures::of(verdicts, thresholds);
        StageResult result;
        result.status = figures.passed ? StageStatus::passed : StageStatus::failed;
        result.figures = figures.to_toml();
        result.reasons = figures.reasons();
        std::ostringstream json;
        json << toml::json_formatter{result.figures} << "\n";
        write_file_atomically(report, json.str());
        result.artifacts.insert("report", FileArtifact::of(run, report).to_toml());
        return result;
    };
    work.summarize = [](const Checkpoint &c, const Reporter &reporter) {
        reporter.say(GateFigures::from_toml(c.figures).text());
    };
    return work;
}

}  // namespace s2tp
