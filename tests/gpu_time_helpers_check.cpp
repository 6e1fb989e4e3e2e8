// GPU test of the time stage's helpers, on a real device (meson suite gpu):
//   - generate_inputs_on_gpu gives the bytes of the host's generate_inputs (both dtypes, both layouts,
//     odd extents, grouped heads);
//   - count_nan_on_gpu counts what the host's count_nan counts, at sizes around the kernel's 8-element
//     step; equal_on_gpu finds a single changed byte anywhere, at sizes around its 16-byte step;
//   - OutputChecks gives each output's host SHA-256 and NaN count, and after the outputs change, the
//     SHA-256 of exactly the ones that changed;
//   - the float64 reference attention on the unquantized inputs agrees with the host's
//     unquantized_reference to 1e-12 (both dtypes and layouts, causal, grouped heads, ragged lengths,
//     sampled rows), repeats bit for bit, and gather_rows_on_gpu gives gather_query_rows' bytes.
//
//   gpu_time_helpers_check --quant-cubin Q [--device N]
//
// Exit status: 0 every check passed; 1 a check failed; 77 no GPU (meson's skip); otherwise sage2tp's
// exit codes (2 usage, 3 missing tool, 5 internal).
#include "gpu/attention_launch.h"
#include "gpu/gpu_input_generator.h"
#include "gpu/gpu_runtime.h"
#include "gpu/gpu_reference.h"
#include "gpu/output_checks.h"
#include "model/accuracy.h"
#include "model/cpu_reference.h"
#include "model/input_generator.h"
#include "stages/parity_check.h"
#include "tools/gpu_session/gpu_session.h"
#include "support/errors.h"

#include "check_program.h"
#include "support/hashing.h"
#include "support/number_format.h"

#include <cxxopts.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace s2tp {
namespace {

constexpr int kExitSkip = 77;

int failures = 0;

void check(bool ok, const std::string &what) {
    std::cout << (ok ? "ok   " : "FAIL ") << what << "\n";
    if (!ok) ++failures;
}

// Empty when equal (parity's byte_difference), else how many elements differ and the first one's bits.
std::string first_difference(const Tensor &got, const Tensor &expected) {
    if (got.nbytes() != expected.nbytes()) return "sizes differ";
    const ByteDifference d = byte_difference(got, expected);
    if (d.differing == 0) return "";
    return std::to_string(d.differing) + " elements differ, first at flat index " + std::to_string(d.first) + ": GPU " +
           element_text(got, d.first) + ", host " + element_text(expected, d.first);
}

void check_generator(const CubinModule &quant) {
    const AttentionShape shapes[] = {
        AttentionShape{2, 3, 1, 37, 45, 40, Layout::nhd},   AttentionShape{2, 3, 1, 37, 45, 40, Layout::hnd},
        AttentionShape{1, 4, 2, 1, 129, 64, Layout::nhd},   AttentionShape{3, 2, 2, 65, 1, 24, Layout::hnd},
        AttentionShape{1, 8, 8, 4097, 4097, 128, Layout::nhd}, AttentionShape{1, 8, 2, 1000, 3001, 128, Layout::hnd},
    };
    for (const AttentionShape &shape : shapes)
        for (DType dtype : {DType::f16, DType::bf16}) {
            const std::uint64_t seed = 24;
            const GeneratedInputs host = generate_inputs(shape, dtype, seed);
            const DeviceInputs device = generate_inputs_on_gpu(quant, shape, dtype, seed);
            const std::string where = shape.to_string() + " " + dtype_name(dtype) + " seed 24";
            const std::string q = first_difference(download(device.q, dtype, shape.q_shape()), host.q);
            const std::string k = first_difference(download(device.k, dtype, shape.kv_shape()), host.k);
            const std::string v = first_difference(download(device.v, dtype, shape.kv_shape()), host.v);
            check(q.empty(), "generator q " + where + (q.empty() ? "" : ": " + q));
            check(k.empty(), "generator k " + where + (k.empty() ? "" : ": " + k));
            check(v.empty(), "generator v " + where + (v.empty() ? "" : ": " + v));
        }
}

Tensor patterned(DType dtype, std::int64_t elements, std::uint32_t salt) {
    Tensor t(dtype, {elements});
    std::uint16_t *bits = t.data<std::uint16_t>();
    // Finite values of both dtypes (exponent field well inside the range), varying per element.
    for (std::int64_t i = 0; i < elements; ++i) bits[i] = static_cast<std::uint16_t>(0x3000u + ((i * 7 + salt) % 0x800));
    return t;
}

void check_nan_count(const CubinModule &quant) {
    for (DType dtype : {DType::f16, DType::bf16}) {
        const std::uint16_t inf = dtype == DType::f16 ? 0x7c00 : 0x7f80;
        for (std::int64_t elements : {1, 7, 8, 9, 4099, 1000003}) {
            Tensor t = patterned(dtype, elements, 3);
            std::uint16_t *bits = t.data<std::uint16_t>();
            // NaNs of both signs, the poison, and infinities (not NaN) at the first, last and middle elements.
            bits[elements - 1] = 0xffff;
            if (elements > 2) bits[0] = static_cast<std::uint16_t>(inf | 1u), bits[elements / 2] = inf;
            if (elements > 8) bits[8] = static_cast<std::uint16_t>(0x8000u | inf | 0x40u), bits[7] = 0x8000u | inf;
            const DeviceBuffer buffer = upload(t, "NaN test tensor");
            const std::int64_t gpu = count_nan_on_gpu(quant, buffer, dtype), host = count_nan(t);
            check(gpu == host, std::string("NaN count ") + dtype_name(dtype) + " of " + std::to_string(elements) +
                                   " elements: GPU " + std::to_string(gpu) + ", host " + std::to_string(host));
        }
    }
}

void check_compare(const CubinModule &quant) {
    for (std::int64_t elements : {1, 7, 8, 9, 4099, 1000003}) {
        const Tensor t = patterned(DType::f16, elements, 5);
        const DeviceBuffer a = upload(t, "compared a");
        DeviceBuffer b = upload(t, "compared b");
        const std::string size = std::to_string(t.nbytes()) + " bytes";
        check(equal_on_gpu(quant, a, b), "compare: identical " + size + " are equal");
        for (std::size_t at : {std::size_t{0}, t.nbytes() / 2, t.nbytes() - 1}) {
            Tensor changed = t;
            changed.bytes[at] ^= 0x10;
            upload_into(b, changed);
            check(!equal_on_gpu(quant, a, b), "compare: " + size + " with byte " + std::to_string(at) + " changed differ");
        }
    }
    const DeviceBuffer shorter = upload(patterned(DType::f16, 8, 5), "shorter");
    const DeviceBuffer longer = upload(patterned(DType::f16, 9, 5), "longer");
    check(!equal_on_gpu(quant, shorter, longer), "compare: buffers of different sizes differ");
}

std::string host_sha(const Tensor &t) { return sha256_hex(t.bytes.data(), t.bytes.size()); }

void check_output_checks(const CubinModule &quant) {
    const std::int64_t elements = 1000003;
    for (DType dtype : {DType::f16, DType::bf16}) {
        Tensor a = patterned(dtype, elements, 1), b = patterned(dtype, elements, 2);
        a.data<std::uint16_t>()[10] = 0xffff, a.data<std::uint16_t>()[elements - 1] = 0xffff;
        DeviceBuffer outputs[3] = {upload(a, "output 0"), upload(b, "output 1"), upload(a, "output 2")};
        const std::vector<const DeviceBuffer *> pointers = {&outputs[0], &outputs[1], &outputs[2]};
        OutputChecks checks(quant, dtype);
        const std::vector<OutputDigest> first = checks.record(pointers);
        const std::string name = dtype_name(dtype);
        check(first.size() == 3 && first[0].sha256 == host_sha(a) && first[1].sha256 == host_sha(b) &&
                  first[2].sha256 == host_sha(a),
              "output checks " + name + ": recorded SHA-256 of a, b, a are the host's");
        check(first.size() == 3 && first[0].nan_count == 2 && first[1].nan_count == 0 && first[2].nan_count == 2,
              "output checks " + name + ": NaN counts 2, 0, 2");
        check(checks.current_sha256(pointers) == std::vector<std::string>{host_sha(a), host_sha(b), host_sha(a)},
              "output checks " + name + ": unchanged outputs keep their SHA-256");
        Tensor changed = a;
        changed.data<std::uint16_t>()[elements / 3] ^= 1;
        upload_into(outputs[2], changed);
        upload_into(outputs[0], b);
        check(checks.current_sha256(pointers) == std::vector<std::string>{host_sha(b), host_sha(b), host_sha(changed)},
              "output checks " + name + ": changed outputs get their new SHA-256, the unchanged one keeps its own");
    }
}

void check_reference(const CubinModule &quant) {
    struct Case {
        AttentionShape shape;
        DType dtype;
        bool causal;
        std::int64_t rows;
    };
    const std::vector<Case> cases = {
        {{1, 2, 2, 1, 63, 64, Layout::nhd}, DType::f16, false, 256},
        {{2, 4, 2, 130, 130, 128, Layout::hnd}, DType::bf16, true, 256},
        {{1, 8, 2, 300, 257, 128, Layout::nhd}, DType::f16, false, 37},
        {{1, 3, 3, 129, 129, 64, Layout::hnd}, DType::bf16, true, 9},
    };
    for (const Case &c : cases) {
        AttentionProblem problem;
        problem.shape = c.shape;
        problem.dtype = c.dtype;
        problem.causal = c.causal;
        problem.sm_scale = default_sm_scale(c.shape.head_dim);
        const std::string name = problem.describe() + " rows " + std::to_string(c.rows);
        const GeneratedInputs host = generate_inputs(c.shape, c.dtype, 7);
        const DeviceInputs device{upload(host.q, "q"), upload(host.k, "k"), upload(host.v, "v")};
        const std::vector<std::uint32_t> rows = sample_query_rows(c.shape.len_q, c.rows, 11);
        const Tensor gpu = reference_on_gpu(quant, problem, device, rows);
        const Tensor cpu = unquantized_reference(c.shape, host.q, host.k, host.v, problem.sm_scale, c.causal, rows);
        // Relative to the output's scale: an element near 0 carries the rounding of terms of size ~1.
        double worst = 0, scale = 0;
        for (std::int64_t i = 0; i < cpu.numel(); ++i) {
            worst = std::max(worst, std::abs(gpu.value_at(i) - cpu.value_at(i)));
            scale = std::max(scale, std::abs(cpu.value_at(i)));
        }
        check(worst <= 1e-12 * scale, "reference " + name + ": largest difference from the host's " +
                                          significant(worst, 3) + ", of an output scale " + significant(scale, 3));
        const Tensor again = reference_on_gpu(quant, problem, device, rows);
        check(again.bytes == gpu.bytes, "reference " + name + ": a second launch gives the same bits");
        const Tensor gathered = gather_rows_on_gpu(quant, problem, device.q, rows);
        check(gathered.bytes == gather_query_rows(host.q, c.shape, rows).bytes,
              "gather_rows_on_gpu " + name + ": the host's gathered bytes");
    }
}

int run(int argc, char **argv) {
    cxxopts::Options parser("gpu_time_helpers_check", "GPU checks of the time stage's input generator and output checks");
    parser.add_options()("quant-cubin", "quantization cubin", cxxopts::value<std::string>())(
        "device", "CUDA device index", cxxopts::value<int>()->default_value("0"));
    cxxopts::ParseResult options;
    try {
        options = parser.parse(argc, argv);
    } catch (const cxxopts::exceptions::exception &e) {
        fail(ExitCode::usage, e.what());
    }
    if (!options.count("quant-cubin")) fail(ExitCode::usage, "--quant-cubin is required");
    const GpuProbe probe = probe_gpu();
    if (!probe.available) {
        std::cerr << "gpu_time_helpers_check: skipped: " << probe.reason << "\n";
        return kExitSkip;
    }
    const DeviceFacts device = select_device(options["device"].as<int>());
    std::cout << device.summary() << "\n";
    const CubinModule quant(options["quant-cubin"].as<std::string>());
    check_generator(quant);
    check_nan_count(quant);
    check_compare(quant);
    check_output_checks(quant);
    check_reference(quant);
    std::cout << (failures == 0 ? "all checks passed" : std::to_string(failures) + " checks failed") << "\n";
    return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace s2tp

int main(int argc, char **argv) {
    return s2tp::run_check_program("gpu_time_helpers_check", [&] { return s2tp::run(argc, argv); });
}
