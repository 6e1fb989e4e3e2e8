// What the three GPU stages (sanitize, parity, time) and `sage2tp exec` share: finding the cubins the
// build stage made, claiming the GPU (or saying plainly that there is none), and producing the quantized
// inputs of a problem so that every stage feeds the kernels the same bytes for the same (problem, seed).
//
// Usage:
//   s2tp::BuiltKernels kernels = s2tp::built_kernels(run, s2tp::inspect_run(run));
//   s2tp::DeviceFacts device = s2tp::require_gpu("parity", device_index);   // exit 3 without a GPU
//   s2tp::CubinModule quantize(kernels.quantize);
//   s2tp::LoadedAttention baseline = s2tp::load_attention(kernels.baseline);
//   s2tp::GeneratedInputs host = s2tp::problem_inputs(problem, seed);
//   s2tp::DeviceQuantizedInputs inputs = s2tp::quantize_on_gpu(quantize, problem, host.q, host.k, host.v);
//   s2tp::KernelRun out = s2tp::run_attention(baseline, problem, inputs, "baseline");
#pragma once

#include "support/cuda_tools.h"

#include "gpu/attention_launch.h"
#include "gpu/kernel_abi.h"
#include "model/arch_limits.h"
#include "model/attention_problem.h"
#include "formats/checkpoint_store.h"
#include "model/device_sharding.h"
#include "model/experiment_manifest.h"
#include "gpu/gpu_runtime.h"
#include "model/input_generator.h"
#include "pipeline/run_directory.h"
#include "pipeline/stage_pipeline.h"
#include "formats/tensor.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// The cubins one run's build stage produced, as absolute paths inside the run directory.
// One variant's attention cubin, the adapter that launches it, and for an adapter that calls a host
// function, the host-call library built from the same launcher file.
struct BuiltAttention {
    std::string variant;                 // "baseline" or the candidate's name
    std::filesystem::path cubin;         // the variant's first kernel_sources entry ("<variant>:<source>")
    const KernelAbi *abi = nullptr;      // the adapter its manifest abi names
    std::filesystem::path host_library;  // host_call_artifact_key(); empty without a host function
};

struct BuiltKernels {
    BuiltAttention baseline;
    std::vector<BuiltAttention> candidates;  // in manifest order
    // The baseline's first support_sources entry ("baseline:<source>"); when the baseline lists none,
    // sage2tp's embedded quantize.cu built from trees/support ("support:kernels/quantize.cu").
    std::filesystem::path quantize;
    std::string arch;                 // the build checkpoint's figures.arch, e.g. "sm_90a"

    // The variant named `variant` ("baseline" or a candidate); Error(usage) naming the known ones.
    const BuiltAttention &variant(const std::string &variant) const;
    // Every variant, baseline first.
    std::vector<const BuiltAttention *> variants() const;
    // How each variant's adapter quantizes the inputs of a problem of `head_dim`, baseline first.
    std::vector<QuantizationRecipe> quantizations(std::int64_t head_dim) const;
    // What the baseline's output pins belong to: its adapter's pinned kernel, on the built arch.
    PinKey pin_key() const { return PinKey{baseline.abi->pinned_kernel(), arch}; }
};

// Reads the artifacts of the run's build checkpoint (keys "<variant>:<source>", run-relative path +
// sha256) for the sources the run's manifest names. `states` are inspect_run's, which trusts the build
// checkpoint only when every file it records still has its SHA-256. Throws Error(precondition) when
// the build checkpoint is missing, untrusted (a cubin missing or changed), failed or stale, or naming
// the key when an artifact is not recorded; Error(usage) for a manifest `abi` that names no adapter. Every GPU stage finds its cubins and their adapters here.
BuiltKernels built_kernels(const StageContext &context);
// The same for a process that reads a run another process holds (sage2tp exec under sanitize or ncu).
BuiltKernels built_kernels(const RunDirectory &run, const std::vector<StageState> &states, const Experiment &experiment);

// The GPU a stage runs on: probe_gpu, then select_device(device_index). Without a usable GPU throws
// Error(missing_tool, "<stage> needs an NVIDIA GPU, and none is usable here: <reason>").
DeviceFacts require_gpu(const std::string &stage, int device_index);
// The same for a stage of `run`, whose cubins are built for `built_arch`: without any GPU the error also
// says how to go on (no_gpu_next_step), and the stop is recorded in the run (record_stop) for status,
// report and compare.
DeviceFacts require_gpu(Stage stage, int device_index, const RunDirectory &run, const std::string &built_arch);
// The GPUs of `devices` (--devices, or --device as a list of one), each selected once so that its facts
// are read; Error(missing_tool) without a GPU, or naming a GPU the list names that is not visible and
// how many are. The calling thread's current GPU is the first's afterwards.
std::vector<DeviceFacts> require_gpus(const std::string &stage, const DeviceList &devices);
// The same for a stage of `run`: without any GPU, stop_if_no_gpu's stop first.
std::vector<DeviceFacts> require_gpus(Stage stage, const DeviceList &devices, const RunDirectory &run,
                                      const std::string &built_arch);
// The GPU models of `devices`, each once, comma-separated: a stage's tools.gpu.
std::string gpu_names(const std::vector<DeviceFacts> &devices);
// When no GPU is usable here: records the stop in `run` and throws require_gpu's error with the next
// step; otherwise returns.
void stop_if_no_gpu(Stage stage, const RunDirectory &run, const std::string &built_arch);
// What to do on a host without a GPU: a line saying what the run is built for, three commands (build for
// another GPU if need be, copy the run directory to the GPU host with rsync, `sage2tp run` it there),
// and the targets by GPU.
std::string no_gpu_next_step(const RunDirectory &run, const std::string &built_arch);

// Why the run's cubins, built for `built_arch` (the build checkpoint's figures.arch, e.g. "sm_121a"),
// cannot load on `device`, as one message naming both archs and the command that fixes it; "" when
// they match. A cubin holds SASS for exactly one arch, so the built target must be the one the table
// maps the GPU's compute capability to (sm_90 -> sm_90a). A GPU with no row in the table is named too.
std::string arch_mismatch(const std::string &stage, const std::string &built_arch, const DeviceFacts &device,
                          const ArchLimitsTable &table);

// Every GPU stage (sanitize, parity, time, exec) calls this before its first check: Error(precondition)
// with arch_mismatch's message (against data/arch_limits.toml) when the cubins were built for another GPU.
void require_kernels_for_device(const std::string &stage, const BuiltKernels &kernels, const DeviceFacts &device);


// The host q, k, v of a generated problem: generate_inputs(problem.shape, problem.dtype, seed).
// One function so that exec, parity and time can never disagree on what a (problem, seed) means.
GeneratedInputs problem_inputs(const AttentionProblem &problem, std::uint64_t seed);

// The host q, k, v of the workload: its tensor files (resolved against the manifest's directory at
// prepare time, checked against the problem's dtype and shapes) when it names them, else generated
// from its seed.
GeneratedInputs workload_inputs(const WorkloadSpec &workload);

// A variant's attention code, loaded (its cubin, or its host-call library).
LoadedAttention load_attention(const BuiltAttention &built);

// One launch's outputs, copied back. `lse` holds no bytes when the problem has with_lse off.
struct KernelRun {
    Tensor o;
    Tensor lse;
    std::vector<RecordedLaunch> launches;  // what a host function launched; empty for a cubin entry
};

// Allocates and poisons the outputs, launches the variant's attention for the problem through its
// ABI adapter on the default stream, waits, and downloads. `label` ("baseline"/"candidate") names the
// launch in error messages.
KernelRun run_attention(const LoadedAttention &attention, const AttentionProblem &problem,
                        const DeviceQuantizedInputs &inputs, const std::string &label);

// Counts elements of a floating tensor that are NaN: outputs the kernel never wrote still hold the
// poison pattern (0xFF bytes, a NaN), and the generator never makes inputs whose outputs are NaN.
std::int64_t count_nan(const Tensor &tensor);

}  // namespace s2tp
