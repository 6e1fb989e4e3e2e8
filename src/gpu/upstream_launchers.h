// What the adapters of upstream SageAttention's launchers (abi_sageattention_sm89.cpp,
// abi_sageattention_sm90.cpp, abi_sageattention_sm80.cpp) share: the strides torch gives their
// contiguous tensors in either layout, a template argument in its demangled and its source spelling,
// reading what an entry's demangled name says about the problem it serves, and the choice of the one
// entry of a cubin that serves a problem, with the message that lists the candidates when none or
// several do. UpstreamLauncherAbi puts these together: a family of launchers gives each of its adapters
// what tells that launcher apart (an UpstreamLauncher: names, kernel template, template arguments,
// parameters) and keeps only its packing, quantization and launch geometry.
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

// The strides of the contiguous q, k and o tensors a host function is given for the problem's layout
// (upstream's tensor_layout 0 for NHD, 1 for HND), and which axis is which, as the host function reads
// them: q and o [B,Nq,Hq,D] or [B,Hq,Nq,D], k [B,Nk,Hk,D] or [B,Hk,Nk,D].
struct TorchStrides {
    std::array<std::int64_t, 4> q, k;  // o's are q's
    int seq, head;                     // the token and head axes
};
TorchStrides torch_strides(const AttentionShape &shape);

// The strides of the e4m3 v, [B,D,Hk,Npad] or [B,Hk,D,Npad] (tokens innermost, padded to `padded_kv`),
// and its head and head-dim axes.
struct TransposedVStrides {
    std::array<std::int64_t, 4> v;
    int head, dim;
};
TransposedVStrides transposed_v_strides(const AttentionShape &shape, std::int64_t padded_kv);

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
