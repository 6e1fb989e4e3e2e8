#include "model/occupancy.h"

#include "support/errors.h"
#include "support/integer_math.h"

#include <algorithm>
#include <climits>

namespace s2tp {
namespace {

void check_launch(const LaunchResources &launch) {
    if (launch.registers_per_thread < 0 || launch.threads_per_block < 1 || launch.static_smem_bytes < 0 ||
        launch.dynamic_smem_bytes < 0 || launch.barriers_per_block < 0)
        fail(ExitCode::usage, "invalid launch resources: " + std::to_string(launch.registers_per_thread) +
                                  " registers/thread, " + std::to_string(launch.threads_per_block) +
                                  " threads/block, " + std::to_string(launch.static_smem_bytes) + " B static + " +
                                  std::to_string(launch.dynamic_smem_bytes) + " B dynamic shared memory, " +
                                  std::to_string(launch.barriers_per_block) + " barriers");
}

}  // namespace

const char *to_string(OccupancyLimiter limiter) {
    switch (limiter) {
        case OccupancyLimiter::registers: return "registers";
        case OccupancyLimiter::warps: return "warps";
        case OccupancyLimiter::blocks: return "blocks";
        case OccupancyLimiter::smem: return "smem";
        case OccupancyLimiter::barriers: return "barriers";
    }
    return "?";
}

std::string limiter_names(const std::vector<OccupancyLimiter> &limiters) {
    std::string names;
    for (OccupancyLimiter limiter : limiters) names += (names.empty() ? "" : "+") + std::string(to_string(limiter));
    return names;
}

Occupancy compute_occupancy(const ArchLimits &arch, const LaunchResources &launch) {
    check_launch(launch);
    Occupancy o;
    std::vector<std::string> impossible;
    const std::string on = " on " + arch.target;

    o.warps_per_block = static_cast<int>(ceil_div(launch.threads_per_block, kWarpSize));

    // Registers are allocated per warp and per sub-partition: a warp lives on one SMSP and takes its
    // registers from that SMSP's quarter of the file, so leftovers in one quarter do not add up.
    o.registers_per_warp =
        static_cast<int>(round_up(std::int64_t{launch.registers_per_thread} * kWarpSize, arch.register_alloc_unit));
    // The hardware's per-block check assumes the block's warps are spread over all sub-partitions.
    const std::int64_t registers_assumed_per_block =
        std::int64_t{o.registers_per_warp} * round_up(o.warps_per_block, arch.sub_partitions);
    if (launch.registers_per_thread > arch.registers_per_thread) {
        impossible.push_back(std::to_string(launch.registers_per_thread) + " registers per thread exceed the limit of " +
                             std::to_string(arch.registers_per_thread) + on);
    } else if (registers_assumed_per_block > arch.registers_per_block) {
        impossible.push_back(std::to_string(o.registers_per_warp) + " registers per warp x " +
                             std::to_string(round_up(o.warps_per_block, arch.sub_partitions)) +
                             " warps (rounded up to whole sub-partitions) = " +
                             std::to_string(registers_assumed_per_block) + " exceed the " +
                             std::to_string(arch.registers_per_block) + " registers per block" + on);
    } else if (o.registers_per_warp == 0) {
        o.blocks_by_registers = INT_MAX;
    } else {
        const int warps_per_sub_partition = arch.registers_per_sm / arch.sub_partitions / o.registers_per_warp;
        o.blocks_by_registers = arch.sub_partitions * warps_per_sub_partition / o.warps_per_block;
    }

    if (launch.threads_per_block > arch.max_threads_per_block)
        impossible.push_back(std::to_string(launch.threads_per_block) + " threads per block exceed the limit of " +
                             std::to_string(arch.max_threads_per_block) + on);
    else
        o.blocks_by_warps = arch.warps_per_sm / o.warps_per_block;

    o.blocks_by_block_slots = arch.max_blocks_per_sm;

    const std::int64_t smem_requested = launch.static_smem_bytes + launch.dynamic_smem_bytes;
    o.smem_per_block = round_up(smem_requested + arch.smem_reserved_per_block, arch.smem_alloc_unit);
    o.needs_smem_opt_in = smem_requested > arch.smem_default_per_block;
    const std::int64_t smem_block_limit =
        (o.needs_smem_opt_in ? arch.smem_optin_per_block : arch.smem_default_per_block) + arch.smem_reserved_per_block;
    if (o.smem_per_block > smem_block_limit)
        impossible.push_back(std::to_string(smem_requested) + " bytes of shared memory per block exceed the opt-in maximum of " +
                             std::to_string(arch.smem_optin_per_block) + on);
    else
        o.blocks_by_smem = o.smem_per_block > 0 ? static_cast<int>(arch.smem_per_sm / o.smem_per_block) : INT_MAX;

    o.barriers_limit = arch.barrier_slots_per_block_slot > 0 && launch.barriers_per_block > 0;
    if (o.barriers_limit) {
        const int available = arch.barrier_slots_per_block_slot * arch.max_blocks_per_sm;
        o.blocks_by_barriers = available / launch.barriers_per_block;
        if (o.blocks_by_barriers == 0)
            impossible.push_back(std::to_string(launch.barriers_per_block) + " barriers per block exceed the " +
                                 std::to_string(available) + " an SM holds" + on);
    }

    o.blocks_per_sm = std::min({o.blocks_by_registers, o.blocks_by_warps, o.blocks_by_block_slots, o.blocks_by_smem});
    if (o.barriers_limit) o.blocks_per_sm = std::min(o.blocks_per_sm, o.blocks_by_barriers);

    if (o.blocks_by_registers == o.blocks_per_sm) o.limited_by.push_back(OccupancyLimiter::registers);
    if (o.blocks_by_warps == o.blocks_per_sm) o.limited_by.push_back(OccupancyLimiter::warps);
    if (o.blocks_by_block_slots == o.blocks_per_sm) o.limited_by.push_back(OccupancyLimiter::blocks);
    if (o.blocks_by_smem == o.blocks_per_sm) o.limited_by.push_back(OccupancyLimiter::smem);
    if (o.barriers_limit && o.blocks_by_barriers == o.blocks_per_sm) o.limited_by.push_back(OccupancyLimiter::barriers);

    o.launchable = o.blocks_per_sm > 0;
    for (const std::string &reason : impossible)
        o.why_not_launchable += (o.why_not_launchable.empty() ? "" : "; ") + reason;

    o.resident_warps = o.blocks_per_sm * o.warps_per_block;
    o.occupancy = static_cast<double>(o.resident_warps) / arch.warps_per_sm;
    o.warps_per_scheduler = static_cast<double>(o.resident_warps) / arch.sub_partitions;
    if (o.launchable) {
        const std::int64_t needed = std::int64_t{o.blocks_per_sm} * o.smem_per_block;
        o.smem_carveout_bytes = *std::lower_bound(arch.smem_carveout_steps.begin(), arch.smem_carveout_steps.end(), needed);
    }
    return o;
}

}  // namespace s2tp
