#include "stages/time/set.h"

#include "stages/time/measurement.h"
#include "stages/time/print.h"
#include "stages/time/stage.h"
#include "stages/time/stop_rule.h"
#include "stages/time/workload.h"

#include "formats/svg_plot.h"
#include "gpu/launch_timer.h"
#include "model/ab_timing.h"
#include "pipeline/file_artifact.h"
#include "support/errors.h"
#include "support/file_io.h"
#include "support/number_format.h"
#include "tools/gpu_session/gpu_session.h"

#include <chrono>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

std::vector<double> operations_from(const WorkloadSet &set, std::size_t first) {
    std::vector<double> operations;
    for (std::size_t i = first; i < set.workloads.size(); ++i)
        operations.push_back(attention_operations(set.workloads[i].workload.problem));
    return operations;
}

std::string shape_report_name(const SetWorkload &shape) { return "time-" + shape.workload.name; }

// The inputs of one shape, as `time` on that one workload would have them (never --pin or --ncu: the
// set's pins are its entries', and ncu profiles one shape, named with --workload).
TimeStageInputs shape_inputs(const TimeSetInputs &in, const SetWorkload &shape, const TimingSettings &settings,
                             const std::optional<fs::path> &workload_file) {
    return TimeStageInputs{in.run,
                           shape.workload,
                           workload_file,
                           in.kernels,
                           in.device,
                           settings,
                           in.repeats,
                           expected_output_sha256(shape.workload, in.kernels.pin_key()),
                           false,
                           false,
                           false,
                           {},
                           0,
                           in.device_index,
                           in.accuracy,
                           in.gpus,
                           shape_report_name(shape),
                           in.between_process};
}

// The shape's workload as a file where the run keeps its logs: what a --repeat child reads, and what
// `time --workload FILE` takes to time (or profile with --ncu) that shape alone.
fs::path write_shape_workload(const RunDirectory &run, const SetWorkload &shape) {
    const fs::path file = run.logs() / (shape_report_name(shape) + "-workload.toml");
    fs::create_directories(run.logs());
    std::ostringstream text;
    text << "# One shape of a workload set, for the time stage's --repeat children.\n"
         << toml::table{{"workload", workload_table(shape.workload)}} << "\n";
    write_file_atomically(file, text.str());
    return file;
}

// The per-round ratios of `arm` by process, for the combined interval.
std::vector<std::vector<double>> ratio_groups(const std::vector<TimingRun> &runs, Arm arm) {
    std::vector<std::vector<double>> groups;
    for (const TimingRun &run : runs) groups.push_back(kept_ratios(run.rounds, arm));
    return groups;
}

// reports/time.svg for a set: per candidate, every shape's interval and the combined one.
std::string set_plot_svg(const SetTimeFigures &f, const std::string &device) {
    IntervalPlot plot;
    plot.title = "sage2tp time: workload set " + f.workload_set.value_or("-");
    plot.subtitle = std::to_string(f.shapes.size()) + " shapes on " + device +
                    (f.weighted.value_or(false) ? "; the geometric mean is weighted" : "");
    for (const SetCandidateFigures &c : f.candidates) {
        for (const ShapeTimeFigures &s : f.shapes) {
            const CandidateTimeFigures *timed = s.figures.candidate(c.name);
            const std::optional<RatioInterval> interval =
                timed && timed->ratio ? timed->ratio->interval() : std::optional<RatioInterval>();
            plot.rows.push_back({c.name, s.name, interval, interval ? "" : "not timed"});
        }
        const std::optional<RatioInterval> geomean = c.geomean ? c.geomean->interval() : std::nullopt;
        plot.rows.push_back({c.name, "geometric mean", geomean, geomean ? "" : "not every shape timed"});
    }
    return render_interval_plot_svg(plot);
}

}  // namespace

std::vector<ShapePlan> plan_shapes(const WorkloadSet &set, const BuiltKernels &kernels, std::size_t arms,
                                   double budget_seconds) {
    std::vector<ShapePlan> plans;
    double remaining = budget_seconds;
    for (std::size_t i = 0; i < set.workloads.size(); ++i) {
        const AttentionProblem &problem = set.workloads[i].workload.problem;
        const double share = next_shape_budget(remaining, operations_from(set, i));
        const WorkloadCost cost = workload_cost(problem, kernels.quantizations(problem.shape.head_dim), arms, timed_input_sets);
        plans.push_back({set.workloads[i].workload.name, cost, share});
        remaining -= share;
    }
    return plans;
}

std::string shape_plan_line(const ShapePlan &plan, std::size_t index, std::size_t count) {
    return "[" + std::to_string(index + 1) + "/" + std::to_string(count) + "] " + plan.name + ": " +
           cost_text(plan.cost) + ", " + sampling_budget_text(plan.budget_seconds);
}

std::vector<std::string> shape_memory_refusals(const std::vector<ShapePlan> &plans, std::int64_t free_bytes,
                                               std::int64_t total_bytes) {
    std::vector<std::string> refusals;
    for (const ShapePlan &plan : plans)
        if (auto refusal = memory_refusal(plan.name, plan.cost, free_bytes, total_bytes)) refusals.push_back(*refusal);
    return refusals;
}

void add_time_set_inputs(Fingerprint &f, const TimeSetInputs &in) {
    f.add("workload_set", in.set.name);
    for (const SetWorkload &shape : in.set.workloads) {
        add_time_inputs(f, shape_inputs(in, shape, in.settings, std::nullopt));
        const double weight = shape.weight.value_or(1.0);
        f.add("weight", &weight, sizeof weight);
    }
}

std::string verify_time_set_outputs(const Checkpoint &c, const WorkloadSet &set, const PinKey &key) {
    // Every artifact the checkpoint records has been checked by inspect_run; the set's own figures hold
    // no pin, its shapes' do.
    const SetTimeFigures figures = SetTimeFigures::from_toml(c.figures);
    for (const SetWorkload &shape : set.workloads) {
        const ShapeTimeFigures *recorded = figures.shape(shape.workload.name);
        if (!recorded) return "the shape " + shape.workload.name + " is not in the checkpoint";
        if (recorded->figures.expected_sha256 != expected_output_sha256(shape.workload, key))
            return "the pinned output SHA-256 of " + shape.workload.name + " for " + key.text() + " changed";
    }
    return "";
}

StageResult time_workload_set(const TimeSetInputs &in, const Reporter &reporter) {
    const WorkloadSet &set = in.set;
    const std::vector<std::string> candidates = candidate_names(in.kernels);
    const std::size_t arms = arm_names(candidates).size();
    const std::size_t count = set.workloads.size();

    // The plan first, and nothing timed when a shape cannot fit.
    const std::vector<ShapePlan> plans = plan_shapes(set, in.kernels, arms, in.settings.budget_seconds);
    reporter.progress("time: workload set " + set.name + ", " + std::to_string(count) + " shapes, " +
                      std::to_string(arms) + " arms, " + sampling_budget_text(in.settings.budget_seconds) + " in all" +
                      (in.repeats > 1 ? ", " + std::to_string(in.repeats) + " processes per shape" : std::string()));
    for (std::size_t i = 0; i < count; ++i) reporter.progress("  " + shape_plan_line(plans[i], i, count));
    const DeviceMemory memory = device_memory();
    if (const std::vector<std::string> refusals = shape_memory_refusals(plans, memory.free_bytes, memory.total_bytes);
        !refusals.empty()) {
        std::string text = "time: workload set " + set.name + ": nothing timed;";
        for (const std::string &refusal : refusals) text += " " + refusal + ";";
        fail(ExitCode::usage, text + " time the set on a GPU with more memory or remove the shape from the set");
    }

    StageResult result;
    result.tools.insert("gpu", in.gpus.size() > 1 ? gpu_names(in.gpus) : in.device.name);
    result.tools.insert("cuda_driver", cuda_version_string(in.device.driver_version));
    SetTimeFigures f;
    f.workload_set = set.name;
    f.description = set.description;
    f.device = in.device.summary();
    f.device_name = in.device.name;
    f.arch = in.kernels.arch;
    f.weighted = set.weighted();
    f.repeats = static_cast<std::int64_t>(in.repeats);
    f.budget_seconds = in.settings.budget_seconds;

    const std::vector<double> weights = set.weights();
    std::vector<std::vector<ShapeRatios>> by_candidate(candidates.size());
    double remaining = in.settings.budget_seconds, sampled = 0;
    const auto started = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < count; ++i) {
        const SetWorkload &shape = set.workloads[i];
        const std::string counter = "[" + std::to_string(i + 1) + "/" + std::to_string(count) + "] ";
        const std::string tag = counter + shape.workload.name;
        TimingSettings settings = in.settings;
        settings.budget_seconds = next_shape_budget(remaining, operations_from(set, i));
        reporter.progress("time: " + tag + ": " + shape.workload.problem.describe() + ", weight " +
                          compact(weights[i], 3) + ", " + sampling_budget_text(settings.budget_seconds));
        const fs::path workload_file = write_shape_workload(in.run, shape);
        TimedWorkload timed = time_workload(shape_inputs(in, shape, settings, workload_file), reporter);

        ShapeTimeFigures s;
        s.name = shape.workload.name;
        s.weight = shape.weight;
        s.source = shape.source;
        s.passed = timed.result.status == StageStatus::passed;
        s.reasons = timed.result.reasons;
        s.figures = std::move(timed.figures);
        const double spent = s.figures.measure_seconds.value_or(0.0);
        remaining -= spent;
        sampled += spent;
        for (const std::string &reason : s.reasons) result.reasons.push_back(s.name + ": " + reason);
        for (auto &&[name, node] : timed.result.artifacts) result.artifacts.insert(std::string(name.str()) + "/" + s.name, node);
        for (std::size_t c = 0; c < candidates.size(); ++c) {
            const CandidateTimeFigures *figures = s.figures.candidate(candidates[c]);
            by_candidate[c].push_back({s.name, weights[i],
                                       figures && figures->ratio ? ratio_groups(timed.runs, first_candidate_arm + c)
                                                                 : std::vector<std::vector<double>>{},
                                       figures ? figures->ratio : std::nullopt});
        }
        // The shape's own summary begins with its name.
        reporter.progress("time: " + counter + (s.figures.summary ? *s.figures.summary : shape.workload.name + ": no summary") +
                          (*s.passed ? "" : " (failed)"));
        f.shapes.push_back(std::move(s));
    }
    f.measure_seconds = sampled;

    std::ostringstream summary;
    summary << set.name << ":";
    for (std::size_t c = 0; c < candidates.size(); ++c) {
        f.candidates.push_back(combine_shape_ratios(candidates[c], by_candidate[c], in.settings.bootstrap));
        const SetCandidateFigures &combined = f.candidates.back();
        summary << (c > 0 ? ";" : "") << " " << candidates[c] << "/baseline geomean "
                << (combined.geomean ? interval_text(*combined.geomean, false) : std::string("not every shape timed"));
        if (combined.worst_shape)
            summary << ", worst " << *combined.worst_shape << " " << fixed(*combined.worst->median, 4);
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    summary << "; " << count << " shapes in " << fixed(wall, 0) << " s";
    f.summary = summary.str();

    fs::create_directories(in.run.reports());
    const fs::path svg = in.run.reports() / "time.svg";
    write_file_atomically(svg, set_plot_svg(f, in.device.name));
    result.artifacts.insert("time_svg", FileArtifact::of(in.run, svg).to_toml());
    result.figures = f.to_toml();
    const fs::path json = in.run.reports() / "time.json";
    std::ostringstream json_text;
    json_text << toml::json_formatter{result.figures} << "\n";
    write_file_atomically(json, json_text.str());
    result.artifacts.insert("time_json", FileArtifact::of(in.run, json).to_toml());
    result.status = result.reasons.empty() ? StageStatus::passed : StageStatus::failed;
    return result;
}

void check_set_gpus(const std::vector<DeviceFacts> &gpus, const std::string &set) {
    for (const DeviceFacts &gpu : gpus)
        if (gpu.name != gpus.front().name)
            fail(ExitCode::usage, "time over the workload set '" + set + "' on several GPUs needs one model: GPU " +
                                      std::to_string(gpus.front().index) + " is " + gpus.front().name + " and GPU " +
                                      std::to_string(gpu.index) + " is " + gpu.name +
                                      "; its combined interval would pool ratios of both, so time the set once per "
                                      "model (--devices naming that model's GPUs)");
}

StageWork time_set_stage_work(StageContext &context, const TimeSetRequest &request, const Reporter &reporter) {
    const RunDirectory &run = context.run();
    const ResolvedTimeInputs resolved =
        resolve_time_inputs(run, context.states(), context.experiment(), request.overrides, std::nullopt);
    StageWork work;
    work.stage = Stage::time;
    work.force = request.force;
    work.verify_outputs = [set = request.set, key = resolved.kernels.pin_key()](const Checkpoint &c) {
        return verify_time_set_outputs(c, set, key);
    };
    work.summarize = print_time_checkpoint;
    const std::optional<std::vector<DeviceFacts>> gpus =
        time_devices(work, run, resolved.kernels.arch, request.devices, !request.force);
    if (!gpus) return work;
    check_set_gpus(*gpus, request.set.name);
    const DeviceFacts &device = gpus->front();
    for (const DeviceFacts &gpu : *gpus) require_kernels_for_device("time", resolved.kernels, gpu);
    const Experiment &experiment = resolved.experiment;
    const TimeSetInputs inputs{run, request.set, resolved.kernels, device, resolved.settings,
                               request.repeats.value_or(static_cast<std::size_t>(experiment.repeats)), device.index,
                               time_accuracy(experiment), gpus->size() > 1 ? *gpus : std::vector<DeviceFacts>{},
                               between_process_for(device)};
    work.add_inputs = [inputs](Fingerprint &f) { add_time_set_inputs(f, inputs); };
    work.run = [inputs, &reporter] { return time_workload_set(inputs, reporter); };
    return work;
}

}  // namespace s2tp
