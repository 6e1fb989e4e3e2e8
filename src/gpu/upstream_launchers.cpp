#include "gpu/upstream_launchers.h"

#include "formats/demangled_name.h"
#include "support/errors.h"

#include <algorithm>

namespace s2tp {

std::array<std::int64_t, 4> contiguous_strides(const std::array<std::int64_t, 4> &sizes) {
    return {sizes[1] * sizes[2] * sizes[3], sizes[2] * sizes[3], sizes[3], 1};
}

const char *template_bool(bool value) { return value ? "true" : "false"; }

const char *granularity_template_argument(QkGranularity granularity) {
    return granularity == QkGranularity::per_thread ? "(QuantGranularity)3" : "(QuantGranularity)2";
}

const char *granularity_enumerator(QkGranularity granularity) {
    return granularity == QkGranularity::per_thread ? "kPerThread" : "kPerWarp";
}

std::optional<UpstreamInstance> read_upstream_instance(
    const std::string &mangled, const UpstreamTemplate &kernel,
    const std::function<std::vector<std::string>(const UpstreamInstance &)> &expected_arguments,
    const std::function<std::vector<std::string>(DType)> &expected_parameters) {
    const std::optional<std::string> demangled = demangle(mangled);
    if (!demangled) return std::nullopt;
    const std::optional<FunctionName> f = parse_function_name(*demangled);
    if (!f || f->name != kernel.name || f->template_arguments.size() < kernel.known_arguments) return std::nullopt;
    const std::vector<std::string> &a = f->template_arguments;
    UpstreamInstance instance;
    instance.demangled = *demangled;
    if (a[kernel.head_dim] == "64u") instance.head_dim = 64;
    else if (a[kernel.head_dim] == "128u") instance.head_dim = 128;
    else return std::nullopt;
    if (a[kernel.output_type] == "__half") instance.dtype = DType::f16;
    else if (a[kernel.output_type] == "__nv_bfloat16") instance.dtype = DType::bf16;
    else return std::nullopt;
    instance.causal = a[kernel.mask_mode] == "(MaskMode)1";
    instance.return_lse = a[kernel.return_lse] == "true";
    const std::vector<std::string> expected = expected_arguments(instance);
    if (expected.size() > a.size() || !std::equal(expected.begin(), expected.end(), a.begin())) return std::nullopt;
    if (f->parameters != expected_parameters(instance.dtype)) return std::nullopt;
    return instance;
}

bool instance_serves(const std::optional<UpstreamInstance> &instance, const AttentionProblem &problem) {
    return instance && instance->head_dim == problem.shape.head_dim && instance->dtype == problem.dtype &&
           instance->causal == problem.causal && instance->return_lse == problem.with_lse;
}

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
    const auto serves = [&](const std::string &mangled) { return instance_serves(read_instance(mangled), problem); };
    return select_one_entry(entry_names, serves, describe_wanted(problem),
                            "kernel ABI " + name() + ", " + describe_launcher() + ", for " + problem.describe(), cubin);
}

}  // namespace s2tp
