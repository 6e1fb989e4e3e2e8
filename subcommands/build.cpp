// sage2tp build: compile the baseline and every candidate for the target GPU, read the ptxas
// resources of every entry point, model occupancy, and record what the resource gates compare
// (stages/build_stage.h does the work).
#include "stage_options.h"

#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"
#include "stages/build_stage.h"
#include "tools/kernel_build.h"

namespace s2tp {

int build_command(const Args &args) {
    CommandLine cl("build", "Compile both trees for the target GPU, read ptxas resources and model occupancy.", args);
    add_stage_options(cl, Stage::build);
    add_option(cl, jobs_option("parallel nvcc processes", "$MAX_JOBS, else the number of cores"));
    add_option(cl, nvcc_option);
    cl.add_options()
        ("sass", "also count the SASS opcodes of every entry and variant (cuobjdump or nvdisasm); on an up-to-date "
                 "build, of the cubins already built")
        ("no-cache", "neither take compiles from the compile cache nor store them (as SAGE2TP_CACHE=off)");
    add_option(cl, force_option("compile"));
    if (!cl.parse()) return 0;

    BuildRequest request;
    if (cl.has("arch")) request.arch = cl.result()["arch"].as<std::string>();
    request.jobs = jobs_count(cl).value_or(default_build_jobs());
    if (cl.has("nvcc")) request.nvcc = cl.result()["nvcc"].as<std::string>();
    request.sass = cl.has("sass");
    request.force = cl.has("force");
    request.no_cache = cl.has("no-cache");
    StageContext context(Stage::build, require_existing_run(cl.selection()));
    return static_cast<int>(run_stage(context, build_stage_work(context, request, cl.reporter()), cl.reporter()));
}

}  // namespace s2tp
