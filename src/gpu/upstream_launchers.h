// What the adapters of upstream SageAttention's launchers (abi_sageattention_sm89.cpp,
// abi_sageattention_sm90.cpp, abi_sageattention_sm80.cpp) share: the arguments every SageAttention
// host function takes (q, k, v, o, the Q/K scales, the V tensors it fuses, tensor_layout, is_causal,
// qk_quant_gran, sm_scale, return_lse), a template argument in its demangled and its source spelling,
// reading what an entry's demangled name says about the problem it serves, and the choice of the one
// entry of a cubin that serves a problem (for build's resource table), with the message that lists the
// candidates when none or several do. UpstreamLauncherAbi puts these together: a family of launchers
// gives each of its adapters what tells that launcher apart (an UpstreamLauncher: names, kernel
// template, template arguments, parameters) and keeps only its quantization, the V tensors its host
// function takes, and the launch geometry build's table reports before any GPU has run it.
#pragma once

#include "gpu/kernel_abi.h"
#include "model/attention_problem.h"
#include "model/host_quantizer.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace s2tp {

// One template argument of a launcher's kernel, spelled twice: as the demangler prints it in a cubin
// entry's name, which is what selects the entry, and as upstream's launcher writes it, which is what the
// message says when no entry or several serve a problem.
struct TemplateArgument {
    std::string demangled;  // "(MaskMode)1"
    std::string source;     // "kCausal"
};
TemplateArgument unsigned_argument(std::int64_t value);           // {"128u", "128"}
TemplateArgument bool_argument(bool value);                       // {"true", "true"}
TemplateArgument granularity_argument(QkGranularity granularity);  // kPerWarp (2) or kPerThread (3)
// An f16 or bf16 type argument: {"__half", "half"} or {"__nv_bfloat16", "nv_bfloat16"} (upstream's
// half and nv_bfloat16 are typedefs of them).
TemplateArgument half_type_argument(DType dtype);
TemplateArgument mask_argument(bool causal);  // {"(MaskMode)1", "kCausal"} or {"(MaskMode)0", "kNone"}
// "__half*" or "__nv_bfloat16*": a parameter of that dtype, as the demangler prints it.
std::string half_pointer_parameter(DType dtype);

// What an entry's name says about the problem it serves.
struct UpstreamInstance {
    std::string demangled;
    std::int64_t head_dim = 0;
    DType dtype = DType::bf16;
    bool causal = false;
    bool return_lse = false;
};

// What tells one upstream launcher's entries apart from every other's, given to UpstreamLauncherAbi.
struct UpstreamLauncher {
    std::string abi_name;         // the manifest's `abi`
    std::string file;             // KernelAbi::launcher_file()
    std::string launcher;         // "the launcher of csrc/qattn/<file>.cu": where upstream launches it
    std::string kernel_template;  // "qk_int_sv_f8_attn_kernel"
    // The leading template arguments of the instance that serves a problem (head dim 64 or 128, f16 or
    // bf16 output, mask, LSE), the ones the launcher fixes included. Arguments after them are ignored, so
    // that a patch adding a trailing option still resolves.
    std::function<std::vector<TemplateArgument>(const UpstreamInstance &)> template_arguments;
    // The kernel's parameter list for an output dtype, as the demangler prints it: what pack() passes.
    std::function<std::vector<std::string>(DType output)> parameters;
};

// An upstream launcher's adapter: its name, launcher file, and its entries described and selected by
// the instance their demangled names name, all from the UpstreamLauncher it is made with. pack(),
// quantization() and the launch geometry stay each family's own.
class UpstreamLauncherAbi : public KernelAbi {
public:
    explicit UpstreamLauncherAbi(UpstreamLauncher launcher);
    std::string name() const final;
    std::string launcher_file() const final;
    // The file's name behind its "smXX_" prefix: upstream names each launcher file (and the sm90 and
    // sm80 rows' pseudo-files) after the host function it holds.
    std::string host_function() const final;
    // The host function's arguments, in the parameter order every SageAttention host function shares:
    //   query, key, value, output, query_scale, key_scale, [value_scale], [value_mean],
    //   tensor_layout (0 NHD, 1 HND), is_causal, qk_quant_gran (2 per warp, 3 per thread), sm_scale,
    //   return_lse
    // as core.py passes them: contiguous tensors of the quantization recipe's shapes (V e4m3 and
    // transposed, [B, D, Hk, Npad] or [B, Hk, D, Npad], or fp16 in K's shape; the scales f32).
    AttentionLaunch pack(const AttentionProblem &problem, const AttentionBuffers &buffers) const final;
    // The instances without LSE: the ones the workload is timed with. The LSE instances (parity and
    // sanitize launch them) have no counterpart in sage2tp's ABI, whose entries write the LSE when given
    // a pointer, so a table across ABIs could not compare them.
    std::optional<AbiEntry> describe_entry(const std::string &mangled_name) const final;
    // The one entry serving `problem`. Otherwise Error(usage): "cubin '<cubin>' has no entry matching
    // <wanted> (<which>); its entries:" and every entry demangled, one per line, or "has N entries
    // matching ...; they are:" and those.
    std::string select_entry(const AttentionProblem &problem, const std::vector<std::string> &entry_names,
                             const std::string &cubin) const final;

protected:
    // The V tensors the host function takes after the Q/K scales.
    struct FusedV {
        bool scale = false, mean = false;
    };
    virtual FusedV fused_v() const = 0;
    // What upstream's launcher at d1a57a5 launches with, for build's resource table only: the GPU stages
    // call the host function, which decides, and record what it launched.
    virtual std::uint32_t threads_per_block(std::int64_t head_dim) const = 0;
    virtual std::size_t smem_bytes(std::int64_t head_dim) const = 0;
    // Error(internal) naming the adapter and `problem` unless `buffer` is there: the inputs were not
    // quantized as quantization() says ("V f16", "smooth_v").
    void require_input(const void *buffer, const std::string &what, const AttentionProblem &problem,
                       const std::string &recipe) const;

private:
    // The instance `mangled` names when it is an entry of the launcher's template whose leading template
    // arguments and parameter list are the launcher's for some problem; nullopt otherwise.
    std::optional<UpstreamInstance> read_instance(const std::string &mangled) const;
    // "qk_int_sv_f8_attn_kernel<128, 64, ...>": the instance a problem needs, as upstream spells it.
    std::string describe_wanted(const AttentionProblem &problem) const;

    UpstreamLauncher launcher_;
};

// The UpstreamLauncher of a family's table row (its abi_name and file), whose template arguments
// `arguments(row, instance)` spells; `row` lives as long as the adapter (a table of static storage).
template <typename Row>
UpstreamLauncher launcher_of_row(const Row &row, std::string launcher, std::string kernel_template,
                                 std::vector<TemplateArgument> (*arguments)(const Row &, const UpstreamInstance &),
                                 std::vector<std::string> (*parameters)(DType)) {
    return {row.abi_name, row.file, std::move(launcher), std::move(kernel_template),
            [&row, arguments](const UpstreamInstance &instance) { return arguments(row, instance); }, parameters};
}

// "the launcher <host function> of csrc/qattn/<source>", for a source file of several host functions:
// `file` ("sm90_qk_int8_sv_f8_accum_f32_attn_inst_buf") is the host function's name behind its
// "smXX_" prefix.
std::string host_function_launcher(const std::string &file, const std::string &source);

// The adapter of row `row` of a launcher table (one adapter per row, made once), for the registry's
// one line per launcher.
template <typename Adapter, typename Row, std::size_t N>
const KernelAbi &adapter_of_row(const Row (&rows)[N], std::size_t row) {
    static const std::vector<Adapter> adapters(std::begin(rows), std::end(rows));
    return adapters.at(row);
}

}  // namespace s2tp
