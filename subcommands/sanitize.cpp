// sage2tp sanitize: the baseline and every candidate under compute-sanitizer on small shapes
// (stages/sanitize_stage.h does the work).
#include "stage_options.h"

#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"
#include "stages/sanitize_stage.h"
#include "support/errors.h"

namespace s2tp {

int sanitize_command(const Args &args) {
    CommandLine cl("sanitize", "Run both builds under compute-sanitizer on small shapes.", args);
    add_stage_options(cl, Stage::sanitize);
    cl.add_options()
        ("timeout", "seconds before one sanitizer process is killed and its check failed",
         cxxopts::value<int>()->default_value("1800"), "S");
    add_option(cl, jobs_option("sanitizer processes on each GPU", "$SAGE2TP_SANITIZE_JOBS, else 8, at most the cores"));
    add_option(cl, force_option("run"));
    if (!cl.parse()) return 0;
    SanitizeRequest request;
    request.devices = selected_devices(cl);
    request.timeout_s = cl.result()["timeout"].as<int>();
    if (request.timeout_s < 1) fail(ExitCode::usage, "--timeout must be at least 1 second");
    request.jobs = jobs_count(cl).value_or(default_sanitize_jobs());
    request.skip = cl.has("skip");
    request.force = cl.has("force");
    StageContext context(Stage::sanitize, require_existing_run(cl.selection()));
    return static_cast<int>(run_stage(context, sanitize_stage_work(context, request, cl.reporter()), cl.reporter()));
}

}  // namespace s2tp
