// `build --sass`: the SASS of every kernel entry of both variants, disassembled with `cuobjdump
// -sass` (else `nvdisasm` on the cubin) and counted by opcode family, over the whole entry and over
// its main K/V loop (formats/sass_listing.h says how the loop is found). The figures are typed so the
// build checkpoint and reports/sass.toml hold exactly what the table shows.
#pragma once

#include "formats/sass_listing.h"
#include "gpu/kernel_abi.h"
#include "pipeline/cli.h"
#include "pipeline/run_directory.h"
#include "stages/kernel_build.h"

#include <toml++/toml.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct SassVariantFigures {
    SassHistogram all;
    std::optional<SassHistogram> loop;  // nothing when no backward branch was found
    std::uint64_t loop_start = 0, loop_end = 0;
};

struct SassEntryComparison {
    std::string entry;
    SassVariantFigures baseline, candidate;
};

struct SassComparison {
    std::string tool;  // the disassembler and its version line
    std::vector<SassEntryComparison> entries;

    toml::table to_toml() const;
    static SassComparison from_toml(const toml::table &table);
    // Per entry: FAMILY | baseline -> candidate (delta) for the whole entry, then for the main loop.
    std::string table_text() const;
};

// An entry's key for pairing baseline and candidate functions: the kernel ABI's short name
// ("hd128_bf16_nomask"), so entries pair across ABIs; nothing for a function that is no entry.
using SassEntryKey = std::function<std::optional<std::string>(const std::string &function_name)>;
// The entries whose keys appear in both listings, each under its key. A null key function keys a
// function by its own name.
SassComparison compare_sass(const std::vector<SassFunction> &baseline, const std::vector<SassFunction> &candidate,
                            const SassEntryKey &baseline_key, const SassEntryKey &candidate_key);

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
