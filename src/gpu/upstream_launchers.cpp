#include "gpu/upstream_launchers.h"

#include "formats/demangled_name.h"
#include "model/host_quantizer.h"
#include "support/errors.h"

#include <algorithm>
#include <utility>

namespace s2tp {

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

std::string UpstreamLauncherAbi::host_function() const { return launcher_.file.substr(launcher_.file.find('_') + 1); }

AttentionLaunch UpstreamLauncherAbi::pack(const AttentionProblem &problem, const AttentionBuffers &buffers) const {
    problem.validate();
    const AttentionShape &s = problem.shape;
    const QuantizationRecipe recipe = quantization(s.head_dim);
    const FusedV fused = fused_v();
    AttentionLaunch launch;
    HostArguments &a = launch.host_arguments;
    a.tensor(buffers.q_int8, HostDType::int8, s.q_shape());
    a.tensor(buffers.k_int8, HostDType::int8, s.kv_shape());
    if (recipe.v_format == VFormat::f16) {
        require_input(buffers.v_f16, "fp16 V", problem, "V f16");
        a.tensor(buffers.v_f16, HostDType::f16, s.kv_shape());
    } else {
        a.tensor(buffers.v_fp8, HostDType::e4m3, v_fp8_shape(s, recipe.v_pad_tokens));
    }
    a.tensor(buffers.o, host_dtype(problem.dtype), s.q_shape());
    a.tensor(buffers.q_scale, HostDType::f32, q_scale_shape(s, recipe.qk));
    a.tensor(buffers.k_scale, HostDType::f32, k_scale_shape(s, recipe.qk));
    if (fused.scale) a.tensor(buffers.v_scale, HostDType::f32, v_scale_shape(s));
    if (fused.mean) {
        require_input(buffers.v_mean, "V mean", problem, "smooth_v");
        a.tensor(buffers.v_mean, host_dtype(v_mean_dtype(recipe, problem.dtype)), v_mean_shape(s));
    }
    a.integer(s.layout == Layout::hnd ? 1 : 0);                               // tensor_layout
    a.integer(problem.causal ? 1 : 0);                                        // is_causal
    a.integer(recipe.qk.granularity == QkGranularity::per_thread ? 3 : 2);  // qk_quant_gran
    a.real(problem.sm_scale);
    a.integer(problem.with_lse ? 1 : 0);  // return_lse
    launch.context = problem.describe();
    return launch;
}

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
