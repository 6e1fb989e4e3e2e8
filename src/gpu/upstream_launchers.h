// What the adapters of upstream SageAttention's launchers (abi_sageattention_sm89.cpp,
// abi_sageattention_sm90.cpp) share: the strides torch gives their contiguous tensors, the demangler's
// spelling of a bool template argument, reading what an entry's demangled name says about the problem
// it serves, and the choice of the one entry of a cubin that serves a problem, with the message that
// lists the candidates when none or several do.
#pragma once

#include "model/attention_problem.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// Element strides of a contiguous 4-D tensor, as torch's Tensor::stride() gives them.
std::array<std::int64_t, 4> contiguous_strides(const std::array<std::int64_t, 4> &sizes);

// "true" or "false", as the demangler prints a bool template argument.
const char *template_bool(bool value);

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

}  // namespace s2tp
