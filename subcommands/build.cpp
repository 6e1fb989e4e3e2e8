// sage2tp build: compile the baseline and every candidate for the target GPU, read the ptxas
// resources of every entry point, model occupancy, and record what the resource gates compare
// (stages/build_stage.h does the work).
#include "subcommands.h"

#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"
#include "stages/build_stage.h"
#include "tools/kernel_build.h"

namespace s2tp {

int build_command(const Args &args) {
    CommandLine cl("build", "Compile both trees for the target GPU, read ptxas resources and model occupancy.", args);
    cl.add_options()
        ("arch", "target: sm_89, sm_90a, sm_100a, sm_103a, sm_120a, sm_121a, or auto (the first visible GPU); "
                 "default: auto when a GPU is visible, else the arch of the last passed build, else the manifest's",
         cxxopts::value<std::string>(), "ARCH")
        ("jobs", "parallel nvcc processes (default: $MAX_JOBS, else the number of cores)", cxxopts::value<int>(), "N")
        ("nvcc", "the nvcc to use (default: the first in $CUDA_HOME/bin, $CUDA_PATH/bin, PATH, /usr/local/cuda/bin)",
         cxxopts::value<std::string>(), "PATH")
        ("torch-include", "a directory with torch's headers for sources that need them (repeatable; default: "
                          "[build] torch_include_dirs, then the python3 on PATH, then libtorch-dev)",
         cxxopts::value<std::vector<std::string>>(), "DIR")
        ("sass", "also count the SASS opcodes of every entry and variant (cuobjdump or nvdisasm); on an up-to-date "
                 "build, of the cubins already built")
        ("force", "compile even when the checkpoint is up to date")
        ("no-cache", "neither take compiles from the compile cache nor store them (as SAGE2TP_CACHE=off)");
    if (!cl.parse()) return 0;

    BuildRequest request;
    if (cl.has("arch")) request.arch = cl.result()["arch"].as<std::string>();
    request.jobs = cl.has("jobs") ? cl.result()["jobs"].as<int>() : default_build_jobs();
    if (cl.has("nvcc")) request.nvcc = cl.result()["nvcc"].as<std::string>();
    if (cl.has("torch-include")) request.torch_include = cl.result()["torch-include"].as<std::vector<std::string>>();
    request.sass = cl.has("sass");
    request.force = cl.has("force");
    request.no_cache = cl.has("no-cache");
    StageContext context(Stage::build, require_existing_run(cl.selection()));
    return run_build_stage(context, request, cl.reporter());
}

}  // namespace s2tp
