// `sage2tp phases`: where a schedule's cycles go, from cubins instrumented with kernels/phase_log.h's
// stamps. Two halves:
//   * the build, anywhere nvcc is: every variant's kernel sources compiled again with the run's own
//     build (plan_compiles: its flags, include directories and the arch its checkpoint recorded) plus
//     -DS2TP_PHASE_TIMING, into builds/<variant>/phases/, so the cubins every other stage loads stay
//     untouched and timing is never perturbed. builds/phase-timing.toml records what they were built
//     from; the build is up to date while that did not change.
//   * the measurement, on a GPU: per variant one untimed warm-up launch, then one launch with the log
//     zeroed, read back and summarised (figures/phase_summary.h).
#pragma once

#include "model/experiment_manifest.h"
#include "pipeline/cli.h"
#include "pipeline/run_directory.h"
#include "tools/gpu_session/gpu_session.h"
#include "tools/kernel_build.h"
#include "figures/phase_summary.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

inline const char *phase_timing_define() { return "-DS2TP_PHASE_TIMING"; }

// The instrumented twins of the plain build's compiled kernel sources (support sources and the
// quantization kernels are left out: they are not timed): the same command with -DS2TP_PHASE_TIMING,
// writing builds/<variant>/phases/<stem>.cubin, .log and .cmd.
std::vector<CompileJob> plan_phase_compiles(const RunDirectory &run, const std::vector<CompileJob> &plain);

struct PhaseCubin {
    std::string variant, source;
    std::filesystem::path cubin;
};

struct PhaseBuild {
    std::vector<PhaseCubin> cubins;
    std::string nvcc_version;  // of the compiler that built them
    std::string note;          // why nothing was compiled ("up to date", ...), "" when it compiled

    // The instrumented cubin of `variant`'s `source`; Error(internal) when the build has none.
    const std::filesystem::path &cubin_of(const std::string &variant, const std::string &source) const;
};

struct PhaseBuildRequest {
    std::optional<std::string> nvcc;  // --nvcc
    int jobs = 1;                     // parallel nvcc processes
    bool force = false;               // compile even when up to date
};

// Error(precondition), before anything is compiled, naming the first variant whose source tree mentions
// no phase log (kernels/phase_log.h's S2TP_PHASE_LOG_SYMBOL in none of its files): its kernels have no
// phase stamps, so instrumented cubins of them would measure nothing. Upstream SageAttention's kernels
// have none.
void require_phase_stamps(const RunDirectory &run, const Experiment &experiment);

// Builds the instrumented cubins unless they are up to date (same arch, commands, trees and nvcc
// version as recorded, every cubin intact). Without nvcc, intact cubins built from the same
// inputs elsewhere are kept; otherwise Error(missing_tool). A source that does not compile is
// Error(stop) quoting nvcc's first errors and naming the log.
PhaseBuild build_phase_cubins(const RunDirectory &run, const Experiment &experiment, const BuiltKernels &kernels,
                              const PhaseBuildRequest &request, const Reporter &reporter);

// The workload phases launches: the run's, or with `seq_len` > 0 the same generated workload with
// len_q = len_kv = seq_len (as [time] ncu_seq_len). Error(usage) for a workload of tensor files.
WorkloadSpec phase_workload(const Experiment &experiment, std::int64_t seq_len);

// On `device` (require_gpu, require_kernels_for_device done): the launches and the report. A cubin that
// defines no s2tp_phase_log, or whose log stays all zero, is Error(precondition) naming it.
PhaseReport measure_phases(const RunDirectory &run, const Experiment &experiment, const BuiltKernels &kernels,
                           const PhaseBuild &build, const WorkloadSpec &workload, const DeviceFacts &device,
                           const Reporter &reporter);

// reports/phases.toml, written atomically.
std::filesystem::path write_phase_report(const RunDirectory &run, const PhaseReport &report);

}  // namespace s2tp
