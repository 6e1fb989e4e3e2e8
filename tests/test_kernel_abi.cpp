// The kernel ABI adapters without a GPU: the demangled-name parser, the seven sm89 launchers' adapters
// on their real cubins' entry names (tests/data/sm89_launchers), the sageattention-sm89 adapter's
// entry matching on the 32 real entry names of upstream's .cu (the ptxas report of a real nvcc 13.0
// compile, tests/data/ptxas/sageattention_sm89_d1a57a5_sm90a.log; its header says how), its argument
// packing against values worked out by hand from upstream's host function, and the sage2tp adapter's
// unchanged launch.
#include "build_config.h"
#include "formats/demangled_name.h"
#include "formats/ptxas_report.h"
#include "gpu/kernel_abi.h"
#include "model/workload_set.h"
#include "formats/tensor_io.h"
#include "golden/golden_cases_file.h"
#include "model/host_quantizer.h"
#include "support/errors.h"
#include "sage2tp_abi.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

namespace s2tp::unit_kernel_abi {
namespace {

const std::string upstream_log = std::string(S2TP_SOURCE_ROOT) + "/tests/data/ptxas/sageattention_sm89_d1a57a5_sm90a.log";

PtxasReport upstream_report() {
    std::ifstream file(upstream_log);
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    return parse_ptxas_report(text, upstream_log);
}

// The entry names as ptxas prints them (mangled), in the report's order.
std::vector<std::string> upstream_entries() {
    std::vector<std::string> names;
    for (const auto &[key, resources] : upstream_report()) names.push_back(key.name);
    return names;
}

const KernelAbi &upstream() { return kernel_abi("sageattention-sm89", "test"); }
const KernelAbi &sage2tp() { return kernel_abi("sage2tp", "test"); }

AttentionProblem problem(std::int64_t head_dim, DType dtype, bool causal, bool with_lse) {
    AttentionProblem p;
    p.shape.batch = 1, p.shape.heads_q = 2, p.shape.heads_kv = 2, p.shape.len_q = 256, p.shape.len_kv = 256;
    p.shape.head_dim = head_dim;
    p.dtype = dtype;
    p.causal = causal;
    p.with_lse = with_lse;
    p.sm_scale = default_sm_scale(head_dim);
    return p;
}

FunctionName parsed(const std::string &mangled) {
    const std::optional<std::string> text = demangle(mangled);
    EXPECT_TRUE(text) << mangled;
    const std::optional<FunctionName> f = parse_function_name(text.value_or(""));
    EXPECT_TRUE(f) << *text;
    return f.value_or(FunctionName{});
}

// The same entry as if a patch had added one trailing `bool` template parameter (instantiated false).
// The parameter list refers to template parameters by index (T9_ is DTypeOut), so it is unchanged.
std::string with_trailing_bool(const std::string &mangled) {
    const std::string end_of_arguments = "EEvPa";
    const std::size_t at = mangled.find(end_of_arguments);
    EXPECT_NE(at, std::string::npos) << mangled;
    return mangled.substr(0, at) + "ELb0" + mangled.substr(at);
}

std::string error_of(const std::function<void()> &call) {
    try {
        call();
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        return e.what();
    }
    ADD_FAILURE() << "no Error thrown";
    return "";
}

// ---- the parser ----

TEST(DemangledName, SplitsARealUpstreamEntry) {
    const std::vector<std::string> names = upstream_entries();
    ASSERT_EQ(names.size(), 32u);
    for (const std::string &name : names) {
        const FunctionName f = parsed(name);
        EXPECT_EQ(f.name, "qk_int_sv_f8_attn_kernel");
        ASSERT_EQ(f.template_arguments.size(), 17u) << name;
        EXPECT_EQ(f.parameters.size(), 25u) << name;
        EXPECT_EQ(f.parameters.front(), "signed char*");
        EXPECT_EQ(f.parameters.back(), "float");
        EXPECT_EQ(f.template_arguments[0], "128u");
        EXPECT_EQ(f.template_arguments[5], "(DataType)1");
    }
}

TEST(DemangledName, KeepsNestedBracketsInsideOneArgument) {
    const auto f = parse_function_name("void ns::f<foo<1, 2>, (MaskMode)1, bar<(E)0>>(int, baz<int, char>*, float (*)(int))");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->name, "ns::f");
    EXPECT_EQ(f->template_arguments, (std::vector<std::string>{"foo<1, 2>", "(MaskMode)1", "bar<(E)0>"}));
    EXPECT_EQ(f->parameters, (std::vector<std::string>{"int", "baz<int, char>*", "float (*)(int)"}));
}

TEST(DemangledName, PlainFunctionsAndNonNames) {
    const auto f = parse_function_name("f(int)");
    ASSERT_TRUE(f);
    EXPECT_EQ(f->name, "f");
    EXPECT_TRUE(f->template_arguments.empty());
    EXPECT_FALSE(parse_function_name("f<int>(int"));
    EXPECT_FALSE(parse_function_name("no_parameters"));
    // extern "C" entries are not mangled names.
    EXPECT_FALSE(demangle("s2tp_attn_hd128_bf16_nomask"));
}

// ---- the registry ----

// Every sm89 launcher file of upstream's csrc/qattn, its adapter's name, and what its template fixes:
// use_inst_buffer, fuse_v_scale, fuse_v_mean, use_pv_fp16_accu (the launcher's `kernel_func` line).
struct LauncherRow {
    std::string abi, file;
    bool inst_buffer, fuse_v_scale, fuse_v_mean, fp16_accu;
};
const std::vector<LauncherRow> &launcher_rows() {
    static const std::vector<LauncherRow> rows = {
        {"sageattention-sm89", "sm89_qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf", true, true, false, true},
        {"sageattention-sm89-accum-f16-inst-buf", "sm89_qk_int8_sv_f8_accum_f16_attn_inst_buf", true, false, false, true},
        {"sageattention-sm89-accum-f32", "sm89_qk_int8_sv_f8_accum_f32_attn", false, false, false, false},
        {"sageattention-sm89-accum-f32-inst-buf", "sm89_qk_int8_sv_f8_accum_f32_attn_inst_buf", true, false, false,
         false},
        {"sageattention-sm89-accum-f32-fuse-v-scale", "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn", false, true,
         false, false},
        {"sageattention-sm89-accum-f32-fuse-v-scale-inst-buf", "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf",
         true, true, false, false},
        {"sageattention-sm89-accum-f32-fuse-v-scale-fuse-v-mean",
         "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_fuse_v_mean_attn", false, true, true, false},
    };
    return rows;
}

// The 32 entry names (mangled) of a launcher's real cubin: upstream's extension built for sm_90a by
// tests/golden/make_golden.py, its symbol table read with `readelf -sW`.
std::vector<std::string> launcher_entries(const std::string &file) {
    std::ifstream in(std::string(S2TP_SOURCE_ROOT) + "/tests/data/sm89_launchers/" + file + ".entries");
    std::vector<std::string> names;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) names.push_back(line);
    return names;
}

// The sm90 adapters: per host function of csrc/qattn/qk_int_sv_f8_cuda_sm90.cu, per thread (core.py's
// default) and per warp.
struct Sm90Row {
    std::string abi, file;
    bool fuse_v_scale;
    QkGranularity granularity;
};
const std::vector<Sm90Row> &sm90_rows() {
    static const std::vector<Sm90Row> rows = {
        {"sageattention-sm90-accum-f32", "sm90_qk_int8_sv_f8_accum_f32_attn_inst_buf", false, QkGranularity::per_thread},
        {"sageattention-sm90-accum-f32-fuse-v-scale", "sm90_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf", true,
         QkGranularity::per_thread},
        {"sageattention-sm90-accum-f32-per-warp", "sm90_qk_int8_sv_f8_accum_f32_attn_inst_buf", false,
         QkGranularity::per_warp},
        {"sageattention-sm90-accum-f32-fuse-v-scale-per-warp",
         "sm90_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf", true, QkGranularity::per_warp},
    };
    return rows;
}

// The 64 entry names (mangled) of upstream's sm90 extension built for sm_90a by make_golden.py on the
// H200 (_qattn_sm90), its symbol table read with `readelf -sW`.
std::vector<std::string> sm90_entries() {
    std::ifstream in(std::string(S2TP_SOURCE_ROOT) + "/tests/data/sm90_launchers/qk_int_sv_f8_cuda_sm90.entries");
    std::vector<std::string> names;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) names.push_back(line);
    return names;
}

// The sm80 adapters: per host function of csrc/qattn/qk_int_sv_f16_cuda_sm80.cu, per thread (core.py's
// default) and per warp; what each host function's `kernel_func` line fixes.
struct Sm80Row {
    std::string abi, file;
    bool f16_accumulator, inst_buffer, fuse_v_mean;
    QkGranularity granularity;
};
const std::vector<Sm80Row> &sm80_rows() {
    static const std::vector<Sm80Row> rows = [] {
        std::vector<Sm80Row> all;
        for (QkGranularity g : {QkGranularity::per_thread, QkGranularity::per_warp}) {
            const std::string suffix = g == QkGranularity::per_warp ? "-per-warp" : "";
            all.push_back({"sageattention-sm80-accum-f32" + suffix, "sm80_qk_int8_sv_f16_accum_f32_attn", false, false,
                           false, g});
            all.push_back({"sageattention-sm80-accum-f16" + suffix, "sm80_qk_int8_sv_f16_accum_f16_attn", true, false,
                           false, g});
            all.push_back({"sageattention-sm80-accum-f16-inst-buf" + suffix,
                           "sm80_qk_int8_sv_f16_accum_f16_attn_inst_buf", false, true, false, g});
            all.push_back({"sageattention-sm80-accum-f16-fuse-v-mean" + suffix,
                           "sm80_qk_int8_sv_f16_accum_f16_fuse_v_mean_attn", true, false, true, g});
        }
        return all;
    }();
    return rows;
}

// The 128 entry names (mangled) of upstream's csrc/qattn/qk_int_sv_f16_cuda_sm80.cu compiled to an
// sm_90a cubin with upstream's flags against Debian's libtorch 1.13 headers, read with `readelf -sW`.
std::vector<std::string> sm80_entries() {
    std::ifstream in(std::string(S2TP_SOURCE_ROOT) + "/tests/data/sm80_launchers/qk_int_sv_f16_cuda_sm80.entries");
    std::vector<std::string> names;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) names.push_back(line);
    return names;
}

// Issue 39 item 3: a pin is named by the kernel it belongs to. Each upstream adapter is a kernel of its
// own; the embedded kernels, which reproduce upstream's default sm89 launcher byte for byte, share its
// pins, which are the bare entries of [expected_sha256].
TEST(KernelAbiRegistry, EachAdapterNamesTheKernelItsOutputPinsBelongTo) {
    for (const std::string &name : kernel_abi_names()) {
        const std::string pinned = kernel_abi(name, "test").pinned_kernel();
        EXPECT_EQ(pinned, name == "sage2tp" ? std::string(bare_pin_kernel) : name) << name;
        EXPECT_NO_THROW(kernel_abi(pinned, "test")) << "a pin's kernel is an adapter's name: " << pinned;
    }
}

TEST(KernelAbiRegistry, KnowsEveryAdapterAndListsThemForAnUnknownOne) {
    std::vector<std::string> expected = {"sage2tp"};
    for (const LauncherRow &row : launcher_rows()) expected.push_back(row.abi);
    for (const LauncherRow &row : launcher_rows()) expected.push_back(row.abi + "-per-thread");
    for (const Sm90Row &row : sm90_rows()) expected.push_back(row.abi);
    for (const Sm80Row &row : sm80_rows()) expected.push_back(row.abi);
    EXPECT_EQ(kernel_abi_names(), expected);
    const std::string message = error_of([] { kernel_abi("flash", "run.toml [candidate] abi"); });
    EXPECT_NE(message.find("run.toml [candidate] abi"), std::string::npos) << message;
    EXPECT_NE(message.find("'flash'"), std::string::npos) << message;
    EXPECT_NE(message.find("sage2tp, sageattention-sm89, sageattention-sm89-accum-f16-inst-buf"), std::string::npos)
        << message;
}

// ---- every sm89 launcher: its own instances, and no other launcher's ----

TEST(SageAttentionSm89Launchers, EachSelectsItsOwnInstanceForEveryProblemOfItsRealCubin) {
    for (const LauncherRow &row : launcher_rows()) {
        const KernelAbi &abi = kernel_abi(row.abi, "test");
        const std::vector<std::string> names = launcher_entries(row.file);
        ASSERT_EQ(names.size(), 32u) << row.file;
        int described = 0;
        for (const std::string &name : names) described += abi.describe_entry(name).has_value();
        EXPECT_EQ(described, 8) << row.abi;  // per-warp, no LSE: 2 head dims x 2 dtypes x 2 masks
        for (std::int64_t head_dim : {64, 128})
            for (DType dtype : {DType::f16, DType::bf16})
                for (bool causal : {false, true})
                    for (bool with_lse : {false, true}) {
                        const AttentionProblem p = problem(head_dim, dtype, causal, with_lse);
                        const FunctionName f = parsed(abi.select_entry(p, names, row.file + ".cubin"));
                        const auto b = [](bool v) { return std::string(v ? "true" : "false"); };
                        const std::vector<std::string> expected = {
                            "128u", "64u", "32u", "64u", std::to_string(head_dim) + "u", "(DataType)1",
                            "(QuantGranularity)2", "(QuantGranularity)2", "float", b(row.inst_buffer),
                            dtype == DType::f16 ? "__half" : "__nv_bfloat16", "(ComputeUnit)1",
                            causal ? "(MaskMode)1" : "(MaskMode)0", b(with_lse), b(row.fuse_v_scale),
                            b(row.fuse_v_mean), b(row.fp16_accu)};
                        EXPECT_EQ(f.template_arguments, expected) << row.abi << " " << p.describe();
                    }
    }
}

// The per-thread rows select the kPerThread instances of the same cubins and quantize per thread.
TEST(SageAttentionSm89Launchers, PerThreadRowsSelectTheirLaunchersPerThreadInstances) {
    for (const LauncherRow &row : launcher_rows()) {
        const KernelAbi &abi = kernel_abi(row.abi + "-per-thread", "test");
        EXPECT_EQ(abi.launcher_file(), row.file);
        EXPECT_EQ(abi.quantization(128).qk.granularity, QkGranularity::per_thread) << row.abi;
        EXPECT_EQ(abi.quantization(128).smooth_v, row.fuse_v_mean) << row.abi;
        const std::vector<std::string> names = launcher_entries(row.file);
        int described = 0;
        for (const std::string &name : names) described += abi.describe_entry(name).has_value();
        EXPECT_EQ(described, 8) << row.abi;
        for (bool with_lse : {false, true}) {
            const AttentionProblem p = problem(64, DType::f16, true, with_lse);
            const FunctionName f = parsed(abi.select_entry(p, names, row.file + ".cubin"));
            EXPECT_EQ(f.template_arguments[6], "(QuantGranularity)3") << row.abi;
            EXPECT_EQ(f.template_arguments[7], "(QuantGranularity)3") << row.abi;
            // The per-warp row of the same launcher selects the other instance.
            EXPECT_NE(kernel_abi(row.abi, "test").select_entry(p, names, row.file + ".cubin"),
                      abi.select_entry(p, names, row.file + ".cubin"));
        }
    }
}

TEST(SageAttentionSm89Launchers, AnotherLaunchersCubinMatchesNothingAndListsItsDemangledEntries) {
    const AttentionProblem p = problem(128, DType::bf16, false, true);
    for (const LauncherRow &row : launcher_rows())
        for (const LauncherRow &other : launcher_rows()) {
            if (other.file == row.file) continue;
            const std::vector<std::string> names = launcher_entries(other.file);
            const std::string message =
                error_of([&] { kernel_abi(row.abi, "test").select_entry(p, names, other.file + ".cubin"); });
            EXPECT_NE(message.find("has no entry matching"), std::string::npos) << message;
            EXPECT_NE(message.find("kernel ABI " + row.abi + ", the launcher of csrc/qattn/" + row.file + ".cu"),
                      std::string::npos)
                << message;
            for (const std::string &name : names)
                EXPECT_NE(message.find("\n  " + *demangle(name)), std::string::npos) << row.abi << " on " << other.file;
        }
}

// The golden data every launcher is checked against on a GPU (gpu_kernel_check launchers): upstream's
// digests for every case and launcher, and the K and V means the checks feed to sage2tp's quantizers.
TEST(SageAttentionSm89Launchers, TheGoldenDataCoversEveryCaseAndLauncher) {
    const std::filesystem::path dir = std::filesystem::path(S2TP_SOURCE_ROOT) / "tests" / "golden";
    const std::vector<golden::SeededCase> cases = golden::seeded_cases(dir / "cases.toml");
    ASSERT_EQ(cases.size(), 12u);
    const toml::table digests = golden::parse_toml_file(dir / "upstream.toml");
    for (const golden::SeededCase &c : cases) {
        for (const LauncherRow &row : launcher_rows())
            for (const char *granularity : {"per_warp", "per_thread"}) {
                const toml::table *t = digests["case"][c.name][row.file][granularity].as_table();
                ASSERT_TRUE(t) << c.name << " " << row.file << " " << granularity;
                std::set<std::string> keys;
                for (const auto &[key, value] : *t) {
                    keys.insert(std::string(key.str()));
                    const std::string digest = value.value<std::string>().value_or("");
                    EXPECT_EQ(digest.size(), 64u) << c.name << " " << row.file << " " << key.str();
                }
                std::set<std::string> expected = {"q_int8", "q_scale", "k_int8", "k_scale", "v_fp8", "o", "lse"};
                if (row.fuse_v_scale) expected.insert("v_scale");
                if (row.fuse_v_mean) expected.insert("v_mean");
                EXPECT_EQ(keys, expected) << c.name << " " << row.file;
            }
        TensorRequest k_mean, v_mean;
        k_mean.dtype = c.problem.dtype, k_mean.shape = k_mean_shape(c.problem.shape);
        v_mean.dtype = DType::f32, v_mean.shape = v_mean_shape(c.problem.shape);
        EXPECT_NO_THROW(load_tensor(dir / "means" / c.name / "k_mean.npy", k_mean)) << c.name;
        EXPECT_NO_THROW(load_tensor(dir / "means" / c.name / "v_mean.npy", v_mean)) << c.name;
    }
}

// Upstream's sm80 launchers (FP16 V) on the same cases, for their adapters: every launcher and
// granularity has its digests, V as the launcher reads it in fp16, and the fuse_v_mean launcher's mean.
TEST(SageAttentionSm80Launchers, TheGoldenDataCoversEveryCaseAndLauncher) {
    const std::filesystem::path dir = std::filesystem::path(S2TP_SOURCE_ROOT) / "tests" / "golden";
    const toml::table digests = golden::parse_toml_file(dir / "upstream.toml");
    for (const golden::SeededCase &c : golden::seeded_cases(dir / "cases.toml")) {
        for (const std::string launcher : {"accum_f32_attn", "accum_f16_attn", "accum_f16_attn_inst_buf",
                                           "accum_f16_fuse_v_mean_attn"})
            for (const char *granularity : {"per_warp", "per_thread"}) {
                const std::string name = "sm80_qk_int8_sv_f16_" + launcher;
                const toml::table *t = digests["case"][c.name][name][granularity].as_table();
                ASSERT_TRUE(t) << c.name << " " << name << " " << granularity;
                std::set<std::string> keys;
                for (const auto &[key, value] : *t) {
                    keys.insert(std::string(key.str()));
                    EXPECT_EQ(value.value<std::string>().value_or("").size(), 64u) << c.name << " " << name;
                }
                std::set<std::string> expected = {"q_int8", "q_scale", "k_int8", "k_scale", "v", "o", "lse"};
                if (launcher == "accum_f16_fuse_v_mean_attn") expected.insert("v_mean");
                EXPECT_EQ(keys, expected) << c.name << " " << name;
            }
        TensorRequest v_mean;
        v_mean.dtype = c.problem.dtype, v_mean.shape = v_mean_shape(c.problem.shape);
        EXPECT_NO_THROW(load_tensor(dir / "means" / c.name / "sm80_v_mean.npy", v_mean)) << c.name;
    }
}

// ---- sageattention-sm89: build time ----

TEST(SageAttentionSm89, DescribesTheEightEntriesOfTheResourceTable) {
    std::set<std::string> short_names;
    for (const std::string &name : upstream_entries()) {
        const std::optional<AbiEntry> entry = upstream().describe_entry(name);
        const FunctionName f = parsed(name);
        // Per-warp granularity (2) and no LSE: the workload's instances. Per-thread (3) ones never.
        const bool expected = f.template_arguments[6] == "(QuantGranularity)2" && f.template_arguments[13] == "false";
        ASSERT_EQ(entry.has_value(), expected) << name;
        if (!entry) continue;
        short_names.insert(entry->short_name);
        EXPECT_EQ(entry->full_name, *demangle(name));
        EXPECT_EQ(entry->threads_per_block, 128);
        const std::int64_t head_dim = f.template_arguments[4] == "64u" ? 64 : 128;
        EXPECT_EQ(entry->dynamic_smem_bytes, 256 * head_dim);
        EXPECT_EQ(entry->short_name.rfind("hd" + std::to_string(head_dim) + "_", 0), 0u) << entry->short_name;
    }
    EXPECT_EQ(short_names, (std::set<std::string>{"hd64_f16_nomask", "hd64_f16_causal", "hd64_bf16_nomask",
                                                  "hd64_bf16_causal", "hd128_f16_nomask", "hd128_f16_causal",
                                                  "hd128_bf16_nomask", "hd128_bf16_causal"}));
    // The same short names as the sage2tp ABI's entries, so one build table compares across ABIs.
    for (const std::string &short_name : short_names)
        EXPECT_EQ(sage2tp().describe_entry("s2tp_attn_" + short_name)->short_name, short_name);
}

TEST(SageAttentionSm89, TheResourceTableRowsOfARealReport) {
    // What build does with a variant's ptxas report: every entry the adapter describes, by short name.
    std::map<std::string, KernelResources> rows;
    for (const auto &[key, resources] : upstream_report()) {
        if (const std::optional<AbiEntry> entry = upstream().describe_entry(key.name)) {
            EXPECT_TRUE(rows.emplace(entry->short_name, resources).second) << entry->short_name;
        }
    }
    ASSERT_EQ(rows.size(), 8u);
    for (const auto &[name, resources] : rows) {
        EXPECT_EQ(resources.arch, "sm_90a") << name;
        EXPECT_GE(resources.registers, 200) << name;  // upstream's kernel uses (nearly) all 255
        EXPECT_EQ(resources.static_smem_bytes, 0) << name;
    }
    // Upstream's D=128 entries spill on sm_90a with nvcc 13.0; the table has to show it.
    EXPECT_GT(rows.at("hd128_bf16_nomask").spill_store_bytes, 0);
}

// ---- sageattention-sm89: run time entry selection ----

TEST(SageAttentionSm89, SelectsTheLaunchersInstanceForEveryProblem) {
    const std::vector<std::string> names = upstream_entries();
    int resolved = 0;
    for (std::int64_t head_dim : {64, 128})
        for (DType dtype : {DType::f16, DType::bf16})
            for (bool causal : {false, true})
                for (bool with_lse : {false, true}) {
                    const AttentionProblem p = problem(head_dim, dtype, causal, with_lse);
                    const FunctionName f = parsed(upstream().select_entry(p, names, "upstream.cubin"));
                    const std::vector<std::string> expected = {
                        "128u", "64u", "32u", "64u", std::to_string(head_dim) + "u", "(DataType)1",
                        "(QuantGranularity)2", "(QuantGranularity)2", "float", "true",
                        dtype == DType::f16 ? "__half" : "__nv_bfloat16", "(ComputeUnit)1",
                        causal ? "(MaskMode)1" : "(MaskMode)0", with_lse ? "true" : "false", "true", "false", "true"};
                    EXPECT_EQ(f.template_arguments, expected) << p.describe();
                    EXPECT_EQ(f.parameters[3], std::string(dtype == DType::f16 ? "__half*" : "__nv_bfloat16*"));
                    ++resolved;
                }
    EXPECT_EQ(resolved, 16);
}

TEST(SageAttentionSm89, ATrailingTemplateOptionStillResolves) {
    std::vector<std::string> patched;
    for (const std::string &name : upstream_entries()) patched.push_back(with_trailing_bool(name));
    const AttentionProblem p = problem(128, DType::bf16, false, false);
    const std::string chosen = upstream().select_entry(p, patched, "candidate.cubin");
    const FunctionName f = parsed(chosen);
    ASSERT_EQ(f.template_arguments.size(), 18u);
    EXPECT_EQ(f.template_arguments.back(), "false");
    EXPECT_EQ(f.template_arguments[4], "128u");
    EXPECT_EQ(f.template_arguments[10], "__nv_bfloat16");
    const std::optional<AbiEntry> entry = upstream().describe_entry(chosen);
    ASSERT_TRUE(entry);
    EXPECT_EQ(entry->short_name, "hd128_bf16_nomask");
}

TEST(SageAttentionSm89, ARealPatchedEntryWithATrailingOptionResolves) {
    // As nvcc 13.0 names the hd128 bf16 entry of upstream's .cu patched to add a last template parameter
    // `bool TemporalPair = false`, which the patched launcher instantiates true.
    const std::string patched =
        "_Z24qk_int_sv_f8_attn_kernelILj128ELj64ELj32ELj64ELj128EL8DataType1EL16QuantGranularity2ELS1_2EfLb1E13__nv_"
        "bfloat16L11ComputeUnit1EL8MaskMode0ELb0ELb1ELb0ELb1ELb1EEvPaS5_S5_PT9_PfS8_S8_S8_S8_jjjjjjjjjjjjjjjf";
    EXPECT_EQ(parsed(patched).template_arguments.size(), 18u);
    const std::optional<AbiEntry> entry = upstream().describe_entry(patched);
    ASSERT_TRUE(entry);
    EXPECT_EQ(entry->short_name, "hd128_bf16_nomask");
    EXPECT_EQ(upstream().select_entry(problem(128, DType::bf16, false, false), {patched}, "candidate.cubin"), patched);
}

TEST(SageAttentionSm89, NoMatchListsEveryEntry) {
    const AttentionProblem p = problem(128, DType::bf16, false, false);
    std::vector<std::string> names;
    for (const std::string &name : upstream_entries())
        if (name != upstream().select_entry(p, upstream_entries(), "u.cubin")) names.push_back(name);
    const std::string message = error_of([&] { upstream().select_entry(p, names, "u.cubin"); });
    EXPECT_NE(message.find("'u.cubin' has no entry matching"), std::string::npos) << message;
    EXPECT_NE(message.find(p.describe()), std::string::npos) << message;
    // Every candidate, demangled, one per line.
    for (const std::string &name : names) EXPECT_NE(message.find("\n  " + *demangle(name)), std::string::npos);
    EXPECT_NE(error_of([&] { upstream().select_entry(p, {}, "empty.cubin"); }).find("its entries: none"),
              std::string::npos);
}

TEST(SageAttentionSm89, TwoMatchesListBoth) {
    const AttentionProblem p = problem(64, DType::f16, true, false);
    std::vector<std::string> names = upstream_entries();
    const std::string chosen = upstream().select_entry(p, names, "u.cubin");
    names.push_back(with_trailing_bool(chosen));
    const std::string message = error_of([&] { upstream().select_entry(p, names, "u.cubin"); });
    EXPECT_NE(message.find("has 2 entries matching"), std::string::npos) << message;
    EXPECT_NE(message.find("\n  " + *demangle(chosen)), std::string::npos) << message;
    EXPECT_NE(message.find("\n  " + *demangle(with_trailing_bool(chosen))), std::string::npos) << message;
}

// ---- sageattention-sm89: argument packing, checked against upstream's host function by hand ----

AttentionBuffers fake_buffers() {
    // Distinct addresses, never dereferenced: only where each one lands is checked.
    AttentionBuffers b;
    b.q_int8 = reinterpret_cast<const void *>(0x1000);
    b.k_int8 = reinterpret_cast<const void *>(0x2000);
    b.v_fp8 = reinterpret_cast<const void *>(0x3000);
    b.q_scale = reinterpret_cast<const float *>(0x4000);
    b.k_scale = reinterpret_cast<const float *>(0x5000);
    b.v_scale = reinterpret_cast<const float *>(0x6000);
    b.o = reinterpret_cast<void *>(0x7000);
    b.lse = reinterpret_cast<float *>(0x8000);
    return b;
}

// One host-function argument, as the host-call library receives it.
struct Passed {
    std::uintptr_t data;
    HostDType dtype;
    std::vector<std::int64_t> sizes;
};

Passed tensor_at(const HostArguments &a, std::size_t index) {
    const s2tp_host_value &v = a.values().at(index);
    EXPECT_EQ(v.kind, S2TP_HOST_TENSOR) << "argument " << index;
    return {reinterpret_cast<std::uintptr_t>(v.tensor.data), static_cast<HostDType>(v.tensor.dtype),
            std::vector<std::int64_t>(v.tensor.sizes, v.tensor.sizes + v.tensor.dims)};
}

void expect_tensor(const HostArguments &a, std::size_t index, std::uintptr_t data, HostDType dtype,
                   const std::vector<std::int64_t> &sizes) {
    const Passed passed = tensor_at(a, index);
    EXPECT_EQ(passed.data, data) << "argument " << index;
    EXPECT_EQ(passed.dtype, dtype) << "argument " << index;
    EXPECT_EQ(passed.sizes, sizes) << "argument " << index;
}

// The values after the tensors: tensor_layout, is_causal, qk_quant_gran, sm_scale, return_lse.
void expect_trailing(const HostArguments &a, std::int64_t layout, std::int64_t causal, std::int64_t granularity,
                     float sm_scale, std::int64_t return_lse) {
    const std::vector<s2tp_host_value> &v = a.values();
    ASSERT_GE(v.size(), 5u);
    const std::size_t at = v.size() - 5;
    for (std::size_t i : {at, at + 1, at + 2, at + 4}) EXPECT_EQ(v[i].kind, S2TP_HOST_INTEGER) << i;
    EXPECT_EQ(v[at].integer, layout);
    EXPECT_EQ(v[at + 1].integer, causal);
    EXPECT_EQ(v[at + 2].integer, granularity);
    EXPECT_EQ(v[at + 3].kind, S2TP_HOST_REAL);
    EXPECT_EQ(static_cast<float>(v[at + 3].real), sm_scale);
    EXPECT_EQ(v[at + 4].integer, return_lse);
}

TEST(SageAttentionSm89, PassesAnNhdProblemAsCorePyCallsTheHostFunction) {
    AttentionProblem p = problem(128, DType::bf16, false, false);
    p.shape.batch = 2, p.shape.heads_q = 8, p.shape.heads_kv = 2, p.shape.len_q = 300, p.shape.len_kv = 200;
    p.shape.layout = Layout::nhd;
    EXPECT_EQ(upstream().host_function(), "qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf");
    const AttentionLaunch launch = upstream().pack(p, fake_buffers());
    const HostArguments &a = launch.host_arguments;
    ASSERT_EQ(a.values().size(), 12u);
    // query, key, value (e4m3, transposed, 200 tokens padded to 256), output, the per-warp scales.
    expect_tensor(a, 0, 0x1000, HostDType::int8, {2, 300, 8, 128});
    expect_tensor(a, 1, 0x2000, HostDType::int8, {2, 200, 2, 128});
    expect_tensor(a, 2, 0x3000, HostDType::e4m3, {2, 128, 2, 256});
    expect_tensor(a, 3, 0x7000, HostDType::bf16, {2, 300, 8, 128});
    expect_tensor(a, 4, 0x4000, HostDType::f32, {2, 8, 12});  // ceil(300/128) CTAs x 4 warps
    expect_tensor(a, 5, 0x5000, HostDType::f32, {2, 2, 4});   // ceil(200/64)
    expect_tensor(a, 6, 0x6000, HostDType::f32, {2, 2, 128});  // value_scale
    expect_trailing(a, 0, 0, 2, p.sm_scale, 0);                 // NHD, no mask, per warp, no LSE
    EXPECT_TRUE(launch.arguments.count() == 0);                 // nothing packed for a cubin launch
}

TEST(SageAttentionSm89, PassesAnHndProblemAsCorePyCallsTheHostFunction) {
    AttentionProblem p = problem(64, DType::f16, true, true);
    p.shape.batch = 1, p.shape.heads_q = 4, p.shape.heads_kv = 4, p.shape.len_q = 65, p.shape.len_kv = 65;
    p.shape.layout = Layout::hnd;
    const HostArguments a = kernel_abi("sageattention-sm89-per-thread", "test").pack(p, fake_buffers()).host_arguments;
    ASSERT_EQ(a.values().size(), 12u);
    expect_tensor(a, 0, 0x1000, HostDType::int8, {1, 4, 65, 64});
    expect_tensor(a, 2, 0x3000, HostDType::e4m3, {1, 4, 64, 128});
    expect_tensor(a, 3, 0x7000, HostDType::f16, {1, 4, 65, 64});
    expect_tensor(a, 4, 0x4000, HostDType::f32, {1, 4, 32});  // per thread: 1 CTA x 4 warps x 8
    expect_tensor(a, 5, 0x5000, HostDType::f32, {1, 4, 8});   // 2 blocks x 4
    expect_trailing(a, 1, 1, 3, p.sm_scale, 1);                // HND, causal, per thread, LSE
}

TEST(SageAttentionSm89Launchers, PassVScaleAndVMeanOnlyWhereTheLauncherFusesThem) {
    const AttentionProblem p = problem(128, DType::f16, false, true);
    AttentionBuffers buffers = fake_buffers();
    buffers.v_mean = reinterpret_cast<const void *>(0x9000);
    for (const LauncherRow &row : launcher_rows()) {
        const KernelAbi &abi = kernel_abi(row.abi, "test");
        EXPECT_EQ(abi.host_function(), row.file.substr(5)) << row.abi;
        const HostArguments a = abi.pack(p, buffers).host_arguments;
        ASSERT_EQ(a.values().size(), 11u + row.fuse_v_scale + row.fuse_v_mean) << row.abi;
        std::size_t next = 6;
        if (row.fuse_v_scale) expect_tensor(a, next++, 0x6000, HostDType::f32, {1, 2, 128});
        if (row.fuse_v_mean) expect_tensor(a, next++, 0x9000, HostDType::f32, {1, 2, 128});
        EXPECT_EQ(a.values().at(next).kind, S2TP_HOST_INTEGER) << row.abi;  // tensor_layout follows
        // core.py's per_channel_fp8: scale_max 2.25 for "fp32+fp16", else 448; smooth_v for fuse_v_mean.
        EXPECT_EQ(abi.quantization(128).v_scale_max, row.fp16_accu ? 2.25f : 448.0f) << row.abi;
        EXPECT_EQ(abi.quantization(128).smooth_v, row.fuse_v_mean) << row.abi;
    }
    buffers.v_mean = nullptr;
    try {
        kernel_abi("sageattention-sm89-accum-f32-fuse-v-scale-fuse-v-mean", "test").pack(p, buffers);
        ADD_FAILURE() << "packed a fuse_v_mean launch without a V mean";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::internal);
        EXPECT_NE(std::string(e.what()).find("smooth_v"), std::string::npos) << e.what();
    }
}

TEST(KernelArguments, CopiesPointAtTheirOwnBytes) {
    KernelArguments a;
    a.add(std::uint32_t{7});
    a.add(2.5f);
    const KernelArguments copy = a;
    EXPECT_NE(copy.parameter_array()[0], a.parameter_array()[0]);
    std::uint32_t seven = 0;
    std::memcpy(&seven, copy.parameter_array()[0], sizeof seven);
    EXPECT_EQ(seven, 7u);
    EXPECT_EQ(copy.get<float>(1), 2.5f);
    EXPECT_THROW(copy.get<double>(1), Error);
}

// ---- sage2tp: today's ABI, unchanged ----

TEST(Sage2tpAbi, DescribesExactlyItsEightEntries) {
    int described = 0;
    for (const char *name : {"s2tp_attn_hd64_f16_nomask", "s2tp_attn_hd64_f16_causal", "s2tp_attn_hd64_bf16_nomask",
                             "s2tp_attn_hd64_bf16_causal", "s2tp_attn_hd128_f16_nomask", "s2tp_attn_hd128_f16_causal",
                             "s2tp_attn_hd128_bf16_nomask", "s2tp_attn_hd128_bf16_causal"}) {
        const std::optional<AbiEntry> entry = sage2tp().describe_entry(name);
        ASSERT_TRUE(entry) << name;
        EXPECT_EQ("s2tp_attn_" + entry->short_name, name);
        EXPECT_EQ(entry->full_name, name);
        EXPECT_EQ(entry->threads_per_block, 128);
        EXPECT_EQ(entry->dynamic_smem_bytes, std::string(name).find("hd64") != std::string::npos ? 16384 : 32768);
        ++described;
    }
    EXPECT_EQ(described, 8);
    EXPECT_FALSE(sage2tp().describe_entry("s2tp_quant_q_int8_f16"));
    EXPECT_FALSE(sage2tp().describe_entry(upstream_entries().front()));
    const AttentionProblem p = problem(128, DType::f16, true, true);
    EXPECT_EQ(sage2tp().select_entry(p, {"s2tp_attn_hd128_f16_nomask", "s2tp_attn_hd128_f16_causal"}, "b.cubin"),
              "s2tp_attn_hd128_f16_causal");
    const std::string message = error_of([&] { sage2tp().select_entry(p, {"s2tp_attn_hd128_f16_nomask"}, "b.cubin"); });
    EXPECT_NE(message.find("'s2tp_attn_hd128_f16_causal'"), std::string::npos) << message;
    EXPECT_NE(message.find("s2tp_attn_hd128_f16_nomask"), std::string::npos) << message;
}

TEST(Sage2tpAbi, PacksOneParameterStructWithUpstreamsGeometry) {
    AttentionProblem p = problem(128, DType::bf16, false, true);
    p.shape.batch = 2, p.shape.heads_q = 8, p.shape.heads_kv = 2, p.shape.len_q = 300, p.shape.len_kv = 200;
    const AttentionLaunch launch = sage2tp().pack(p, fake_buffers());
    ASSERT_EQ(launch.arguments.count(), 1u);
    const auto params = launch.arguments.get<s2tp_attn_params>(0);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(params.q), 0x1000u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(params.v), 0x3000u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(params.o), 0x7000u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(params.lse), 0x8000u);
    EXPECT_EQ(params.batch, 2u);
    EXPECT_EQ(params.heads_q, 8u);
    EXPECT_EQ(params.heads_kv, 2u);
    EXPECT_EQ(params.stride_bz_q, 307200u);
    EXPECT_EQ(params.stride_seq_q, 1024u);
    EXPECT_EQ(params.stride_h_q, 128u);
    EXPECT_EQ(params.stride_bz_v, 65536u);
    EXPECT_EQ(params.stride_h_v, 256u);
    EXPECT_EQ(params.stride_d_v, 512u);
    EXPECT_EQ(params.sm_scale, p.sm_scale);
    EXPECT_FALSE(launch.set_smem_attribute);
    // The grid, block and shared memory upstream's sm89 launcher uses at d1a57a5.
    EXPECT_EQ(launch.grid.x, 3u);
    EXPECT_EQ(launch.grid.y, 8u);
    EXPECT_EQ(launch.grid.z, 2u);
    EXPECT_EQ(launch.block.x, 32u);
    EXPECT_EQ(launch.block.y, 4u);
    EXPECT_EQ(launch.dynamic_smem_bytes, 32768u);
    p.with_lse = false;
    EXPECT_EQ(sage2tp().pack(p, fake_buffers()).arguments.get<s2tp_attn_params>(0).lse, nullptr);
}


// ---- the sm90 adapters ----

TEST(SageAttentionSm90Launchers, EachSelectsItsOwnInstanceForEveryProblemOfTheRealCubin) {
    const std::vector<std::string> names = sm90_entries();
    ASSERT_EQ(names.size(), 64u);  // 2 head dims x 2 granularities x 2 dtypes x 2 masks x LSE x fuse_v_scale
    for (const Sm90Row &row : sm90_rows()) {
        const KernelAbi &abi = kernel_abi(row.abi, "test");
        EXPECT_EQ(abi.launcher_file(), row.file);
        EXPECT_EQ(abi.quantization(128), sm90_recipe(row.granularity)) << row.abi;
        int described = 0;
        for (const std::string &name : names) {
            const std::optional<AbiEntry> entry = abi.describe_entry(name);
            if (!entry) continue;
            ++described;
            EXPECT_EQ(entry->threads_per_block, 128);
            const std::int64_t head_dim = parsed(name).template_arguments[3] == "64u" ? 64 : 128;
            EXPECT_EQ(entry->dynamic_smem_bytes, (64 + 128 + 128) * head_dim);  // Q, K and V tiles in int8
        }
        EXPECT_EQ(described, 8) << row.abi;  // its granularity and fusion, no LSE: 2 head dims x 2 dtypes x 2 masks
        for (std::int64_t head_dim : {64, 128})
            for (DType dtype : {DType::f16, DType::bf16})
                for (bool causal : {false, true})
                    for (bool with_lse : {false, true}) {
                        const AttentionProblem p = problem(head_dim, dtype, causal, with_lse);
                        const FunctionName f = parsed(abi.select_entry(p, names, "qk_int_sv_f8_cuda_sm90.cubin"));
                        const std::string g = row.granularity == QkGranularity::per_thread ? "(QuantGranularity)3"
                                                                                           : "(QuantGranularity)2";
                        const std::vector<std::string> expected = {
                            "64u", "128u", "128u", std::to_string(head_dim) + "u", g, g,
                            dtype == DType::f16 ? "__half" : "__nv_bfloat16", causal ? "(MaskMode)1" : "(MaskMode)0",
                            with_lse ? "true" : "false", row.fuse_v_scale ? "true" : "false"};
                        EXPECT_EQ(f.template_arguments, expected) << row.abi << " " << p.describe();
                        const std::string out = dtype == DType::f16 ? "__half*" : "__nv_bfloat16*";
                        EXPECT_EQ(f.parameters, (std::vector<std::string>{
                                                    "CUtensorMap_st", "CUtensorMap_st", "CUtensorMap_st", "float*",
                                                    "float*", "float*", out, "float*", "unsigned int", "unsigned int",
                                                    "unsigned int", "unsigned int", "unsigned int", "unsigned int",
                                                    "float"}));
                    }
    }
}

TEST(SageAttentionSm90Launchers, AnSm89CubinMatchesNothingAndListsItsDemangledEntries) {
    const AttentionProblem p = problem(128, DType::bf16, false, false);
    const std::vector<std::string> names = launcher_entries(launcher_rows().front().file);
    for (const Sm90Row &row : sm90_rows()) {
        const std::string message =
            error_of([&] { kernel_abi(row.abi, "test").select_entry(p, names, "sm89.cubin"); });
        EXPECT_NE(message.find("'sm89.cubin' has no entry matching qk_int8_sv_f8_attn_kernel<64, 128, 128, 128, "),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find("kernel ABI " + row.abi + ", the launcher " + row.file.substr(5) +
                               " of csrc/qattn/qk_int_sv_f8_cuda_sm90.cu"),
                  std::string::npos)
            << message;
        for (const std::string &name : names) EXPECT_NE(message.find("\n  " + *demangle(name)), std::string::npos);
    }
    // And an sm89 adapter finds nothing in the sm90 cubin.
    EXPECT_NE(error_of([&] { upstream().select_entry(p, sm90_entries(), "sm90.cubin"); }).find("has no entry matching"),
              std::string::npos);
}

TEST(SageAttentionSm90Launchers, TwoMatchingEntriesListBoth) {
    const AttentionProblem p = problem(64, DType::f16, true, false);
    const KernelAbi &abi = kernel_abi("sageattention-sm90-accum-f32-fuse-v-scale", "test");
    const std::string chosen = abi.select_entry(p, sm90_entries(), "sm90.cubin");
    const std::string message = error_of([&] { abi.select_entry(p, {chosen, chosen}, "twice.cubin"); });
    EXPECT_NE(message.find("'twice.cubin' has 2 entries matching"), std::string::npos) << message;
    EXPECT_NE(message.find("they are:\n  " + *demangle(chosen)), std::string::npos) << message;
}

TEST(SageAttentionSm90Launchers, TheGoldenDataHasBothGranularitiesOfEveryCase) {
    const std::filesystem::path dir = std::filesystem::path(S2TP_SOURCE_ROOT) / "tests" / "golden";
    const toml::table digests = golden::parse_toml_file(dir / "upstream.toml");
    for (const golden::SeededCase &c : golden::seeded_cases(dir / "cases.toml"))
        for (const Sm90Row &row : sm90_rows()) {
            const toml::table *t = digests["case"][c.name][row.file][granularity_name(row.granularity)].as_table();
            ASSERT_TRUE(t) << c.name << " " << row.abi;
            for (const char *key : {"q_int8", "q_scale", "k_int8", "k_scale", "v_fp8", "v_scale", "o", "lse"})
                EXPECT_EQ((*t)[key].value_or(std::string()).size(), 64u) << c.name << " " << row.abi << " " << key;
        }
}

// ---- the sm80 adapters ----

TEST(SageAttentionSm80Launchers, EachSelectsItsOwnInstanceForEveryProblemOfTheRealCubin) {
    const std::vector<std::string> names = sm80_entries();
    ASSERT_EQ(names.size(), 128u);  // 4 launchers x 2 granularities x 2 head dims x 2 dtypes x 2 masks x LSE
    for (const Sm80Row &row : sm80_rows()) {
        const KernelAbi &abi = kernel_abi(row.abi, "test");
        EXPECT_EQ(abi.launcher_file(), row.file);
        const std::int64_t d128_warp = row.inst_buffer ? 16 : 32;  // core.py: 16 at D 128 with "fp16+fp32"
        EXPECT_EQ(abi.quantization(128), sm80_recipe(row.granularity, d128_warp, row.fuse_v_mean)) << row.abi;
        EXPECT_EQ(abi.quantization(64), sm80_recipe(row.granularity, 32, row.fuse_v_mean)) << row.abi;
        int described = 0;
        for (const std::string &name : names) {
            const std::optional<AbiEntry> entry = abi.describe_entry(name);
            if (!entry) continue;
            ++described;
            const std::int64_t head_dim = parsed(name).template_arguments[4] == "64u" ? 64 : 128;
            EXPECT_EQ(entry->threads_per_block, head_dim == 128 && row.inst_buffer ? 256 : 128) << row.abi;
            // max(Q and K tiles in int8 + the V tile in fp16, the O tile in fp16)
            EXPECT_EQ(entry->dynamic_smem_bytes, (128 + 64 + 64 * 2) * head_dim) << row.abi;
        }
        EXPECT_EQ(described, 8) << row.abi;  // its granularity, no LSE: 2 head dims x 2 dtypes x 2 masks
        for (std::int64_t head_dim : {64, 128})
            for (DType dtype : {DType::f16, DType::bf16})
                for (bool causal : {false, true})
                    for (bool with_lse : {false, true}) {
                        const AttentionProblem p = problem(head_dim, dtype, causal, with_lse);
                        const FunctionName f = parsed(abi.select_entry(p, names, "qk_int_sv_f16_cuda_sm80.cubin"));
                        const std::string g = row.granularity == QkGranularity::per_thread ? "(QuantGranularity)3"
                                                                                           : "(QuantGranularity)2";
                        const auto b = [](bool v) { return std::string(v ? "true" : "false"); };
                        const std::string out = dtype == DType::f16 ? "__half" : "__nv_bfloat16";
                        const std::vector<std::string> expected = {
                            "128u", "64u", head_dim == 128 ? std::to_string(d128_warp) + "u" : "32u", "64u",
                            std::to_string(head_dim) + "u", "(DataType)1", g, g,
                            row.f16_accumulator ? "__half" : "float", b(row.inst_buffer), out, "(ComputeUnit)0",
                            causal ? "(MaskMode)1" : "(MaskMode)0", b(with_lse), b(row.fuse_v_mean)};
                        EXPECT_EQ(f.template_arguments, expected) << row.abi << " " << p.describe();
                        std::vector<std::string> parameters = {"signed char*", "signed char*", "__half*", out + "*",
                                                               "float*", "float*", "float*", out + "*"};
                        parameters.insert(parameters.end(), 15, "unsigned int");
                        parameters.push_back("float");
                        EXPECT_EQ(f.parameters, parameters);
                    }
    }
}

TEST(SageAttentionSm80Launchers, AnSm89CubinMatchesNothingAndListsItsDemangledEntries) {
    const AttentionProblem p = problem(128, DType::bf16, false, false);
    const std::vector<std::string> names = launcher_entries(launcher_rows().front().file);
    for (const Sm80Row &row : sm80_rows()) {
        const std::string message = error_of([&] { kernel_abi(row.abi, "test").select_entry(p, names, "x.cubin"); });
        EXPECT_NE(message.find("cubin 'x.cubin' has no entry matching qk_int_sv_f16_attn_kernel<128, 64, "),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find("of csrc/qattn/qk_int_sv_f16_cuda_sm80.cu"), std::string::npos) << message;
        EXPECT_NE(message.find("\n  void qk_int_sv_f8_attn_kernel<128u, 64u, 32u, 64u"), std::string::npos) << message;
    }
}

// q [2,300,8,128] NHD, k and the fp16 v [2,200,2,128]: V strided as K; V is the fp16 buffer; no V scale.
TEST(SageAttentionSm80Launchers, PassFp16VAndTheirOwnQuantizationToTheHostFunction) {
    AttentionProblem p = problem(128, DType::bf16, false, true);
    p.shape.batch = 2, p.shape.heads_q = 8, p.shape.heads_kv = 2, p.shape.len_q = 300, p.shape.len_kv = 200;
    p.shape.layout = Layout::nhd;
    AttentionBuffers buffers = fake_buffers();
    buffers.v_f16 = reinterpret_cast<const void *>(0xa000);
    buffers.v_mean = reinterpret_cast<const void *>(0x9000);
    for (const Sm80Row &row : sm80_rows()) {
        const KernelAbi &abi = kernel_abi(row.abi, "test");
        const HostArguments a = abi.pack(p, buffers).host_arguments;
        ASSERT_EQ(a.values().size(), 11u + row.fuse_v_mean) << row.abi;
        expect_tensor(a, 2, 0xa000, HostDType::f16, {2, 200, 2, 128});  // fp16 V in K's layout
        expect_tensor(a, 3, 0x7000, HostDType::bf16, {2, 300, 8, 128});
        // The Q scales follow the recipe's WARP_Q: 16 for the inst-buf launcher at head dim 128.
        const std::int64_t q_warps = row.inst_buffer ? 8 : 4;
        const std::int64_t per = row.granularity == QkGranularity::per_thread ? 8 : 1;
        expect_tensor(a, 4, 0x4000, HostDType::f32, {2, 8, 3 * q_warps * per});
        if (row.fuse_v_mean) expect_tensor(a, 6, 0x9000, HostDType::bf16, {2, 2, 128});  // V's dtype
        expect_trailing(a, 0, 0, row.granularity == QkGranularity::per_thread ? 3 : 2, p.sm_scale, 1);
    }
    // Inputs quantized by another recipe are a caller's bug: Error(internal) naming what is missing.
    const auto internal_error_of = [&](const char *abi) {
        try {
            kernel_abi(abi, "test").pack(p, buffers);
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::internal);
            return std::string(e.what());
        }
        ADD_FAILURE() << abi << " packed without its inputs";
        return std::string();
    };
    buffers.v_mean = nullptr;
    EXPECT_NE(internal_error_of("sageattention-sm80-accum-f16-fuse-v-mean").find("smooth_v"), std::string::npos);
    buffers.v_f16 = nullptr;
    EXPECT_NE(internal_error_of("sageattention-sm80-accum-f32").find("V f16"), std::string::npos);
}

// ---- every family: the selection's messages, letter for letter ----

// The whole message when an adapter finds no entry, for one launcher of each family: the instance it
// wanted, as upstream writes it, and where upstream launches it.
TEST(UpstreamLaunchers, NoEntryNamesTheWantedInstanceAndTheLauncher) {
    struct Case {
        const char *abi;
        AttentionProblem problem;
        std::string message;
    };
    const AttentionProblem bf16_lse = problem(128, DType::bf16, false, true);
    const AttentionProblem f16_causal = problem(64, DType::f16, true, false);
    const std::vector<Case> cases = {
        {"sageattention-sm89-accum-f32", bf16_lse,
         "qk_int_sv_f8_attn_kernel<128, 64, 32, 64, 128, kInt8, kPerWarp, kPerWarp, float, false, nv_bfloat16, "
         "kCudaCore, kNone, true, false, false, false, ...> (kernel ABI sageattention-sm89-accum-f32, the launcher of "
         "csrc/qattn/sm89_qk_int8_sv_f8_accum_f32_attn.cu, for "},
        {"sageattention-sm89-per-thread", f16_causal,
         "qk_int_sv_f8_attn_kernel<128, 64, 32, 64, 64, kInt8, kPerThread, kPerThread, float, true, half, kCudaCore, "
         "kCausal, false, true, false, true, ...> (kernel ABI sageattention-sm89-per-thread, the launcher of "
         "csrc/qattn/sm89_qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf.cu, for "},
        {"sageattention-sm90-accum-f32-fuse-v-scale-per-warp", bf16_lse,
         "qk_int8_sv_f8_attn_kernel<64, 128, 128, 128, kPerWarp, kPerWarp, nv_bfloat16, kNone, true, true, ...> "
         "(kernel ABI sageattention-sm90-accum-f32-fuse-v-scale-per-warp, the launcher "
         "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf of csrc/qattn/qk_int_sv_f8_cuda_sm90.cu, for "},
        {"sageattention-sm80-accum-f16-inst-buf", bf16_lse,
         "qk_int_sv_f16_attn_kernel<128, 64, 16, 64, 128, kInt8, kPerThread, kPerThread, float, true, nv_bfloat16, "
         "kTensorCore, kNone, true, false, ...> (kernel ABI sageattention-sm80-accum-f16-inst-buf, the launcher "
         "qk_int8_sv_f16_accum_f16_attn_inst_buf of csrc/qattn/qk_int_sv_f16_cuda_sm80.cu, for "},
        {"sageattention-sm80-accum-f16-fuse-v-mean-per-warp", f16_causal,
         "qk_int_sv_f16_attn_kernel<128, 64, 32, 64, 64, kInt8, kPerWarp, kPerWarp, half, false, half, kTensorCore, "
         "kCausal, false, true, ...> (kernel ABI sageattention-sm80-accum-f16-fuse-v-mean-per-warp, the launcher "
         "qk_int8_sv_f16_accum_f16_fuse_v_mean_attn of csrc/qattn/qk_int_sv_f16_cuda_sm80.cu, for "},
    };
    for (const Case &c : cases) {
        const std::string matching = "cubin 'x.cubin' has no entry matching " + c.message + c.problem.describe() + ")";
        EXPECT_EQ(error_of([&] { kernel_abi(c.abi, "test").select_entry(c.problem, {}, "x.cubin"); }),
                  matching + "; its entries: none");
        // An entry of another launcher (sm89's fuse_v_mean file), listed demangled.
        const std::vector<std::string> other = {launcher_entries(launcher_rows().back().file).front()};
        EXPECT_EQ(error_of([&] { kernel_abi(c.abi, "test").select_entry(c.problem, other, "x.cubin"); }),
                  matching + "; its entries:\n  " + *demangle(other.front()));
    }
}

// Several entries serving one problem: both listed, for every family.
TEST(UpstreamLaunchers, TwoMatchingEntriesAreListedForEveryFamily) {
    const AttentionProblem p = problem(128, DType::f16, false, true);
    const std::vector<std::pair<std::string, std::vector<std::string>>> families = {
        {"sageattention-sm89-accum-f32", launcher_entries("sm89_qk_int8_sv_f8_accum_f32_attn")},
        {"sageattention-sm90-accum-f32", sm90_entries()},
        {"sageattention-sm80-accum-f32", sm80_entries()},
    };
    for (const auto &[name, entries] : families) {
        const KernelAbi &abi = kernel_abi(name, "test");
        const std::string chosen = abi.select_entry(p, entries, "one.cubin");
        const std::string message = error_of([&] { abi.select_entry(p, {chosen, chosen}, "twice.cubin"); });
        EXPECT_EQ(message.rfind("cubin 'twice.cubin' has 2 entries matching ", 0), 0u) << message;
        EXPECT_NE(message.find(" (kernel ABI " + name + ", the launcher "), std::string::npos) << message;
        EXPECT_EQ(message.substr(message.find("); they are:")),
                  "); they are:\n  " + *demangle(chosen) + "\n  " + *demangle(chosen));
    }
}

// An entry with the launcher's template arguments but another parameter list (a patch changed the
// kernel's signature, so pack() would not fit it) serves nothing, in every family.
TEST(UpstreamLaunchers, AnEntryWithAnotherParameterListMatchesNothing) {
    const AttentionProblem p = problem(64, DType::bf16, true, false);
    const std::vector<std::pair<std::string, std::vector<std::string>>> families = {
        {"sageattention-sm89", upstream_entries()},
        {"sageattention-sm90-accum-f32-fuse-v-scale", sm90_entries()},
        {"sageattention-sm80-accum-f16", sm80_entries()},
    };
    for (const auto &[name, entries] : families) {
        const KernelAbi &abi = kernel_abi(name, "test");
        const std::string chosen = abi.select_entry(p, entries, "one.cubin");
        ASSERT_EQ(chosen.back(), 'f') << chosen;  // the last parameter, sm_scale, is a float
        const std::string with_double = chosen.substr(0, chosen.size() - 1) + "d";
        ASSERT_TRUE(demangle(with_double)) << with_double;
        EXPECT_FALSE(abi.describe_entry(with_double)) << name;
        EXPECT_NE(error_of([&] { abi.select_entry(p, {with_double}, "patched.cubin"); })
                      .find("has no entry matching"),
                  std::string::npos)
            << name;
    }
}

}  // namespace
}  // namespace s2tp::unit_kernel_abi
