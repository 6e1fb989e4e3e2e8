// sage2tp exec: one launch of one variant on one problem, for running under a wrapper: the sanitize
// stage runs it under compute-sanitizer (one process per variant, tool and shape), the time stage
// under ncu. Read-only: it takes no lock, because the stage that starts it holds the run's lock.
//
// Exit status: 0 when the launch completed and wrote every output element, 1 when some element still
// holds the NaN poison (the generator never makes inputs with a legitimately NaN output), otherwise
// sage2tp's error codes (a fault in the kernel surfaces as 5).
#include "subcommands.h"

#include "pipeline/cli.h"
#include "support/errors.h"
#include "model/experiment_manifest.h"
#include "tools/exec_request.h"
#include "tools/gpu_session.h"
#include "support/hashing.h"
#include "model/shape_sets.h"
#include "pipeline/stage_pipeline.h"

#include <optional>

namespace s2tp {

int exec_command(const Args &args) {
    CommandLine cl("exec", "Internal: one launch of one variant, for compute-sanitizer and ncu.", args);
    ExecRequest::add_options(cl);
    if (!cl.parse()) return 0;
    const ExecRequest request = ExecRequest::from_args(cl, require_existing_run(cl.selection()));
    const std::string &variant = request.variant;

    // Not locked: exec runs under sanitize and time, whose process holds the run.
    const RunDirectory run(request.run);
    const Experiment experiment = load_experiment(run.manifest());

    AttentionProblem problem;
    std::optional<WorkloadSpec> workload;
    if (!request.sanitize_shape) {
        workload = request.workload_file ? load_workload(*request.workload_file) : experiment.workload;
        if (request.seed) {
            if (workload->q_file)
                fail(ExitCode::usage, "--seed does not apply: the workload '" + workload->name + "' reads tensor files");
            workload->seed = *request.seed;
        }
        if (request.seq_len) {
            const std::int64_t len = *request.seq_len;
            if (workload->q_file)
                fail(ExitCode::usage, "--seq-len does not apply: the workload '" + workload->name + "' reads tensor files");
            if (len < 1) fail(ExitCode::usage, "--seq-len must be at least 1, got " + std::to_string(len));
            workload->problem.shape.len_q = workload->problem.shape.len_kv = len;
        }
        problem = workload->problem;
    } else {
        const auto &shapes = sanitizer_shapes();
        const int index = *request.sanitize_shape;
        if (index < 0 || static_cast<std::size_t>(index) >= shapes.size())
            fail(ExitCode::usage, "--sanitize-shape " + std::to_string(index) + " is out of range: there are " +
                                      std::to_string(shapes.size()) + " sanitizer shapes (0.." +
                                      std::to_string(shapes.size() - 1) + ")");
        problem = shapes[static_cast<std::size_t>(index)];
    }

    const BuiltKernels kernels = built_kernels(run, inspect_run(run), experiment);
    const BuiltAttention &built = kernels.variant(variant);  // a usage error before any GPU is asked for
    const DeviceFacts device = require_gpu("exec", request.device_index);
    require_kernels_for_device("exec", kernels, device);
    const GeneratedInputs host =
        workload ? workload_inputs(*workload)
                 : problem_inputs(problem, request.seed.value_or(1));
    const CubinModule quantize(kernels.quantize);
    const CubinModule attention(built.cubin);
    const DeviceQuantizedInputs inputs =
        quantize_on_gpu(quantize, problem, host.q, host.k, host.v, {}, built.abi->quantization());
    const KernelRun out =
        run_attention(*built.abi, attention, problem, inputs, variant);

    const std::int64_t unwritten = count_nan(out.o) + (problem.with_lse ? count_nan(out.lse) : 0);
    const std::int64_t elements = out.o.numel() + (problem.with_lse ? out.lse.numel() : 0);
    const std::string o_sha256 = sha256_hex(out.o.bytes.data(), out.o.bytes.size());
    cl.reporter().say("exec " + variant + " " + problem.describe() + " on " + device.name + ": o sha256 " + o_sha256 +
                      ", " + std::to_string(unwritten) + " of " + std::to_string(elements) +
                      " output elements unwritten");
    cl.reporter().emit_json(toml::table{{"command", "exec"},
                                        {"variant", variant},
                                        {"shape", problem.describe()},
                                        {"device", device.summary()},
                                        {"o_sha256", o_sha256},
                                        {"unwritten_elements", unwritten},
                                        {"exit_code", unwritten == 0 ? 0 : 1}});
    return unwritten == 0 ? 0 : 1;
}

}  // namespace s2tp
