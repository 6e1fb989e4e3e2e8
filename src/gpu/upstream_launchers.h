// What the adapters of upstream SageAttention's launchers (abi_sageattention_sm89.cpp,
// abi_sageattention_sm90.cpp) share: the strides torch gives their contiguous tensors, the demangler's
// spelling of a bool template argument, and the choice of the one entry of a cubin that serves a
// problem, with the message that lists the candidates when none or several do.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace s2tp {

// Element strides of a contiguous 4-D tensor, as torch's Tensor::stride() gives them.
std::array<std::int64_t, 4> contiguous_strides(const std::array<std::int64_t, 4> &sizes);

// "true" or "false", as the demangler prints a bool template argument.
const char *template_bool(bool value);

// The one name of `entry_names` (mangled) for which `serves` holds. Otherwise Error(usage): "cubin
// '<cubin>' has no entry matching <wanted> (<which>); its entries:" and every entry demangled, one per
// line, or "has N entries matching ...; they are:" and those.
std::string select_one_entry(const std::vector<std::string> &entry_names,
                             const std::function<bool(const std::string &mangled)> &serves, const std::string &wanted,
                             const std::string &which, const std::string &cubin);

}  // namespace s2tp
