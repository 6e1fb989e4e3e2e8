// The time stage for run_stage on one workload: the baseline, its A/A control and every candidate on
// the run's real workload (or that of --workload FILE), interleaved, in one process per repeat
// (stages/time/workload.h); over a workload set, stages/time/set.h.
//
// Usage (subcommands/time.cpp):
//   TimeRequest request{overrides, repeats, workload_file, pin, ncu, force, devices};
//   ExitCode code = run_stage(context, time_stage_work(context, request, reporter), reporter);
#pragma once

#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"
#include "stages/time/inputs.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// What `sage2tp time` was asked for one workload; subcommands/time.cpp checks each value a user typed
// against its range.
struct TimeRequest {
    TimeOverrides overrides;
    std::optional<std::size_t> repeats;                  // unset: the manifest's [time] repeats
    std::optional<std::filesystem::path> workload_file;  // --workload, absolute
    bool pin = false;
    bool ncu = false;
    bool force = false;
    DeviceList devices = DeviceList::one(0);  // --devices, or --device as a list of one
};

// The GPU the time stage times on, for one workload or a set. Without a usable GPU here: with
// `may_keep` (not under --force, --pin or --ncu), nullopt, and `work` keeps a passed checkpoint made on
// a GPU host and copied here while its outputs verify, else stops for want of a GPU (stop_if_no_gpu:
// recorded in the run, the error saying how to go on); without `may_keep`, that stop at once.
// With several GPUs in `devices`, all of them, the first first.
std::optional<std::vector<DeviceFacts>> time_devices(StageWork &work, const RunDirectory &run,
                                                     const std::string &built_arch, const DeviceList &devices,
                                                     bool may_keep);

// The time stage for run_stage, on one workload.
StageWork time_stage_work(StageContext &context, const TimeRequest &request, const Reporter &reporter);

}  // namespace s2tp
