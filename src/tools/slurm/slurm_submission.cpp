#include "tools/slurm/slurm_submission.h"

#include "figures/figure_fields.h"
#include "formats/toml_schema.h"
#include "support/errors.h"
#include "support/data_paths.h"
#include "support/file_io.h"
#include "support/process_runner.h"
#include "support/text_lines.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

// What each task runs in its copy, in order: the GPU stages, then the verdict.
const std::vector<std::string> kTaskStages{"sanitize", "parity", "time", "gate"};

// The directory under <run>/slurm/ that `slurm -n` writes its preview to.
const char *const kPreviewDir = "dry-run";

std::string join(const std::vector<std::string> &words, const std::string &separator) {
    std::string text;
    for (const auto &word : words) text += (text.empty() ? "" : separator) + word;
    return text;
}

std::string toml_text(const toml::table &table) {
    std::ostringstream out;
    out << table << "\n";
    return out.str();
}

// The run as it is, without its lock, its Slurm submissions and prepare's staging: what a task needs.
void copy_run(const fs::path &from, const fs::path &to) {
    fs::create_directories(to);
    for (const auto &entry : fs::directory_iterator(from)) {
        const std::string name = entry.path().filename().string();
        if (name == ".lock" || name == "slurm" || name == ".prepare-new" || name == ".prepare-old") continue;
        fs::copy(entry.path(), to / name, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    }
}

std::string node_features_text(const std::vector<SlurmNode> &nodes) {
    std::vector<std::string> described;
    for (const SlurmNode &node : nodes)
        described.push_back(node.name + " (" +
                            (node.features.empty() ? std::string("no features")
                                                   : join({node.features.begin(), node.features.end()}, ",")) +
                            ")");
    return described.empty() ? "the cluster has no nodes" : "the nodes: " + join(described, ", ");
}

std::string env_or(const char *name, const std::string &fallback) {
    const char *value = std::getenv(name);
    return value && *value ? value : fallback;
}

struct SlurmPlanFile {
    std::string job;
    std::vector<SlurmTaskPlan> tasks;
    std::string devices;  // --devices of the GPU stages, as typed; "" for their default
};

toml::table plan_to_toml(const std::string &job, const std::vector<SlurmTaskPlan> &tasks,
                         const std::optional<DeviceList> &devices) {
    toml::array rows;
    for (const SlurmTaskPlan &t : tasks)
        rows.push_back(toml::table{{"task", t.task},         {"arch", t.arch},         {"arch_feature", t.arch_feature},
                                   {"gpu_kind", t.gpu_kind}, {"repeat", t.repeat},     {"constraint", t.constraint},
                                   {"run", t.run}});
    toml::table plan{{"task", rows}};
    if (!job.empty()) plan.insert("job", job);  // a preview has none
    if (devices) plan.insert("devices", devices->text());
    return plan;
}

SlurmPlanFile read_plan(const fs::path &file) {
    // Read as every TOML file is (formats/toml_schema.h): a FIFO or a device is refused, never waited on.
    const toml::table table = parse_toml_file(file.string());
    SlurmPlanFile plan;
    plan.job = figure_fields::string_of(table, "job");
    plan.devices = figure_fields::string_of(table, "devices");
    if (!plan.devices.empty()) parse_device_list(plan.devices);  // a hand-edited list is refused here
    if (const toml::array *rows = table["task"].as_array())
        for (const toml::node &node : *rows)
            if (const toml::table *row = node.as_table()) {
                SlurmTaskPlan t;
                t.task = static_cast<int>((*row)["task"].value_or(std::int64_t{-1}));
                t.arch = figure_fields::string_of(*row, "arch");
                t.arch_feature = figure_fields::string_of(*row, "arch_feature");
                t.gpu_kind = figure_fields::string_of(*row, "gpu_kind");
                t.repeat = static_cast<int>((*row)["repeat"].value_or(std::int64_t{1}));
                t.constraint = figure_fields::string_of(*row, "constraint");
                t.run = figure_fields::string_of(*row, "run");
                if (t.task < 0 || t.run.empty() || !stays_inside(t.run))
                    fail(ExitCode::usage, file.string() + ": a [[task]] without a valid 'task' or 'run'");
                plan.tasks.push_back(std::move(t));
            }
    if (plan.job.empty() || plan.tasks.empty()) fail(ExitCode::usage, file.string() + ": no job id or no [[task]]");
    return plan;
}

fs::path task_dir(const fs::path &submission, int task) { return submission / ("task-" + std::to_string(task)); }

// Each task's run copy, task-<N>/run in the submission directory, relative to the run.
void assign_task_runs(const RunDirectory &run, const fs::path &submission, std::vector<SlurmTaskPlan> &tasks) {
    for (SlurmTaskPlan &t : tasks) t.run = run.relative(task_dir(submission, t.task) / "run");
}

// The archs of `tasks`, each once, in order: what a submission builds.
std::vector<std::string> archs_to_build(const std::vector<SlurmTaskPlan> &tasks) {
    std::vector<std::string> archs;
    for (const SlurmTaskPlan &t : tasks)
        if (std::find(archs.begin(), archs.end(), t.arch) == archs.end()) archs.push_back(t.arch);
    return archs;
}

std::vector<std::string> archs_of(const Experiment &experiment, const SlurmRequest &request) {
    return request.archs.empty() ? std::vector<std::string>{experiment.arch} : request.archs;
}

// The line a stage's failure is best told by: the first line of its last error ("sage2tp STAGE: error:
// ...", which the next steps may follow on lines of their own), else its last line on stderr, else on
// stdout.
std::string failure_line(const ProcessResult &result) {
    const std::vector<std::string_view> errors = split_lines(result.err);
    for (auto line = errors.rbegin(); line != errors.rend(); ++line)
        if (line->find(": error: ") != std::string_view::npos) return std::string(*line);
    for (const std::string *stream : {&result.err, &result.out}) {
        const std::vector<std::string_view> lines = split_lines(*stream);
        for (auto line = lines.rbegin(); line != lines.rend(); ++line)
            if (line->find_first_not_of(" \t") != std::string_view::npos) return std::string(*line);
    }
    return "";
}

}  // namespace

std::vector<SlurmTaskPlan> plan_slurm_tasks(const std::vector<std::string> &archs,
                                            const std::vector<std::string> &gpu_kinds, int repeats,
                                            const ArchLimitsTable &limits) {
    if (repeats < 1) fail(ExitCode::usage, "--repeat must be at least 1");
    if (archs.empty()) fail(ExitCode::usage, "no arch to build for: give --arch LIST");
    for (const std::string &kind : gpu_kinds)
        if (!valid_feature_name(kind))
            fail(ExitCode::usage, "--constraint '" + kind +
                                      "' is not a node feature name (letters, digits, '_', '.', '-'): sage2tp "
                                      "combines the features into the constraint itself");
    const std::vector<std::string> kinds = gpu_kinds.empty() ? std::vector<std::string>{"any"} : gpu_kinds;
    std::vector<SlurmTaskPlan> tasks;
    for (const std::string &arch : archs) {
        const ArchLimits &row = resolve_arch(limits, arch);
        for (const std::string &kind : kinds)
            for (int repeat = 1; repeat <= repeats; ++repeat) {
                SlurmTaskPlan t;
                t.task = static_cast<int>(tasks.size());
                t.arch = arch;
                t.arch_feature = row.row;
                t.gpu_kind = kind;
                t.repeat = repeat;
                t.constraint = gpu_kinds.empty() ? row.row : row.row + "&" + kind;
                tasks.push_back(std::move(t));
            }
    }
    return tasks;
}

void check_cluster_can_run(const std::vector<SlurmTaskPlan> &tasks, const std::vector<SlurmNode> &nodes) {
    auto some_node_has = [&](const std::vector<std::string> &features) {
        return std::any_of(nodes.begin(), nodes.end(), [&](const SlurmNode &node) {
            return std::all_of(features.begin(), features.end(),
                               [&](const std::string &f) { return node.features.count(f) > 0; });
        });
    };
    for (const SlurmTaskPlan &t : tasks) {
        if (t.gpu_kind != "any" && !some_node_has({t.gpu_kind}))
            fail(ExitCode::usage, "unknown GPU constraint '" + t.gpu_kind + "': no node of the cluster has that feature; " +
                                      node_features_text(nodes));
        if (!some_node_has({t.arch_feature}))
            fail(ExitCode::usage, "no node of the cluster can run " + t.arch + ": none has the feature '" +
                                      t.arch_feature + "' (each GPU node names its arch as a feature, see sage2tp-slurm(1)); " +
                                      node_features_text(nodes));
        if (t.gpu_kind != "any" && !some_node_has({t.arch_feature, t.gpu_kind}))
            fail(ExitCode::usage, "no node of the cluster has both '" + t.arch_feature + "' and '" + t.gpu_kind +
                                      "', so " + t.arch + " cannot run on " + t.gpu_kind + "; " + node_features_text(nodes));
    }
}

std::string shell_quoted(const std::string &word) {
    if (word.find('\n') != std::string::npos || word.find('\0') != std::string::npos || word.find('\r') != std::string::npos)
        fail(ExitCode::usage, "the path '" + word + "' holds a line break or NUL; a batch script cannot name it");
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

std::string slurm_batch_script(const fs::path &binary, const fs::path &plan) {
    return "#!/bin/sh\n"
           "# Written by sage2tp slurm: one task of the array runs the GPU stages on its copy of the run.\n"
           "exec " + shell_quoted(binary.string()) + " slurm task --plan " + shell_quoted(plan.string()) + "\n";
}

fs::path slurm_submission_dir(const RunDirectory &run, const std::string &name) {
    const fs::path slurm = run.root() / "slurm";
    std::string chosen = name;
    if (chosen.empty() && fs::exists(slurm / "latest")) {
        chosen = read_text_file(slurm / "latest");
        chosen.erase(chosen.find_last_not_of(" \n") + 1);
    }
    if (chosen.empty())
        fail(ExitCode::precondition, "the run " + run.root().string() + " has no Slurm submission: run 'sage2tp slurm' first");
    if (chosen == kPreviewDir)
        fail(ExitCode::usage, "--submission '" + chosen + "' is the preview of 'sage2tp slurm -n', never submitted");
    if (!stays_inside(chosen) || chosen.find('/') != std::string::npos)
        fail(ExitCode::usage, "--submission '" + chosen + "' is not a submission's name under " + slurm.string());
    if (!fs::exists(slurm / chosen / "plan.toml"))
        fail(ExitCode::precondition, "no Slurm submission '" + chosen + "' under " + slurm.string());
    return slurm / chosen;
}

SlurmSubmission submit_slurm_array(const RunDirectory &run, const Experiment &experiment, const SlurmRequest &request,
                                   const Reporter &reporter) {
    const ArchLimitsTable limits = load_arch_limits(arch_limits_table().string());
    SlurmSubmission submission;
    submission.tasks = plan_slurm_tasks(archs_of(experiment, request), request.gpu_kinds, request.repeats, limits);
    if (!find_program("sbatch"))
        fail(ExitCode::missing_tool, "sbatch not found in PATH: sage2tp slurm needs Slurm's client commands "
                                     "(Debian: apt-get install slurm-client)");
    check_cluster_can_run(submission.tasks, slurm_nodes());

    const fs::path slurm = run.root() / "slurm";
    const bool slurm_dir_was_there = fs::exists(slurm);
    std::string stamp = utc_now("%Y%m%dT%H%M%SZ");
    for (int n = 2; fs::exists(slurm / stamp); ++n) stamp = utc_now("%Y%m%dT%H%M%SZ") + "-" + std::to_string(n);
    // Absolute: the batch script and sbatch --chdir name it, and the nodes resolve it on their own.
    submission.dir = fs::absolute(slurm / stamp).lexically_normal();
    const fs::path binary = current_executable();
    // Whatever goes wrong from here on, the run is left as it was.
    try {
        fs::create_directories(submission.dir);
        for (const std::string &arch : archs_to_build(submission.tasks)) {
            const fs::path arch_run = submission.dir / ("arch-" + arch);
            reporter.progress("building " + arch + " in " + run.relative(arch_run));
            copy_run(run.root(), arch_run);
            const ProcessResult build = run_process({binary.string(), "-q", "build", "--run", arch_run.string(), "--arch", arch});
            if (build.exit_code != 0)
                fail(build.exit_code == 3 ? ExitCode::missing_tool : ExitCode::stop,
                     "the build for " + arch + " did not pass (exit " + std::to_string(build.exit_code) +
                         "): " + failure_line(build));
        }
        assign_task_runs(run, submission.dir, submission.tasks);
        for (const SlurmTaskPlan &t : submission.tasks)
            copy_run(submission.dir / ("arch-" + t.arch), task_dir(submission.dir, t.task) / "run");
        const fs::path plan = submission.dir / "plan.toml";
        write_file_atomically(submission.dir / "task.sh", slurm_batch_script(binary, plan));
        std::vector<std::string> sbatch_options{"--job-name=sage2tp", "--chdir=" + submission.dir.string(),
                                                "--output=task-%a/slurm.out"};
        if (!request.partition.empty()) sbatch_options.push_back("--partition=" + request.partition);
        if (request.time_limit_minutes > 0) sbatch_options.push_back("--time=" + std::to_string(request.time_limit_minutes));
        submission.job = submit_held_array((submission.dir / "task.sh").string(),
                                           static_cast<int>(submission.tasks.size()), sbatch_options);
        try {
            write_file_atomically(plan, toml_text(plan_to_toml(submission.job, submission.tasks, request.devices)));
            for (const SlurmTaskPlan &t : submission.tasks) set_task_constraint(submission.job, t.task, t.constraint);
            release_job(submission.job);
        } catch (...) {
            try {
                cancel_job(submission.job);
            } catch (const Error &) {
                // The refusal that got us here is the one to report.
            }
            throw;
        }
        write_file_atomically(slurm / "latest", stamp + "\n");
    } catch (...) {
        std::error_code ec;
        fs::remove_all(slurm_dir_was_there ? submission.dir : slurm, ec);
        throw;
    }
    return submission;
}

SlurmPreview preview_slurm_array(const RunDirectory &run, const Experiment &experiment, const SlurmRequest &request) {
    const ArchLimitsTable limits = load_arch_limits(arch_limits_table().string());
    std::vector<SlurmTaskPlan> tasks = plan_slurm_tasks(archs_of(experiment, request), request.gpu_kinds, request.repeats, limits);
    SlurmPreview preview;
    preview.dir = fs::absolute(run.root() / "slurm" / kPreviewDir).lexically_normal();
    preview.builds = archs_to_build(tasks);
    assign_task_runs(run, preview.dir, tasks);
    preview.script = slurm_batch_script(current_executable(), preview.dir / "plan.toml");
    preview.plan = toml_text(plan_to_toml("", tasks, request.devices));
    remove_without_following(preview.dir);
    fs::create_directories(preview.dir);
    write_file_atomically(preview.dir / "plan.toml", preview.plan);
    write_file_atomically(preview.dir / "task.sh", preview.script);
    return preview;
}

void wait_for_slurm_array(const std::string &job, int poll_seconds, const Reporter &reporter) {
    for (;;) {
        const std::map<int, SlurmTaskState> states = slurm_task_states(job);
        int open = 0;
        for (const auto &[task, state] : states) open += slurm_state_final(state.state) ? 0 : 1;
        if (open == 0) return;
        reporter.progress("job " + job + ": " + std::to_string(open) + " task(s) pending or running");
        for (int tick = 0; tick < poll_seconds * 10; ++tick) {
            throw_if_interrupted("waiting for job " + job + " (the array keeps running)");
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
}

ClusterVerdicts collect_slurm_array(const RunDirectory &run, const fs::path &submission) {
    const SlurmPlanFile plan = read_plan(submission / "plan.toml");
    const std::map<int, SlurmTaskState> states = slurm_task_states(plan.job);
    ClusterVerdicts verdicts;
    verdicts.job = plan.job;
    verdicts.submission = run.relative(submission);
    verdicts.collected_utc = utc_now();
    for (const SlurmTaskPlan &t : plan.tasks) {
        std::optional<ClusterSlurmState> slurm;
        if (auto it = states.find(t.task); it != states.end())
            slurm = ClusterSlurmState{it->second.state, it->second.reason, it->second.node};
        std::optional<ClusterTaskResult> result;
        const fs::path result_file = task_dir(submission, t.task) / "result.toml";
        if (fs::exists(fs::symlink_status(result_file))) result = cluster_task_result_from_toml(parse_toml_file(result_file.string()));
        verdicts.tasks.push_back(
            judge_cluster_task(ClusterTaskIdentity{t.task, t.arch, t.gpu_kind, t.run, t.repeat}, slurm, result));
    }
    std::stable_sort(verdicts.tasks.begin(), verdicts.tasks.end(), [](const auto &a, const auto &b) {
        return std::tie(a.arch, a.gpu_kind, a.repeat, a.task) < std::tie(b.arch, b.gpu_kind, b.repeat, b.task);
    });
    fs::create_directories(run.reports());
    write_file_atomically(cluster_verdicts_path(run), toml_text(verdicts.to_toml()));
    return verdicts;
}

int run_slurm_task(const fs::path &plan_file) {
    const std::string index = env_or("SLURM_ARRAY_TASK_ID", "");
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos)
        fail(ExitCode::usage, "sage2tp slurm task runs inside a Slurm array task: SLURM_ARRAY_TASK_ID is '" + index + "'");
    const SlurmPlanFile plan = read_plan(plan_file);
    const int task = std::stoi(index);
    const auto it = std::find_if(plan.tasks.begin(), plan.tasks.end(), [&](const SlurmTaskPlan &t) { return t.task == task; });
    if (it == plan.tasks.end()) fail(ExitCode::usage, plan_file.string() + " has no task " + index);
    // plan.toml lives in <run>/slurm/<stamp>/.
    const fs::path submission = plan_file.parent_path();
    const fs::path run_root = submission.parent_path().parent_path();
    const fs::path dir = task_dir(submission, task);
    const fs::path copy = run_root / it->run;
    fs::create_directories(dir / "logs");

    ClusterTaskResult result;
    result.node = env_or("SLURMD_NODENAME", "");
    result.restart_count = std::atoi(env_or("SLURM_RESTART_COUNT", "0").c_str());
    auto record = [&] { write_file_atomically(dir / "result.toml", toml_text(cluster_task_result_to_toml(result))); };
    record();
    for (const std::string &stage : kTaskStages) {
        result.stages.push_back({stage, -1, "started"});
        record();
        ProcessResult outcome;
        try {
            std::vector<std::string> argv{current_executable().string(), stage, "--run", copy.string()};
            if (!plan.devices.empty() && stage != "gate") argv.insert(argv.end(), {"--devices", plan.devices});
            outcome = run_process(argv);
        } catch (const Error &e) {
            result.stages.back().message = e.what();
            record();
            throw;
        }
        write_file_atomically(dir / "logs" / (stage + ".log"), outcome.out + outcome.err);
        result.stages.back().exit_code = outcome.exit_code;
        result.stages.back().message = failure_line(outcome);
        record();
        if (outcome.exit_code != 0) {
            result.finished = true;
            record();
            return outcome.exit_code;
        }
    }
    result.finished = true;
    record();
    return 0;
}

}  // namespace s2tp
