// sage2tp exec: launches of one variant, for running under a wrapper: the sanitize stage runs it
// under compute-sanitizer on several sanitizer shapes in turn (one process per variant and tool, see
// stages/sanitize_matrix.h), the time stage under ncu on the workload. Read-only: it takes no lock,
// because the stage that starts it holds the run's lock.
//
// Exit status: 0 when every launch completed and wrote every output element, 1 when some element still
// holds the NaN poison (the generator never makes inputs with a legitimately NaN output), otherwise
// sage2tp's error codes (a fault in the kernel surfaces as 5).
#include "subcommands.h"

#include "pipeline/cli.h"
#include "support/errors.h"
#include "model/experiment_manifest.h"
#include "tools/gpu_session/exec_request.h"
#include "tools/gpu_session/gpu_session.h"
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

    // One problem per launch: the workload's, or each sanitizer shape in the order asked.
    std::vector<AttentionProblem> problems;
    std::optional<WorkloadSpec> workload;
    if (request.sanitize_shapes.empty()) {
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
        problems.push_back(workload->problem);
    } else {
        for (const int index : request.sanitize_shapes)  // from_args checked each index against the list
            problems.push_back(sanitizer_shapes()[static_cast<std::size_t>(index)]);
    }

    const BuiltKernels kernels = built_kernels(run, inspect_run(run), experiment);
    const BuiltAttention &built = kernels.variant(variant);  // a usage error before any GPU is asked for
    const DeviceFacts device = require_gpu("exec", request.device_index);
    require_kernels_for_device("exec", kernels, device);
    const CubinModule quantize(kernels.quantize);
    const LoadedAttention attention = load_attention(built);

    // Each launch with inputs and outputs of its own, freed before the next, and waited for before
    // its line is printed (run_attention synchronizes): a fault stops exec at the shape that caused
    // it, and the line of every shape before it shows that shape ran to the end.
    bool all_written = true;
    toml::array launches;
    for (const AttentionProblem &problem : problems) {
        const GeneratedInputs host =
            workload ? workload_inputs(*workload) : problem_inputs(problem, request.seed.value_or(1));
        const DeviceQuantizedInputs inputs =
            quantize_on_gpu(quantize, problem, host.q, host.k, host.v, {}, built.abi->quantization(problem.shape.head_dim));
        const KernelRun out = run_attention(attention, problem, inputs, variant);

        const std::int64_t unwritten = count_nan(out.o) + (problem.with_lse ? count_nan(out.lse) : 0);
        const std::int64_t elements = out.o.numel() + (problem.with_lse ? out.lse.numel() : 0);
        const std::string o_sha256 = sha256_hex(out.o.bytes.data(), out.o.bytes.size());
        cl.reporter().say("exec " + variant + " " + problem.describe() + " on " + device.name + ": o sha256 " +
                          o_sha256 + ", " + std::to_string(unwritten) + " of " + std::to_string(elements) +
                          " output elements unwritten");
        toml::table launch{{"shape", problem.describe()}, {"o_sha256", o_sha256}, {"unwritten_elements", unwritten}};
        if (!out.launches.empty()) {
            // What the user's host function launched, as it launched it.
            const RecordedLaunch &first = out.launches.front();
            cl.reporter().say("  launched by " + attention.library()->function() + ": " + first.describe() + " (" +
                              std::to_string(out.launches.size()) + " launch" + (out.launches.size() == 1 ? "" : "es") + ")");
            launch.insert("host_launch", first.describe());
        }
        launches.push_back(launch);
        all_written = all_written && unwritten == 0;
    }
    cl.reporter().emit_json(toml::table{{"command", "exec"},
                                        {"variant", variant},
                                        {"device", device.summary()},
                                        {"launches", launches},
                                        {"exit_code", all_written ? 0 : 1}});
    return all_written ? 0 : 1;
}

}  // namespace s2tp
