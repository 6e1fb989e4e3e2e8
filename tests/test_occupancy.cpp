// The occupancy model (the rules of CUDA 13.0's include/cuda_occupancy.h) with hand-computed expectations, and the per-arch limits
// table it reads (data/arch_limits.toml).
#include "build_config.h"
#include "model/arch_limits.h"
#include "support/errors.h"
#include "model/occupancy.h"

#include <gtest/gtest.h>

#include <climits>
#include <filesystem>
#include <fstream>

namespace s2tp::unit_occupancy {
namespace {

const ArchLimitsTable &table() {
    static const ArchLimitsTable loaded = load_arch_limits(std::string(S2TP_SOURCE_ROOT) + "/data/arch_limits.toml");
    return loaded;
}

Occupancy occupancy(const std::string &target, int registers, int threads, std::int64_t dynamic_smem = 0,
                    int barriers = 1, std::int64_t static_smem = 0) {
    LaunchResources launch;
    launch.registers_per_thread = registers;
    launch.threads_per_block = threads;
    launch.static_smem_bytes = static_smem;
    launch.dynamic_smem_bytes = dynamic_smem;
    launch.barriers_per_block = barriers;
    return compute_occupancy(resolve_arch(table(), target), launch);
}

using L = OccupancyLimiter;
using Limiters = std::vector<OccupancyLimiter>;

// ---- worked examples, computed by hand from those rules ----

// The gate's tensor-peak condition: NVIDIA's 1,979 dense INT8 TOPS of the H100 SXM5 (132 SMs) are
// 8,192 operations per SM per clock at 1,830 MHz; an H200 at 1,980 MHz has 2,141 TOPS.
TEST(DenseTensorPeak, OperationsPerSmPerClockTimesSmsTimesClock) {
    const ArchLimits &hopper = resolve_arch(table(), "sm_90a");
    EXPECT_NEAR(*dense_tensor_peak_tops(hopper, 132, 1830.0), 1979.0, 0.5);
    EXPECT_NEAR(*dense_tensor_peak_tops(hopper, 132, 1980.0), 2141.2, 0.5);
    EXPECT_NEAR(*dense_tensor_peak_tops(resolve_arch(table(), "sm_89"), 128, 2520.0), 660.6, 0.5);
    EXPECT_FALSE(dense_tensor_peak_tops(hopper, 132, 0.0)) << "no clock measured, no peak";
    EXPECT_FALSE(dense_tensor_peak_tops(resolve_arch(table(), "sm_120a"), 84, 2500.0)) << "the data gives none";
}

TEST(Occupancy, Sm90R128T256IsTwoBlocksByRegisters) {
    Occupancy o = occupancy("sm_90a", 128, 256);
    EXPECT_TRUE(o.launchable);
    EXPECT_EQ(o.warps_per_block, 8);
    EXPECT_EQ(o.registers_per_warp, 4096);
    EXPECT_EQ(o.blocks_by_registers, 2);
    EXPECT_EQ(o.blocks_by_warps, 8);
    EXPECT_EQ(o.blocks_by_block_slots, 32);
    EXPECT_EQ(o.smem_per_block, 1024);  // the reserved 1 KB alone
    EXPECT_EQ(o.blocks_by_smem, 228);
    EXPECT_TRUE(o.barriers_limit);
    EXPECT_EQ(o.blocks_by_barriers, 64);
    EXPECT_EQ(o.blocks_per_sm, 2);
    EXPECT_EQ(o.limited_by, (Limiters{L::registers}));
    EXPECT_EQ(o.resident_warps, 16);
    EXPECT_DOUBLE_EQ(o.occupancy, 0.25);
    EXPECT_DOUBLE_EQ(o.warps_per_scheduler, 4.0);
    EXPECT_EQ(o.smem_carveout_bytes, 8 * 1024);
    EXPECT_TRUE(o.why_not_launchable.empty());
}

TEST(Occupancy, Sm90R128T256With100KBDynamicSmemStaysAtTwoBlocks) {
    Occupancy o = occupancy("sm_90a", 128, 256, 100 * 1024);
    EXPECT_EQ(o.smem_per_block, 103424);
    EXPECT_EQ(o.blocks_by_smem, 2);  // 233472 / 103424
    EXPECT_EQ(o.blocks_per_sm, 2);
    EXPECT_EQ(o.limited_by, (Limiters{L::registers, L::smem}));
    EXPECT_EQ(limiter_names(o.limited_by), "registers+smem");
    EXPECT_TRUE(o.needs_smem_opt_in);
    EXPECT_EQ(o.smem_carveout_bytes, 228 * 1024);  // 206848 B needed: more than the 196 KiB step
}

TEST(Occupancy, Sm90R35RoundsUpTo40RegistersAndSixBlocks) {
    Occupancy o = occupancy("sm_90a", 35, 256);
    EXPECT_EQ(o.registers_per_warp, 1280);
    EXPECT_EQ(o.blocks_by_registers, 6);  // 12 warps per SMSP = 48 warps
    EXPECT_EQ(o.blocks_per_sm, 6);
    EXPECT_EQ(o.resident_warps, 48);
    EXPECT_DOUBLE_EQ(o.occupancy, 0.75);
    EXPECT_DOUBLE_EQ(o.warps_per_scheduler, 12.0);
}

TEST(Occupancy, R96IsTwoBlocksOnSm89AndSm120) {
    for (const char *target : {"sm_89", "sm_120a", "sm_121a"}) {
        SCOPED_TRACE(target);
        Occupancy o = occupancy(target, 96, 256);
        EXPECT_EQ(o.registers_per_warp, 3072);
        EXPECT_EQ(o.blocks_by_registers, 2);  // 5 warps per SMSP = 20 warps
        EXPECT_EQ(o.blocks_by_warps, 6);
        EXPECT_EQ(o.blocks_by_block_slots, 24);
        EXPECT_EQ(o.blocks_per_sm, 2);
        EXPECT_EQ(o.limited_by, (Limiters{L::registers}));
        EXPECT_EQ(o.resident_warps, 16);
        EXPECT_DOUBLE_EQ(o.occupancy, 16.0 / 48.0);
        EXPECT_DOUBLE_EQ(o.warps_per_scheduler, 4.0);
    }
}

// ---- the SageAttention SM89 kernel: 255 registers, 4 warps, 32 KB dynamic shared memory ----

TEST(Occupancy, SageAttentionOnSm90) {
    Occupancy o = occupancy("sm_90a", 255, 128, 32768);
    EXPECT_EQ(o.registers_per_warp, 8192);
    EXPECT_EQ(o.blocks_by_registers, 2);  // 2 warps per SMSP
    EXPECT_EQ(o.blocks_by_warps, 16);
    EXPECT_EQ(o.smem_per_block, 33792);
    EXPECT_EQ(o.blocks_by_smem, 6);
    EXPECT_FALSE(o.needs_smem_opt_in);
    EXPECT_EQ(o.blocks_per_sm, 2);
    EXPECT_EQ(o.limited_by, (Limiters{L::registers}));
    EXPECT_EQ(o.resident_warps, 8);
    EXPECT_DOUBLE_EQ(o.occupancy, 0.125);
    EXPECT_DOUBLE_EQ(o.warps_per_scheduler, 2.0);
    EXPECT_EQ(o.smem_carveout_bytes, 100 * 1024);  // 67584 B needed
}

TEST(Occupancy, SageAttentionOnSm89Sm120Sm121) {
    for (const char *target : {"sm_89", "sm_120a", "sm_121a"}) {
        SCOPED_TRACE(target);
        Occupancy o = occupancy(target, 255, 128, 32768);
        EXPECT_EQ(o.blocks_by_registers, 2);
        EXPECT_EQ(o.blocks_by_warps, 12);
        EXPECT_EQ(o.blocks_by_smem, 3);  // 102400 / 33792
        EXPECT_EQ(o.blocks_per_sm, 2);
        EXPECT_EQ(o.limited_by, (Limiters{L::registers}));
        EXPECT_EQ(o.resident_warps, 8);
        EXPECT_DOUBLE_EQ(o.occupancy, 8.0 / 48.0);
        EXPECT_DOUBLE_EQ(o.warps_per_scheduler, 2.0);
        EXPECT_EQ(o.smem_carveout_bytes, 100 * 1024);
    }
}

// ---- other limiters ----

TEST(Occupancy, SmemLimitedOnSm89AtTheDefaultPerBlockLimit) {
    Occupancy o = occupancy("sm_89", 32, 128, 49152);
    EXPECT_EQ(o.blocks_by_registers, 16);
    EXPECT_EQ(o.smem_per_block, 50176);
    EXPECT_EQ(o.blocks_by_smem, 2);
    EXPECT_EQ(o.blocks_per_sm, 2);
    EXPECT_EQ(o.limited_by, (Limiters{L::smem}));
    EXPECT_FALSE(o.needs_smem_opt_in);  // exactly 48 KB still fits the default
    EXPECT_TRUE(occupancy("sm_89", 32, 128, 49153).needs_smem_opt_in);
}

TEST(Occupancy, SmemAllocationRoundsUpTo128Bytes) {
    // 45576 + 1024 = 46600 B would allow 5 blocks in 233472 B; rounded up to 46720 B only 4 fit.
    Occupancy o = occupancy("sm_90a", 32, 128, 0, 1, 45576);
    EXPECT_EQ(o.smem_per_block, 46720);
    EXPECT_EQ(o.blocks_by_smem, 4);
    EXPECT_EQ(o.blocks_per_sm, 4);
    EXPECT_EQ(o.limited_by, (Limiters{L::smem}));
    EXPECT_EQ(o.smem_carveout_bytes, 196 * 1024);  // 186880 B needed
}

TEST(Occupancy, StaticAndDynamicSmemAddUp) {
    Occupancy o = occupancy("sm_90a", 32, 128, 100000, 1, 16896);
    EXPECT_EQ(o.smem_per_block, 118016);  // 117920 rounded up
    EXPECT_EQ(o.blocks_per_sm, 1);
    EXPECT_TRUE(o.needs_smem_opt_in);
}

TEST(Occupancy, BlockSlotLimited) {
    Occupancy sm90 = occupancy("sm_90a", 32, 32);
    EXPECT_EQ(sm90.blocks_by_registers, 64);
    EXPECT_EQ(sm90.blocks_by_warps, 64);
    EXPECT_EQ(sm90.blocks_per_sm, 32);
    EXPECT_EQ(sm90.limited_by, (Limiters{L::blocks}));
    EXPECT_DOUBLE_EQ(sm90.occupancy, 0.5);
    EXPECT_DOUBLE_EQ(sm90.warps_per_scheduler, 8.0);

    Occupancy sm89 = occupancy("sm_89", 32, 32);
    EXPECT_EQ(sm89.blocks_per_sm, 24);
    EXPECT_EQ(sm89.limited_by, (Limiters{L::blocks}));
    EXPECT_DOUBLE_EQ(sm89.occupancy, 0.5);
}

TEST(Occupancy, TiesNameEveryLimiter) {
    Occupancy o = occupancy("sm_90a", 32, 64);
    EXPECT_EQ(o.blocks_per_sm, 32);
    EXPECT_EQ(o.limited_by, (Limiters{L::registers, L::warps, L::blocks}));
    EXPECT_EQ(limiter_names(o.limited_by), "registers+warps+blocks");
    EXPECT_DOUBLE_EQ(o.occupancy, 1.0);
    EXPECT_DOUBLE_EQ(o.warps_per_scheduler, 16.0);
}

TEST(Occupancy, BarrierLimitedOnSm120ButNotOnSm89) {
    Occupancy sm120 = occupancy("sm_120a", 32, 64, 0, 16);
    EXPECT_TRUE(sm120.barriers_limit);
    EXPECT_EQ(sm120.blocks_by_barriers, 1);  // 24 barriers per SM / 16
    EXPECT_EQ(sm120.blocks_per_sm, 1);
    EXPECT_EQ(sm120.limited_by, (Limiters{L::barriers}));
    EXPECT_EQ(sm120.resident_warps, 2);

    Occupancy sm90 = occupancy("sm_90a", 32, 64, 0, 16);
    EXPECT_EQ(sm90.blocks_by_barriers, 4);  // 64 / 16
    EXPECT_EQ(sm90.blocks_per_sm, 4);
    EXPECT_EQ(sm90.limited_by, (Limiters{L::barriers}));

    Occupancy sm89 = occupancy("sm_89", 32, 64, 0, 16);
    EXPECT_FALSE(sm89.barriers_limit);
    EXPECT_EQ(sm89.blocks_per_sm, 24);
    EXPECT_EQ(sm89.limited_by, (Limiters{L::warps, L::blocks}));
}

TEST(Occupancy, ZeroBarriersNeverLimit) {
    Occupancy o = occupancy("sm_120a", 32, 64, 0, 0);
    EXPECT_FALSE(o.barriers_limit);
    EXPECT_EQ(o.blocks_per_sm, 24);
}

TEST(Occupancy, RegisterBoundUsesWholeSubPartitions) {
    // 200 registers: 6400 per warp, 2 warps per SMSP. 8 warps fit 1 block; 9 warps are checked
    // as 12 (76800 > 65536) even though 9 x 6400 = 57600 would fit.
    Occupancy eight = occupancy("sm_90a", 200, 256);
    EXPECT_TRUE(eight.launchable);
    EXPECT_EQ(eight.blocks_per_sm, 1);

    Occupancy nine = occupancy("sm_90a", 200, 288);
    EXPECT_FALSE(nine.launchable);
    EXPECT_EQ(nine.blocks_per_sm, 0);
    EXPECT_EQ(nine.limited_by, (Limiters{L::registers}));
    EXPECT_NE(nine.why_not_launchable.find("76800"), std::string::npos) << nine.why_not_launchable;
}

TEST(Occupancy, ZeroRegistersDoNotLimit) {
    Occupancy o = occupancy("sm_90a", 0, 32);
    EXPECT_EQ(o.blocks_by_registers, INT_MAX);
    EXPECT_EQ(o.blocks_per_sm, 32);
}

// ---- impossible launches ----

TEST(Occupancy, MoreThan255RegistersCannotLaunch) {
    Occupancy o = occupancy("sm_90a", 256, 32);
    EXPECT_FALSE(o.launchable);
    EXPECT_EQ(o.blocks_per_sm, 0);
    EXPECT_EQ(o.resident_warps, 0);
    EXPECT_DOUBLE_EQ(o.occupancy, 0.0);
    EXPECT_EQ(o.smem_carveout_bytes, 0);
    EXPECT_EQ(o.why_not_launchable, "256 registers per thread exceed the limit of 255 on sm_90a");
}

TEST(Occupancy, TooManyRegistersPerBlockCannotLaunch) {
    Occupancy o = occupancy("sm_89", 255, 1024);  // 8192 x 32 warps
    EXPECT_FALSE(o.launchable);
    EXPECT_NE(o.why_not_launchable.find("262144"), std::string::npos) << o.why_not_launchable;
    EXPECT_TRUE(occupancy("sm_89", 64, 1024).launchable);  // 2048 x 32 = 65536 exactly
}

TEST(Occupancy, MoreThan1024ThreadsCannotLaunch) {
    Occupancy o = occupancy("sm_90a", 16, 1056);
    EXPECT_FALSE(o.launchable);
    EXPECT_EQ(o.blocks_by_warps, 0);
    EXPECT_EQ(o.limited_by, (Limiters{L::warps}));
    EXPECT_EQ(o.why_not_launchable, "1056 threads per block exceed the limit of 1024 on sm_90a");
}

TEST(Occupancy, SharedMemoryAboveOptInCannotLaunch) {
    Occupancy fits90 = occupancy("sm_90a", 32, 128, 232448);
    EXPECT_TRUE(fits90.launchable);
    EXPECT_EQ(fits90.blocks_per_sm, 1);
    EXPECT_EQ(fits90.smem_carveout_bytes, 228 * 1024);

    Occupancy over90 = occupancy("sm_90a", 32, 128, 215553, 1, 16896);  // 232449 in all
    EXPECT_FALSE(over90.launchable);
    EXPECT_EQ(over90.limited_by, (Limiters{L::smem}));
    EXPECT_EQ(over90.why_not_launchable,
              "232449 bytes of shared memory per block exceed the opt-in maximum of 232448 on sm_90a");

    EXPECT_TRUE(occupancy("sm_89", 32, 128, 101376).launchable);
    EXPECT_FALSE(occupancy("sm_89", 32, 128, 101377).launchable);
    EXPECT_FALSE(occupancy("sm_121a", 32, 128, 101377).launchable);
}

TEST(Occupancy, EveryReasonIsReported) {
    Occupancy o = occupancy("sm_120a", 256, 2048, 200000, 32);
    EXPECT_FALSE(o.launchable);
    EXPECT_EQ(o.limited_by, (Limiters{L::registers, L::warps, L::smem, L::barriers}));
    EXPECT_NE(o.why_not_launchable.find("registers per thread"), std::string::npos);
    EXPECT_NE(o.why_not_launchable.find("threads per block"), std::string::npos);
    EXPECT_NE(o.why_not_launchable.find("shared memory"), std::string::npos);
    EXPECT_NE(o.why_not_launchable.find("32 barriers per block exceed the 24"), std::string::npos);
}

TEST(Occupancy, InvalidInputsAreUsageErrors) {
    const ArchLimits &sm90 = resolve_arch(table(), "sm_90a");
    for (LaunchResources bad : {LaunchResources{32, 0, 0, 0, 1}, LaunchResources{-1, 128, 0, 0, 1},
                                LaunchResources{32, 128, -1, 0, 1}, LaunchResources{32, 128, 0, -1, 1},
                                LaunchResources{32, 128, 0, 0, -1}}) {
        try {
            compute_occupancy(sm90, bad);
            ADD_FAILURE() << "accepted invalid launch";
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage);
        }
    }
}

// ---- data/arch_limits.toml ----

TEST(ArchLimits, TableHasTheSixSupportedRows) {
    ASSERT_EQ(table().size(), 6u);
    const ArchLimits &sm90 = table().at("sm_90");
    EXPECT_EQ(sm90.target, "sm_90a");
    EXPECT_TRUE(sm90.feature_suffix);
    EXPECT_EQ(sm90.threads_per_sm, 2048);
    EXPECT_EQ(sm90.warps_per_sm, 64);
    EXPECT_EQ(sm90.max_blocks_per_sm, 32);
    EXPECT_EQ(sm90.registers_per_sm, 65536);
    EXPECT_EQ(sm90.registers_per_thread, 255);
    EXPECT_EQ(sm90.smem_per_sm, 233472);
    EXPECT_EQ(sm90.smem_optin_per_block, 232448);
    EXPECT_EQ(sm90.smem_reserved_per_block, 1024);
    EXPECT_EQ(sm90.smem_carveout_steps.size(), 10u);
    EXPECT_EQ(sm90.smem_carveout_steps[1], 8192);
    EXPECT_EQ(sm90.barrier_slots_per_block_slot, 2);

    const ArchLimits &sm89 = table().at("sm_89");
    EXPECT_EQ(sm89.target, "sm_89");
    EXPECT_EQ(sm89.warps_per_sm, 48);
    EXPECT_EQ(sm89.smem_per_sm, 102400);
    EXPECT_EQ(sm89.smem_optin_per_block, 101376);
    EXPECT_EQ(sm89.barrier_slots_per_block_slot, 0);
    EXPECT_EQ(table().at("sm_120").barrier_slots_per_block_slot, 1);
    EXPECT_EQ(table().at("sm_121").target, "sm_121a");

    // Blackwell datacenter parts (cc 10.0, 10.3): sm_90's SM limits, 228 KiB carveout, 2 barriers per slot.
    for (const char *row : {"sm_100", "sm_103"}) {
        const ArchLimits &b = table().at(row);
        EXPECT_EQ(b.target, std::string(row) + "a");
        EXPECT_EQ(b.threads_per_sm, 2048);
        EXPECT_EQ(b.max_blocks_per_sm, 32);
        EXPECT_EQ(b.registers_per_sm, 65536);
        EXPECT_EQ(b.sub_partitions, 4);
        EXPECT_EQ(b.smem_per_sm, 233472);
        EXPECT_EQ(b.smem_optin_per_block, 232448);
        EXPECT_EQ(b.smem_reserved_per_block, 1024);
        EXPECT_EQ(b.smem_carveout_steps.back(), 233472);
        EXPECT_EQ(b.barrier_slots_per_block_slot, 2);
    }
}

// Issue 26: every row names the GPUs its target is for (what --arch auto without a GPU and the no-GPU
// stop list), and only the row the A/A band was measured on claims a basis for it.
TEST(ArchLimits, EveryTargetNamesItsGpusAndTheAaBandItsBasis) {
    EXPECT_EQ(targets_by_gpu(table()),
              "sm_89 (RTX 40xx, RTX 6000 Ada, L4, L40, L40S), sm_90a (H100, H200, GH200), sm_100a (B200, GB200), "
              "sm_103a (B300, GB300), sm_120a (RTX 50xx, RTX PRO 6000 Blackwell), sm_121a (DGX Spark (GB10))");
    for (const auto &[row, limits] : table()) {
        EXPECT_FALSE(limits.gpus.empty()) << row;
        if (row == "sm_90") EXPECT_NE(limits.aa_band_basis.find("measured on an H200"), std::string::npos) << limits.aa_band_basis;
        else EXPECT_EQ(limits.aa_band_basis, "") << row << " claims a basis nobody measured";
    }
}

TEST(ArchLimits, ResolveAcceptsOnlyTheBuildTargets) {
    EXPECT_EQ(resolve_arch(table(), "sm_89").row, "sm_89");
    EXPECT_EQ(resolve_arch(table(), "sm_90a").row, "sm_90");
    EXPECT_EQ(resolve_arch(table(), "sm_120a").row, "sm_120");
    EXPECT_EQ(resolve_arch(table(), "sm_121a").row, "sm_121");
    EXPECT_EQ(resolve_arch(table(), "sm_100a").row, "sm_100");
    EXPECT_EQ(resolve_arch(table(), "sm_103a").row, "sm_103");
    // A target one typing slip from a valid one (the plain row name of an "a" target above all) is named.
    const std::pair<const char *, const char *> bad_targets[] = {
        {"sm_90", "; did you mean 'sm_90a'?"}, {"sm_89a", "; did you mean 'sm_89'?"}, {"sm_120", "; did you mean 'sm_120a'?"},
        {"sm_100", "; did you mean 'sm_100a'?"}, {"sm_101a", "; did you mean 'sm_100a'?"}, {"SM_90A", ""}, {"", ""}};
    for (const auto &[bad, hint] : bad_targets) {
        try {
            resolve_arch(table(), bad);
            ADD_FAILURE() << "accepted " << bad;
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage);
            EXPECT_EQ(std::string(e.what()), "unsupported arch '" + std::string(bad) +
                                                 "'; valid: sm_89, sm_90a, sm_100a, sm_103a, sm_120a, sm_121a" + hint);
        }
    }
}

// A one-row table with `edit` applied, written to a temporary file.
class ArchLimitsFile : public ::testing::Test {
protected:
    static std::string valid_row() {
        return "[sm_90]\n"                                   // line 1
               "feature_suffix = true\n"                     // line 2
               "threads_per_sm = 2048\n"                     // line 3
               "warps_per_sm = 64\n"                         // line 4
               "max_blocks_per_sm = 32\n"                    // line 5
               "max_threads_per_block = 1024\n"              // line 6
               "registers_per_sm = 65536\n"                  // line 7
               "registers_per_block = 65536\n"               // line 8
               "registers_per_thread = 255\n"                // line 9
               "register_alloc_unit = 256\n"                 // line 10
               "sub_partitions = 4\n"                        // line 11
               "smem_per_sm = 233472\n"                      // line 12
               "smem_optin_per_block = 232448\n"             // line 13
               "smem_default_per_block = 49152\n"            // line 14
               "smem_reserved_per_block = 1024\n"            // line 15
               "smem_alloc_unit = 128\n"                     // line 16
               "smem_carveout_steps_kib = [0, 8, 100, 228]\n"  // line 17
               "barrier_slots_per_block_slot = 2\n";         // line 18
    }

    std::string write(const std::string &text) {
        path_ = (std::filesystem::path(::testing::TempDir()) /
                 (std::string("arch_limits_") + ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".toml"))
                    .string();
        std::ofstream(path_) << text;
        return path_;
    }

    static std::string replaced(std::string text, const std::string &from, const std::string &to) {
        std::size_t at = text.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        return text.replace(at, from.size(), to);
    }

    std::string load_error(const std::string &text) {
        std::string path = write(text);
        try {
            load_arch_limits(path);
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage);
            return e.what();
        }
        return "";
    }

    std::string path_;
};

TEST_F(ArchLimitsFile, ValidRowLoads) {
    ArchLimitsTable t = load_arch_limits(write(valid_row()));
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t.at("sm_90").smem_carveout_steps, (std::vector<std::int64_t>{0, 8192, 102400, 233472}));
}

TEST_F(ArchLimitsFile, MissingKeyNamesTheTablePosition) {
    std::string message = load_error(replaced(valid_row(), "warps_per_sm = 64\n", ""));
    EXPECT_NE(message.find(path_ + ":1:1:"), std::string::npos) << message;
    EXPECT_NE(message.find("'warps_per_sm'"), std::string::npos) << message;
}

TEST_F(ArchLimitsFile, WrongTypeNamesTheValuePosition) {
    std::string message = load_error(replaced(valid_row(), "warps_per_sm = 64", "warps_per_sm = \"64\""));
    EXPECT_NE(message.find(path_ + ":4:16:"), std::string::npos) << message;
    EXPECT_NE(message.find("warps_per_sm"), std::string::npos) << message;

    message = load_error(replaced(valid_row(), "feature_suffix = true", "feature_suffix = 1"));
    EXPECT_NE(message.find(path_ + ":2:18:"), std::string::npos) << message;

    message = load_error(replaced(valid_row(), "[0, 8, 100, 228]", "[0, 8, 100.5, 228]"));
    EXPECT_NE(message.find(path_ + ":17:"), std::string::npos) << message;
}

TEST_F(ArchLimitsFile, UnknownKeyIsRejected) {
    std::string message = load_error(valid_row() + "warp_size = 32\n");
    EXPECT_NE(message.find(path_ + ":19:"), std::string::npos) << message;
    EXPECT_NE(message.find("warp_size"), std::string::npos) << message;
}

TEST_F(ArchLimitsFile, ContradictoryValuesAreRejected) {
    EXPECT_NE(load_error(replaced(valid_row(), "threads_per_sm = 2048", "threads_per_sm = 2000")).find(":3:"),
              std::string::npos);
    EXPECT_NE(load_error(replaced(valid_row(), "[0, 8, 100, 228]", "[0, 100, 8, 228]")).find("ascending"),
              std::string::npos);
    EXPECT_NE(load_error(replaced(valid_row(), "[0, 8, 100, 228]", "[0, 8, 100]")).find("must equal smem_per_sm"),
              std::string::npos);
    EXPECT_NE(load_error(replaced(valid_row(), "[0, 8, 100, 228]", "[]")).find("non-empty"), std::string::npos);
    EXPECT_NE(load_error(replaced(valid_row(), "smem_optin_per_block = 232448", "smem_optin_per_block = 233000"))
                  .find(":13:"),
              std::string::npos);
    EXPECT_NE(load_error(replaced(valid_row(), "sub_partitions = 4", "sub_partitions = 0")).find("outside"),
              std::string::npos);
}

TEST_F(ArchLimitsFile, BadRowNameAndSyntaxErrorAreRejected) {
    EXPECT_NE(load_error(replaced(valid_row(), "[sm_90]", "[hopper]")).find("'hopper'"), std::string::npos);
    std::string message = load_error(replaced(valid_row(), "warps_per_sm = 64", "warps_per_sm = = 64"));
    EXPECT_NE(message.find(path_ + ":4:"), std::string::npos) << message;
}

TEST_F(ArchLimitsFile, UnreadableFileIsAUsageError) {
    try {
        load_arch_limits("/nonexistent/arch_limits.toml");
        ADD_FAILURE();
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_NE(std::string(e.what()).find("/nonexistent/arch_limits.toml"), std::string::npos);
    }
}

}  // namespace
}  // namespace s2tp::unit_occupancy
