// Per-architecture hardware limits that the occupancy model needs, kept as data in
// data/arch_limits.toml so that a new architecture is a table row, not a code change.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s2tp {

struct ArchLimits {
    std::string row;     // the table name, e.g. "sm_90"
    std::string target;  // the one build-target name that selects this row, e.g. "sm_90a"
    bool feature_suffix = false;
    std::string gpus;    // the GPUs it is for, e.g. "H100, H200, GH200"; may be empty
    std::string aa_band_basis;  // what the time stage's A/A band rests on for this arch; empty: not measured
    // Dense INT8 (and FP8) tensor-core operations per SM per clock: the peak an arm's throughput is
    // judged against (the gate's tensor-peak condition); 0 when the data does not say.
    std::int64_t dense_int8_ops_per_sm_clock = 0;

    int threads_per_sm = 0;
    int warps_per_sm = 0;
    int max_blocks_per_sm = 0;
    int max_threads_per_block = 0;

    int registers_per_sm = 0;
    int registers_per_block = 0;
    int registers_per_thread = 0;
    int register_alloc_unit = 0;  // registers per warp
    int sub_partitions = 0;       // SMSPs, each with one warp scheduler and a quarter of the register file

    std::int64_t smem_per_sm = 0;  // the largest carveout
    std::int64_t smem_optin_per_block = 0;
    std::int64_t smem_default_per_block = 0;
    std::int64_t smem_reserved_per_block = 0;
    std::int64_t smem_alloc_unit = 0;
    std::vector<std::int64_t> smem_carveout_steps;  // bytes, strictly ascending, last = smem_per_sm

    int barrier_slots_per_block_slot = 0;  // 0: barriers never limit occupancy on this arch
};

constexpr int kWarpSize = 32;

// The dense INT8/FP8 tensor peak in tera-operations per second of `sm_count` SMs at `sm_clock_mhz`;
// nothing when the row holds no dense_int8_ops_per_sm_clock or the clock or count is not positive.
std::optional<double> dense_tensor_peak_tops(const ArchLimits &limits, int sm_count, double sm_clock_mhz);

// Keyed by row name ("sm_89", "sm_90", ...).
using ArchLimitsTable = std::map<std::string, ArchLimits>;

// Reads and checks the table. A syntax error, a missing, unknown or mistyped key, or values that
// contradict each other throw Error(usage) naming file:line:column.
ArchLimitsTable load_arch_limits(const std::string &path);

// Maps a build-target name ("sm_89", "sm_90a", "sm_100a", ...) to its row. Any other name
// throws Error(usage, "unsupported arch 'X'; valid: ...").
const ArchLimits &resolve_arch(const ArchLimitsTable &table, std::string_view target);

// Every build target with the GPUs it is for, in arch order: "sm_89 (RTX 40xx, ...), sm_90a (H100, ...), ...".
std::string targets_by_gpu(const ArchLimitsTable &table);

}  // namespace s2tp
