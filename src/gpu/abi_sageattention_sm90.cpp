// The `sageattention-sm90*` adapters: upstream SageAttention's wgmma kernel qk_int8_sv_f8_attn_kernel as
// the two host functions of csrc/qattn/qk_int_sv_f8_cuda_sm90.cu instantiate and launch it at upstream
// commit d1a57a5 (github.com/thu-ml/SageAttention): qk_int8_sv_f8_accum_f32_attn_inst_buf and
// qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf (the one core.py's sageattn() runs on sm_90). They
// differ only in fuse_v_scale, and so in whether V_scale is passed.
//
// Entries are found by their template arguments, read from the demangled names of the cubin's entries:
//   <CTA_Q, CTA_K, NUM_THREADS, HEAD_DIM, Q_GRAN, K_GRAN, DTypeOut, mask_mode, RETURN_LSE, fuse_v_scale>
// Both host functions instantiate <64, 128, 128, D, G, G, DTypeOut, mask, return_lse, <row>> with D 64 or
// 128 and G the granularity core.py's qk_quant_gran selects: per_thread (3, its default, what sageattn()
// uses) or per_warp (2). Each granularity is a row of its own, since it decides the quantized inputs
// (host_quantizer.h's sm90_recipe) as well as the entry. Template arguments after these 10 are ignored.
//
// The kernel reads Q, K and V through TMA: three `const __grid_constant__ CUtensorMap` parameters the
// host function encodes (create_tensor_map_4D, with the driver's cuTensorMapEncodeTiled), so the
// host-call library links libcuda where the GPU stages load it.
//
// Golden data and cubins are named per host function, "sm90_" + its name: both rows of a host function
// read the one cubin of qk_int_sv_f8_cuda_sm90.cu under that name.
#include "gpu/kernel_abi.h"
#include "gpu/upstream_launchers.h"

#include <algorithm>
#include <array>
#include <vector>

namespace s2tp {
namespace {

struct Sm90Launcher {
    const char *abi_name;  // the manifest's `abi`
    const char *file;      // "sm90_" + the host function's name in csrc/qattn/qk_int_sv_f8_cuda_sm90.cu
    bool fuse_v_scale;
    QkGranularity granularity;
};

constexpr Sm90Launcher kLaunchers[] = {
    {"sageattention-sm90-accum-f32", "sm90_qk_int8_sv_f8_accum_f32_attn_inst_buf", false, QkGranularity::per_thread},
    {"sageattention-sm90-accum-f32-fuse-v-scale", "sm90_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf", true,
     QkGranularity::per_thread},
    {"sageattention-sm90-accum-f32-per-warp", "sm90_qk_int8_sv_f8_accum_f32_attn_inst_buf", false,
     QkGranularity::per_warp},
    {"sageattention-sm90-accum-f32-fuse-v-scale-per-warp", "sm90_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf",
     true, QkGranularity::per_warp},
};

constexpr std::uint32_t kCtaQ = 64, kCtaK = 128, kThreads = 128;
// The template arguments an instance of the host function names, leading ones first (see the top of the file).
std::vector<TemplateArgument> template_arguments(const Sm90Launcher &launcher, const UpstreamInstance &instance) {
    return {unsigned_argument(kCtaQ),
            unsigned_argument(kCtaK),
            unsigned_argument(kThreads),
            unsigned_argument(instance.head_dim),
            granularity_argument(launcher.granularity),  // Q
            granularity_argument(launcher.granularity),  // K
            half_type_argument(instance.dtype),          // DTypeOut
            mask_argument(instance.causal),
            bool_argument(instance.return_lse),
            bool_argument(launcher.fuse_v_scale)};
}

// The kernel's parameter list, in order, as the host function passes it: what tells its entries apart.
std::vector<std::string> parameters(DType dtype) {
    std::vector<std::string> p = {"CUtensorMap_st",              "CUtensorMap_st", "CUtensorMap_st",  // Q, K, V
                                  "float*",                      "float*",         "float*",          // Q, K, V scales
                                  half_pointer_parameter(dtype), "float*"};                           // O, Lse
    p.insert(p.end(), 6, "unsigned int");  // 3 strides of O, qo_len, kv_len, num_kv_groups
    p.push_back("float");                  // sm_scale
    return p;
}

class SageAttentionSm90Abi : public UpstreamLauncherAbi {
public:
    explicit SageAttentionSm90Abi(const Sm90Launcher &launcher)
        : UpstreamLauncherAbi(launcher_of_row(launcher,
                                              host_function_launcher(launcher.file, "qk_int_sv_f8_cuda_sm90.cu"),
                                              "qk_int8_sv_f8_attn_kernel", template_arguments, parameters)),
          launcher_(launcher) {}
    QuantizationRecipe quantization(std::int64_t) const override { return sm90_recipe(launcher_.granularity); }
    std::string required_arch() const override { return "sm_90a"; }  // wgmma exists only there


protected:
    FusedV fused_v() const override { return {launcher_.fuse_v_scale, false}; }
    std::uint32_t threads_per_block(std::int64_t) const override { return kThreads; }
    // smem_Q + smem_K + smem_V in int8, as the host function computes it.
    std::size_t smem_bytes(std::int64_t head_dim) const override {
        return (kCtaQ + kCtaK + kCtaK) * static_cast<std::size_t>(head_dim);
    }

private:
    const Sm90Launcher &launcher_;
};

const KernelAbi &sm90_launcher_abi(std::size_t row) { return adapter_of_row<SageAttentionSm90Abi>(kLaunchers, row); }

}  // namespace

const KernelAbi &sageattention_sm90_accum_f32_abi() { return sm90_launcher_abi(0); }
const KernelAbi &sageattention_sm90_accum_f32_fuse_v_scale_abi() { return sm90_launcher_abi(1); }
const KernelAbi &sageattention_sm90_accum_f32_per_warp_abi() { return sm90_launcher_abi(2); }
const KernelAbi &sageattention_sm90_accum_f32_fuse_v_scale_per_warp_abi() { return sm90_launcher_abi(3); }

}  // namespace s2tp
