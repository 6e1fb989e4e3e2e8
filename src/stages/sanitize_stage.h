// The sanitize stage: `sage2tp exec` under compute-sanitizer once per (variant, tool, sanitizer
// shape) for the baseline and every candidate, every log kept under logs/sanitize/, each check's
// error count recorded (SanitizeFigures). compute-sanitizer has no default --error-exitcode, so its
// exit status alone can be 0 with errors found: a missing summary, a timeout or a failing target is
// a failed check, never a pass. With --devices the processes are dealt over the GPUs, each pinned to
// one, and each log's name and each check's figures name the GPU; a GPU lost mid-run (a device
// error) is reported per GPU, its checks never a pass, the other GPUs' results kept.
#pragma once

#include "model/device_sharding.h"
#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"

#include <string>

namespace s2tp {

struct SanitizeRequest {
    DeviceList devices = DeviceList::one(0);  // --devices, or --device as a list of one
    int timeout_s = 1800;  // per sanitizer process
    int jobs = 1;          // sanitizer processes at once on each GPU, at least 1
    bool skip = false;     // --skip
    bool force = false;
};

// Default for --jobs: $SAGE2TP_SANITIZE_JOBS, else the cores, at most 8 (Error(usage) for a bad value).
int default_sanitize_jobs();

StageWork sanitize_stage_work(StageContext &context, const SanitizeRequest &request, const Reporter &reporter);

}  // namespace s2tp
