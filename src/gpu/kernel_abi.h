// Kernel ABIs as adapters: how the GPU stages and build's resource table reach an attention kernel
// whatever calling convention it was written to. An adapter knows, for its kind of kernel:
//   - at build time, without a GPU: whether a compiled entry (its mangled name, as ptxas and the
//     cubin spell it) is one of the attention entries the GPU stages launch, its short report name,
//     its full demangled name, its threads per block and dynamic shared memory;
//   - at run time: what serves an AttentionProblem (a cubin entry, or a launcher's host function) and
//     what it is given: the packed launch of a cubin entry, or the host function's arguments.
// Inputs always come from sage2tp's quantization kernels (attention_launch.h), which produce the byte
// layouts every adapter's kernels read; outputs are compared byte for byte whatever the ABIs are.
//
// Usage:
//   const s2tp::KernelAbi &abi = s2tp::kernel_abi("sageattention-sm89", "experiment.toml [source] abi");
//   s2tp::LoadedAttention code(abi, built.cubin, built.host_library);
//   s2tp::AttentionEntry entry = s2tp::find_attention_entry(code, problem);
//   s2tp::AttentionLaunch launch = abi.pack(problem, s2tp::attention_buffers(problem, inputs, outputs));
//   s2tp::launch_attention(entry, launch);            // on the default stream; time loops reuse `launch`
//
// Two kinds of adapter. sage2tp's own kernels (extern "C" entries, kernels/sage2tp_abi.h) are launched
// from their cubin with the grid and parameters pack() computes. An upstream launcher is called: its
// host function, built with its launcher file into a host-call library (gpu/host_call.h), gets tensors
// that wrap sage2tp's buffers, and launches its kernel itself. pack() then says only how a problem maps
// to the host function's arguments; the launch is the user's code's.
//
// A new adapter is one file (src/gpu/abi_<name>.cpp, defining a KernelAbi and a function returning it)
// and one line of the registry table in kernel_abi.cpp. Launchers of one template that differ only in
// their template arguments share a file, one table row and one registry line per launcher
// (abi_sageattention_sm89.cpp).
#pragma once

#include "gpu/attention_launch.h"
#include "gpu/gpu_runtime.h"
#include "gpu/host_call.h"
#include "model/attention_problem.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// One compiled attention entry as build's resource table reports it.
struct AbiEntry {
    std::string short_name;  // "hd128_bf16_nomask": the same for every ABI, so tables compare across ABIs
    std::string full_name;   // the demangled name (an extern "C" entry's own name)
    int threads_per_block = 0;
    std::int64_t dynamic_smem_bytes = 0;
};

// "hd128_bf16_nomask": head dim, output dtype, mask.
std::string attention_short_name(std::int64_t head_dim, DType dtype, bool causal);

// The device addresses one attention launch reads and writes.
struct AttentionBuffers {
    const void *q_int8 = nullptr, *k_int8 = nullptr, *v_fp8 = nullptr;
    const float *q_scale = nullptr, *k_scale = nullptr, *v_scale = nullptr;
    const void *v_mean = nullptr;  // nullptr unless smooth_v; fp32, or V's dtype for fp16 V (v_mean_dtype)
    const void *v_f16 = nullptr;   // fp16 V (VFormat::f16); nullptr for e4m3 V
    void *o = nullptr;
    float *lse = nullptr;  // nullptr when the problem has with_lse off
};
AttentionBuffers attention_buffers(const AttentionProblem &problem, const DeviceQuantizedInputs &inputs,
                                   AttentionOutputs &outputs);

// What one launch of an attention kernel is given, packed once: the timed region launches it and does
// nothing else. A cubin entry (sage2tp's own ABI) takes the grid, block, shared memory and parameters;
// an upstream launcher's host function takes host_arguments and decides the rest itself.
struct AttentionLaunch {
    LaunchDims grid, block;
    std::size_t dynamic_smem_bytes = 0;
    // Set cudaFuncAttributeMaxDynamicSharedMemorySize to exactly dynamic_smem_bytes before launching,
    // as a launcher that always sets it does; otherwise it is raised only where more than 48 KiB is used.
    bool set_smem_attribute = false;
    KernelArguments arguments;
    HostArguments host_arguments;  // for a host function: its arguments in its parameter order
    std::string context;           // the problem, for error messages
};

class KernelAbi {
public:
    virtual ~KernelAbi() = default;
    // The manifest's `abi` value naming this adapter.
    virtual std::string name() const = 0;
    // Build time: nullopt for an entry the GPU stages do not launch through this adapter.
    virtual std::optional<AbiEntry> describe_entry(const std::string &mangled_name) const = 0;
    // The entry serving `problem` among a cubin's entry names (mangled). Throws Error(usage) naming the
    // cubin when none or several match, listing the candidates.
    virtual std::string select_entry(const AttentionProblem &problem, const std::vector<std::string> &entry_names,
                                     const std::string &cubin) const = 0;
    // The launch of the selected entry for `problem` on `buffers`.
    virtual AttentionLaunch pack(const AttentionProblem &problem, const AttentionBuffers &buffers) const = 0;
    // How this kernel's inputs are quantized for a problem of `head_dim` (upstream's Python, for an
    // upstream launcher: the sm80 inst_buf launcher's Q warps depend on the head dim).
    virtual QuantizationRecipe quantization(std::int64_t /*head_dim*/) const { return {}; }
    // The host function of the launcher file this adapter calls ("qk_int8_sv_f8_accum_f32_attn_inst_buf");
    // empty for kernels launched from their cubin (sage2tp's own ABI). The build links the launcher
    // file into a host-call library that exports it.
    virtual std::string host_function() const { return {}; }
    // The upstream launcher file whose host function this adapter calls, as a stem
    // ("sm89_qk_int8_sv_f8_accum_f32_attn" for csrc/qattn/sm89_qk_int8_sv_f8_accum_f32_attn.cu); empty
    // for kernels written to sage2tp's own ABI. Golden data and cubins are named after it.
    virtual std::string launcher_file() const { return {}; }
    // The one architecture the kernel can be compiled for ("sm_90a" for wgmma kernels), or empty when
    // any the build supports will do.
    virtual std::string required_arch() const { return {}; }
    // The kernel an output pin of this adapter's kernel belongs to ([workload.expected_sha256.KERNEL],
    // model/workload_set.h): its own name, which also says how its inputs are quantized; kernels that
    // give byte-identical outputs by construction share one.
    virtual std::string pinned_kernel() const { return name(); }
};

// The adapter called `name`; Error(usage) naming `where` and listing the known adapters otherwise.
const KernelAbi &kernel_abi(const std::string &name, const std::string &where);
std::vector<std::string> kernel_abi_names();

// One variant's attention code, loaded: its cubin, or for an adapter with a host function, the host-call
// library the build linked from the same launcher file (what the GPU stages call; it holds the same
// device code, so the cubin itself is not loaded).
class LoadedAttention {
public:
    // `host_library` is empty for an adapter without a host function.
    LoadedAttention(const KernelAbi &abi, const std::filesystem::path &cubin, const std::filesystem::path &host_library);
    const KernelAbi &abi() const { return *abi_; }
    const CubinModule *module() const { return module_ ? &*module_ : nullptr; }
    const HostCallLibrary *library() const { return library_ ? &*library_ : nullptr; }

private:
    const KernelAbi *abi_;
    std::optional<CubinModule> module_;
    std::optional<HostCallLibrary> library_;
};

// What serves one problem: the cubin entry the adapter selects, or the host function.
struct AttentionEntry {
    std::optional<Kernel> kernel;
    const HostCallLibrary *library = nullptr;
    // The cubin entry's mangled name, or the host function's name.
    std::string name() const;
};

AttentionEntry find_attention_entry(const LoadedAttention &code, const AttentionProblem &problem);
// Launches on `stream`: the cubin entry, or a call of the host function (which may also allocate from
// its pool, fill what it allocates with NaN under `poison_allocations`, and return a tensor). For a host
// call, its counts (what it launched: entry.library->launches()); nullopt for a cubin entry.
std::optional<HostCallResult> launch_attention(const AttentionEntry &entry, const AttentionLaunch &launch,
                                               GpuStream stream = nullptr, bool poison_allocations = false);
// Looks the entry up, packs and launches on the default stream, poisoning what a host function allocates.
// The LSE a host function returns is copied into outputs.lse.
std::optional<HostCallResult> launch_attention(const LoadedAttention &code, const AttentionProblem &problem,
                                               const DeviceQuantizedInputs &inputs, AttentionOutputs &outputs);

}  // namespace s2tp
