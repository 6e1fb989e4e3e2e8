// The sanitize stage: `sage2tp exec` under compute-sanitizer once per (variant, tool, sanitizer
// shape) for the baseline and every candidate, every log kept under logs/sanitize/, each check's
// error count recorded (SanitizeFigures). compute-sanitizer has no default --error-exitcode, so its
// exit status alone can be 0 with errors found: a missing summary, a timeout or a failing target is
// a failed check, never a pass.
#pragma once

#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"

#include <string>

namespace s2tp {

struct SanitizeRequest {
    int device_index = 0;
    int timeout_s = 1800;  // per sanitizer process
    bool skip = false;     // --skip
    bool force = false;
};

StageWork sanitize_stage_work(StageContext &context, const SanitizeRequest &request, const Reporter &reporter);

}  // namespace s2tp
