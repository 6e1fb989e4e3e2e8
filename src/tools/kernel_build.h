// Compiling a run's source trees to cubins with nvcc: the build stage's mechanics. One nvcc process
// per (variant, source), run in parallel up to a job limit, each with an argument vector, its full
// output and exact command line kept next to the cubin.
#pragma once

#include "support/errors.h"

#include "model/arch_limits.h"
#include "model/experiment_manifest.h"
#include "pipeline/run_directory.h"
#include "tools/compile_cache.h"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// nvcc from --nvcc, else $CUDA_HOME/bin, else PATH, else /usr/local/cuda/bin. Error(missing_tool)
// saying how to point sage2tp at a toolkit when none is found.
std::filesystem::path find_nvcc(const std::optional<std::string> &requested);

// find_nvcc for a stage that can go on without a compiler (it keeps what was built elsewhere): the
// compiler, or the error that says why there is none. A requested --nvcc that is missing still throws.
struct CompilerLookup {
    std::optional<std::filesystem::path> nvcc;
    std::optional<Error> missing;
};
CompilerLookup look_for_nvcc(const std::optional<std::string> &requested);
std::string nvcc_version(const std::filesystem::path &nvcc);  // the "release X, VX.Y.Z" line

// "auto" asks the first visible GPU (its compute capability, with the "a" suffix where the table
// says the arch has one); any other name is checked against the table. Error(usage) for unknown ones.
std::string resolve_target_arch(const std::string &requested, const ArchLimitsTable &table);

struct CompileJob {
    std::string variant;  // baseline | candidate | support (the embedded quantization kernels)
    std::string source;   // relative to the tree, e.g. kernels/attention_entry.cu
    bool compared = true; // a kernel source of the A/B, not a support source
    std::filesystem::path cubin, log, command_file;
    std::filesystem::path dependency_file;  // nvcc -MD -MF: every file the compile read, for the cache
    // nvcc runs in the run directory with paths relative to it (see plan_compiles).
    std::filesystem::path working_directory;
    std::vector<std::string> argv;
    std::vector<std::size_t> output_arguments;  // the positions in argv of the output paths (-MF's, -o's)
    // A variant whose adapter calls a host function: nvcc compiles `generated_source` (which includes the
    // launcher file, then kernels/host_call_export.h exporting the host function) and links it into the
    // host-call library; the cubin is the one nvcc keeps on the way (--keep into keep_directory), so the
    // device code is compiled once. All empty for a plain cubin compile.
    std::filesystem::path host_library, keep_directory, generated_source;
    std::string generated_text;
};

// The build checkpoint's key of a variant's host-call library, beside "<variant>:<source>" of its cubin.
std::string host_call_artifact_key(const std::string &variant, const std::string &source);
// What makes an nvcc compile a host-call library: a shared object, linked with libcuda where the host
// code calls the driver, with every runtime launch entry point wrapped by the recorder.
std::vector<std::string> host_call_link_arguments();
// The generated translation unit of a host-call library: `launcher` (as the #include spells it), then
// kernels/host_call_export.h exporting `host_function`.
std::string host_call_source(const std::filesystem::path &launcher, const std::string &host_function);

struct CompileOutcome {
    int exit_code = -1;
    double seconds = 0;
    std::string output;  // nvcc's stderr then stdout (ptxas -v writes to stderr)
    bool from_cache = false;  // copied from the compile cache; `seconds` is the look-up's
};

// One job per kernel and support source of each variant's own source, from its own tree, plus the
// embedded quantize.cu from trees/support when the experiment needs it. A variant whose adapter calls a
// host function gets a host-call compile of its first kernel source (CompileJob::host_library). Sources
// with needs_torch_headers, and every host-call compile, find <torch/extension.h> in sage2tp's own
// subset of torch's API (kernels/torch_shim, copied into trees/support), so no torch is needed; an
// experiment whose baseline lists support_sources has no such copy and is refused (Error(usage)).
//
// nvcc 13 hands paths to its own shell (sh -c "cicc ... \"<path>\""), among them the absolute path
// of every source, which it derives from the working directory. So nvcc runs in the run directory,
// with relative paths, and Error(usage) naming the character refuses
//   * a run directory whose real path holds a character the shell expands inside double quotes
//     ($ ` " \), and the same for $TMPDIR, where nvcc keeps its intermediate files, and for the torch
//     include directories;
//   * a manifest source or include dir outside [A-Za-z0-9._+/-] (nvcc also splits option values at ',').
//
// The outputs go to <run>/<output_dir>/<variant>/ (the build stage compiles into a staging directory
// and swaps it in whole as builds/).
std::vector<CompileJob> plan_compiles(const RunDirectory &run, const Experiment &experiment, const std::string &arch,
                                      const std::filesystem::path &nvcc,
                                      const std::filesystem::path &output_dir = "builds");

// One compile in flight, for the progress line.
struct RunningCompile {
    std::string file;     // the source's file name, "attention_entry.cu"
    std::string variant;  // "baseline", a candidate's name, "support"
    int seconds = 0;      // since it started
};
// What runs, as the progress line shows it: grouped by source file, the variants compile the same files
// ("attention_entry.cu for baseline, candidate; quantize.cu for baseline 34 s", the longest's time),
// or, when that is wider than `width`, each file with its count ("attention_entry.cu x2, quantize.cu x2
// 34 s"), or else the counts alone ("9 compiles of 5 files 34 s"), so that no running compile falls off
// the end of the line unseen. "" when none runs.
std::string running_compiles_text(const std::vector<RunningCompile> &running, std::size_t width);
// A progress line: `counts` ("  [3/8] 1m12s elapsed, ETA 40s: ") and then the running compiles in
// what is left of 79 columns (80 less the last, where a terminal would wrap).
std::string compile_progress_line(const std::string &counts, const std::vector<RunningCompile> &running);

// What run_compiles reports as it goes; each callback is optional, and they are never called at once.
struct CompileProgress {
    std::function<void(const CompileJob &)> started;
    // `finished` jobs of the total are done, this one among them.
    std::function<void(const CompileJob &, const CompileOutcome &, std::size_t finished)> finished;
    // About every second: the running jobs with their elapsed time, and how many are done.
    std::function<void(const std::vector<RunningCompile> &running, std::size_t finished)> tick;
};

// Where run_compiles looks before it compiles, and stores what compiled (tools/compile_cache.h).
struct CompileCaching {
    const CompileCache *cache = nullptr;  // nullptr: every job compiles
    std::string compiler_version;         // nvcc_version()
    std::vector<std::string> corrupt;     // entries found damaged (and removed) during this build
};

// Runs the jobs, at most `parallel` at a time; writes each log and command file. With a cache, a job
// whose inputs were compiled before gets the stored cubin and output; a compile that succeeds is
// stored. Error(usage) when the cache cannot be written (nothing recorded is touched).
std::vector<CompileOutcome> run_compiles(const std::vector<CompileJob> &jobs, int parallel,
                                         const CompileProgress &progress, CompileCaching *caching = nullptr);

// The shell-quoted command line of a job, as its .cmd file holds it.
std::string quoted_command(const std::vector<std::string> &argv);

// Default for --jobs: $MAX_JOBS when set (as the experiment's earlier runner did), else the cores.
int default_build_jobs();

}  // namespace s2tp
