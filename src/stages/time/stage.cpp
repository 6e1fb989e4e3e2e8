#include "stages/time/stage.h"

#include "stages/time/pin.h"
#include "stages/time/print.h"
#include "stages/time/workload.h"
#include "support/errors.h"
#include "tools/gpu_session/gpu_session.h"

namespace s2tp {

std::optional<std::vector<DeviceFacts>> time_devices(StageWork &work, const RunDirectory &run,
                                                     const std::string &built_arch, const DeviceList &devices,
                                                     bool may_keep) {
    try {
        return require_gpus("time", devices);
    } catch (const Error &e) {
        if (e.code() != ExitCode::missing_tool) throw;
        if (!may_keep) {
            stop_if_no_gpu(Stage::time, run, built_arch);
            throw;
        }
        // A run timed on a GPU host and copied back stays up to date here; anything else needs the GPU.
        work.unavailable = e;
        work.keep_reason = "no GPU here to time on again";
        work.stop_unavailable = [&run, built_arch] { stop_if_no_gpu(Stage::time, run, built_arch); };
        return std::nullopt;
    }
}

StageWork time_stage_work(StageContext &context, const TimeRequest &request, const Reporter &reporter) {
    const RunDirectory &run = context.run();
    const ResolvedTimeInputs resolved =
        resolve_time_inputs(run, context.states(), context.experiment(), request.overrides, request.workload_file);
    StageWork work;
    work.stage = Stage::time;
    work.force = request.force || request.pin;
    work.verify_outputs = [expected = resolved.expected_sha256, key = resolved.kernels.pin_key()](const Checkpoint &c) {
        return verify_time_outputs(c, expected, key);
    };
    work.summarize = print_time_checkpoint;
    const std::optional<std::vector<DeviceFacts>> gpus = time_devices(
        work, run, resolved.kernels.arch, request.devices, !request.force && !request.pin && !request.ncu);
    if (!gpus) return work;
    for (const DeviceFacts &gpu : *gpus) require_kernels_for_device("time", resolved.kernels, gpu);
    const Experiment &experiment = resolved.experiment;
    const std::size_t repeats = request.repeats.value_or(static_cast<std::size_t>(experiment.repeats));
    const DeviceFacts &device = gpus->front();
    const TimeStageInputs inputs{
        run, resolved.workload, request.workload_file, resolved.kernels, device, resolved.settings, repeats,
        resolved.expected_sha256, request.pin,
        /*record_first_pin=*/!resolved.expected_sha256 && !request.pin && !request.workload_file, request.ncu,
        experiment.ncu_metrics, experiment.ncu_seq_len, device.index, time_accuracy(experiment),
        gpus->size() > 1 ? *gpus : std::vector<DeviceFacts>{}, "time", between_process_for(device)};
    work.add_inputs = [inputs](Fingerprint &f) { add_time_inputs(f, inputs); };
    work.run = [inputs, &reporter] { return time_workload(inputs, reporter).stage_result(); };
    return work;
}

}  // namespace s2tp
