// The GPU test program: checks the attention kernels and quantizers on a real device. One binary,
// one mode per run:
//
//   gpu_kernel_check golden    --baseline-cubin B --candidate-cubin C --quant-cubin Q [--golden DIR]
//   gpu_kernel_check shapes    --quant-cubin Q [--baseline-cubin B] [--candidate-cubin C] [--variant V]
//                              [--baseline-abi A] [--candidate-abi A]
//   gpu_kernel_check sanitize  --tool memcheck|racecheck|synccheck|initcheck [shapes options]
//   gpu_kernel_check bench     --baseline-cubin B --candidate-cubin C --quant-cubin Q [-n N] [--rounds R]
//   gpu_kernel_check occupancy --baseline-cubin B --candidate-cubin C [--arch-limits FILE]
//   gpu_kernel_check upstream  --upstream-library U --baseline-cubin B --quant-cubin Q [--golden DIR]
//   gpu_kernel_check launchers --launcher-libraries DIR --quant-cubin Q [--launcher-golden DIR]
//                              [--launchers-matching TEXT] [--seq-len N --rounds R]
//   gpu_kernel_check overhead  --upstream-library U --quant-cubin Q [--seq-len N] [--rounds R]
//
// launchers: every upstream launcher adapter (kernel_abi_names() with a launcher_file()) on the golden
// cases of tests/golden (cases.toml, upstream.toml, means/): inputs regenerated from each case's seed,
// quantized by sage2tp's quantizers with the launcher's recipe (and upstream's K and V means), must
// have upstream's digests, and the launcher's host function, called from its host-call library
// DIR/<launcher_file>.so through its adapter on them, must write upstream's o and LSE bytes; the Q/K granularity is the adapter's (per warp
// and per thread for the sm89 and sm80 launchers; the sm90 adapters, both, run on an sm_90 GPU only), and
// the sm80 launchers' fp16 V is checked as upstream's `v`. The sm90 path's GPU quantizer is
// also checked on its own, against upstream's digests and the host quantizer. With --seq-len it then
// times every launcher in this one process at the Wan 480p shape (B1 H40 N D128), interleaved, CUDA
// events. --launchers-matching keeps only the adapters whose names contain TEXT.
//
// Every attention launch goes through the product's kernel ABI adapters (src/gpu/kernel_abi.h): the
// sage2tp cubins through `sage2tp`, upstream SageAttention's own launcher through its host function
// (`sageattention-sm89`), from the host-call library built from it.
//
// Common options: --device N (index within CUDA_VISIBLE_DEVICES), --out DIR (writes <mode>.json).
// --baseline-abi and --candidate-abi (default sage2tp) name the kernel ABI adapter of each arm in
// shapes and sanitize, so that upstream SageAttention's own launcher can be either arm: its
// --baseline-cubin / --candidate-cubin is then the host-call library.
// Exit status: 0 all checks passed; 1 a check failed; 77 skipped (no GPU, no compute-sanitizer, no golden
// data), which meson reports as SKIP; otherwise sage2tp's exit codes (2 usage, 3 missing tool, 5 internal).
#include "gpu/attention_launch.h"
#include "check_program.h"
#include "gpu/kernel_abi.h"
#include "tools/gpu_session/gpu_session.h"
#include "model/cpu_reference.h"
#include "support/data_paths.h"
#include "support/cuda_tools.h"
#include "support/errors.h"
#include "gpu/gpu_runtime.h"
#include "support/hashing.h"
#include "support/number_format.h"
#include "model/host_quantizer.h"
#include "model/input_generator.h"
#include "model/occupancy.h"
#include "model/shape_sets.h"
#include "support/process_runner.h"
#include "formats/demangled_name.h"
#include "formats/sanitizer_report.h"
#include "support/statistics.h"
#include "formats/tensor.h"
#include "formats/tensor_io.h"
#include "golden_cases.h"
#include "golden/golden_cases_file.h"
#include "stages/parity_check.h"

#include <cxxopts.hpp>
#include <toml++/toml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

// The width of the adapter column of the launcher tables: the longest adapter name
// (sageattention-sm89-accum-f32-fuse-v-scale-fuse-v-mean-per-thread) and a space.
constexpr int kAdapterColumn = 65;

constexpr int kExitPass = 0;
constexpr int kExitCheckFailed = 1;
constexpr int kExitSkip = 77;  // meson's "skipped"

// Rel-L2 of the kernel against the float64 reference on the same dequantized inputs. The error comes
// from the fp8 P, the fp16 PV partials and the approximate ex2/rcp; 0.05 is the community gate.
constexpr double kMaxRelL2 = 0.05;
// The kernel's LSE against the float64 one, in log2 units: ex2/lg2.approx and fp32 sums stay far
// below this, while the Python-side natural-log LSE with the K-mean correction is off by O(1).
constexpr double kLseTolerance = 1e-3;

struct Options {
    std::string mode;
    std::optional<fs::path> baseline_cubin, candidate_cubin, quant_cubin, upstream_library, golden_dir, out_dir, arch_limits,
        sanitizer, launcher_libraries, launcher_golden;
    bool seq_len_given = false;
    int device = 0;
    std::string variant = "both";
    std::string baseline_abi = "sage2tp", candidate_abi = "sage2tp";
    std::string launchers_matching;  // launchers: only the adapters whose names contain it (empty: all)
    std::string tool;
    std::int64_t n = 32760;
    int rounds = 30;
    int warmup = 5;
    std::optional<std::uint64_t> seed;
    int timeout_s = 3600;
    int print_limit = 100;
};

class Skip : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

fs::path required(const std::optional<fs::path> &path, const char *option) {
    if (!path) fail(ExitCode::usage, std::string("--") + option + " is required in this mode");
    if (!fs::is_regular_file(*path)) fail(ExitCode::usage, std::string("--") + option + ": no such file '" + path->string() + "'");
    return *path;
}

void write_json(const Options &options, const toml::table &result) {
    if (!options.out_dir) return;
    fs::create_directories(*options.out_dir);
    fs::path path = *options.out_dir / (options.mode + ".json");
    std::ofstream file(path);
    file << toml::json_formatter{result} << "\n";
    if (!file) fail(ExitCode::usage, "cannot write '" + path.string() + "'");
}

// ---- Element-wise comparison that reports where and how two tensors differ ----

// Empty when the tensors are identical byte for byte (parity's byte_difference), else one line: how many
// elements differ, the first one's multi-index and both values.
std::string difference_text(const std::string &what, const Tensor &got, const Tensor &expected) {
    if (got.dtype != expected.dtype || got.shape != expected.shape)
        return what + ": got " + dtype_name(got.dtype) + " " + shape_to_string(got.shape) + ", expected " +
               dtype_name(expected.dtype) + " " + shape_to_string(expected.shape);
    const ByteDifference d = byte_difference(got, expected);
    if (d.differing == 0) return {};
    return what + ": " + std::to_string(d.differing) + " of " + std::to_string(got.numel()) +
           " elements differ; first at " + shape_to_string(unravel_index(d.first, got.shape)) + ": got " +
           element_text(got, d.first) + ", expected " + element_text(expected, d.first);
}

// Empty when every element is finite; the poison (0xFF bytes) is NaN, so this finds unwritten outputs.
std::string non_finite_elements(const std::string &what, const Tensor &t) {
    std::int64_t count = 0, first = -1;
    for (std::int64_t i = 0; i < t.numel(); ++i) {
        if (!std::isfinite(t.value_at(i))) {
            if (first < 0) first = i;
            ++count;
        }
    }
    if (count == 0) return {};
    return what + ": " + std::to_string(count) + " of " + std::to_string(t.numel()) +
           " elements are NaN or infinite (unwritten outputs keep the NaN poison); first at " +
           shape_to_string(unravel_index(first, t.shape)) + ": " + element_text(t, first);
}

double max_abs_difference(const Tensor &a, const Tensor &b) {
    double worst = 0.0;
    for (std::int64_t i = 0; i < a.numel(); ++i) {
        double diff = std::fabs(a.value_at(i) - b.value_at(i));
        if (!(diff <= worst)) worst = diff;  // NaN counts as the worst
    }
    return worst;
}

const KernelAbi &sage2tp_kernels() { return kernel_abi("sage2tp", "gpu_kernel_check"); }

// ---- golden: upstream's own outputs, byte for byte ----

// log2-sum-exp2 as the kernel returns it, or the natural-log LSE that SageAttention's Python wrapper
// returns (lse / log2(e) + sm_scale * q . k_mean): used only to say which one a golden file holds.
Tensor python_side_lse(const AttentionProblem &problem, const Tensor &reference_lse, const Tensor &q,
                       const Tensor &k_mean) {
    const AttentionShape &s = problem.shape;
    const std::int64_t groups = s.heads_q / s.heads_kv;
    Tensor out(DType::f64, reference_lse.shape);
    double *values = out.data<double>();
    for (std::int64_t b = 0; b < s.batch; ++b)
        for (std::int64_t h = 0; h < s.heads_q; ++h)
            for (std::int64_t i = 0; i < s.len_q; ++i) {
                double dot = 0.0;
                for (std::int64_t d = 0; d < s.head_dim; ++d)
                    dot += q.value_at(s.offset(false, b, h, i, d)) *
                           k_mean.value_at((b * s.heads_kv + h / groups) * s.head_dim + d);
                const std::int64_t at = (b * s.heads_q + h) * s.len_q + i;
                values[at] = reference_lse.value_at(at) * std::log(2.0) + problem.sm_scale * dot;
            }
    return out;
}

// --golden, else $S2TP_GOLDEN_DIR; Skip when neither holds the cases.
fs::path golden_directory(const Options &options) {
    if (options.golden_dir) {
        if (!fs::is_regular_file(*options.golden_dir / "cases.toml"))
            fail(ExitCode::usage, "--golden: no cases.toml in '" + options.golden_dir->string() + "'");
        return *options.golden_dir;
    }
    const fs::path dir = golden::directory();
    if (!fs::is_regular_file(dir / "cases.toml"))
        throw Skip("no golden data: '" + (dir / "cases.toml").string() +
                   "' does not exist (set S2TP_GOLDEN_DIR or pass --golden)");
    return dir;
}

QuantizedInputs golden_quantized(const golden::Case &c) {
    QuantizedInputs q;
    q.q_int8 = golden::load(c, "q_int8");
    q.q_scale = golden::load(c, "q_scale");
    q.k_mean = golden::load(c, "k_mean");
    q.k_int8 = golden::load(c, "k_int8");
    q.k_scale = golden::load(c, "k_scale");
    q.v_fp8 = golden::load(c, "v_fp8");
    q.v_scale = golden::load(c, "v_scale");
    return q;
}

// A kernel's code as its adapter launches it: the file is a cubin, or for an adapter that calls a host
// function, the host-call library built from the launcher file (LoadedAttention loads the one it uses).
LoadedAttention load_code(const KernelAbi &abi, const fs::path &file) { return LoadedAttention(abi, file, file); }

int run_golden(const Options &options) {
    const fs::path dir = golden_directory(options);
    const fs::path baseline_path = required(options.baseline_cubin, "baseline-cubin");
    const fs::path candidate_path = required(options.candidate_cubin, "candidate-cubin");
    const fs::path quant_path = required(options.quant_cubin, "quant-cubin");
    std::vector<golden::Case> cases = golden::cases(dir);

    DeviceFacts device = select_device(options.device);
    std::cout << device.summary() << "\n";
    CubinModule quant(quant_path);
    const LoadedAttention baseline = load_code(sage2tp_kernels(), baseline_path),
                          candidate = load_code(sage2tp_kernels(), candidate_path);

    toml::array case_results;
    int failed = 0;
    for (const golden::Case &c : cases) {
        const AttentionProblem &problem = c.problem;
        const fs::path case_dir = dir / c.name;
        std::vector<std::string> problems, notes;

        const QuantizedInputs golden = golden_quantized(c);
        const Tensor golden_o = golden::load(c, "o");
        const Tensor golden_lse = golden::load(c, "lse");
        const Tensor q = golden::load(c, "q");
        const Tensor k = golden::load(c, "k");
        const Tensor v = golden::load(c, "v");

        // (1) Upstream's quantized inputs through both arms: o and lse must be upstream's bytes.
        DeviceQuantizedInputs device_inputs = upload_quantized(problem, golden);
        KernelRun base = run_attention(baseline, problem, device_inputs, "baseline");
        KernelRun cand = run_attention(candidate, problem, device_inputs, "candidate");
        for (const std::string &line :
             {difference_text("baseline o", base.o, golden_o), difference_text("baseline lse", base.lse, golden_lse),
              difference_text("candidate o", cand.o, golden_o), difference_text("candidate lse", cand.lse, golden_lse)})
            if (!line.empty()) problems.push_back(line);

        // (2) Our quantizers on upstream's q, k, v and K mean: upstream's quantized bytes.
        QuantizedInputs ours =
            download_quantized(problem, quantize_on_gpu(quant, problem, q, k, v, GivenMeans{golden.k_mean, std::nullopt}));
        for (const std::string &line :
             {difference_text("q_int8", ours.q_int8, golden.q_int8), difference_text("q_scale", ours.q_scale, golden.q_scale),
              difference_text("k_int8", ours.k_int8, golden.k_int8), difference_text("k_scale", ours.k_scale, golden.k_scale),
              difference_text("v_fp8", ours.v_fp8, golden.v_fp8), difference_text("v_scale", ours.v_scale, golden.v_scale)})
            if (!line.empty()) problems.push_back(line);
        // Upstream's K mean comes from torch's reduction, whose order we do not reproduce, so a 1-ulp
        // difference here is reported but is not a failure.
        QuantizedInputs own_mean = download_quantized(problem, quantize_on_gpu(quant, problem, q, k, v));
        std::string mean_difference = difference_text("k_mean (our kernel vs torch's)", own_mean.k_mean, golden.k_mean);
        if (!mean_difference.empty()) notes.push_back(mean_difference + " [informational]");

        // (3) Accuracy of the baseline against the float64 reference on the same dequantized inputs.
        ReferenceResult reference = reference_attention(problem.shape, golden, problem.sm_scale, problem.causal);
        RelL2 error = relative_l2(base.o, reference.o);
        if (error.non_finite > 0)
            problems.push_back("baseline o has " + std::to_string(error.non_finite) + " non-finite elements");
        if (!(error.rel_l2 <= kMaxRelL2))
            problems.push_back("baseline rel-L2 against the float64 reference is " + fixed(error.rel_l2, 5) +
                               " > " + fixed(kMaxRelL2, 2));
        // The golden LSE should be the kernel's raw base-2 LSE; say so if it looks like something else.
        const double lse_raw_gap = max_abs_difference(golden_lse, reference.lse);
        if (!(lse_raw_gap <= kLseTolerance)) {
            const double python_gap =
                max_abs_difference(golden_lse, python_side_lse(problem, reference.lse, q, golden.k_mean));
            notes.push_back("golden lse does not look like the kernel's raw base-2 LSE: max |golden - reference| = " +
                            fixed(lse_raw_gap, 6) + "; against the Python-side natural-log LSE with the K-mean "
                            "correction it is " + fixed(python_gap, 6));
        }

        const bool passed = problems.empty();
        if (!passed) ++failed;
        std::cout << (passed ? "PASS " : "FAIL ") << c.name << " (" << problem.describe() << "): ";
        if (passed)
            std::cout << "baseline and candidate o/lse identical to upstream, quantizers identical, rel-L2 "
                      << fixed(error.rel_l2, 5) << "\n";
        else
            std::cout << problems.size() << " problem(s), rel-L2 " << fixed(error.rel_l2, 5) << "\n";
        for (const std::string &line : problems) std::cout << "    " << line << "\n";
        for (const std::string &line : notes) std::cout << "    note: " << line << "\n";

        toml::array problem_list, note_list;
        for (const auto &line : problems) problem_list.push_back(line);
        for (const auto &line : notes) note_list.push_back(line);
        case_results.push_back(toml::table{{"name", c.name},
                                           {"passed", passed},
                                           {"rel_l2", error.rel_l2},
                                           {"lse_max_abs_vs_reference", lse_raw_gap},
                                           {"problems", problem_list},
                                           {"notes", note_list}});
    }
    std::cout << "golden: " << cases.size() - failed << " of " << cases.size() << " cases passed\n";
    write_json(options, toml::table{{"mode", "golden"},
                                    {"device", device.summary()},
                                    {"passed", failed == 0},
                                    {"cases", case_results}});
    return failed == 0 ? kExitPass : kExitCheckFailed;
}

// ---- upstream: upstream SageAttention's own kernel, through its adapter, against ours and its goldens ----

// Per golden case: upstream's kernel (sageattention-sm89 adapter) on upstream's quantized inputs must
// write upstream's golden o and lse, and sage2tp's embedded baseline (sage2tp adapter) the same bytes;
// then both on sage2tp's own quantization of upstream's q, k, v must agree with each other.
int run_upstream(const Options &options) {
    const fs::path dir = golden_directory(options);
    const fs::path upstream_path = required(options.upstream_library, "upstream-library");
    const fs::path baseline_path = required(options.baseline_cubin, "baseline-cubin");
    const fs::path quant_path = required(options.quant_cubin, "quant-cubin");
    const std::vector<golden::Case> cases = golden::cases(dir);

    DeviceFacts device = select_device(options.device);
    std::cout << device.summary() << "\n";
    const KernelAbi &upstream_abi = kernel_abi("sageattention-sm89", "gpu_kernel_check upstream");
    const CubinModule quant(quant_path);
    const LoadedAttention upstream = load_code(upstream_abi, upstream_path),
                          baseline = load_code(sage2tp_kernels(), baseline_path);

    toml::array case_results;
    int failed = 0;
    for (const golden::Case &c : cases) {
        const AttentionProblem &problem = c.problem;
        std::vector<std::string> problems;
        const QuantizedInputs golden = golden_quantized(c);
        const Tensor golden_o = golden::load(c, "o");
        const Tensor golden_lse = golden::load(c, "lse");

        const DeviceQuantizedInputs golden_inputs = upload_quantized(problem, golden);
        const KernelRun up = run_attention(upstream, problem, golden_inputs, "upstream");
        const KernelRun ours = run_attention(baseline, problem, golden_inputs, "baseline");
        std::vector<std::string> lines = {difference_text("upstream o vs golden", up.o, golden_o),
                                          difference_text("baseline o vs upstream", ours.o, up.o)};
        if (problem.with_lse) {
            lines.push_back(difference_text("upstream lse vs golden", up.lse, golden_lse));
            lines.push_back(difference_text("baseline lse vs upstream", ours.lse, up.lse));
        }

        const GeneratedInputs host{golden::load(c, "q"), golden::load(c, "k"), golden::load(c, "v")};
        const DeviceQuantizedInputs own_inputs =
            quantize_on_gpu(quant, problem, host.q, host.k, host.v, GivenMeans{golden.k_mean, std::nullopt});
        const KernelRun up_own = run_attention(upstream, problem, own_inputs, "upstream");
        const KernelRun ours_own = run_attention(baseline, problem, own_inputs, "baseline");
        lines.push_back(difference_text("on sage2tp's quantization: baseline o vs upstream", ours_own.o, up_own.o));
        if (problem.with_lse)
            lines.push_back(difference_text("on sage2tp's quantization: baseline lse vs upstream", ours_own.lse, up_own.lse));
        lines.push_back(non_finite_elements("upstream o", up.o));
        for (const std::string &line : lines)
            if (!line.empty()) problems.push_back(line);

        const bool passed = problems.empty();
        if (!passed) ++failed;
        // The kernel upstream's host function launched (a host call launches at least one).
        const std::string &entry = up.launches.front().kernel;
        const std::string demangled = demangle(entry).value_or(entry);
        std::cout << (passed ? "PASS " : "FAIL ") << c.name << " (" << problem.describe() << "): " << demangled << "\n";
        for (const std::string &line : problems) std::cout << "    " << line << "\n";
        toml::array problem_list;
        for (const auto &line : problems) problem_list.push_back(line);
        case_results.push_back(toml::table{{"name", c.name}, {"passed", passed}, {"upstream_entry", demangled},
                                           {"problems", problem_list}});
    }
    std::cout << "upstream: " << cases.size() - failed << " of " << cases.size()
              << " cases byte-identical (upstream vs golden, sage2tp baseline vs upstream)\n";
    write_json(options, toml::table{{"mode", "upstream"},
                                    {"device", device.summary()},
                                    {"passed", failed == 0},
                                    {"cases", case_results}});
    return failed == 0 ? kExitPass : kExitCheckFailed;
}

// ---- launchers: every upstream launcher through its adapter, against upstream's digests ----

// The adapters of upstream launchers, in registry order.
std::vector<const KernelAbi *> launcher_adapters() {
    std::vector<const KernelAbi *> adapters;
    for (const std::string &name : kernel_abi_names()) {
        const KernelAbi &abi = kernel_abi(name, "gpu_kernel_check launchers");
        if (!abi.launcher_file().empty()) adapters.push_back(&abi);
    }
    return adapters;
}

// upstream.toml's digests of one (case, launcher, granularity), or nullptr.
const toml::table *golden_digests(const toml::table &root, const std::string &case_name, const std::string &launcher,
                                  const std::string &granularity) {
    return root["case"][case_name][launcher][granularity].as_table();
}

std::string digest_of(const Tensor &t) { return sha256_hex(t.bytes.data(), t.bytes.size()); }


// Wan 480p (B1 H40 N D128, bf16, HND as upstream's do_bench figures), every launcher interleaved.
void time_launchers(const Options &options, const std::vector<const KernelAbi *> &adapters,
                    const std::vector<std::unique_ptr<LoadedAttention>> &modules, const CubinModule &quant,
                    toml::table &result) {
    AttentionProblem problem;
    problem.shape.batch = 1, problem.shape.heads_q = 40, problem.shape.heads_kv = 40;
    problem.shape.len_q = options.n, problem.shape.len_kv = options.n, problem.shape.head_dim = 128;
    problem.shape.layout = Layout::hnd;
    problem.dtype = DType::bf16;
    problem.sm_scale = default_sm_scale(128);
    problem.with_lse = false;
    problem.validate();
    const GeneratedInputs generated = generate_inputs(problem.shape, problem.dtype, options.seed.value_or(24));
    // One set of quantized inputs per recipe: launchers that agree share one.
    std::vector<std::pair<QuantizationRecipe, DeviceQuantizedInputs>> inputs;
    std::vector<AttentionEntry> kernels;
    std::vector<AttentionOutputs> outputs;
    std::vector<AttentionLaunch> launches;
    for (std::size_t i = 0; i < adapters.size(); ++i) {
        const QuantizationRecipe recipe = adapters[i]->quantization(problem.shape.head_dim);
        auto found = std::find_if(inputs.begin(), inputs.end(), [&](const auto &p) { return p.first == recipe; });
        if (found == inputs.end()) {
            inputs.emplace_back(recipe, quantize_on_gpu(quant, problem, generated.q, generated.k, generated.v, {}, recipe));
            found = inputs.end() - 1;
        }
        kernels.push_back(find_attention_entry(*modules[i], problem));
        outputs.push_back(allocate_outputs(problem, adapters[i]->name()));
        launches.push_back(adapters[i]->pack(problem, attention_buffers(problem, found->second, outputs.back())));
    }
    for (int w = 0; w < options.warmup; ++w)
        for (std::size_t i = 0; i < kernels.size(); ++i) launch_attention(kernels[i], launches[i]);
    synchronize("launchers warm-up, " + problem.describe());
    EventTimer timer;
    std::vector<std::vector<double>> times(kernels.size());
    for (int round = 0; round < options.rounds; ++round)
        for (std::size_t k = 0; k < kernels.size(); ++k) {
            const std::size_t i = (k + static_cast<std::size_t>(round)) % kernels.size();  // rotate who goes first
            timer.start(nullptr);
            launch_attention(kernels[i], launches[i]);
            timer.stop(nullptr);
            times[i].push_back(timer.elapsed_ms());
        }
    const double flops = 4.0 * 40 * static_cast<double>(options.n) * static_cast<double>(options.n) * 128;
    std::cout << "\nWan 480p, " << problem.describe() << ", " << options.rounds << " interleaved rounds, CUDA events:\n";
    toml::array rows;
    for (std::size_t i = 0; i < kernels.size(); ++i) {
        std::vector<double> sorted = times[i];
        std::sort(sorted.begin(), sorted.end());
        const double p50 = sorted[sorted.size() / 2];
        std::cout << "  " << std::left << std::setw(kAdapterColumn) << adapters[i]->name() << " p50 " << fixed(p50, 3) << " ms  "
                  << fixed(flops / p50 / 1e9, 1) << " TOPS  min " << fixed(sorted.front(), 3) << " ms\n";
        rows.push_back(toml::table{{"abi", adapters[i]->name()}, {"p50_ms", p50}, {"min_ms", sorted.front()}});
    }
    result.insert("timing", toml::table{{"problem", problem.describe()}, {"rounds", options.rounds}, {"launchers", rows}});
}

// The sm90 path's quantized inputs (sm90_recipe) from the GPU quantizer, against upstream's digests (both
// sm90 launchers read the same, so the fuse_v_scale launcher's stand for them) and against the host
// quantizer: per thread the two must agree byte for byte; per warp they may differ only where upstream's
// hardware reciprocal decides a tie (host_quantizer.h), which is reported, not failed.
std::vector<std::string> sm90_quantizer_problems(const CubinModule &quant, const AttentionProblem &problem,
                                                 const GeneratedInputs &host, const Tensor &k_mean,
                                                 const toml::table &digests, const std::string &case_name,
                                                 QkGranularity granularity) {
    const QuantizationRecipe recipe = sm90_recipe(granularity);
    const char *launcher = "sm90_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf";
    const toml::table *expected = golden_digests(digests, case_name, launcher, granularity_name(granularity));
    if (!expected)
        return {std::string("upstream.toml has no [case.\"") + case_name + "\"." + launcher + "." +
                granularity_name(granularity) + "]"};
    const QuantizedInputs ours = download_quantized(
        problem, quantize_on_gpu(quant, problem, host.q, host.k, host.v, GivenMeans{k_mean, std::nullopt}, recipe));
    QuantizedInputs cpu;
    const AttentionShape &shape = problem.shape;
    quantize_q(shape, host.q, cpu.q_int8, cpu.q_scale, recipe.qk);
    quantize_k(shape, host.k, k_mean, cpu.k_int8, cpu.k_scale, recipe.qk);
    quantize_v(shape, host.v, cpu.v_fp8, cpu.v_scale, recipe.v_scale_max, recipe.v_pad_tokens);
    std::vector<std::string> problems;
    for (const auto &[name, gpu, host_tensor] :
         {std::tuple<const char *, const Tensor *, const Tensor *>{"q_int8", &ours.q_int8, &cpu.q_int8},
          {"q_scale", &ours.q_scale, &cpu.q_scale}, {"k_int8", &ours.k_int8, &cpu.k_int8},
          {"k_scale", &ours.k_scale, &cpu.k_scale}, {"v_fp8", &ours.v_fp8, &cpu.v_fp8},
          {"v_scale", &ours.v_scale, &cpu.v_scale}}) {
        const std::optional<std::string> want = (*expected)[name].value<std::string>();
        const std::string got = digest_of(*gpu);
        if (!want) problems.push_back(std::string("upstream.toml has no ") + name);
        else if (got != *want) problems.push_back(std::string(name) + ": sha256 " + got + ", upstream's " + *want);
        const std::string host_difference = difference_text(std::string(name) + " (GPU vs host quantizer)", *gpu, *host_tensor);
        const bool may_tie = granularity == QkGranularity::per_warp || std::string(name) == "v_fp8";
        if (!host_difference.empty()) {
            if (may_tie) std::cout << "    " << host_difference << " [informational: hardware reciprocal ties]\n";
            else problems.push_back(host_difference);
        }
    }
    return problems;
}

int run_launchers(const Options &options) {
    const fs::path quant_path = required(options.quant_cubin, "quant-cubin");
    if (!options.launcher_libraries || !fs::is_directory(*options.launcher_libraries))
        fail(ExitCode::usage, "--launcher-libraries must name a directory of <launcher>.so host-call libraries");
    const fs::path golden_dir =
        options.launcher_golden.value_or(fs::path(S2TP_SOURCE_ROOT) / "tests" / "golden");
    const std::vector<golden::SeededCase> cases = golden::seeded_cases(golden_dir / "cases.toml");
    const toml::table digests = golden::parse_toml_file(golden_dir / "upstream.toml");
    DeviceFacts device = select_device(options.device);
    std::cout << device.summary() << "\n";
    std::vector<const KernelAbi *> adapters;
    for (const KernelAbi *abi : launcher_adapters()) {
        if (abi->name().find(options.launchers_matching) == std::string::npos) continue;
        const std::string arch = abi->required_arch();
        if (arch.empty() || arch == device.arch() || arch == device.arch() + "a") adapters.push_back(abi);
        else std::cout << "skipping " << abi->name() << ": its kernel needs " << arch << ", this GPU is " << device.arch() << "\n";
    }
    const CubinModule quant(quant_path);
    // A launcher whose cubin this host could not build (upstream's sm90 file needs torch >= 2.1's
    // headers) is named and left out; its golden cases are not counted as passed.
    std::vector<std::unique_ptr<LoadedAttention>> modules;
    std::vector<const KernelAbi *> built;
    for (const KernelAbi *abi : adapters) {
        const fs::path library = *options.launcher_libraries / (abi->launcher_file() + ".so");
        if (!fs::is_regular_file(library)) {
            std::cout << "not checked: " << abi->name() << ", no " << library.string() << " (not built on this host)\n";
            continue;
        }
        built.push_back(abi);
        modules.push_back(std::make_unique<LoadedAttention>(load_code(*abi, library)));
    }
    if (built.empty())
        fail(ExitCode::usage, "--launcher-libraries: no launcher's host-call library in '" +
                                  options.launcher_libraries->string() + "'");
    adapters = built;

    int failed = 0;
    std::map<std::string, int> identical;  // per adapter: cases byte-identical
    toml::array case_results;
    for (const golden::SeededCase &c : cases) {
        const AttentionProblem &problem = c.problem;
        const GeneratedInputs host = generate_inputs(problem.shape, problem.dtype, c.seed);
        // Upstream's means: K's (torch's), e4m3 V's (per_channel_fp8's, fp32) and fp16 V's (sub_mean's, in
        // V's dtype), each fed to the launchers whose recipe subtracts it.
        const auto mean_file = [&](const char *file, DType dtype, const Shape &shape) {
            TensorRequest request;
            request.dtype = dtype, request.shape = shape, request.require_finite = true;
            return load_tensor(golden_dir / "means" / c.name / file, request);
        };
        const Tensor k_mean = mean_file("k_mean.npy", problem.dtype, k_mean_shape(problem.shape));
        const GivenMeans e4m3_means{k_mean, mean_file("v_mean.npy", DType::f32, v_mean_shape(problem.shape))};
        const GivenMeans f16_means{k_mean, mean_file("sm80_v_mean.npy", problem.dtype, v_mean_shape(problem.shape))};
        for (std::size_t i = 0; i < adapters.size(); ++i) {
            const KernelAbi &abi = *adapters[i];
            const std::string granularity = granularity_name(abi.quantization(problem.shape.head_dim).qk.granularity);
            const toml::table *expected = golden_digests(digests, c.name, abi.launcher_file(), granularity);
            std::vector<std::string> problems;
            if (!expected) {
                problems.push_back("upstream.toml has no [case.\"" + c.name + "\"." + abi.launcher_file() + "." +
                                   granularity + "]");
            } else {
                const QuantizationRecipe recipe = abi.quantization(problem.shape.head_dim);
                const DeviceQuantizedInputs inputs = quantize_on_gpu(
                    quant, problem, host.q, host.k, host.v, recipe.v_format == VFormat::f16 ? f16_means : e4m3_means,
                    recipe);
                const QuantizedInputs ours = download_quantized(problem, inputs);
                const KernelRun run = run_attention(*modules[i], problem, inputs, abi.name());
                const std::map<std::string, const Tensor *> tensors = {
                    {"q_int8", &ours.q_int8}, {"q_scale", &ours.q_scale}, {"k_int8", &ours.k_int8},
                    {"k_scale", &ours.k_scale}, {"v_fp8", &ours.v_fp8},   {"v_scale", &ours.v_scale},
                    {"v_mean", &ours.v_mean},   {"v", &ours.v_f16},       {"o", &run.o},
                    {"lse", &run.lse}};
                for (const auto &[name, node] : *expected) {
                    const auto want = node.value<std::string>();
                    const auto have = tensors.find(std::string(name.str()));
                    if (!want || have == tensors.end()) {
                        problems.push_back("upstream.toml: unexpected key '" + std::string(name.str()) + "'");
                        continue;
                    }
                    const std::string got = digest_of(*have->second);
                    if (got != *want) problems.push_back(have->first + ": sha256 " + got + ", upstream's " + *want);
                }
                const std::string unwritten = non_finite_elements("o", run.o);
                if (!unwritten.empty()) problems.push_back(unwritten);
            }
            const bool passed = problems.empty();
            if (passed) ++identical[abi.name()];
            else ++failed;
            std::cout << (passed ? "PASS " : "FAIL ") << c.name << " " << abi.name() << "\n";
            for (const std::string &line : problems) std::cout << "    " << line << "\n";
            toml::array problem_list;
            for (const auto &line : problems) problem_list.push_back(line);
            case_results.push_back(toml::table{
                {"case", c.name}, {"abi", abi.name()}, {"passed", passed}, {"problems", problem_list}});
        }
        for (QkGranularity granularity : {QkGranularity::per_warp, QkGranularity::per_thread}) {
            const std::string label = std::string("sm90 quantizer ") + granularity_name(granularity);
            const std::vector<std::string> problems =
                sm90_quantizer_problems(quant, problem, host, k_mean, digests, c.name, granularity);
            const bool passed = problems.empty();
            if (passed) ++identical[label];
            else ++failed;
            std::cout << (passed ? "PASS " : "FAIL ") << c.name << " " << label << "\n";
            for (const std::string &line : problems) std::cout << "    " << line << "\n";
            toml::array problem_list;
            for (const auto &line : problems) problem_list.push_back(line);
            case_results.push_back(
                toml::table{{"case", c.name}, {"abi", label}, {"passed", passed}, {"problems", problem_list}});
        }
    }
    std::cout << "\nlaunchers, each with the Q/K granularity of its adapter; the sm90 path's quantizer on its own:\n";
    for (const KernelAbi *abi : adapters)
        std::cout << "  " << std::left << std::setw(kAdapterColumn) << abi->name() << identical[abi->name()] << " of "
                  << cases.size() << " cases byte-identical (quantized inputs, o, lse)\n";
    for (const char *granularity : {"per_warp", "per_thread"}) {
        const std::string label = std::string("sm90 quantizer ") + granularity;
        std::cout << "  " << std::left << std::setw(kAdapterColumn) << label << identical[label] << " of " << cases.size()
                  << " cases byte-identical (q_int8, q_scale, k_int8, k_scale, v_fp8, v_scale)\n";
    }
    toml::table result{{"mode", "launchers"}, {"device", device.summary()}, {"passed", failed == 0},
                       {"cases", case_results}};
    if (options.seq_len_given) time_launchers(options, adapters, modules, quant, result);
    write_json(options, result);
    return failed == 0 ? kExitPass : kExitCheckFailed;
}

// ---- shapes: small problems around every tile boundary, both arms, outputs poisoned ----

// 1 to 5 KV tiles (len_kv 1..320), full and partial tiles, len_q from 1 to 320 including
// non-multiples of 128, both layouts, causal and not, D 64 and 128, f16 and bf16, GQA. Small enough to
// run under racecheck in minutes.
const std::vector<AttentionProblem> &shape_cases() {
    static const std::vector<AttentionProblem> cases = problems_of({
        {1, 2, 2, 64, 64, 128, Layout::nhd, false, DType::f16},     // 1 tile: only the "last" tile code
        {1, 2, 2, 1, 128, 128, Layout::hnd, false, DType::bf16},    // 2 tiles, one query row
        {1, 2, 2, 192, 192, 128, Layout::nhd, true, DType::bf16},   // 3 tiles, causal
        {1, 2, 2, 256, 256, 64, Layout::hnd, true, DType::f16},     // 4 tiles, causal, D 64
        {1, 4, 2, 320, 320, 128, Layout::hnd, false, DType::bf16},  // 5 tiles, GQA 2
        {2, 2, 1, 100, 300, 64, Layout::nhd, false, DType::f16},    // 5 tiles, last partial, GQA 2, batch 2
        {1, 2, 2, 129, 129, 128, Layout::nhd, true, DType::f16},    // 3 tiles, 1-token last tile, 2 CTAs
        {1, 3, 3, 65, 257, 128, Layout::hnd, false, DType::f16},    // 5 tiles, 1-token last tile
        {1, 2, 2, 300, 200, 64, Layout::hnd, false, DType::bf16},   // len_q > len_kv, 3 CTAs
        {1, 8, 2, 31, 64, 128, Layout::nhd, false, DType::bf16},    // GQA 4, partial warp of queries
        {1, 2, 2, 320, 320, 64, Layout::nhd, true, DType::bf16},    // 5 tiles, causal, D 64
        {1, 1, 1, 1, 1, 128, Layout::hnd, true, DType::f16},        // one token
        {1, 1, 1, 250, 250, 128, Layout::hnd, true, DType::bf16},   // causal, partial last tile
        {2, 2, 2, 128, 64, 128, Layout::hnd, false, DType::f16},    // exactly one CTA of queries
    });
    return cases;
}

int run_shapes(const Options &options) {
    const bool want_baseline = options.variant == "baseline" || options.variant == "both";
    const bool want_candidate = options.variant == "candidate" || options.variant == "both";
    const fs::path quant_path = required(options.quant_cubin, "quant-cubin");
    std::optional<fs::path> baseline_path, candidate_path;
    if (want_baseline) baseline_path = required(options.baseline_cubin, "baseline-cubin");
    if (want_candidate) candidate_path = required(options.candidate_cubin, "candidate-cubin");
    const std::uint64_t seed = options.seed.value_or(7);
    const KernelAbi &baseline_abi = kernel_abi(options.baseline_abi, "--baseline-abi");
    const KernelAbi &candidate_abi = kernel_abi(options.candidate_abi, "--candidate-abi");

    DeviceFacts device = select_device(options.device);
    std::cout << device.summary() << "\n";
    CubinModule quant(quant_path);
    std::optional<LoadedAttention> baseline, candidate;
    if (baseline_path) baseline.emplace(load_code(baseline_abi, *baseline_path));
    if (candidate_path) candidate.emplace(load_code(candidate_abi, *candidate_path));

    toml::array shape_results;
    int failed = 0;
    const auto &cases = shape_cases();
    for (std::size_t index = 0; index < cases.size(); ++index) {
        const AttentionProblem &problem = cases[index];
        GeneratedInputs generated = generate_inputs(problem.shape, problem.dtype, seed + index);
        DeviceQuantizedInputs inputs = quantize_on_gpu(quant, problem, generated.q, generated.k, generated.v);
        ReferenceResult reference =
            reference_attention(problem.shape, download_quantized(problem, inputs), problem.sm_scale, problem.causal);

        std::vector<std::string> problems;
        std::vector<std::pair<std::string, KernelRun>> runs;
        if (baseline) runs.emplace_back("baseline", run_attention(*baseline, problem, inputs, "baseline"));
        if (candidate) runs.emplace_back("candidate", run_attention(*candidate, problem, inputs, "candidate"));
        std::string errors_text;
        for (const auto &[label, run] : runs) {
            for (const std::string &line :
                 {non_finite_elements(label + " o", run.o), non_finite_elements(label + " lse", run.lse)})
                if (!line.empty()) problems.push_back(line);
            RelL2 error = relative_l2(run.o, reference.o);
            if (!(error.rel_l2 <= kMaxRelL2))
                problems.push_back(label + " rel-L2 against the float64 reference is " + fixed(error.rel_l2, 5) +
                                   " > " + fixed(kMaxRelL2, 2));
            double lse_gap = max_abs_difference(run.lse, reference.lse);
            if (!(lse_gap <= kLseTolerance))
                problems.push_back(label + " lse is up to " + fixed(lse_gap, 6) + " away from the float64 reference");
            errors_text += (errors_text.empty() ? "" : ", ") + label + " rel-L2 " + fixed(error.rel_l2, 5);
        }
        if (runs.size() == 2) {
            for (const std::string &line : {difference_text("candidate o vs baseline", runs[1].second.o, runs[0].second.o),
                                            difference_text("candidate lse vs baseline", runs[1].second.lse,
                                                            runs[0].second.lse)})
                if (!line.empty()) problems.push_back(line);
        }

        const bool passed = problems.empty();
        if (!passed) ++failed;
        std::cout << (passed ? "PASS " : "FAIL ") << "shape " << index << " (" << problem.describe() << "): "
                  << errors_text << (runs.size() == 2 && passed ? ", candidate identical to baseline" : "") << "\n";
        for (const std::string &line : problems) std::cout << "    " << line << "\n";
        toml::array problem_list;
        for (const auto &line : problems) problem_list.push_back(line);
        shape_results.push_back(
            toml::table{{"shape", problem.describe()}, {"passed", passed}, {"problems", problem_list}});
    }
    std::cout << "shapes: " << cases.size() - failed << " of " << cases.size() << " passed (variant "
              << options.variant << ", seed " << seed << ")\n";
    write_json(options, toml::table{{"mode", "shapes"},
                                    {"variant", options.variant},
                                    {"seed", static_cast<std::int64_t>(seed)},
                                    {"passed", failed == 0},
                                    {"shapes", shape_results}});
    return failed == 0 ? kExitPass : kExitCheckFailed;
}

// ---- sanitize: this program's shapes mode under compute-sanitizer ----

// --sanitizer, else the CUDA toolkit's (support/cuda_tools.h, the search the sanitize stage makes).
std::optional<fs::path> find_compute_sanitizer(const Options &options) {
    if (options.sanitizer) return fs::is_regular_file(*options.sanitizer) ? options.sanitizer : std::nullopt;
    return find_cuda_tool("compute-sanitizer");
}

std::string tail_lines(const std::string &text, std::size_t count) {
    if (count == 0) return {};
    std::size_t end = text.size();
    if (end > 0 && text[end - 1] == '\n') --end;  // a final newline ends the last line; it starts none
    std::size_t start = end;
    for (std::size_t found = 0; found < count; ++found) {
        std::size_t at = start == 0 ? std::string::npos : text.rfind('\n', start - 1);
        if (at == std::string::npos) return text;
        start = at;
    }
    return text.substr(start + 1);
}

int run_sanitize(const Options &options) {
    if (options.tool.empty()) fail(ExitCode::usage, "sanitize needs --tool memcheck|racecheck|synccheck|initcheck");
    SanitizerRun run;
    run.tool = parse_sanitizer_tool(options.tool);
    run.print_limit = options.print_limit;
    std::optional<fs::path> sanitizer = find_compute_sanitizer(options);
    if (!sanitizer)
        throw Skip(options.sanitizer ? "compute-sanitizer not found at '" + options.sanitizer->string() + "'"
                                     : std::string("compute-sanitizer is not installed (looked in ") +
                                           cuda_tool_search_order() + ")");
    run.sanitizer = *sanitizer;

    std::vector<std::string> target = {current_executable().string(), "shapes", "--variant", options.variant,
                                       "--device", std::to_string(options.device), "--baseline-abi",
                                       options.baseline_abi, "--candidate-abi", options.candidate_abi};
    for (const auto &[option, path] : {std::pair{"--quant-cubin", options.quant_cubin},
                                       std::pair{"--baseline-cubin", options.baseline_cubin},
                                       std::pair{"--candidate-cubin", options.candidate_cubin}})
        if (path) {
            target.push_back(option);
            target.push_back(fs::absolute(*path).string());
        }
    if (options.seed) {
        target.push_back("--seed");
        target.push_back(std::to_string(*options.seed));
    }
    std::string log_text;
    if (options.out_dir) {
        fs::create_directories(*options.out_dir);
        run.log_file = *options.out_dir / ("sanitize-" + options.tool + "-" + options.variant + ".log");
        fs::remove(*run.log_file);
    }
    const std::vector<std::string> argv = sanitizer_argv(run, target);
    std::cout << "running:";
    for (const auto &word : argv) std::cout << " " << word;
    std::cout << "\n";
    ProcessOptions process;
    process.timeout = std::chrono::seconds(options.timeout_s);
    ProcessResult result = run_process(argv, process);
    if (run.log_file) {
        std::ifstream log(*run.log_file);
        log_text.assign(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>());
    }
    SanitizerReport report = parse_sanitizer_output(run.tool, log_text + "\n" + result.out + "\n" + result.err,
                                                    result.exit_code);
    if (result.timed_out) {
        report.passed = false;
        report.verdict = options.tool + " did not finish within " + std::to_string(options.timeout_s) +
                         " s (raise --timeout)";
    }
    std::cout << (report.passed ? "PASS " : "FAIL ") << "sanitize " << options.tool << " (variant " << options.variant
              << ", " << fixed(result.seconds, 1) << " s): " << report.verdict << "\n";
    for (const auto &line : report.first_error_lines) std::cout << "    " << line << "\n";
    if (!report.passed) std::cout << "--- last lines of the program's output ---\n" << tail_lines(result.out + result.err, 30);

    toml::array first_lines;
    for (const auto &line : report.first_error_lines) first_lines.push_back(line);
    write_json(options, toml::table{{"mode", "sanitize"},
                                    {"tool", report.tool},
                                    {"variant", options.variant},
                                    {"passed", report.passed},
                                    {"verdict", report.verdict},
                                    {"errors", report.errors},
                                    {"hazards", report.hazards},
                                    {"warnings", report.warnings},
                                    {"summary_found", report.summary_found},
                                    {"exit_code", report.exit_code},
                                    {"seconds", result.seconds},
                                    {"first_error_lines", first_lines}});
    return report.passed ? kExitPass : kExitCheckFailed;
}

// ---- bench: the real block-24 shape, both arms interleaved ----

int run_bench(const Options &options) {
    const fs::path baseline_path = required(options.baseline_cubin, "baseline-cubin");
    const fs::path candidate_path = required(options.candidate_cubin, "candidate-cubin");
    const fs::path quant_path = required(options.quant_cubin, "quant-cubin");
    if (options.n < 1) fail(ExitCode::usage, "--seq-len must be at least 1, got " + std::to_string(options.n));
    // Fewer rounds leave the median ratio resting on a handful of order statistics.
    if (options.rounds < 30) fail(ExitCode::usage, "--rounds must be at least 30, got " + std::to_string(options.rounds));
    if (options.warmup < 0) fail(ExitCode::usage, "--warmup must be >= 0, got " + std::to_string(options.warmup));
    const std::uint64_t seed = options.seed.value_or(24);  // the block-24 workload's seed

    AttentionProblem problem;  // Wan2.1-14B block 24 self-attention (data/workloads/wan21-14b-block24.toml)
    problem.shape.batch = 1, problem.shape.heads_q = 40, problem.shape.heads_kv = 40;
    problem.shape.len_q = options.n, problem.shape.len_kv = options.n, problem.shape.head_dim = 128;
    problem.shape.layout = Layout::nhd;
    problem.causal = false;
    problem.dtype = DType::bf16;
    problem.sm_scale = static_cast<float>(1.0 / std::sqrt(128.0));
    problem.with_lse = false;  // sageattn() returns no LSE by default
    problem.validate();

    DeviceFacts device = select_device(options.device);
    std::cout << device.summary() << "\n";
    CubinModule quant(quant_path);
    const KernelAbi &abi = sage2tp_kernels();
    const LoadedAttention baseline = load_code(abi, baseline_path), candidate = load_code(abi, candidate_path);
    const AttentionEntry kernels[2] = {find_attention_entry(baseline, problem), find_attention_entry(candidate, problem)};
    const std::string entry = kernels[0].name();
    const char *labels[2] = {"baseline", "candidate"};

    auto started = std::chrono::steady_clock::now();
    DeviceQuantizedInputs inputs;
    {
        GeneratedInputs generated = generate_inputs(problem.shape, problem.dtype, seed);
        inputs = quantize_on_gpu(quant, problem, generated.q, generated.k, generated.v);
    }
    std::cout << "inputs generated and quantized in "
              << fixed(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 1) << " s\n";

    AttentionOutputs outputs[2] = {allocate_outputs(problem, labels[0]), allocate_outputs(problem, labels[1])};
    const AttentionLaunch launches[2] = {abi.pack(problem, attention_buffers(problem, inputs, outputs[0])),
                                         abi.pack(problem, attention_buffers(problem, inputs, outputs[1]))};
    poison_outputs(outputs[0]);
    poison_outputs(outputs[1]);
    for (int i = 0; i < options.warmup; ++i)
        for (int arm = 0; arm < 2; ++arm) launch_attention(kernels[arm], launches[arm]);
    synchronize("bench warm-up, " + problem.describe());

    L2Flusher flusher(device);
    SmClockProbe clock(quant);
    EventTimer timer;
    std::vector<double> times[2], clocks[2];
    for (int round = 0; round < options.rounds; ++round) {
        // Alternate which arm goes first so that neither always follows the other's heat.
        for (int position = 0; position < 2; ++position) {
            const int arm = (round % 2 == 0) ? position : 1 - position;
            flusher.flush(nullptr);
            timer.start(nullptr);
            launch_attention(kernels[arm], launches[arm]);
            timer.stop(nullptr);
            times[arm].push_back(timer.elapsed_ms());
            clocks[arm].push_back(clock.mhz_now(nullptr));
        }
    }
    synchronize("bench, " + problem.describe());

    // Timing a kernel that computes something else, or leaves outputs unwritten, would be meaningless.
    const Tensor baseline_o = download_output(problem, outputs[0]);
    std::string mismatch = non_finite_elements("baseline o", baseline_o);
    if (mismatch.empty())
        mismatch = difference_text("candidate o vs baseline", download_output(problem, outputs[1]), baseline_o);
    if (!mismatch.empty()) std::cout << "FAIL " << mismatch << "\n";

    const double ops = 4.0 * problem.shape.batch * problem.shape.heads_q * static_cast<double>(problem.shape.len_q) *
                       static_cast<double>(problem.shape.len_kv) * problem.shape.head_dim;
    const double default_mhz = device.sm_clock_khz / 1000.0;
    std::cout << "bench " << problem.describe() << ", " << entry << ": " << options.rounds << " rounds after "
              << options.warmup << " warm-up launches per arm, L2 flushed before every timed launch\n";
    toml::table arms;
    Summary summaries[2];
    for (int arm = 0; arm < 2; ++arm) {
        summaries[arm] = summarize(times[arm]);
        const Summary clock_summary = summarize(clocks[arm]);
        const auto throttled = std::count_if(clocks[arm].begin(), clocks[arm].end(),
                                             [&](double mhz) { return mhz < 0.75 * default_mhz; });
        std::cout << std::left << std::setw(9) << labels[arm] << std::right << ": median "
                  << fixed(summaries[arm].p50, 3) << " ms (p10 " << fixed(summaries[arm].p10, 3) << ", p90 "
                  << fixed(summaries[arm].p90, 3) << "), " << fixed(ops / (summaries[arm].p50 * 1e-3) / 1e12, 1)
                  << " TOPS, SM clock median " << fixed(clock_summary.p50, 0) << " MHz (min "
                  << fixed(clock_summary.min, 0) << "; " << throttled << " samples below 75% of " << fixed(default_mhz, 0)
                  << " MHz)\n";
        toml::array time_list, clock_list;
        for (double t : times[arm]) time_list.push_back(t);
        for (double c : clocks[arm]) clock_list.push_back(c);
        arms.insert(labels[arm], toml::table{{"median_ms", summaries[arm].p50},
                                             {"p10_ms", summaries[arm].p10},
                                             {"p90_ms", summaries[arm].p90},
                                             {"tops", ops / (summaries[arm].p50 * 1e-3) / 1e12},
                                             {"times_ms", time_list},
                                             {"sm_clock_mhz", clock_list}});
    }
    const std::vector<double> ratios = paired_ratios(times[1], times[0]);
    BootstrapOptions bootstrap;
    bootstrap.seed = seed;
    const RatioInterval interval = bootstrap_median_interval(ratios, bootstrap);
    std::cout << "ratio candidate/baseline: " << fixed(interval.median, 4) << " (median of per-round ratios; 95% "
              << "bootstrap interval " << fixed(interval.lo, 4) << " .. " << fixed(interval.hi, 4) << ", seed " << seed
              << "); ratio of medians " << fixed(summaries[1].p50 / summaries[0].p50, 4) << "\n";
    write_json(options, toml::table{{"mode", "bench"},
                                    {"device", device.summary()},
                                    {"problem", problem.describe()},
                                    {"rounds", options.rounds},
                                    {"warmup", options.warmup},
                                    {"outputs_ok", mismatch.empty()},
                                    {"output_problem", mismatch},
                                    {"arms", arms},
                                    {"ratio_median", interval.median},
                                    {"ratio_ci_lo", interval.lo},
                                    {"ratio_ci_hi", interval.hi}});
    return mismatch.empty() ? kExitPass : kExitCheckFailed;
}

// ---- occupancy: the driver's answer against the model of src/occupancy.h ----

int run_occupancy(const Options &options) {
    const fs::path baseline_path = required(options.baseline_cubin, "baseline-cubin");
    const fs::path candidate_path = required(options.candidate_cubin, "candidate-cubin");
    const fs::path limits_path = options.arch_limits ? *options.arch_limits : arch_limits_table();
    const ArchLimitsTable table = load_arch_limits(limits_path.string());

    DeviceFacts device = select_device(options.device);
    std::cout << device.summary() << "\n";
    auto row = table.find(device.arch());
    if (row == table.end())
        fail(ExitCode::usage, limits_path.string() + " has no row for this device's " + device.arch());
    const ArchLimits &limits = row->second;

    toml::array entries;
    int failed = 0, checked = 0;
    const std::pair<const char *, fs::path> arms[2] = {{"baseline", baseline_path}, {"candidate", candidate_path}};
    for (const auto &[label, path] : arms) {
        CubinModule module(path);
        for (const std::string &name : module.entry_names()) {
            const std::optional<AbiEntry> described = sage2tp_kernels().describe_entry(name);
            if (!described) continue;  // not an attention entry
            ++checked;
            const std::string &entry = described->full_name;
            Kernel kernel = module.function(name);
            const KernelAttributes attributes = kernel.attributes();
            const std::size_t dynamic_smem = static_cast<std::size_t>(described->dynamic_smem_bytes);
            const int driver_blocks = kernel.max_active_blocks_per_sm(described->threads_per_block, dynamic_smem);
            LaunchResources resources;
            resources.registers_per_thread = attributes.registers;
            resources.threads_per_block = described->threads_per_block;
            resources.static_smem_bytes = attributes.static_smem_bytes;
            resources.dynamic_smem_bytes = static_cast<std::int64_t>(dynamic_smem);
            // The driver reports no barrier count; 1 is what cuda_occupancy.h assumes, and barriers
            // never bind on sm_90 (cuda_occupancy.h gives cc 9.x 2 x maxBlocksPerSM barriers an SM).
            resources.barriers_per_block = 1;
            const Occupancy model = compute_occupancy(limits, resources);
            const bool agrees = model.blocks_per_sm == driver_blocks;
            if (!agrees) ++failed;
            std::cout << (agrees ? "PASS " : "FAIL ") << label << " " << entry << ": " << attributes.registers
                      << " registers, " << attributes.static_smem_bytes << " B static + " << dynamic_smem
                      << " B dynamic smem, " << attributes.local_bytes << " B local; driver " << driver_blocks
                      << " blocks/SM, model " << model.blocks_per_sm << " (" << limiter_names(model.limited_by)
                      << "), " << fixed(model.warps_per_scheduler, 2) << " warps/scheduler\n";
            entries.push_back(toml::table{{"variant", label},
                                          {"entry", entry},
                                          {"registers", attributes.registers},
                                          {"static_smem_bytes", attributes.static_smem_bytes},
                                          {"local_bytes", attributes.local_bytes},
                                          {"dynamic_smem_bytes", static_cast<std::int64_t>(dynamic_smem)},
                                          {"driver_blocks_per_sm", driver_blocks},
                                          {"model_blocks_per_sm", model.blocks_per_sm},
                                          {"model_limited_by", limiter_names(model.limited_by)},
                                          {"warps_per_scheduler", model.warps_per_scheduler},
                                          {"agrees", agrees}});
        }
    }
    std::cout << "occupancy: " << checked - failed << " of " << checked << " entries agree with the model\n";
    if (checked == 0) return kExitCheckFailed;
    write_json(options, toml::table{{"mode", "occupancy"},
                                    {"device", device.summary()},
                                    {"passed", failed == 0},
                                    {"entries", entries}});
    return failed == 0 ? kExitPass : kExitCheckFailed;
}

// ---- command line ----

Options parse_options(int argc, char **argv) {
    cxxopts::Options parser("gpu_kernel_check", "GPU checks of the sage2tp kernels (meson suite gpu)");
    parser.positional_help("golden|shapes|sanitize|bench|occupancy|upstream|launchers");
    parser.add_options()
        ("mode", "what to check", cxxopts::value<std::string>())
        ("baseline-cubin", "attention cubin of the baseline", cxxopts::value<std::string>())
        ("candidate-cubin", "attention cubin of the candidate", cxxopts::value<std::string>())
        ("quant-cubin", "quantization cubin (also holds the SM clock probe)", cxxopts::value<std::string>())
        ("upstream-library", "upstream: host-call library of upstream SageAttention's sm89 .cu", cxxopts::value<std::string>())
        ("launcher-libraries", "launchers: directory of <launcher file stem>.so host-call libraries", cxxopts::value<std::string>())
        ("launcher-golden", "launchers: cases.toml, upstream.toml and means/ (default: tests/golden)",
         cxxopts::value<std::string>())
        ("launchers-matching", "launchers: only the adapters whose names contain this text (say, sm90)",
         cxxopts::value<std::string>())
        ("golden", "golden case directory (default: $S2TP_GOLDEN_DIR)", cxxopts::value<std::string>())
        ("out", "directory for <mode>.json and sanitizer logs", cxxopts::value<std::string>())
        ("device", "CUDA device index", cxxopts::value<int>()->default_value("0"))
        ("variant", "shapes/sanitize: baseline, candidate or both", cxxopts::value<std::string>()->default_value("both"))
        ("baseline-abi", "shapes/sanitize: kernel ABI adapter of the baseline cubin",
         cxxopts::value<std::string>()->default_value("sage2tp"))
        ("candidate-abi", "shapes/sanitize: kernel ABI adapter of the candidate cubin",
         cxxopts::value<std::string>()->default_value("sage2tp"))
        ("tool", "sanitize: memcheck, racecheck, synccheck or initcheck", cxxopts::value<std::string>())
        ("sanitizer", "sanitize: path of compute-sanitizer", cxxopts::value<std::string>())
        ("print-limit", "sanitize: records printed by compute-sanitizer", cxxopts::value<int>()->default_value("100"))
        ("timeout", "sanitize: seconds before the run is killed", cxxopts::value<int>()->default_value("3600"))
        // cxxopts takes one-letter names as short options only, so "--n" cannot exist.
        ("n,seq-len", "bench: sequence length", cxxopts::value<std::int64_t>()->default_value("32760"))
        ("rounds", "bench: timed rounds (one launch per arm each)", cxxopts::value<int>()->default_value("30"))
        ("warmup", "bench: untimed launches per arm first", cxxopts::value<int>()->default_value("5"))
        ("seed", "input seed (shapes: 7, bench: 24)", cxxopts::value<std::uint64_t>())
        ("arch-limits", "occupancy: arch limits table (default: data/arch_limits.toml)", cxxopts::value<std::string>())
        ("h,help", "show this help");
    parser.parse_positional({"mode"});
    cxxopts::ParseResult result;
    try {
        result = parser.parse(argc, argv);
    } catch (const cxxopts::exceptions::exception &e) {
        fail(ExitCode::usage, e.what());
    }
    Options o;
    if (result.count("help")) {
        std::cout << parser.help() << "\n";
        return o;
    }
    if (!result.unmatched().empty()) fail(ExitCode::usage, "unexpected argument '" + result.unmatched().front() + "'");
    if (!result.count("mode"))
        fail(ExitCode::usage, "no mode given: golden, shapes, sanitize, bench, occupancy or upstream");
    o.mode = result["mode"].as<std::string>();
    auto path = [&](const char *name) -> std::optional<fs::path> {
        if (!result.count(name)) return std::nullopt;
        return fs::path(result[name].as<std::string>());
    };
    o.baseline_cubin = path("baseline-cubin");
    o.candidate_cubin = path("candidate-cubin");
    o.quant_cubin = path("quant-cubin");
    o.upstream_library = path("upstream-library");
    o.launcher_libraries = path("launcher-libraries");
    o.launcher_golden = path("launcher-golden");
    if (result.count("launchers-matching")) o.launchers_matching = result["launchers-matching"].as<std::string>();
    o.seq_len_given = result.count("seq-len") > 0;
    o.golden_dir = path("golden");
    o.out_dir = path("out");
    o.arch_limits = path("arch-limits");
    o.sanitizer = path("sanitizer");
    o.device = result["device"].as<int>();
    o.variant = result["variant"].as<std::string>();
    o.baseline_abi = result["baseline-abi"].as<std::string>();
    o.candidate_abi = result["candidate-abi"].as<std::string>();
    if (o.variant != "baseline" && o.variant != "candidate" && o.variant != "both")
        fail(ExitCode::usage, "--variant must be baseline, candidate or both, got '" + o.variant + "'");
    if (result.count("tool")) o.tool = result["tool"].as<std::string>();
    o.print_limit = result["print-limit"].as<int>();
    o.timeout_s = result["timeout"].as<int>();
    o.n = result["seq-len"].as<std::int64_t>();
    o.rounds = result["rounds"].as<int>();
    o.warmup = result["warmup"].as<int>();
    if (result.count("seed")) o.seed = result["seed"].as<std::uint64_t>();
    return o;
}

// overhead: upstream's sm89 launcher through its host call (what every GPU stage times) and through a
// direct replay of the launch that call recorded (cudaLaunchKernel with the same grid, block, shared
// memory and argument bytes, no host function), interleaved in one process at two shapes: Wan 480p
// (B1 H40 N --seq-len D128, HND, bf16) and a short one (B1 H16 N1024). The paired ratio with its
// bootstrap interval is what the host function's own work (checks, dispatch, torch::empty) adds.
int run_overhead(const Options &options) {
    const fs::path library_path = required(options.upstream_library, "upstream-library");
    const fs::path quant_path = required(options.quant_cubin, "quant-cubin");
    const DeviceFacts device = select_device(options.device);
    std::cout << device.summary() << "\n";
    const KernelAbi &abi = kernel_abi("sageattention-sm89", "gpu_kernel_check overhead");
    const CubinModule quant(quant_path);
    const LoadedAttention code = load_code(abi, library_path);
    toml::array shapes;
    for (const std::int64_t heads : {std::int64_t{40}, std::int64_t{16}}) {
        AttentionProblem problem;
        problem.shape.batch = 1, problem.shape.heads_q = heads, problem.shape.heads_kv = heads;
        problem.shape.len_q = problem.shape.len_kv = heads == 40 ? options.n : 1024;
        problem.shape.head_dim = 128;
        problem.shape.layout = Layout::hnd;
        problem.dtype = DType::bf16;
        problem.sm_scale = static_cast<float>(1.0 / std::sqrt(128.0));
        problem.with_lse = false;
        const GeneratedInputs generated = generate_inputs(problem.shape, problem.dtype, 11);
        const DeviceQuantizedInputs inputs = quantize_on_gpu(quant, problem, generated.q, generated.k, generated.v, {},
                                                             abi.quantization(problem.shape.head_dim));
        AttentionOutputs outputs = allocate_outputs(problem, "overhead");
        const AttentionEntry entry = find_attention_entry(code, problem);
        const AttentionLaunch launch = abi.pack(problem, attention_buffers(problem, inputs, outputs));
        for (int w = 0; w < options.warmup; ++w) launch_attention(entry, launch);
        entry.library->call(launch.host_arguments, nullptr, false, problem.describe(), true);  // what replay makes
        synchronize("overhead warm-up, " + problem.describe());
        const int rounds = heads == 40 ? options.rounds : options.rounds * 20;
        EventTimer timer;
        std::vector<double> called, replayed;
        for (int round = 0; round < rounds; ++round)
            for (int position = 0; position < 2; ++position) {
                const bool call = (round % 2 == 0) == (position == 0);  // alternate which goes first
                timer.start(nullptr);
                if (call) launch_attention(entry, launch);
                else code.library()->replay(nullptr, problem.describe());
                timer.stop(nullptr);
                (call ? called : replayed).push_back(timer.elapsed_ms());
            }
        const RatioInterval ratio = bootstrap_median_interval(paired_ratios(called, replayed), BootstrapOptions{7});
        const double call_ms = median(called), replay_ms = median(replayed);
        std::cout << problem.describe() << ": host call p50 " << fixed(call_ms, 4) << " ms, direct replay p50 "
                  << fixed(replay_ms, 4) << " ms, host call / replay " << interval_text(ratio) << " over " << rounds
                  << " rounds\n";
        shapes.push_back(toml::table{{"shape", problem.describe()},
                                     {"host_call_p50_ms", call_ms},
                                     {"replay_p50_ms", replay_ms},
                                     {"ratio", ratio.median},
                                     {"ratio_ci_low", ratio.lo},
                                     {"ratio_ci_high", ratio.hi},
                                     {"rounds", rounds}});
    }
    write_json(options, toml::table{{"device", device.summary()}, {"shapes", shapes}});
    return kExitPass;
}

int run(int argc, char **argv) {
    Options options = parse_options(argc, argv);
    if (options.mode.empty()) return kExitPass;  // --help
    static const char *const modes[] = {"golden",   "shapes",    "sanitize", "bench",
                                        "occupancy", "upstream", "launchers", "overhead"};
    if (std::find_if(std::begin(modes), std::end(modes), [&](const char *m) { return options.mode == m; }) ==
        std::end(modes))
        fail(ExitCode::usage,
             "unknown mode '" + options.mode +
                                  "'; valid: golden, shapes, sanitize, bench, occupancy, upstream, launchers, overhead");

    // Without a GPU every mode is skipped, before any input is read: CI hosts have neither.
    GpuProbe probe = probe_gpu();
    if (!probe.available) throw Skip(probe.reason);

    if (options.mode == "golden") return run_golden(options);
    if (options.mode == "shapes") return run_shapes(options);
    if (options.mode == "sanitize") return run_sanitize(options);
    if (options.mode == "bench") return run_bench(options);
    if (options.mode == "upstream") return run_upstream(options);
    if (options.mode == "launchers") return run_launchers(options);
    if (options.mode == "overhead") return run_overhead(options);
    return run_occupancy(options);
}

}  // namespace
}  // namespace s2tp

int main(int argc, char **argv) {
    return s2tp::run_check_program("gpu_kernel_check", [&] {
        try {
            return s2tp::run(argc, argv);
        } catch (const s2tp::Skip &skip) {
            std::cerr << "gpu_kernel_check: skipped: " << skip.what() << "\n";
            return s2tp::kExitSkip;
        }
    });
}
