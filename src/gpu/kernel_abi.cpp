#include "gpu/kernel_abi.h"

#include "support/did_you_mean.h"
#include "support/errors.h"

namespace s2tp {

// ---- The registry: one line per adapter ----

const KernelAbi &sage2tp_abi();  // abi_sage2tp.cpp
// abi_sageattention_sm89.cpp: one per launcher .cu file of upstream's csrc/qattn
const KernelAbi &sageattention_sm89_abi();  // sm89_qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf.cu
const KernelAbi &sageattention_sm89_accum_f16_inst_buf_abi();
const KernelAbi &sageattention_sm89_accum_f32_abi();
const KernelAbi &sageattention_sm89_accum_f32_inst_buf_abi();
const KernelAbi &sageattention_sm89_accum_f32_fuse_v_scale_abi();
const KernelAbi &sageattention_sm89_accum_f32_fuse_v_scale_inst_buf_abi();
const KernelAbi &sageattention_sm89_accum_f32_fuse_v_scale_fuse_v_mean_abi();
// ... and each with per-thread Q/K (core.py's default qk_quant_gran)
const KernelAbi &sageattention_sm89_per_thread_abi();
const KernelAbi &sageattention_sm89_accum_f16_inst_buf_per_thread_abi();
const KernelAbi &sageattention_sm89_accum_f32_per_thread_abi();
const KernelAbi &sageattention_sm89_accum_f32_inst_buf_per_thread_abi();
const KernelAbi &sageattention_sm89_accum_f32_fuse_v_scale_per_thread_abi();
const KernelAbi &sageattention_sm89_accum_f32_fuse_v_scale_inst_buf_per_thread_abi();
const KernelAbi &sageattention_sm89_accum_f32_fuse_v_scale_fuse_v_mean_per_thread_abi();
// abi_sageattention_sm90.cpp: per host function of csrc/qattn/qk_int_sv_f8_cuda_sm90.cu and granularity
const KernelAbi &sageattention_sm90_accum_f32_abi();  // qk_int8_sv_f8_accum_f32_attn_inst_buf, per thread
const KernelAbi &sageattention_sm90_accum_f32_fuse_v_scale_abi();
const KernelAbi &sageattention_sm90_accum_f32_per_warp_abi();
const KernelAbi &sageattention_sm90_accum_f32_fuse_v_scale_per_warp_abi();
// abi_sageattention_sm80.cpp: per host function of csrc/qattn/qk_int_sv_f16_cuda_sm80.cu and granularity
const KernelAbi &sageattention_sm80_accum_f32_abi();  // qk_int8_sv_f16_accum_f32_attn, per thread
const KernelAbi &sageattention_sm80_accum_f16_abi();
const KernelAbi &sageattention_sm80_accum_f16_inst_buf_abi();
const KernelAbi &sageattention_sm80_accum_f16_fuse_v_mean_abi();
const KernelAbi &sageattention_sm80_accum_f32_per_warp_abi();
const KernelAbi &sageattention_sm80_accum_f16_per_warp_abi();
const KernelAbi &sageattention_sm80_accum_f16_inst_buf_per_warp_abi();
const KernelAbi &sageattention_sm80_accum_f16_fuse_v_mean_per_warp_abi();

namespace {

using AdapterFactory = const KernelAbi &(*)();
constexpr AdapterFactory kAdapters[] = {
    sage2tp_abi,
    sageattention_sm89_abi,
    sageattention_sm89_accum_f16_inst_buf_abi,
    sageattention_sm89_accum_f32_abi,
    sageattention_sm89_accum_f32_inst_buf_abi,
    sageattention_sm89_accum_f32_fuse_v_scale_abi,
    sageattention_sm89_accum_f32_fuse_v_scale_inst_buf_abi,
    sageattention_sm89_accum_f32_fuse_v_scale_fuse_v_mean_abi,
    sageattention_sm89_per_thread_abi,
    sageattention_sm89_accum_f16_inst_buf_per_thread_abi,
    sageattention_sm89_accum_f32_per_thread_abi,
    sageattention_sm89_accum_f32_inst_buf_per_thread_abi,
    sageattention_sm89_accum_f32_fuse_v_scale_per_thread_abi,
    sageattention_sm89_accum_f32_fuse_v_scale_inst_buf_per_thread_abi,
    sageattention_sm89_accum_f32_fuse_v_scale_fuse_v_mean_per_thread_abi,
    sageattention_sm90_accum_f32_abi,
    sageattention_sm90_accum_f32_fuse_v_scale_abi,
    sageattention_sm90_accum_f32_per_warp_abi,
    sageattention_sm90_accum_f32_fuse_v_scale_per_warp_abi,
    sageattention_sm80_accum_f32_abi,
    sageattention_sm80_accum_f16_abi,
    sageattention_sm80_accum_f16_inst_buf_abi,
    sageattention_sm80_accum_f16_fuse_v_mean_abi,
    sageattention_sm80_accum_f32_per_warp_abi,
    sageattention_sm80_accum_f16_per_warp_abi,
    sageattention_sm80_accum_f16_inst_buf_per_warp_abi,
    sageattention_sm80_accum_f16_fuse_v_mean_per_warp_abi,
};

}  // namespace

std::vector<std::string> kernel_abi_names() {
    std::vector<std::string> names;
    for (AdapterFactory adapter : kAdapters) names.push_back(adapter().name());
    return names;
}

const KernelAbi &kernel_abi(const std::string &name, const std::string &where) {
    for (AdapterFactory adapter : kAdapters)
        if (adapter().name() == name) return adapter();
    std::string known;
    for (const std::string &adapter : kernel_abi_names()) known += (known.empty() ? "" : ", ") + adapter;
    const std::string hint = did_you_mean(name, kernel_abi_names());
    fail(ExitCode::usage, where + ": unknown kernel ABI '" + name + "'" +
                              (hint.empty() ? "; the known adapters are " : hint + " The known adapters are ") + known);
}

// ---- Shared by every adapter ----

std::string attention_short_name(std::int64_t head_dim, DType dtype, bool causal) {
    return "hd" + std::to_string(head_dim) + "_" + (dtype == DType::f16 ? "f16" : "bf16") + "_" +
           (causal ? "causal" : "nomask");
}

AttentionBuffers attention_buffers(const AttentionProblem &problem, const DeviceQuantizedInputs &inputs,
                                   AttentionOutputs &outputs) {
    AttentionBuffers b;
    b.q_int8 = inputs.q_int8.get();
    b.k_int8 = inputs.k_int8.get();
    b.v_fp8 = inputs.v_fp8.get();
    b.q_scale = inputs.q_scale.as<const float>();
    b.k_scale = inputs.k_scale.as<const float>();
    b.v_scale = inputs.v_scale.as<const float>();
    b.v_mean = inputs.v_mean.size() > 0 ? inputs.v_mean.get() : nullptr;
    b.v_f16 = inputs.v_f16.size() > 0 ? inputs.v_f16.get() : nullptr;
    b.o = outputs.o.get();
    b.lse = problem.with_lse ? outputs.lse.as<float>() : nullptr;
    return b;
}

LoadedAttention::LoadedAttention(const KernelAbi &abi, const std::filesystem::path &cubin,
                                 const std::filesystem::path &host_library)
    : abi_(&abi) {
    if (abi.host_function().empty())
        module_.emplace(cubin);
    else
        library_.emplace(host_library);
}

std::string AttentionEntry::name() const { return kernel ? kernel->name() : library->function(); }

AttentionEntry find_attention_entry(const LoadedAttention &code, const AttentionProblem &problem) {
    AttentionEntry entry;
    if (const CubinModule *module = code.module())
        entry.kernel = module->function(code.abi().select_entry(problem, module->entry_names(), module->path().string()));
    else
        entry.library = code.library();
    return entry;
}

std::optional<HostCallResult> launch_attention(const AttentionEntry &entry, const AttentionLaunch &launch,
                                               GpuStream stream, bool poison_allocations) {
    if (entry.library) return entry.library->call(launch.host_arguments, stream, poison_allocations, launch.context);
    if (launch.set_smem_attribute) entry.kernel->set_max_dynamic_smem(launch.dynamic_smem_bytes, entry.kernel->name());
    entry.kernel->launch(launch.grid, launch.block, launch.dynamic_smem_bytes, launch.arguments, stream, launch.context);
    return std::nullopt;
}

std::optional<HostCallResult> launch_attention(const LoadedAttention &code, const AttentionProblem &problem,
                                               const DeviceQuantizedInputs &inputs, AttentionOutputs &outputs) {
    const AttentionEntry entry = find_attention_entry(code, problem);
    std::optional<HostCallResult> result =
        launch_attention(entry, code.abi().pack(problem, attention_buffers(problem, inputs, outputs)), nullptr, true);
    if (result && problem.with_lse) {
        const std::optional<s2tp_host_tensor> returned = entry.library->returned();
        if (!returned)
            fail(ExitCode::stop, "the host function " + entry.library->function() + " returned no LSE on " +
                                     problem.describe() + ", though it was asked for one (return_lse = 1)");
        const s2tp_host_tensor &lse = *returned;
        std::size_t elements = 1;
        for (int axis = 0; axis < lse.dims; ++axis) elements *= static_cast<std::size_t>(lse.sizes[axis]);
        if (lse.dtype != static_cast<std::int32_t>(HostDType::f32) || elements * sizeof(float) != outputs.lse.size())
            fail(ExitCode::stop, "the LSE the host function " + entry.library->function() + " returned on " +
                                     problem.describe() + " is not " + std::to_string(outputs.lse.size() / sizeof(float)) +
                                     " f32 values");
        copy_device_bytes(outputs.lse.get(), lse.data, outputs.lse.size());
    }
    return result;
}

}  // namespace s2tp
