#include "gpu/kernel_abi.h"

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
    fail(ExitCode::usage, where + ": unknown kernel ABI '" + name + "'; the known adapters are " + known);
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

Kernel find_attention_kernel(const KernelAbi &abi, const CubinModule &module, const AttentionProblem &problem) {
    return module.function(abi.select_entry(problem, module.entry_names(), module.path().string()));
}

void launch_attention(const Kernel &kernel, const AttentionLaunch &launch, GpuStream stream) {
    if (launch.set_smem_attribute) kernel.set_max_dynamic_smem(launch.dynamic_smem_bytes, kernel.name());
    kernel.launch(launch.grid, launch.block, launch.dynamic_smem_bytes, launch.arguments, stream, launch.context);
}

void launch_attention(const KernelAbi &abi, const CubinModule &module, const AttentionProblem &problem,
                      const DeviceQuantizedInputs &inputs, AttentionOutputs &outputs) {
    const Kernel kernel = find_attention_kernel(abi, module, problem);
    launch_attention(kernel, abi.pack(problem, attention_buffers(problem, inputs, outputs)));
}

}  // namespace s2tp
