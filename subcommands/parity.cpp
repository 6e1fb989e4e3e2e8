// sage2tp parity: the baseline and every candidate on identical quantized inputs, output bytes
// compared exactly or, in tolerance mode, accuracy against a reference (stages/parity_stage.h does the work).
#include "stage_options.h"

#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"
#include "stages/parity_stage.h"

namespace s2tp {

int parity_command(const Args &args) {
    CommandLine cl("parity",
                   "Compare baseline and candidate outputs on identical inputs: byte for byte, or, for a candidate "
                   "in tolerance mode, by accuracy against a float64 reference.",
                   args);
    add_stage_options(cl, Stage::parity);
    add_option(cl, force_option("run"));
    if (!cl.parse()) return 0;
    ParityRequest request;
    request.devices = selected_devices(cl);
    request.force = cl.has("force");
    StageContext context(Stage::parity, require_existing_run(cl.selection()));
    return static_cast<int>(run_stage(context, parity_stage_work(context, request, cl.reporter()), cl.reporter()));
}

}  // namespace s2tp
