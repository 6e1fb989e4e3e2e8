// sage2tp phases [RUN]: every variant's kernels built again with -DS2TP_PHASE_TIMING into
// builds/<variant>/phases/, then on a GPU one launch each with the phase log read back: where each
// warp's cycles go (copy wait, barrier, QK+softmax, PV, copy issue), and how the candidate's extra
// cycles per CTA split between them. A helper, not a stage: it writes reports/phases.toml, no checkpoint.
#include "subcommands.h"

#include "pipeline/cli.h"
#include "pipeline/common_options.h"
#include "pipeline/stage_pipeline.h"
#include "tools/phase_timing.h"
#include "support/errors.h"

#include <system_error>

namespace fs = std::filesystem;

namespace s2tp {

int phases_command(const Args &args) {
    CommandLine cl("phases", "Build phase-timed twins of every variant's kernels; on a GPU, where each warp's cycles go.",
                   args);
    cl.add_options()
        ("target", "the run: a run directory, or a run id under --root (default: --run, --run-id, else the latest run)",
         cxxopts::value<std::string>(), "RUN")
        ("seq-len", "launch the workload with len_q = len_kv = N instead of its own (a generated workload only)",
         cxxopts::value<std::int64_t>(), "N")
        ("build-only", "build the instrumented cubins and stop (no GPU needed)")
        ("force", "compile the instrumented cubins even when they are up to date");
    add_option(cl, jobs_option("parallel nvcc processes", "$MAX_JOBS, else the number of cores"));
    add_option(cl, nvcc_option);
    add_option(cl, device_option);
    cl.positional("target");
    cl.positional_help("[RUN]");
    if (!cl.parse()) return 0;

    const std::int64_t seq_len = cl.has("seq-len") ? cl.result()["seq-len"].as<std::int64_t>() : 0;
    if (cl.has("seq-len") && seq_len < 1) fail(ExitCode::usage, "--seq-len must be at least 1, got " + std::to_string(seq_len));
    PhaseBuildRequest request;
    request.jobs = jobs_count(cl).value_or(default_build_jobs());
    if (cl.has("nvcc")) request.nvcc = cl.result()["nvcc"].as<std::string>();
    request.force = cl.has("force");

    const RunSelection selection =
        cl.has("target") ? select_run_word(cl.selection(), cl.result()["target"].as<std::string>()) : cl.selection();
    RunDirectory run(require_existing_run(selection));
    run.lock();
    const Experiment experiment = load_experiment(run.manifest());
    const WorkloadSpec workload = phase_workload(experiment, seq_len);
    require_phase_stamps(run, experiment);
    const std::vector<StageState> states = inspect_run(run);
    const BuiltKernels kernels = built_kernels(run, states, experiment);

    const Reporter &reporter = cl.reporter();
    const PhaseBuild build = build_phase_cubins(run, experiment, kernels, request, reporter);
    reporter.say("phases: " + (build.note.empty() ? std::string("instrumented cubins built") : build.note) + ":");
    toml::array cubins;
    for (const PhaseCubin &c : build.cubins) {
        reporter.say("  " + c.variant + ":" + c.source + " -> " + run.relative(c.cubin));
        cubins.push_back(run.relative(c.cubin));
    }
    if (cl.has("build-only")) {
        reporter.emit_json(toml::table{{"command", "phases"}, {"status", "built"}, {"cubins", cubins}});
        return 0;
    }

    const DeviceFacts device = [&] {
        try {
            return require_gpu("phases", device_index(cl));
        } catch (const Error &e) {
            fail(e.code(), std::string(e.what()) + "; the instrumented cubins are built: measure them on a GPU host with "
                                                   "'sage2tp phases --run DIR', or pass --build-only to stop after the build");
        }
    }();
    require_kernels_for_device("phases", kernels, device);
    const PhaseReport report = measure_phases(run, experiment, kernels, build, workload, device, reporter);
    const fs::path written = write_phase_report(run, report);
    reporter.say(report.table_text());
    reporter.say("phases: written to " + run.relative(written));
    toml::table json = report.to_toml();
    json.insert("command", "phases");
    json.insert("status", "measured");
    json.insert("report", run.relative(written));
    json.insert("cubins", cubins);
    reporter.emit_json(json);
    return 0;
}

}  // namespace s2tp
