#include "formats/demangled_name.h"

#include "support/text_scan.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace s2tp {
namespace {

bool opens(char c) { return c == '<' || c == '(' || c == '['; }
bool closes(char c) { return c == '>' || c == ')' || c == ']'; }

// The index of the bracket that opens the one closing at `close`, scanning backwards; npos if unbalanced.
std::size_t matching_open(const std::string &text, std::size_t close) {
    int depth = 0;
    for (std::size_t i = close + 1; i-- > 0;) {
        if (closes(text[i])) ++depth;
        else if (opens(text[i]) && --depth == 0) return i;
    }
    return std::string::npos;
}

// Top-level comma-separated items of text[begin, end); empty for an empty list; nullopt if unbalanced.
std::optional<std::vector<std::string>> split_list(const std::string &text, std::size_t begin, std::size_t end) {
    std::vector<std::string> items;
    if (trimmed(text.substr(begin, end - begin)).empty()) return items;
    int depth = 0;
    std::size_t start = begin;
    for (std::size_t i = begin; i < end; ++i) {
        if (opens(text[i])) ++depth;
        else if (closes(text[i]) && --depth < 0) return std::nullopt;
        else if (text[i] == ',' && depth == 0) {
            items.push_back(trimmed(text.substr(start, i - start)));
            start = i + 1;
        }
    }
    if (depth != 0) return std::nullopt;
    items.push_back(trimmed(text.substr(start, end - start)));
    return items;
}

}  // namespace

std::optional<std::string> demangle(const std::string &mangled) {
    int status = 0;
    std::unique_ptr<char, void (*)(void *)> text(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                 std::free);
    if (status != 0 || !text) return std::nullopt;
    return std::string(text.get());
}

std::optional<FunctionName> parse_function_name(const std::string &demangled) {
    // The parameter list is the last top-level bracket pair; cv- and ref-qualifiers may follow it.
    const std::size_t close_params = demangled.rfind(')');
    if (close_params == std::string::npos) return std::nullopt;
    if (!trimmed(demangled.substr(close_params + 1)).empty() &&
        demangled.substr(close_params + 1).find_first_of("<>()[],") != std::string::npos)
        return std::nullopt;
    const std::size_t open_params = matching_open(demangled, close_params);
    if (open_params == std::string::npos || open_params == 0) return std::nullopt;
    FunctionName f;
    auto parameters = split_list(demangled, open_params + 1, close_params);
    if (!parameters) return std::nullopt;
    // "()" demangles as an empty list, "(void)" never appears in Itanium names.
    f.parameters = std::move(*parameters);

    std::size_t name_end = open_params;
    if (demangled[name_end - 1] == '>') {
        const std::size_t open_args = matching_open(demangled, name_end - 1);
        if (open_args == std::string::npos) return std::nullopt;
        auto arguments = split_list(demangled, open_args + 1, name_end - 1);
        if (!arguments) return std::nullopt;
        f.template_arguments = std::move(*arguments);
        name_end = open_args;
    }
    // A template function's demangled name starts with its return type: the name is the last word.
    const std::string head = demangled.substr(0, name_end);
    int depth = 0;
    std::size_t name_begin = 0;
    for (std::size_t i = 0; i < head.size(); ++i) {
        if (opens(head[i])) ++depth;
        else if (closes(head[i])) --depth;
        else if (head[i] == ' ' && depth == 0) name_begin = i + 1;
    }
    f.name = trimmed(head.substr(name_begin));
    if (f.name.empty()) return std::nullopt;
    return f;
}

}  // namespace s2tp
