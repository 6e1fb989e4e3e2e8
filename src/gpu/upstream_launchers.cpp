#include "gpu/upstream_launchers.h"

#include "formats/demangled_name.h"
#include "support/errors.h"

#include <algorithm>
#include <utility>

namespace s2tp {

namespace {

// Element strides of a contiguous 4-D tensor, as torch's Tensor::stride() gives them.
std::array<std::int64_t, 4> contiguous_strides(const std::array<std::int64_t, 4> &sizes) {
    return {sizes[1] * sizes[2] * sizes[3], sizes[2] * sizes[3], sizes[3], 1};
}

}  // namespace

TorchStrides torch_strides(const AttentionShape &s) {
    const bool nhd = s.layout == Layout::nhd;
    return {contiguous_strides(nhd ? std::array<std::int64_t, 4>{s.batch, s.len_q, s.heads_q, s.head_dim}
                                   : std::array<std::int64_t, 4>{s.batch, s.heads_q, s.len_q, s.head_dim}),
            contiguous_strides(nhd ? std::array<std::int64_t, 4>{s.batch, s.len_kv, s.heads_kv, s.head_dim}
                                   : std::array<std::int64_t, 4>{s.batch, s.heads_kv, s.len_kv, s.head_dim}),
            nhd ? 1 : 2, nhd ? 2 : 1};
}

TransposedVStrides transposed_v_strides(const AttentionShape &s, std::int64_t padded_kv) {
    const bool nhd = s.layout == Layout::nhd;
    return {contiguous_strides(nhd ? std::array<std::int64_t, 4>{s.batch, s.head_dim, s.heads_kv, padded_kv}
                                   : std::array<std::int64_t, 4>{s.batch, s.heads_kv, s.head_dim, padded_kv}),
            nhd ? 2 : 1, nhd ? 1 : 2};
}

TemplateArgument unsigned_argument(std::int64_t value) { return {std::to_string(value) + "u", std::to_string(value)}; }

TemplateArgument bool_argument(bool value) {
    const char *spelling = value ? "true" : "false";
    return {spelling, spelling};
}

TemplateArgument granularity_argument(QkGranularity granularity) {
    if (granularity == QkGranularity::per_thread) return {"(QuantGranularity)3", "kPerThread"};
    return {"(QuantGranularity)2", "kPerWarp"};
}

TemplateArgument half_type_argument(DType dtype) {
    if (dtype == DType::f16) return {"__half", "half"};
    return {"__nv_bfloat16", "nv_bfloat16"};
}

TemplateArgument mask_argument(bool causal) {
    if (causal) return {"(MaskMode)1", "kCausal"};
    return {"(MaskMode)0", "kNone"};
}

std::string half_pointer_parameter(DType dtype) { return half_type_argument(dtype).demangled + "*"; }

std::string host_function_launcher(const std::string &file, const std::string &source) {
    return "the launcher " + file.substr(std::string("smXX_").size()) + " of csrc/qattn/" + source;
}

namespace {

// The one name of `entry_names` (mangled) for which `serves` holds; the message of select_entry otherwise.
std::string select_one_entry(const std::vector<std::string> &entry_names,
                             const std::function<bool(const std::string &mangled)> &serves, const std::string &wanted,
                             const std::string &which, const std::string &cubin) {
    std::vector<std::string> matches;
    std::string candidates;
    for (const std::string &mangled : entry_names) {
        candidates += "\n  " + demangle(mangled).value_or(mangled);
        if (serves(mangled)) matches.push_back(mangled);
    }
    if (matches.size() == 1) return matches.front();
    std::string matched;
    for (const std::string &mangled : matches) matched += "\n  " + demangle(mangled).value_or(mangled);
    fail(ExitCode::usage,
         "cubin '" + cubin + "' has " + (matches.empty() ? "no entry" : std::to_string(matches.size()) + " entries") +
             " matching " + wanted + " (" + which + ")" +
             (matches.empty() ? "; its entries:" + (candidates.empty() ? std::string(" none") : candidates)
                              : "; they are:" + matched));
}

}  // namespace

UpstreamLauncherAbi::UpstreamLauncherAbi(UpstreamLauncher launcher) : launcher_(std::move(launcher)) {}

std::string UpstreamLauncherAbi::name() const { return launcher_.abi_name; }

std::string UpstreamLauncherAbi::launcher_file() const { return launcher_.file; }

std::optional<UpstreamInstance> UpstreamLauncherAbi::read_instance(const std::string &mangled) const {
    const std::optional<std::string> demangled = demangle(mangled);
    if (!demangled) return std::nullopt;
    const std::optional<FunctionName> f = parse_function_name(*demangled);
    if (!f || f->name != launcher_.kernel_template) return std::nullopt;
    const std::vector<std::string> &a = f->template_arguments;
    const auto spelled = [](const TemplateArgument &e, const std::string &s) { return e.demangled == s; };
    // Each problem's instance differs from every other's in its arguments, so at most one matches.
    for (std::int64_t head_dim : {64, 128})
        for (DType dtype : {DType::f16, DType::bf16})
            for (bool causal : {false, true})
                for (bool return_lse : {false, true}) {
                    const UpstreamInstance instance{*demangled, head_dim, dtype, causal, return_lse};
                    const std::vector<TemplateArgument> e = launcher_.template_arguments(instance);
                    if (e.size() <= a.size() && std::equal(e.begin(), e.end(), a.begin(), spelled) &&
                        f->parameters == launcher_.parameters(dtype))
                        return instance;
                }
    return std::nullopt;
}

std::string UpstreamLauncherAbi::describe_wanted(const AttentionProblem &problem) const {
    const UpstreamInstance instance{"", problem.shape.head_dim, problem.dtype, problem.causal, problem.with_lse};
    std::string wanted = launcher_.kernel_template + "<";
    for (const TemplateArgument &argument : launcher_.template_arguments(instance)) wanted += argument.source + ", ";
    return wanted + "...>";
}

std::optional<AbiEntry> UpstreamLauncherAbi::describe_entry(const std::string &mangled_name) const {
    const std::optional<UpstreamInstance> instance = read_instance(mangled_name);
    if (!instance || instance->return_lse) return std::nullopt;
    return AbiEntry{attention_short_name(instance->head_dim, instance->dtype, instance->causal), instance->demangled,
                    static_cast<int>(threads_per_block(instance->head_dim)),
                    static_cast<std::int64_t>(smem_bytes(instance->head_dim))};
}

std::string UpstreamLauncherAbi::select_entry(const AttentionProblem &problem,
                                              const std::vector<std::string> &entry_names,
                                              const std::string &cubin) const {
    const auto serves = [&](const std::string &mangled) {
        const std::optional<UpstreamInstance> instance = read_instance(mangled);
        return instance && instance->head_dim == problem.shape.head_dim && instance->dtype == problem.dtype &&
               instance->causal == problem.causal && instance->return_lse == problem.with_lse;
    };
    return select_one_entry(entry_names, serves, describe_wanted(problem),
                            "kernel ABI " + name() + ", " + launcher_.launcher + ", for " + problem.describe(), cubin);
}

void UpstreamLauncherAbi::require_input(const void *buffer, const std::string &what, const AttentionProblem &problem,
                                        const std::string &recipe) const {
    if (!buffer)
        fail(ExitCode::internal, name() + ": no " + what + " for " + problem.describe() +
                                     " (its inputs must be quantized with " + recipe + ")");
}

}  // namespace s2tp
