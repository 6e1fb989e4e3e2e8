// The `sageattention-sm89*` adapters: upstream SageAttention's qk_int_sv_f8_attn_kernel template
// (csrc/qattn/qk_int_sv_f8_cuda_sm89.cuh) as each of its seven launcher files in csrc/qattn,
// sm89_qk_int8_sv_f8_<launcher>.cu, instantiates and launches it at upstream commit d1a57a5
// (github.com/thu-ml/SageAttention).
//
// The seven host functions are one function with different template arguments: the same checks,
// strides, grid (ceil(qo_len/128), num_qo_heads, batch at d1a57a5), block, dynamic shared memory and
// parameter list; they differ in use_inst_buffer, fuse_v_scale, fuse_v_mean and use_pv_fp16_accu, and
// so in which of value_scale and value_mean they take. So they share this file: one row of kLaunchers
// and one registry line (kernel_abi.cpp) each, rather than seven copies of one adapter. The GPU stages
// call the host function of the user's file (upstream_launchers.h), which launches as it sees fit.
//
// Entries are found by their template arguments, read from the demangled names of the cubin's entries:
//   <CTA_Q, CTA_K, WARP_Q, WARP_K, head_dim, DTypeQK, Q_GRAN, K_GRAN, DTypeSVAccum, use_inst_buffer,
//    DTypeOut, DenominatorAccumUnit, mask_mode, return_lse, fuse_v_scale, fuse_v_mean, use_pv_fp16_accu>
// Every launcher instantiates <128, 64, 32, 64, D, kInt8, G, G, float, <row>, DTypeOut, kCudaCore,
// mask, return_lse, <row>, <row>, <row>> with D 64 or 128 and G the quantization granularity it is
// given: per warp (kPerWarp = 2, core.py's qk_quant_gran="per_warp", the rows without a suffix) or per
// thread (kPerThread = 3, core.py's default, Triton's quantizer: the "-per-thread" rows). Template
// arguments after these 17 are ignored, so a patch that adds a trailing option still resolves.
//
// Inputs, as sageattention/core.py prepares them for each launcher: per_channel_fp8 with
// scale_max 2.25 for FP16 PV accumulation (pv_accum_dtype "fp32+fp16") and 448 otherwise, and
// smooth_v (V minus its mean, the mean passed as V_mean) for the fuse_v_mean launcher. core.py never
// calls the three launchers without fuse_v_scale; their rows use the scale_max of their accumulation.
#include "gpu/kernel_abi.h"
#include "gpu/upstream_launchers.h"

#include <algorithm>
#include <array>
#include <vector>

namespace s2tp {
namespace {

// One launcher file: what it fixes, as its `auto kernel_func = qk_int_sv_f8_attn_kernel<...>` line spells it.
struct Sm89Launcher {
    const char *abi_name;  // the manifest's `abi`
    const char *file;      // csrc/qattn/<file>.cu, whose host function is <file> less "sm89_"
    bool use_inst_buffer, fuse_v_scale, fuse_v_mean, use_pv_fp16_accu;
    QkGranularity granularity = QkGranularity::per_warp;
};

constexpr Sm89Launcher kLaunchers[] = {
    {"sageattention-sm89", "sm89_qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf", true, true, false, true},
    {"sageattention-sm89-accum-f16-inst-buf", "sm89_qk_int8_sv_f8_accum_f16_attn_inst_buf", true, false, false, true},
    {"sageattention-sm89-accum-f32", "sm89_qk_int8_sv_f8_accum_f32_attn", false, false, false, false},
    {"sageattention-sm89-accum-f32-inst-buf", "sm89_qk_int8_sv_f8_accum_f32_attn_inst_buf", true, false, false, false},
    {"sageattention-sm89-accum-f32-fuse-v-scale", "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn", false, true, false,
     false},
    {"sageattention-sm89-accum-f32-fuse-v-scale-inst-buf", "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf",
     true, true, false, false},
    {"sageattention-sm89-accum-f32-fuse-v-scale-fuse-v-mean",
     "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_fuse_v_mean_attn", false, true, true, false},
    // The same launchers with core.py's default per-thread Q/K.
    {"sageattention-sm89-per-thread", "sm89_qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf", true, true, false,
     true, QkGranularity::per_thread},
    {"sageattention-sm89-accum-f16-inst-buf-per-thread", "sm89_qk_int8_sv_f8_accum_f16_attn_inst_buf", true, false,
     false, true, QkGranularity::per_thread},
    {"sageattention-sm89-accum-f32-per-thread", "sm89_qk_int8_sv_f8_accum_f32_attn", false, false, false, false,
     QkGranularity::per_thread},
    {"sageattention-sm89-accum-f32-inst-buf-per-thread", "sm89_qk_int8_sv_f8_accum_f32_attn_inst_buf", true, false,
     false, false, QkGranularity::per_thread},
    {"sageattention-sm89-accum-f32-fuse-v-scale-per-thread", "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn", false,
     true, false, false, QkGranularity::per_thread},
    {"sageattention-sm89-accum-f32-fuse-v-scale-inst-buf-per-thread",
     "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf", true, true, false, false, QkGranularity::per_thread},
    {"sageattention-sm89-accum-f32-fuse-v-scale-fuse-v-mean-per-thread",
     "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_fuse_v_mean_attn", false, true, true, false, QkGranularity::per_thread},
};

constexpr std::uint32_t kCtaQ = 128, kCtaK = 64, kWarpQ = 32, kWarpK = 64;

// The template arguments an instance of the launcher names, leading ones first (see the top of the file).
std::vector<TemplateArgument> template_arguments(const Sm89Launcher &launcher, const UpstreamInstance &instance) {
    return {unsigned_argument(kCtaQ),
            unsigned_argument(kCtaK),
            unsigned_argument(kWarpQ),
            unsigned_argument(kWarpK),
            unsigned_argument(instance.head_dim),
            {"(DataType)1", "kInt8"},                     // DTypeQK
            granularity_argument(launcher.granularity),  // Q
            granularity_argument(launcher.granularity),  // K
            {"float", "float"},                          // DTypeSVAccum
            bool_argument(launcher.use_inst_buffer),
            half_type_argument(instance.dtype),  // DTypeOut
            {"(ComputeUnit)1", "kCudaCore"},     // DenominatorAccumUnit
            mask_argument(instance.causal),
            bool_argument(instance.return_lse),
            bool_argument(launcher.fuse_v_scale),
            bool_argument(launcher.fuse_v_mean),
            bool_argument(launcher.use_pv_fp16_accu)};
}

// The kernel's parameter list, in order, as the launcher passes it: what tells its entries apart.
std::vector<std::string> parameters(DType dtype) {
    std::vector<std::string> p = {"signed char*", "signed char*", "signed char*", half_pointer_parameter(dtype),
                                  "float*",       "float*",       "float*",       "float*",
                                  "float*"};  // Q K V O Lse, scales, V_mean
    p.insert(p.end(), 15, "unsigned int");  // qo_len, kv_len, num_kv_groups, 12 strides
    p.push_back("float");                   // sm_scale
    return p;
}

class SageAttentionSm89Abi : public UpstreamLauncherAbi {
public:
    explicit SageAttentionSm89Abi(const Sm89Launcher &launcher)
        : UpstreamLauncherAbi(launcher_of_row(launcher,
                                              std::string("the launcher of csrc/qattn/") + launcher.file + ".cu",
                                              "qk_int_sv_f8_attn_kernel", template_arguments, parameters)),
          launcher_(launcher) {}

    QuantizationRecipe quantization(std::int64_t) const override {
        QuantizationRecipe recipe;
        recipe.qk.granularity = launcher_.granularity;
        recipe.v_scale_max = launcher_.use_pv_fp16_accu ? S2TP_V_SCALE_MAX_FP16_ACCUM : S2TP_V_SCALE_MAX_E4M3;
        recipe.smooth_v = launcher_.fuse_v_mean;
        return recipe;
    }


protected:
    FusedV fused_v() const override { return {launcher_.fuse_v_scale, launcher_.fuse_v_mean}; }
    std::uint32_t threads_per_block(std::int64_t) const override { return 32 * (kCtaQ / kWarpQ) * (kCtaK / kWarpK); }
    // max(smem_Q + smem_K + smem_V in int8, smem_O in half), as the launcher computes it.
    std::size_t smem_bytes(std::int64_t head_dim) const override {
        const std::size_t d = static_cast<std::size_t>(head_dim);
        return std::max(kCtaQ * d + kCtaK * d + kCtaK * d, kCtaQ * d * 2);
    }

private:
    const Sm89Launcher &launcher_;
};

const KernelAbi &sm89_launcher_abi(std::size_t row) { return adapter_of_row<SageAttentionSm89Abi>(kLaunchers, row); }

}  // namespace

const KernelAbi &sageattention_sm89_abi() { return sm89_launcher_abi(0); }
const KernelAbi &sageattention_sm89_accum_f16_inst_buf_abi() { return sm89_launcher_abi(1); }
const KernelAbi &sageattention_sm89_accum_f32_abi() { return sm89_launcher_abi(2); }
const KernelAbi &sageattention_sm89_accum_f32_inst_buf_abi() { return sm89_launcher_abi(3); }
const KernelAbi &sageattention_sm89_accum_f32_fuse_v_scale_abi() { return sm89_launcher_abi(4); }
const KernelAbi &sageattention_sm89_accum_f32_fuse_v_scale_inst_buf_abi() { return sm89_launcher_abi(5); }
const KernelAbi &sageattention_sm89_accum_f32_fuse_v_scale_fuse_v_mean_abi() { return sm89_launcher_abi(6); }
const KernelAbi &sageattention_sm89_per_thread_abi() { return sm89_launcher_abi(7); }
const KernelAbi &sageattention_sm89_accum_f16_inst_buf_per_thread_abi() { return sm89_launcher_abi(8); }
const KernelAbi &sageattention_sm89_accum_f32_per_thread_abi() { return sm89_launcher_abi(9); }
const KernelAbi &sageattention_sm89_accum_f32_inst_buf_per_thread_abi() { return sm89_launcher_abi(10); }
const KernelAbi &sageattention_sm89_accum_f32_fuse_v_scale_per_thread_abi() { return sm89_launcher_abi(11); }
const KernelAbi &sageattention_sm89_accum_f32_fuse_v_scale_inst_buf_per_thread_abi() { return sm89_launcher_abi(12); }
const KernelAbi &sageattention_sm89_accum_f32_fuse_v_scale_fuse_v_mean_per_thread_abi() { return sm89_launcher_abi(13); }

}  // namespace s2tp
