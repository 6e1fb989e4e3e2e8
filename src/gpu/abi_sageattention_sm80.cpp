// The `sageattention-sm80*` adapters: upstream SageAttention's qk_int_sv_f16_attn_kernel (int8 QK, FP16
// PV) as the four host functions of csrc/qattn/qk_int_sv_f16_cuda_sm80.cu instantiate and launch it at
// upstream commit d1a57a5 (github.com/thu-ml/SageAttention): qk_int8_sv_f16_accum_f32_attn (the one
// core.py's sageattn() runs on sm_80), qk_int8_sv_f16_accum_f16_attn, qk_int8_sv_f16_accum_f16_attn_inst_buf
// and qk_int8_sv_f16_accum_f16_fuse_v_mean_attn (core.py's pv_accum_dtype "fp32", "fp16", "fp16+fp32"
// and "fp16" with smooth_v).
//
// The four are one function with different template arguments: the same checks, strides, grid
// (ceil(qo_len/128), num_qo_heads, batch), dynamic shared memory and parameter list; they differ in
// DTypeSVAccum, use_inst_buffer, fuse_v_mean (and so whether V_mean is passed) and WARP_Q (16 for the
// inst_buf launcher at head dim 128, so its block is (32, 8) rather than (32, 4)).
//
// Entries are found by their template arguments, read from the demangled names of the cubin's entries:
//   <CTA_Q, CTA_K, WARP_Q, WARP_K, head_dim, DTypeQK, Q_GRAN, K_GRAN, DTypeSVAccum, use_inst_buffer,
//    DTypeOut, DenominatorAccumUnit, mask_mode, return_lse, fuse_v_mean>
// Every launcher instantiates <128, 64, WARP_Q, 64, D, kInt8, G, G, <row>, <row>, DTypeOut, kTensorCore,
// mask, return_lse, <row>> with D 64 or 128 and G the granularity core.py's qk_quant_gran selects:
// per_thread (3, its default: the rows without a suffix) or per_warp (2, the "-per-warp" rows). Each
// granularity is a row of its own, since it decides the quantized inputs (host_quantizer.h's
// sm80_recipe) as well as the entry. Template arguments after these 15 are ignored.
//
// V is fp16 in the layout of K (core.py's v.to(torch.float16), or sub_mean's V minus its mean, the
// mean in the output dtype passed as V_mean for fuse_v_mean); there is no V scale.
//
// Golden data and cubins are named per host function, "sm80_" + its name: both rows of a host function
// read the one cubin of qk_int_sv_f16_cuda_sm80.cu under that name.
#include "gpu/kernel_abi.h"
#include "gpu/upstream_launchers.h"

#include <algorithm>
#include <array>
#include <vector>

namespace s2tp {
namespace {

struct Sm80Launcher {
    const char *abi_name;  // the manifest's `abi`
    const char *file;      // "sm80_" + the host function's name in csrc/qattn/qk_int_sv_f16_cuda_sm80.cu
    bool accumulates_in_f16;  // DTypeSVAccum half; float otherwise
    bool use_inst_buffer;     // also Q warps of 16 at head dim 128
    bool fuse_v_mean;
    QkGranularity granularity;
};

constexpr Sm80Launcher kLaunchers[] = {
    {"sageattention-sm80-accum-f32", "sm80_qk_int8_sv_f16_accum_f32_attn", false, false, false,
     QkGranularity::per_thread},
    {"sageattention-sm80-accum-f16", "sm80_qk_int8_sv_f16_accum_f16_attn", true, false, false,
     QkGranularity::per_thread},
    {"sageattention-sm80-accum-f16-inst-buf", "sm80_qk_int8_sv_f16_accum_f16_attn_inst_buf", false, true, false,
     QkGranularity::per_thread},
    {"sageattention-sm80-accum-f16-fuse-v-mean", "sm80_qk_int8_sv_f16_accum_f16_fuse_v_mean_attn", true, false, true,
     QkGranularity::per_thread},
    {"sageattention-sm80-accum-f32-per-warp", "sm80_qk_int8_sv_f16_accum_f32_attn", false, false, false,
     QkGranularity::per_warp},
    {"sageattention-sm80-accum-f16-per-warp", "sm80_qk_int8_sv_f16_accum_f16_attn", true, false, false,
     QkGranularity::per_warp},
    {"sageattention-sm80-accum-f16-inst-buf-per-warp", "sm80_qk_int8_sv_f16_accum_f16_attn_inst_buf", false, true,
     false, QkGranularity::per_warp},
    {"sageattention-sm80-accum-f16-fuse-v-mean-per-warp", "sm80_qk_int8_sv_f16_accum_f16_fuse_v_mean_attn", true,
     false, true, QkGranularity::per_warp},
};

constexpr std::uint32_t kCtaQ = 128, kCtaK = 64, kWarpK = 64;

// WARP_Q as the host function sets it: (HEAD_DIM == 64) ? 32 : 16 in the inst_buf launcher, else 32.
std::uint32_t warp_q(const Sm80Launcher &launcher, std::int64_t head_dim) {
    return launcher.use_inst_buffer && head_dim == 128 ? 16 : 32;
}

// The template arguments an instance of the host function names, leading ones first (see the top of the file).
std::vector<TemplateArgument> template_arguments(const Sm80Launcher &launcher, const UpstreamInstance &instance) {
    return {unsigned_argument(kCtaQ),
            unsigned_argument(kCtaK),
            unsigned_argument(warp_q(launcher, instance.head_dim)),
            unsigned_argument(kWarpK),
            unsigned_argument(instance.head_dim),
            {"(DataType)1", "kInt8"},                     // DTypeQK
            granularity_argument(launcher.granularity),  // Q
            granularity_argument(launcher.granularity),  // K
            launcher.accumulates_in_f16 ? half_type_argument(DType::f16) : TemplateArgument{"float", "float"},
            bool_argument(launcher.use_inst_buffer),
            half_type_argument(instance.dtype),  // DTypeOut
            {"(ComputeUnit)0", "kTensorCore"},   // DenominatorAccumUnit
            mask_argument(instance.causal),
            bool_argument(instance.return_lse),
            bool_argument(launcher.fuse_v_mean)};
}

// The kernel's parameter list, in order, as the host function passes it: what tells its entries apart.
std::vector<std::string> parameters(DType dtype) {
    const std::string out = half_pointer_parameter(dtype);
    std::vector<std::string> p = {"signed char*", "signed char*", "__half*", out, "float*",  // Q K V O Lse
                                  "float*",       "float*",       out};                     // Q, K scales, V_mean
    p.insert(p.end(), 15, "unsigned int");  // qo_len, kv_len, num_kv_groups, 12 strides
    p.push_back("float");                   // sm_scale
    return p;
}

class SageAttentionSm80Abi : public UpstreamLauncherAbi {
public:
    explicit SageAttentionSm80Abi(const Sm80Launcher &launcher)
        : UpstreamLauncherAbi(launcher_of_row(launcher,
                                              host_function_launcher(launcher.file, "qk_int_sv_f16_cuda_sm80.cu"),
                                              "qk_int_sv_f16_attn_kernel", template_arguments, parameters)),
          launcher_(launcher) {}

    QuantizationRecipe quantization(std::int64_t head_dim) const override {
        return sm80_recipe(launcher_.granularity, warp_q(launcher_, head_dim), launcher_.fuse_v_mean);
    }


protected:
    FusedV fused_v() const override { return {false, launcher_.fuse_v_mean}; }
    std::uint32_t threads_per_block(std::int64_t head_dim) const override { return 32 * threads_y(head_dim); }
    // max(smem_Q + smem_K in int8 + smem_V in half, smem_O in half), as the host function computes it.
    std::size_t smem_bytes(std::int64_t head_dim) const override {
        const std::size_t d = static_cast<std::size_t>(head_dim);
        return std::max(kCtaQ * d + kCtaK * d + kCtaK * d * 2, kCtaQ * d * 2);
    }

private:
    const Sm80Launcher &launcher_;

    // The block's y extent: (CTA_Q / WARP_Q) * (CTA_K / WARP_K) warps.
    std::uint32_t threads_y(std::int64_t head_dim) const {
        return (kCtaQ / warp_q(launcher_, head_dim)) * (kCtaK / kWarpK);
    }
};

const KernelAbi &sm80_launcher_abi(std::size_t row) { return adapter_of_row<SageAttentionSm80Abi>(kLaunchers, row); }

}  // namespace

const KernelAbi &sageattention_sm80_accum_f32_abi() { return sm80_launcher_abi(0); }
const KernelAbi &sageattention_sm80_accum_f16_abi() { return sm80_launcher_abi(1); }
const KernelAbi &sageattention_sm80_accum_f16_inst_buf_abi() { return sm80_launcher_abi(2); }
const KernelAbi &sageattention_sm80_accum_f16_fuse_v_mean_abi() { return sm80_launcher_abi(3); }
const KernelAbi &sageattention_sm80_accum_f32_per_warp_abi() { return sm80_launcher_abi(4); }
const KernelAbi &sageattention_sm80_accum_f16_per_warp_abi() { return sm80_launcher_abi(5); }
const KernelAbi &sageattention_sm80_accum_f16_inst_buf_per_warp_abi() { return sm80_launcher_abi(6); }
const KernelAbi &sageattention_sm80_accum_f16_fuse_v_mean_per_warp_abi() { return sm80_launcher_abi(7); }

}  // namespace s2tp
