// Theoretical occupancy of one kernel launch on one architecture, by the rules of CUDA 13.0's
// cuda_occupancy.h (include/cuda_occupancy.h; matched cudaOccupancyMaxActiveBlocksPerMultiprocessor in
// 378/378 configurations on an H200). Used to explain A/B timing differences: two schedules of the same kernel
// can differ in registers, and therefore in resident warps per scheduler.
// Not modelled: the cc 10-12 "virtual resource" limit, because ptxas -v reports no count for it.
#pragma once

#include "model/arch_limits.h"

#include <cstdint>
#include <string>
#include <vector>

namespace s2tp {

struct LaunchResources {
    int registers_per_thread = 0;  // ptxas "Used N registers" or cudaFuncAttributes::numRegs
    int threads_per_block = 0;
    std::int64_t static_smem_bytes = 0;  // ptxas "N bytes smem"
    std::int64_t dynamic_smem_bytes = 0;
    // ptxas "used N barriers". Where ptxas does not print it (older toolkits) pass 1, the value
    // cuda_occupancy.h assumes.
    int barriers_per_block = 1;
};

enum class OccupancyLimiter { registers, warps, blocks, smem, barriers };

const char *to_string(OccupancyLimiter limiter);

struct Occupancy {
    int warps_per_block = 0;
    int registers_per_warp = 0;          // after rounding up to the allocation unit
    std::int64_t smem_per_block = 0;     // allocated: static + dynamic + reserved, rounded up
    bool needs_smem_opt_in = false;      // more than the default per-block shared memory

    // Blocks per SM that each resource alone allows; 0 where that resource makes the launch impossible.
    int blocks_by_registers = 0;
    int blocks_by_warps = 0;
    int blocks_by_block_slots = 0;
    int blocks_by_smem = 0;
    bool barriers_limit = false;  // false: the arch has no barrier limit or the kernel uses none
    int blocks_by_barriers = 0;   // meaningful only when barriers_limit

    int blocks_per_sm = 0;                    // the minimum of the above
    std::vector<OccupancyLimiter> limited_by;  // every resource whose bound equals blocks_per_sm
    bool launchable = false;                  // blocks_per_sm > 0
    std::string why_not_launchable;           // empty when launchable

    int resident_warps = 0;            // blocks_per_sm x warps_per_block
    double occupancy = 0.0;            // resident_warps / warps per SM
    double warps_per_scheduler = 0.0;  // resident_warps / sub-partitions
    // Smallest carveout step that holds the resident blocks' shared memory (what the driver picks).
    std::int64_t smem_carveout_bytes = 0;
};

// Throws Error(usage) for negative resources or a block of fewer than one thread.
Occupancy compute_occupancy(const ArchLimits &arch, const LaunchResources &launch);

// "registers", "registers+smem", ... in limiter order.
std::string limiter_names(const std::vector<OccupancyLimiter> &limiters);

}  // namespace s2tp
