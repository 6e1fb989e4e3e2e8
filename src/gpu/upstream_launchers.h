// What the adapters of upstream SageAttention's launchers (abi_sageattention_sm89.cpp,
// abi_sageattention_sm90.cpp, abi_sageattention_sm80.cpp) share: the strides torch gives their
// contiguous tensors, the demangler's spelling of a bool or granularity template argument, reading what
// an entry's demangled name says about the problem it serves, and the choice of the one entry of a
// cubin that serves a problem, with the message that lists the candidates when none or several do;
// UpstreamLauncherAbi puts these together as every such adapter describes and selects its entries.
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
#include <vector>

namespace s2tp {

// Element strides of a contiguous 4-D tensor, as torch's Tensor::stride() gives them.
std::array<std::int64_t, 4> contiguous_strides(const std::array<std::int64_t, 4> &sizes);

// "true" or "false", as the demangler prints a bool template argument.
const char *template_bool(bool value);

// The demangler's spelling of upstream's QuantGranularity kPerWarp (2) or kPerThread (3), and its name.
const char *granularity_template_argument(QkGranularity granularity);
const char *granularity_enumerator(QkGranularity granularity);  // "kPerWarp"

// Where a launcher's kernel template puts the arguments that depend on the problem.
struct UpstreamTemplate {
    const char *name;             // "qk_int_sv_f8_attn_kernel"
    std::size_t known_arguments;  // how many leading template arguments the adapter spells out
    std::size_t head_dim, output_type, mask_mode, return_lse;  // their positions
};

// What an entry's name says about the problem it serves.
struct UpstreamInstance {
    std::string demangled;
    std::int64_t head_dim = 0;
    DType dtype = DType::bf16;
    bool causal = false;
    bool return_lse = false;
};

// The instance `mangled` names when it is an entry of `kernel` whose leading template arguments are
// expected_arguments(instance) and whose parameter list is expected_parameters(its output dtype);
// nullopt for an entry of another template or with a fixed argument other than the launcher's.
std::optional<UpstreamInstance> read_upstream_instance(
    const std::string &mangled, const UpstreamTemplate &kernel,
    const std::function<std::vector<std::string>(const UpstreamInstance &)> &expected_arguments,
    const std::function<std::vector<std::string>(DType)> &expected_parameters);

// Whether an entry of that instance is the one a launch for `problem` needs.
bool instance_serves(const std::optional<UpstreamInstance> &instance, const AttentionProblem &problem);

// The one name of `entry_names` (mangled) for which `serves` holds. Otherwise Error(usage): "cubin
// '<cubin>' has no entry matching <wanted> (<which>); its entries:" and every entry demangled, one per
// line, or "has N entries matching ...; they are:" and those.
std::string select_one_entry(const std::vector<std::string> &entry_names,
                             const std::function<bool(const std::string &mangled)> &serves, const std::string &wanted,
                             const std::string &which, const std::string &cubin);

// An upstream launcher's adapter at build time: its entries described and selected by the instance their
// demangled names name. The subclass reads an instance and says what a launch of it takes; pack() and
// quantization() stay its own.
class UpstreamLauncherAbi : public KernelAbi {
public:
    // The instances without LSE: the ones the workload is timed with. The LSE instances (parity and
    // sanitize launch them) have no counterpart in sage2tp's ABI, whose entries write the LSE when given
    // a pointer, so a table across ABIs could not compare them.
    std::optional<AbiEntry> describe_entry(const std::string &mangled_name) const final;
    std::string select_entry(const AttentionProblem &problem, const std::vector<std::string> &entry_names,
                             const std::string &cubin) const final;

protected:
    // The instance an entry of this launcher's template with its fixed arguments names; nullopt otherwise.
    virtual std::optional<UpstreamInstance> read_instance(const std::string &mangled) const = 0;
    // "qk_int_sv_f8_attn_kernel<128, 64, ...>": the instance a problem needs, as upstream spells it.
    virtual std::string describe_wanted(const AttentionProblem &problem) const = 0;
    // "the launcher of csrc/qattn/<file>.cu": where upstream launches it.
    virtual std::string describe_launcher() const = 0;
    virtual std::uint32_t threads_per_block(std::int64_t head_dim) const = 0;
    virtual std::size_t smem_bytes(std::int64_t head_dim) const = 0;
};

// The adapter of row `row` of a launcher table (one adapter per row, made once), for the registry's
// one line per launcher.
template <typename Adapter, typename Row, std::size_t N>
const KernelAbi &adapter_of_row(const Row (&rows)[N], std::size_t row) {
    static const std::vector<Adapter> adapters(std::begin(rows), std::end(rows));
    return adapters.at(row);
}

}  // namespace s2tp
