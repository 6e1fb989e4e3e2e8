// The build stage: compile the baseline and every candidate for the target GPU, read the ptxas
// resources of every entry point, model occupancy, and record what the resource gates compare
// (BuildFigures). `sage2tp build` parses its options into a BuildRequest and runs
// build_stage_work with run_stage.
#pragma once

#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"

#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct BuildRequest {
    std::optional<std::string> arch;  // --arch; unset: auto with a GPU, else the last passed build's, else the manifest's
    int jobs = 1;                     // parallel nvcc processes, at least 1
    std::optional<std::string> nvcc;  // --nvcc; unset: the usual search order
    bool sass = false;
    bool force = false;
    bool no_cache = false;  // --no-cache: compile everything, store nothing
};

StageWork build_stage_work(StageContext &context, const BuildRequest &request, const Reporter &reporter);

}  // namespace s2tp
