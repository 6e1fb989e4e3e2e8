// sage2tp sanitize: the baseline and every candidate under compute-sanitizer on small shapes
// (stages/sanitize_stage.h does the work).
#include "subcommands.h"

#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"
#include "stages/sanitize_stage.h"
#include "support/errors.h"

namespace s2tp {

int sanitize_command(const Args &args) {
    CommandLine cl("sanitize", "Run both builds under compute-sanitizer on small shapes.", args);
    cl.add_options()
        ("device", "GPU index within CUDA_VISIBLE_DEVICES", cxxopts::value<int>()->default_value("0"), "N")
        ("skip", "record a skipped stage instead of running (also: RUN_SANITIZER=0)")
        ("timeout", "seconds before one sanitizer process is killed and its check failed",
         cxxopts::value<int>()->default_value("1800"), "S")
        ("jobs", "sanitizer processes at once on the GPU (default: $SAGE2TP_SANITIZE_JOBS, else 8, at most the cores)",
         cxxopts::value<int>(), "N")
        ("force", "run even when the checkpoint is up to date");
    if (!cl.parse()) return 0;
    SanitizeRequest request;
    request.device_index = cl.result()["device"].as<int>();
    request.timeout_s = cl.result()["timeout"].as<int>();
    if (request.timeout_s < 1) fail(ExitCode::usage, "--timeout must be at least 1 second");
    request.jobs = cl.has("jobs") ? cl.result()["jobs"].as<int>() : default_sanitize_jobs();
    if (request.jobs < 1) fail(ExitCode::usage, "--jobs must be at least 1");
    request.skip = cl.has("skip");
    request.force = cl.has("force");
    StageContext context(Stage::sanitize, require_existing_run(cl.selection()));
    return run_sanitize_stage(context, request, cl.reporter());
}

}  // namespace s2tp
