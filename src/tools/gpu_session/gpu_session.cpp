#include "tools/gpu_session/gpu_session.h"

#include "pipeline/file_artifact.h"

#include "support/data_paths.h"
#include "support/errors.h"
#include "support/file_io.h"
#include "support/hashing.h"
#include "support/process_runner.h"
#include "tools/kernel_build.h"
#include "formats/tensor_io.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <system_error>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

// The artifact the build checkpoint records under `key` ("<variant>:<source>" for a cubin,
// host_call_artifact_key() for a host-call library). Not hashed here: inspect_run checked every artifact
// the checkpoint records against its SHA-256 and trusts the checkpoint only when all are intact.
fs::path recorded_artifact(const RunDirectory &run, const Checkpoint &build, const std::string &key,
                           const std::string &what) {
    const std::optional<FileArtifact> recorded = FileArtifact::from_toml(build.artifacts[key]);
    if (!recorded || recorded->path.empty() || recorded->sha256.empty())
        fail(ExitCode::precondition, "the build checkpoint records no " + what + " for " + key + "; run 'sage2tp build' again");
    return run.resolve(recorded->path);
}

fs::path recorded_cubin(const RunDirectory &run, const Checkpoint &build, const std::string &variant,
                        const std::string &source) {
    return recorded_artifact(run, build, variant + ":" + source, "cubin");
}

// A variant's attention: its cubin, and the host-call library when its adapter calls a host function.
BuiltAttention built_attention(const RunDirectory &run, const Checkpoint &build, const std::string &variant,
                               const SourceSpec &source, const KernelAbi &abi) {
    const std::string &file = source.kernel_sources.front();
    BuiltAttention built{variant, recorded_cubin(run, build, variant, file), &abi, {}};
    if (!abi.host_function().empty())
        built.host_library = recorded_artifact(run, build, host_call_artifact_key(variant, file), "host-call library");
    return built;
}

// A tensor of a workload file: the file's only tensor, or the one named after its role ("q", "k",
// "v") in a .safetensors file holding several.
Tensor load_workload_tensor(const std::string &file, const std::string &role, const TensorRequest &request) {
    const fs::path path(file);
    if (path.extension() != ".safetensors") return load_tensor(path, request);
    std::map<std::string, Tensor> all = read_safetensors(path, request.require_finite);
    auto chosen = all.size() == 1 ? all.begin() : all.find(role);
    if (chosen == all.end())
        fail(ExitCode::usage, file + ": holds " + std::to_string(all.size()) + " tensors and none is named '" + role +
                                  "', so the workload's " + role + " tensor is ambiguous");
    adopt_requested_dtype(chosen->second, request);
    check_tensor(chosen->second, request, file + " (" + chosen->first + ")");
    return std::move(chosen->second);
}

}  // namespace

BuiltKernels built_kernels(const StageContext &context) {
    return built_kernels(context.run(), context.states(), context.experiment());
}

BuiltKernels built_kernels(const RunDirectory &run, const std::vector<StageState> &states, const Experiment &experiment) {
    const StageState &state = states[static_cast<std::size_t>(Stage::build)];
    const std::string fix = "; run 'sage2tp build' first";
    if (!state.read.checkpoint)
        fail(ExitCode::precondition, "the build checkpoint is " +
                                         (state.read.exists ? state.stale_reason : std::string("missing")) + fix);
    if (state.read.checkpoint->status != StageStatus::passed)
        fail(ExitCode::precondition, "the build checkpoint " + to_string(state.read.checkpoint->status) + fix);
    if (!state.fresh) fail(ExitCode::precondition, "the build checkpoint is " + state.stale_reason + fix);
    const Checkpoint &build = *state.read.checkpoint;
    const std::string manifest = run.relative(run.manifest());
    BuiltKernels kernels;
    kernels.baseline = built_attention(run, build, "baseline", experiment.baseline_source,
                                       kernel_abi(experiment.baseline_abi, manifest + " [source] abi"));
    for (const CandidateSpec &c : experiment.candidates)
        kernels.candidates.push_back(
            built_attention(run, build, c.name, c.source, kernel_abi(c.abi, manifest + " candidate " + c.name + " abi")));
    kernels.quantize = experiment.needs_support_tree()
                           ? recorded_cubin(run, build, "support", embedded_quantize_source())
                           : recorded_cubin(run, build, "baseline", experiment.baseline_source.support_sources.front());
    kernels.arch = build.figures["arch"].value_or(std::string());
    return kernels;
}

const BuiltAttention &BuiltKernels::variant(const std::string &name) const {
    if (name == baseline.variant) return baseline;
    std::string known = baseline.variant;
    for (const BuiltAttention &c : candidates) {
        if (c.variant == name) return c;
        known += ", " + c.variant;
    }
    fail(ExitCode::usage, "the run has no variant named '" + name + "' (it has " + known + ")");
}

std::vector<const BuiltAttention *> BuiltKernels::variants() const {
    std::vector<const BuiltAttention *> all{&baseline};
    for (const BuiltAttention &candidate : candidates) all.push_back(&candidate);
    return all;
}

std::vector<QuantizationRecipe> BuiltKernels::quantizations(std::int64_t head_dim) const {
    std::vector<QuantizationRecipe> recipes;
    for (const BuiltAttention *built : variants()) {
        if (!built->abi) fail(ExitCode::internal, "the variant " + built->variant + " has no kernel ABI adapter");
        recipes.push_back(built->abi->quantization(head_dim));
    }
    return recipes;
}

DeviceFacts require_gpu(const std::string &stage, int device_index) {
    const GpuProbe probe = probe_gpu();
    if (!probe.available)
        fail(ExitCode::missing_tool, stage + " needs an NVIDIA GPU, and none is usable here: " + probe.reason);
    if (device_index < 0 || device_index >= probe.device_count)
        fail(ExitCode::missing_tool, stage + " needs an NVIDIA GPU, and none is usable here: --device " +
                                         std::to_string(device_index) + " asks for a GPU that does not exist (" +
                                         std::to_string(probe.device_count) + " visible)");
    return select_device(device_index);
}

std::string no_gpu_next_step(const RunDirectory &run, const std::string &built_arch) {
    const std::string dir = run.root().string();
    const std::string id = run.root().filename().string();
    const ArchLimitsTable table = load_arch_limits(arch_limits_table().string());
    std::string gpus;
    try {
        gpus = resolve_arch(table, built_arch).gpus;
    } catch (const Error &) {  // a build target the table does not know: the steps hold all the same
    }
    return "to go on where a GPU is (this run is built for " + built_arch + (gpus.empty() ? "" : ", for " + gpus) +
           "):\n  sage2tp build --run " + dir + " --arch ARCH    (only for another GPU)\n  rsync -a " + dir +
           "/ HOST:runs/" + id + "/\n  sage2tp run --run runs/" + id + "    (on HOST)\nARCH: " + targets_by_gpu(table);
}

void stop_if_no_gpu(Stage stage, const RunDirectory &run, const std::string &built_arch) {
    const GpuProbe probe = probe_gpu();
    if (probe.available) return;
    const std::string next = no_gpu_next_step(run, built_arch);
    const std::string message = stage_name(stage) + " needs an NVIDIA GPU, and none is usable here: " + probe.reason + "\n" + next;
    record_stop(run, StageStop{stage, "no GPU", message, next, utc_now()});
    fail(ExitCode::missing_tool, message);
}

DeviceFacts require_gpu(Stage stage, int device_index, const RunDirectory &run, const std::string &built_arch) {
    stop_if_no_gpu(stage, run, built_arch);
    return require_gpu(stage_name(stage), device_index);
}

std::vector<DeviceFacts> require_gpus(const std::string &stage, const DeviceList &devices) {
    const GpuProbe probe = probe_gpu();
    if (!probe.available)
        fail(ExitCode::missing_tool, stage + " needs an NVIDIA GPU, and none is usable here: " + probe.reason);
    std::vector<int> indices;
    try {
        indices = visible_devices(devices, probe.device_count);
    } catch (const Error &e) {
        fail(e.code(), stage + ": " + e.what());
    }
    // The first last, so that it is the one left current.
    std::vector<DeviceFacts> facts(indices.size());
    for (std::size_t i = indices.size(); i-- > 0;) facts[i] = select_device(indices[i]);
    return facts;
}

std::vector<DeviceFacts> require_gpus(Stage stage, const DeviceList &devices, const RunDirectory &run,
                                      const std::string &built_arch) {
    stop_if_no_gpu(stage, run, built_arch);
    return require_gpus(stage_name(stage), devices);
}

std::string gpu_names(const std::vector<DeviceFacts> &devices) {
    std::vector<std::string> names;
    for (const DeviceFacts &device : devices)
        if (std::find(names.begin(), names.end(), device.name) == names.end()) names.push_back(device.name);
    std::string text;
    for (const std::string &name : names) text += (text.empty() ? "" : ", ") + name;
    return text;
}

std::string arch_mismatch(const std::string &stage, const std::string &built_arch, const DeviceFacts &device,
                          const ArchLimitsTable &table) {
    const std::string plain = device.arch();
    const std::string gpu = "GPU " + std::to_string(device.index) + " (" + device.name + ", " + plain + ")";
    auto row = table.find(plain);
    if (row == table.end()) {
        std::string supported;
        for (const auto &[name, limits] : table) supported += (supported.empty() ? "" : ", ") + limits.target;
        return stage + ": " + gpu + " is not an arch sage2tp supports (data/arch_limits.toml has " + supported +
               "), and the run's kernels were built for " + (built_arch.empty() ? "an unrecorded arch" : built_arch) +
               "; run on one of those GPUs";
    }
    const std::string &target = row->second.target;
    if (built_arch == target) return "";
    return stage + ": the run's kernels were built for " + (built_arch.empty() ? "an unrecorded arch" : built_arch) +
           ", but " + gpu + " runs " + target + " cubins only, so no check would mean anything; rebuild with "
           "'sage2tp build --arch " + target + " --force' (or '--arch auto')";
}

void require_kernels_for_device(const std::string &stage, const BuiltKernels &kernels, const DeviceFacts &device) {
    const std::string message = arch_mismatch(stage, kernels.arch, device, load_arch_limits(arch_limits_table().string()));
    if (!message.empty()) fail(ExitCode::precondition, message);
}

GeneratedInputs problem_inputs(const AttentionProblem &problem, std::uint64_t seed) {
    problem.validate();
    return generate_inputs(problem.shape, problem.dtype, seed);
}

GeneratedInputs workload_inputs(const WorkloadSpec &workload) {
    if (!workload.q_file) return problem_inputs(workload.problem, workload.seed);
    workload.problem.validate();
    TensorRequest q_request, kv_request;
    q_request.dtype = kv_request.dtype = workload.problem.dtype;
    q_request.shape = workload.problem.shape.q_shape();
    kv_request.shape = workload.problem.shape.kv_shape();
    GeneratedInputs inputs;
    inputs.q = load_workload_tensor(*workload.q_file, "q", q_request);
    inputs.k = load_workload_tensor(*workload.k_file, "k", kv_request);
    inputs.v = load_workload_tensor(*workload.v_file, "v", kv_request);
    return inputs;
}

LoadedAttention load_attention(const BuiltAttention &built) {
    return LoadedAttention(*built.abi, built.cubin, built.host_library);
}

KernelRun run_attention(const LoadedAttention &attention, const AttentionProblem &problem,
                        const DeviceQuantizedInputs &inputs, const std::string &label) {
    AttentionOutputs outputs = allocate_outputs(problem, label);
    poison_outputs(outputs);
    const std::optional<HostCallResult> call = launch_attention(attention, problem, inputs, outputs);
    synchronize(label + " attention, " + problem.describe());
    KernelRun run;
    run.o = download_output(problem, outputs);
    if (problem.with_lse) run.lse = download_lse(problem, outputs);
    if (call) run.launches = attention.library()->launches();
    return run;
}

std::int64_t count_nan(const Tensor &tensor) {
    std::int64_t nan = 0;
    const std::int64_t n = tensor.numel();
    for (std::int64_t i = 0; i < n; ++i)
        if (std::isnan(tensor.value_at(i))) ++nan;
    return nan;
}

}  // namespace s2tp
