// C++ symbol names as a cubin or a ptxas report spells them (Itanium-mangled) and as people read them
// (demangled), split into what a kernel adapter matches on: the function's name, its template argument
// list and its parameter list, each argument as the demangler prints it.
//
// Usage:
//   std::optional<std::string> text = s2tp::demangle("_Z24qk_int_sv_f8_attn_kernelILj128ELj64E...");
//   // "void qk_int_sv_f8_attn_kernel<128u, 64u, ..., (MaskMode)0, ...>(signed char*, ...)"
//   std::optional<s2tp::FunctionName> f = s2tp::parse_function_name(*text);
//   if (f && f->name == "qk_int_sv_f8_attn_kernel" && f->template_arguments[0] == "128u") ...
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// abi::__cxa_demangle; nullopt for a name that is not a mangled C++ name (an extern "C" entry).
std::optional<std::string> demangle(const std::string &mangled);

struct FunctionName {
    std::string name;                             // qualified name without template arguments
    std::vector<std::string> template_arguments;  // empty for a function that is not a template
    std::vector<std::string> parameters;          // "signed char*", "unsigned int", "float", ...
};

// Splits a demangled function name "[return type ]name<args>(params)[ qualifiers]". Nested brackets
// inside arguments ("foo<bar<1>, 2>", "(MaskMode)1") stay inside their argument. nullopt when the text
// is not of that form (a plain variable, unbalanced brackets).
std::optional<FunctionName> parse_function_name(const std::string &demangled);

}  // namespace s2tp
