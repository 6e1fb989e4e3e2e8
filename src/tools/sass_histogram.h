// `build --sass`: the SASS of every kernel entry of both variants, disassembled with `cuobjdump
// -sass` (else `nvdisasm` on the cubin) and counted into figures/sass_figures.h's comparison.
#pragma once

#include "figures/sass_figures.h"
#include "gpu/kernel_abi.h"
#include "pipeline/cli.h"
#include "pipeline/run_directory.h"
#include "tools/kernel_build.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct Disassembler {
    std::filesystem::path program;
    bool is_cuobjdump = true;  // else nvdisasm
};
// cuobjdump, else nvdisasm (PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin).
std::optional<Disassembler> find_disassembler();
// The SASS listing of a cubin. Error(internal) naming the tool, the cubin and its exit status.
std::string disassemble(const Disassembler &tool, const std::filesystem::path &cubin);

// The comparison of the compared sources' cubins of a build (its kernel ABI entries only); nothing,
// with a warning that says so, when neither disassembler is installed or one fails.
std::optional<SassComparison> sass_of_build(const std::vector<CompileJob> &jobs, const KernelAbi &baseline_abi,
                                            const KernelAbi &candidate_abi, const Reporter &reporter);

// sass_of_build, also written to <run>/reports/sass.toml with the SHA-256 of every cubin it read, so
// that a histogram made for an up-to-date build (whose checkpoint is left as it is: rewriting it
// would make every later stage stale) is still tied to the cubins it describes.
std::optional<SassComparison> write_sass_report(const RunDirectory &run, const std::vector<CompileJob> &jobs,
                                                const KernelAbi &baseline_abi, const KernelAbi &candidate_abi,
                                                const Reporter &reporter);

}  // namespace s2tp
