// Benchmark (meson benchmark, not a test): the wall time of each step the time stage takes outside its
// sampling loop, on a workload file, with the product's own functions, in the stage's order. Each step
// that this branch changed is measured both ways, the stage's way now and the way before (host
// generation and upload; every output downloaded, hashed and NaN-counted on the host before and after
// timing), and both totals are printed.
//
//   bench_time_overhead WORKLOAD.toml --quant-cubin Q --baseline-cubin B --candidate-cubin C
//                       [--warmup N] [--device N]
//
// Not measured (small next to these, and the same before and after): process start, reading the
// manifest and checkpoints, the stage's input fingerprint, writing reports/time.json and time.svg.
// Exit status: 0 measured, with the GPU inputs identical to the host's and the outputs matching; 1 when
// not; 77 without a GPU; otherwise sage2tp's exit codes.
#include "gpu/attention_launch.h"
#include "gpu/gpu_input_generator.h"
#include "gpu/gpu_runtime.h"
#include "gpu/kernel_abi.h"
#include "gpu/launch_timer.h"
#include "gpu/output_checks.h"
#include "model/ab_timing.h"
#include "model/experiment_manifest.h"
#include "model/input_generator.h"
#include "tools/gpu_session/gpu_session.h"
#include "support/errors.h"

#include "check_program.h"
#include "support/hashing.h"

#include <cxxopts.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace s2tp {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point started) {
    return std::chrono::duration<double>(Clock::now() - started).count();
}

// One printed line per step; the totals add the steps of their path.
struct Steps {
    double now_total = 0, before_total = 0;

    enum Path { both, now_only, before_only, neither };
    void add(const std::string &step, double seconds, Path path) {
        char figure[32];
        std::snprintf(figure, sizeof figure, "%8.3f s", seconds);
        const char *tag = path == both ? "  both    " : path == now_only ? "  now     " : path == before_only ? "  before  " : "  (info)  ";
        std::cout << tag << figure << "  " << step << "\n";
        if (path == both || path == now_only) now_total += seconds;
        if (path == both || path == before_only) before_total += seconds;
    }
};

int run(int argc, char **argv) {
    cxxopts::Options parser("bench_time_overhead", "Wall time of the time stage's steps outside sampling");
    parser.positional_help("WORKLOAD.toml");
    parser.add_options()("workload", "workload file ([workload] table, as in data/workloads/)",
                         cxxopts::value<std::string>())(
        "quant-cubin", "quantization cubin", cxxopts::value<std::string>())(
        "baseline-cubin", "baseline attention cubin (sage2tp ABI)", cxxopts::value<std::string>())(
        "candidate-cubin", "candidate attention cubin (sage2tp ABI)", cxxopts::value<std::string>())(
        "warmup", "warm-up launches per arm (the manifest's [time] warmup_launches)",
        cxxopts::value<int>()->default_value("3"))("device", "CUDA device index",
                                                   cxxopts::value<int>()->default_value("0"));
    parser.parse_positional({"workload"});
    cxxopts::ParseResult options;
    try {
        options = parser.parse(argc, argv);
    } catch (const cxxopts::exceptions::exception &e) {
        fail(ExitCode::usage, e.what());
    }
    for (const char *required : {"workload", "quant-cubin", "baseline-cubin", "candidate-cubin"})
        if (!options.count(required)) fail(ExitCode::usage, std::string(required) + " is required");
    const int warmup = options["warmup"].as<int>();
    if (warmup < 0) fail(ExitCode::usage, "--warmup must be >= 0, got " + std::to_string(warmup));

    const WorkloadSpec workload = load_workload(options["workload"].as<std::string>());
    const AttentionProblem &problem = workload.problem;
    problem.validate();
    std::cout << "bench_time_overhead: " << workload.name << ", " << problem.describe() << "\n"
              << "  'now' steps are the time stage's as built; 'before' steps are what it did until this change;\n"
              << "  'both' steps are common to the two. Seconds are wall time, each step ending in a synchronize.\n";

    Steps steps;
    auto started = Clock::now();
    const GpuProbe probe = probe_gpu();
    if (!probe.available) {
        std::cerr << "bench_time_overhead: skipped: " << probe.reason << "\n";
        return 77;
    }
    const DeviceFacts device = select_device(options["device"].as<int>());
    steps.add("CUDA driver probe, device selection and primary context", seconds_since(started), Steps::both);
    std::cout << "  on " << device.summary() << "; host has " << std::thread::hardware_concurrency() << " threads\n";

    started = Clock::now();
    const CubinModule quantize(options["quant-cubin"].as<std::string>());
    const KernelAbi &abi = kernel_abi("sage2tp", "bench_time_overhead");
    const LoadedAttention baseline_module(abi, options["baseline-cubin"].as<std::string>(), {});
    const LoadedAttention candidate_module(abi, options["candidate-cubin"].as<std::string>(), {});
    const AttentionEntry baseline = find_attention_entry(baseline_module, problem);
    const AttentionEntry candidate = find_attention_entry(candidate_module, problem);
    steps.add("loading the quantize, baseline and candidate cubins; finding the attention entries",
              seconds_since(started), Steps::both);

    bool all_ok = true;
    DeviceQuantizedInputs inputs;
    if (workload.q_file) {
        started = Clock::now();
        const GeneratedInputs host = workload_inputs(workload);
        steps.add("reading q, k, v from the workload's files (unchanged by this branch)", seconds_since(started), Steps::both);
        started = Clock::now();
        inputs = quantize_on_gpu(quantize, problem, host.q, host.k, host.v);
        steps.add("uploading and quantizing them", seconds_since(started), Steps::both);
    } else {
        started = Clock::now();
        DeviceInputs generated = generate_inputs_on_gpu(quantize, problem.shape, problem.dtype, workload.seed);
        steps.add("generating q, k, v on the GPU (generate_inputs_on_gpu)", seconds_since(started), Steps::now_only);
        started = Clock::now();
        inputs = quantize_on_gpu(quantize, problem, generated);
        steps.add("quantizing them (quantize_on_gpu)", seconds_since(started), Steps::now_only);

        started = Clock::now();
        const GeneratedInputs host = generate_inputs(problem.shape, problem.dtype, workload.seed);
        steps.add("generating q, k, v on the host (generate_inputs, " + std::to_string(std::thread::hardware_concurrency()) +
                      " threads)", seconds_since(started), Steps::before_only);
        started = Clock::now();
        DeviceInputs uploaded;
        uploaded.q = upload(host.q, "q input");
        uploaded.k = upload(host.k, "k input");
        uploaded.v = upload(host.v, "v input");
        steps.add("uploading them (" + std::to_string((host.q.nbytes() + host.k.nbytes() + host.v.nbytes()) / 1000000) +
                      " MB)", seconds_since(started), Steps::before_only);
        started = Clock::now();
        const DeviceQuantizedInputs from_host = quantize_on_gpu(quantize, problem, uploaded);
        steps.add("quantizing them", seconds_since(started), Steps::before_only);
        const bool identical = equal_on_gpu(quantize, generated.q, uploaded.q) &&
                               equal_on_gpu(quantize, generated.k, uploaded.k) &&
                               equal_on_gpu(quantize, generated.v, uploaded.v);
        std::cout << "  GPU-generated q, k, v identical to the host's: " << (identical ? "yes" : "NO") << "\n";
        all_ok = all_ok && identical;
    }

    started = Clock::now();
    // The time stage's arms for one candidate: the baseline, its A/A control and the candidate.
    const std::vector<std::string> arm_names{"baseline", "baseline_control", "candidate"};
    const std::vector<const AttentionEntry *> arm_kernels{&baseline, &baseline, &candidate};
    std::vector<AttentionOutputs> outputs(arm_names.size());
    std::vector<AttentionLaunch> launches(arm_names.size());
    for (Arm arm = 0; arm < arm_names.size(); ++arm) {
        outputs[arm] = allocate_outputs(problem, arm_names[arm]);
        poison_outputs(outputs[arm]);
        launches[arm] = abi.pack(problem, attention_buffers(problem, inputs, outputs[arm]));
    }
    synchronize("bench_time_overhead: outputs");
    steps.add("allocating and poisoning the three outputs; packing the launches", seconds_since(started), Steps::both);

    started = Clock::now();
    for (Arm arm = 0; arm < arm_names.size(); ++arm) launch_attention(*arm_kernels[arm], launches[arm]);
    synchronize("bench_time_overhead: first launches");
    steps.add("first launch of baseline, candidate and baseline control", seconds_since(started), Steps::both);

    std::vector<const DeviceBuffer *> buffers;
    for (const AttentionOutputs &o : outputs) buffers.push_back(&o.o);
    started = Clock::now();
    OutputChecks checks(quantize, problem.dtype);
    const std::vector<OutputDigest> first = checks.record(buffers);
    steps.add("output checks before timing: one download and SHA-256, compares and NaN counts on the GPU",
              seconds_since(started), Steps::now_only);
    started = Clock::now();
    std::vector<OutputDigest> first_on_host;
    for (const AttentionOutputs &o : outputs) {
        const Tensor t = download_output(problem, o);
        first_on_host.push_back({sha256_hex(t.bytes.data(), t.bytes.size()), count_nan(t)});
    }
    steps.add("output checks before timing, the earlier way: 3 downloads, SHA-256s and NaN counts on the host",
              seconds_since(started), Steps::before_only);
    bool same_digests = first.size() == first_on_host.size();
    for (std::size_t i = 0; same_digests && i < first.size(); ++i)
        same_digests = first[i].sha256 == first_on_host[i].sha256 && first[i].nan_count == first_on_host[i].nan_count;
    std::cout << "  GPU checks agree with the host's (SHA-256 and NaN count of each output): "
              << (same_digests ? "yes" : "NO") << "\n"
              << "  outputs: baseline " << first[0].sha256 << (first[1].sha256 == first[0].sha256 ? " = control" : ", control differs")
              << (first[2].sha256 == first[0].sha256 ? " = candidate" : ", candidate differs") << "; NaN "
              << first[0].nan_count << ", " << first[1].nan_count << ", " << first[2].nan_count << "\n";
    all_ok = all_ok && same_digests && first[1].sha256 == first[0].sha256 && first[2].sha256 == first[0].sha256 &&
             first[0].nan_count == 0 && first[2].nan_count == 0;

    started = Clock::now();
    const std::size_t footprint = attention_footprint_bytes(inputs, outputs[0]);
    std::unique_ptr<L2Flusher> flusher =
        needs_l2_flush(footprint, device.l2_bytes) ? std::make_unique<L2Flusher>(device) : nullptr;
    SmClockProbe clock(quantize);
    std::vector<AttentionOutputs *> written;
    for (AttentionOutputs &o : outputs) written.push_back(&o);
    // One input set here; a re-check is each output against its first record.
    GpuLaunchTimer timer(arm_kernels, {launches}, written, clock, flusher.get(), [&](std::size_t) {
        std::vector<RecheckFailure> failures;
        for (Arm arm = 0; arm < outputs.size(); ++arm)
            if (!checks.holds_recorded(arm, outputs[arm].o)) failures.push_back({0, 0, arm, "changed"});
        return failures;
    });
    steps.add("L2 flush buffer, SM clock probe and launch timer set up", seconds_since(started), Steps::both);
    started = Clock::now();
    for (int i = 0; i < warmup; ++i)
        for (Arm arm = 0; arm < arm_names.size(); ++arm) timer.warm_up(arm);
    synchronize("bench_time_overhead: warm-up");
    steps.add(std::to_string(warmup) + " warm-up launches per arm (the stage counts these in its sampling seconds)",
              seconds_since(started), Steps::both);

    started = Clock::now();
    const std::vector<std::string> last = checks.current_sha256(buffers);
    steps.add("output checks after timing: device copy compared on the GPU, nothing downloaded",
              seconds_since(started), Steps::now_only);
    started = Clock::now();
    std::vector<std::string> last_on_host;
    for (const AttentionOutputs &o : outputs) {
        const Tensor t = download_output(problem, o);
        last_on_host.push_back(sha256_hex(t.bytes.data(), t.bytes.size()));
    }
    steps.add("output checks after timing, the earlier way: 3 downloads and SHA-256s on the host",
              seconds_since(started), Steps::before_only);
    const bool stable = last == last_on_host && last[0] == first[0].sha256;
    std::cout << "  after the warm-ups, GPU checks agree with the host's and the outputs are unchanged: "
              << (stable ? "yes" : "NO") << "\n";
    all_ok = all_ok && stable;

    char line[160];
    std::snprintf(line, sizeof line, "total outside sampling, now:    %7.3f s (bar: at most 3 s at block-24: %s)\n",
                  steps.now_total, steps.now_total <= 3.0 ? "met" : "NOT met");
    std::cout << line;
    std::snprintf(line, sizeof line, "total outside sampling, before: %7.3f s\n", steps.before_total);
    std::cout << line;
    if (!all_ok) std::cout << "FAIL: see the lines marked NO above\n";
    return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace s2tp

int main(int argc, char **argv) {
    return s2tp::run_check_program("bench_time_overhead", [&] { return s2tp::run(argc, argv); });
}
