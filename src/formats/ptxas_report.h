// Reads the resource report that nvcc/ptxas print on stderr with `-Xptxas -v` (as nvcc 13.0 prints it):
// one record per (kernel entry, arch). Registers are per target (35 on sm_90a vs 96 on sm_89 for the
// same source), so every consumer keys on the arch as well as the kernel.
//
// Usage:
//   s2tp::PtxasReport report = s2tp::parse_ptxas_report(nvcc_stderr, "build/attn.sm_90a.log");
//   const s2tp::KernelResources &k = report.at({"attn_base", "sm_90a"});
//   if (k.spill_store_bytes > 0) ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s2tp {

struct KernelKey {
    std::string name;  // mangled, as ptxas prints it
    std::string arch;  // "sm_90a"
    bool operator<(const KernelKey &other) const {
        return name != other.name ? name < other.name : arch < other.arch;
    }
};

// Byte counts from `-warn-spills` / `-warn-lmem-usage`, which repeat the stack line's numbers as warnings.
struct SpillWarning {
    std::int64_t store_bytes = 0;
    std::int64_t load_bytes = 0;
};

struct KernelResources {
    std::string name;
    std::string arch;
    int line = 0;  // of the "Compiling entry function" line, for messages

    int registers = 0;
    std::optional<int> barriers;  // older toolkits (e.g. CUDA 9.1) do not print it
    std::int64_t stack_frame_bytes = 0;
    std::int64_t spill_store_bytes = 0;
    std::int64_t spill_load_bytes = 0;
    std::int64_t static_smem_bytes = 0;
    std::int64_t cumulative_stack_bytes = 0;
    std::map<int, std::int64_t> cmem_bytes;  // bank -> bytes; CUDA 13 prints none for sm_90 and newer
    int textures = 0;
    int samplers = 0;
    int surfaces = 0;

    std::optional<std::int64_t> local_memory_warning_bytes;  // "Local memory used ... size of stack frame"
    std::optional<SpillWarning> spill_warning;               // "Registers are spilled to local memory ..."
};

using PtxasReport = std::map<KernelKey, KernelResources>;

// `source` names the log in error messages. Lines that are not part of the report (nvcc messages,
// module totals, compile times, advisories) are ignored. Throws Error(usage) "source:line: ..." for a
// report that cannot be read unambiguously: an unknown item in a "Used" line, a "Used" or stack line
// outside an entry, an entry without its stack or "Used" line, or the same (kernel, arch) twice.
PtxasReport parse_ptxas_report(std::string_view log, const std::string &source);

// The first `max_lines` lines that report an error ("error" or "fatal" as a word, any case), with
// trailing whitespace removed, for a failed build's summary.
std::vector<std::string> first_error_lines(std::string_view output, std::size_t max_lines);

}  // namespace s2tp
