// sage2tp slurm: the run built on this host once per arch, then the GPU stages as one Slurm job array
// (tools/slurm_submission.h); `slurm collect` merges the tasks into one table of verdicts per arch and
// GPU kind (reports/cluster.toml); `slurm task` is what each array task runs; `slurm -n` previews a
// submission without Slurm.
#include "subcommands.h"

#include "pipeline/cli.h"
#include "pipeline/common_options.h"
#include "pipeline/stage_pipeline.h"
#include "support/errors.h"
#include "tools/slurm/slurm_submission.h"
#include "views/cluster_table.h"

namespace s2tp {
namespace {

int print_verdicts(const CommandLine &cl, const ClusterVerdicts &verdicts, const std::string &format) {
    const std::string table = cluster_table(verdicts, format);
    cl.reporter().say(table.substr(0, table.size() - 1));
    toml::table result = cluster_json(verdicts);
    result.insert("command", "slurm");
    cl.reporter().emit_json(result);
    return static_cast<int>(verdicts.all_passed() ? ExitCode::ok : ExitCode::stop);
}

// `slurm -n`: what a submission would build, its plan.toml and its task.sh, each under a heading.
int print_preview(const CommandLine &cl, const RunDirectory &run, const SlurmPreview &preview) {
    std::string builds;
    for (const std::string &arch : preview.builds) builds += "  " + arch + "\n";
    cl.reporter().say("dry run: nothing built or submitted; written to " + run.relative(preview.dir) + "\n" +
                      "builds on this host, one per arch:\n" + builds + "# plan.toml (the job id is Slurm's)\n" +
                      preview.plan + "# task.sh\n" + preview.script.substr(0, preview.script.size() - 1));
    toml::array builds_json;
    for (const std::string &arch : preview.builds) builds_json.push_back(arch);
    cl.reporter().emit_json(toml::table{{"command", "slurm"},
                                        {"dry_run", true},
                                        {"preview", run.relative(preview.dir)},
                                        {"builds", builds_json},
                                        {"plan", preview.plan},
                                        {"task_script", preview.script}});
    return 0;
}

int collect_command(const Args &args) {
    CommandLine cl("slurm collect",
                   "Merge the tasks of the run's Slurm job array into one table of verdicts per arch and GPU kind "
                   "(reports/cluster.toml). Exits 0 when every task passed, 1 otherwise.",
                   args);
    cl.add_options()
        ("submission", "the submission under <run>/slurm/ (default: the latest)", cxxopts::value<std::string>(), "NAME")
        ("format", "text, markdown or csv", cxxopts::value<std::string>()->default_value("text"), "FORMAT");
    if (!cl.parse()) return 0;
    const RunDirectory run(require_existing_run(cl.selection()));
    // Unlocked (a waiting `sage2tp slurm` holds the run), but it writes reports/cluster.toml: the same
    // refusal of planted links as every command that writes in a run.
    run.refuse_planted_links();
    const std::string format = cl.result()["format"].as<std::string>();
    cluster_table(ClusterVerdicts{}, format);  // a bad --format is refused before Slurm is asked
    const std::filesystem::path submission =
        slurm_submission_dir(run, cl.has("submission") ? cl.result()["submission"].as<std::string>() : "");
    return print_verdicts(cl, collect_slurm_array(run, submission), format);
}

int task_command(const Args &args) {
    CommandLine cl("slurm task", "Internal: one task of a sage2tp job array (run by the batch script).", args);
    cl.add_options()("plan", "the submission's plan.toml", cxxopts::value<std::string>(), "FILE");
    if (!cl.parse()) return 0;
    if (!cl.has("plan")) fail(ExitCode::usage, "slurm task needs --plan FILE");
    return run_slurm_task(cl.result()["plan"].as<std::string>());
}

}  // namespace

int slurm_command(const Args &args) {
    if (!args.empty() && args.front() == "collect") return collect_command(Args(args.begin() + 1, args.end()));
    if (!args.empty() && args.front() == "task") return task_command(Args(args.begin() + 1, args.end()));
    CommandLine cl("slurm",
                   "Build the run once per arch on this host, then run the GPU stages and the gate as one Slurm job "
                   "array: one task per arch, GPU constraint and repeat, each on a copy of the run. 'sage2tp slurm "
                   "collect' merges the tasks' verdicts.",
                   args);
    cl.add_options()
        ("arch", "build targets, comma-separated (default: the manifest's [build] arch)",
         cxxopts::value<std::vector<std::string>>(), "LIST")
        ("constraint", "GPU kinds: node features, comma-separated; one task per arch and kind (default: any node "
                       "that runs the arch)",
         cxxopts::value<std::vector<std::string>>(), "LIST")
        ("repeat", "tasks per arch and GPU kind, each a fresh process on a node of its own choosing",
         cxxopts::value<int>()->default_value("1"), "N")
        ("partition", "the Slurm partition (default: the cluster's)", cxxopts::value<std::string>(), "NAME")
        ("time-limit", "each task's time limit in minutes (default: the partition's)", cxxopts::value<int>(), "MIN")
        ("n,dry-run", "write and print the plan and the batch script to slurm/dry-run/ and list the builds, "
                      "without asking Slurm, submitting or building")
        ("no-wait", "return once the array is submitted; 'sage2tp slurm collect' reads it later")
        ("poll", "seconds between looks at the queue while waiting", cxxopts::value<int>()->default_value("10"), "S")
        ("format", "text, markdown or csv (the table printed after waiting)",
         cxxopts::value<std::string>()->default_value("text"), "FORMAT");
    add_option(cl, devices_option);
    if (!cl.parse()) return 0;
    SlurmRequest request;
    if (cl.has("devices")) request.devices = parse_device_list(cl.result()["devices"].as<std::string>());
    if (cl.has("arch")) request.archs = cl.result()["arch"].as<std::vector<std::string>>();
    if (cl.has("constraint")) request.gpu_kinds = cl.result()["constraint"].as<std::vector<std::string>>();
    request.repeats = cl.result()["repeat"].as<int>();
    if (cl.has("partition")) request.partition = cl.result()["partition"].as<std::string>();
    if (cl.has("time-limit")) {
        request.time_limit_minutes = cl.result()["time-limit"].as<int>();
        if (request.time_limit_minutes < 1) fail(ExitCode::usage, "--time-limit must be at least 1 minute");
    }
    const int poll = cl.result()["poll"].as<int>();
    if (poll < 1) fail(ExitCode::usage, "--poll must be at least 1 second");
    const std::string format = cl.result()["format"].as<std::string>();
    cluster_table(ClusterVerdicts{}, format);  // a bad --format is refused before anything is submitted

    // Opened as the build stage is: the run locked, its prepare checkpoint passed and fresh.
    StageContext context(Stage::build, require_existing_run(cl.selection()));
    if (cl.has("dry-run")) return print_preview(cl, context.run(), preview_slurm_array(context.run(), context.experiment(), request));
    const SlurmSubmission submission = submit_slurm_array(context.run(), context.experiment(), request, cl.reporter());
    cl.reporter().progress("submitted job array " + submission.job + " (" + std::to_string(submission.tasks.size()) +
                           " tasks) from " + context.run().relative(submission.dir));
    if (cl.has("no-wait")) {
        cl.reporter().say(submission.job);
        cl.reporter().emit_json(toml::table{{"command", "slurm"},
                                            {"job", submission.job},
                                            {"submission", context.run().relative(submission.dir)},
                                            {"tasks", static_cast<std::int64_t>(submission.tasks.size())}});
        return 0;
    }
    wait_for_slurm_array(submission.job, poll, cl.reporter());
    return print_verdicts(cl, collect_slurm_array(context.run(), submission.dir), format);
}

}  // namespace s2tp
