// The parity stage: the baseline and every candidate on identical quantized inputs, output bytes (O
// and LSE) compared exactly for every shape and seed, plus the baseline against the float64 CPU
// reference so that "both equally wrong" cannot pass (ParityFigures, via fold_parity).
#pragma once

#include "model/device_sharding.h"
#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"

namespace s2tp {

struct ParityRequest {
    DeviceList devices = DeviceList::one(0);  // --devices, or --device as a list of one; comparisons are dealt over them
    bool force = false;
};

StageWork parity_stage_work(StageContext &context, const ParityRequest &request, const Reporter &reporter);

}  // namespace s2tp
