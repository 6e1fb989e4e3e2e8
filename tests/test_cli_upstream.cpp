// Upstream SageAttention's real sm89 kernel through prepare, build and clean, with the real git and
// nvcc (no GPU needed): a temporary git repository made from the snapshot of upstream's files beside
// the checkout, the shipped manifests pointed at it with --repository and --commit, no torch on the
// host: each launcher's host code compiles against sage2tp's own torch subset into a host-call library.
// Each upstream compile takes half a minute to a minute on two cores, so one prepared run serves
// several checks and only the .cu files the GPU stages use are built.
// Skips when the snapshot is absent.
#include "cli_fixture.h"

#include "formats/checkpoint_store.h"
#include "build_config.h"
#include "formats/ptxas_report.h"
#include "support/process_runner.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <set>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

const fs::path source_root = S2TP_SOURCE_ROOT;
const fs::path snapshot = source_root / ".." / "shared" / "sageattention-d1a57a5";
const std::string launcher = "csrc/qattn/sm89_qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf.cu";
const std::string launcher_stem = "sm89_qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf";

class Upstream : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        std::error_code ec;
        if (!fs::is_directory(snapshot / "csrc", ec)) return;
        scratch_.emplace("upstream");
        dir_ = scratch_->path();
        // The snapshot is a plain copy of upstream's files: give it a history, as a user's clone has.
        fs::copy(snapshot, dir_ / "SageAttention", fs::copy_options::recursive);
        for (std::vector<std::string> args : {std::vector<std::string>{"init", "-q"}, {"add", "--all"},
                                              {"commit", "-q", "-m", "upstream d1a57a5"}})
            git(args);
    }
    static void TearDownTestSuite() {
        scratch_.reset();
        dir_.clear();
    }
    void SetUp() override {
        if (dir_.empty()) GTEST_SKIP() << "no SageAttention snapshot at " << snapshot;
        ASSERT_FALSE(sage2tp_binary().empty()) << "SAGE2TP_BIN is not set";
    }
    static ProcessResult git(std::vector<std::string> args) {
        ProcessResult r = run_git(dir_ / "SageAttention", std::move(args));
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return r;
    }
    static ProcessResult sage2tp(std::vector<std::string> args) { return run_sage2tp(std::move(args), dir_); }
    // prepare of `manifest` on the temporary repository; the pinned commit is upstream's, which a
    // repository made from the snapshot does not have, so --commit HEAD names the snapshot's.
    static ProcessResult prepare(const fs::path &manifest, const std::string &run) {
        return sage2tp({"prepare", "--manifest", manifest.string(), "--repository", (dir_ / "SageAttention").string(),
                        "--commit", "HEAD", "--run", run, "-q"});
    }
    static Checkpoint checkpoint(const std::string &run, const std::string &file) {
        CheckpointRead read = read_checkpoint(dir_ / run / "checkpoints" / file);
        EXPECT_TRUE(read.checkpoint) << read.problem;
        return read.checkpoint ? *read.checkpoint : Checkpoint{};
    }
    static std::optional<ScratchDirectory> scratch_;
    static fs::path dir_;
};
std::optional<ScratchDirectory> Upstream::scratch_;
fs::path Upstream::dir_;

// The distinct qk_int_sv_f8_attn_kernel entries ptxas reported for `arch` in one compile log.
std::set<std::string> attention_entries(const fs::path &log, const std::string &arch) {
    std::set<std::string> names;
    for (const auto &[key, resources] : parse_ptxas_report(slurp(log), log.string()))
        if (key.arch == arch && key.name.find("qk_int_sv_f8_attn_kernel") != std::string::npos) names.insert(key.name);
    return names;
}

}  // namespace

// The user's own experiment, as shipped: upstream at the pinned commit against the same plus the
// temporal-pair patch, which adds a trailing template option to the kernel.
TEST_F(Upstream, TemporalPairBuildsForSparkThenCleanRemovesTheWorktrees) {
    ProcessResult r = prepare(source_root / "data/experiments/sageattention-temporal-pair.toml", "pair");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const Checkpoint prepared = checkpoint("pair", "01-prepare.toml");
    const std::string head = git({"rev-parse", "HEAD"}).out.substr(0, 40);
    EXPECT_EQ(prepared.figures["commit"].value_or(std::string()), head);
    EXPECT_EQ(prepared.figures["candidates"]["candidate"]["commit"].value_or(std::string()), head);
    EXPECT_NE(slurp(dir_ / "pair/trees/candidate/csrc/qattn/qk_int_sv_f8_cuda_sm89.cuh").find("TemporalPair"),
              std::string::npos);
    EXPECT_EQ(slurp(dir_ / "pair/trees/baseline/csrc/qattn/qk_int_sv_f8_cuda_sm89.cuh").find("TemporalPair"),
              std::string::npos);
    // No support_sources in the manifest: the quantization kernels come from sage2tp's own tree.
    EXPECT_TRUE(fs::is_regular_file(dir_ / "pair/trees/support/kernels/quantize.cu"));
    // The user's checkout is untouched: its own work tree stays clean.
    EXPECT_EQ(git({"status", "--porcelain"}).out, "");

    // The manifest's own arch, the DGX Spark's: two compiles of about a minute each on two cores. --arch is
    // cli_build's to check, for every arch (this launcher's sm_90a build is what the GPU checks carry).
    {
        const std::string arch = "sm_121a";
        r = sage2tp({"build", "--run", "pair"});
        std::cout << "---- sage2tp build --arch " << arch << "\n" << r.out << r.err << std::flush;
        const Checkpoint built = checkpoint("pair", "02-build.toml");
        for (const auto &reason : built.reasons)
            EXPECT_EQ(reason.find("does not compile"), std::string::npos) << arch << ": " << reason;
        EXPECT_EQ(built.figures["arch"].value_or(std::string()), arch);
        EXPECT_FALSE(built.figures.contains("torch_headers"));
        for (const char *variant : {"baseline", "candidate"}) {
            const std::string key = std::string(variant) + ":" + launcher;
            EXPECT_FALSE(built.artifacts[key]["sha256"].value_or(std::string()).empty()) << arch << " " << key;
            // The host-call library the GPU stages call, linked from the same compile as the cubin.
            const std::string library_key = key + ":host-call";
            EXPECT_FALSE(built.artifacts[library_key]["sha256"].value_or(std::string()).empty()) << library_key;
            EXPECT_TRUE(fs::is_regular_file(dir_ / "pair/builds" / variant / (launcher_stem + "." + arch + ".so")));
            std::cout << "  " << arch << " " << key << ": " << built.artifacts[key]["seconds"].value_or(0.0) << " s\n";
            const fs::path log = dir_ / "pair/builds" / variant / (launcher_stem + "." + arch + ".log");
            // head dim 64/128 x causal x quant granularity 2/3 x LSE x f16/bf16
            EXPECT_EQ(attention_entries(log, arch).size(), 32u) << arch << " " << variant << ": " << log;
        }
        EXPECT_FALSE(built.artifacts["support:kernels/quantize.cu"]["sha256"].value_or(std::string()).empty()) << arch;
        // The command line that built upstream's launcher links a shared object against sage2tp's torch
        // subset; the quantizer's is a plain cubin compile.
        const std::string command = slurp(dir_ / "pair/builds/baseline" / (launcher_stem + "." + arch + ".cmd"));
        EXPECT_NE(command.find("-diag-suppress=174"), std::string::npos) << command;
        EXPECT_NE(command.find("-shared"), std::string::npos) << command;
        EXPECT_NE(command.find("-Itrees/support/kernels/torch_shim"), std::string::npos) << command;
        EXPECT_NE(command.find(launcher_stem + "." + arch + ".host_call.cu"), std::string::npos) << command;
        EXPECT_EQ(slurp(dir_ / "pair/builds/support" / ("quantize." + arch + ".cmd")).find("torch"), std::string::npos);
    }

    ProcessResult worktrees = git({"worktree", "list", "--porcelain"});
    EXPECT_NE(worktrees.out.find((dir_ / "pair/trees/baseline").string()), std::string::npos) << worktrees.out;
    r = sage2tp({"clean", "--yes", "pair"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "pair"));
    worktrees = git({"worktree", "list", "--porcelain"});
    EXPECT_EQ(worktrees.out.find("pair/trees"), std::string::npos) << worktrees.out;
    r = sage2tp({"clean", "--yes", "pair"});
    EXPECT_EQ(r.exit_code, 4) << "cleaning a run that is gone: " << r.out << r.err;
}

TEST_F(Upstream, PatchThatBreaksCompilationFailsBuildWithTheCompilerErrorQuoted) {
    ProcessResult r = prepare(source_root / "tests/manifests/sageattention-syntax-error.toml", "broken");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    r = sage2tp({"build", "--run", "broken"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    const Checkpoint built = checkpoint("broken", "02-build.toml");
    EXPECT_EQ(built.status, StageStatus::failed);
    ASSERT_EQ(built.reasons.size(), 1u);
    EXPECT_NE(built.reasons.front().find("candidate:" + launcher + " does not compile"), std::string::npos)
        << built.reasons.front();
    EXPECT_NE(built.reasons.front().find("sage2tp_test_undeclared_identifier"), std::string::npos)
        << built.reasons.front();
    EXPECT_NE(r.out.find("does not compile"), std::string::npos) << r.out;
    ASSERT_EQ(sage2tp({"clean", "--yes", "broken"}).exit_code, 0);
}

// Candidates whose host code launches a kernel of their own (another launch shape): both shipped sm90
// schedules apply to upstream's file and build, and build compares them through the worst of their own
// entry points instead of failing on the entries upstream's template arguments name.
TEST_F(Upstream, Sm90SchedulesThatLaunchTheirOwnKernelBuildAndCompare) {
    ProcessResult r = prepare(source_root / "data/experiments/sageattention-sm90-schedules.toml", "schedules");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    r = sage2tp({"build", "--run", "schedules"});
    std::cout << "---- sage2tp build (sageattention-sm90-schedules)\n" << r.out << r.err << std::flush;
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const Checkpoint built = checkpoint("schedules", "02-build.toml");
    EXPECT_EQ(built.figures["candidates"]["shared-kv"]["summary"].value_or(std::string()).rfind(
                  "8 entries (4 launched by its host code from its own entry points)", 0),
              0u);
    const auto stand_in = built.figures["candidates"]["shared-kv"]["kernels"]["hd128_bf16_nomask"];
    EXPECT_EQ(stand_in["entry"].value_or(std::string()).rfind("the worst of the host code's ", 0), 0u);
    EXPECT_EQ(stand_in["spill_store_bytes"].value_or<std::int64_t>(-1), 0) << "the schedules fit 168 registers";
    EXPECT_FALSE(stand_in["warps_per_scheduler"]) << "the launch shape is the host function's: time records it";
    ASSERT_EQ(sage2tp({"clean", "--yes", "schedules"}).exit_code, 0);
}

TEST_F(Upstream, Sm90FileBuildsWithoutTorchAndRunsDirectoriesDeletedByHandArePruned) {
    // upstream-vs-embedded: upstream's kernel against the embedded one, each from its own source.
    ProcessResult r = prepare(source_root / "data/experiments/upstream-vs-embedded.toml", "headers");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const Checkpoint prepared = checkpoint("headers", "01-prepare.toml");
    EXPECT_EQ(prepared.figures["source"].value_or(std::string()), "git");
    EXPECT_EQ(prepared.figures["candidates"]["candidate"]["source"].value_or(std::string()), "embedded");
    EXPECT_TRUE(fs::is_regular_file(dir_ / "headers/trees/baseline" / launcher));
    EXPECT_TRUE(fs::is_regular_file(dir_ / "headers/trees/candidate/kernels/attention_entry.cu"));
    EXPECT_TRUE(fs::is_regular_file(dir_ / "headers/trees/support/kernels/quantize.cu"));
    EXPECT_FALSE(fs::exists(dir_ / "headers/inputs/candidate.patch"));

    // Upstream's sm90 file, whose host code needs torch 2.1's Float8_e4m3fn, builds on a host with no
    // torch at all (Debian 12's libtorch-dev is 1.13): sm89-vs-sm90-hopper compiles both launchers.
    r = prepare(source_root / "data/experiments/sm89-vs-sm90-hopper.toml", "hopper");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    r = sage2tp({"build", "--run", "hopper", "--arch", "sm_90a"});
    std::cout << "---- sage2tp build (sm89-vs-sm90-hopper)\n" << r.out << r.err << std::flush;
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const Checkpoint hopper = checkpoint("hopper", "02-build.toml");
    EXPECT_FALSE(hopper.artifacts["sm90:csrc/qattn/qk_int_sv_f8_cuda_sm90.cu:host-call"]["sha256"]
                     .value_or(std::string())
                     .empty());
    EXPECT_TRUE(fs::is_regular_file(dir_ / "hopper/builds/sm90/qk_int_sv_f8_cuda_sm90.sm_90a.so"));
    EXPECT_NE(slurp(dir_ / "hopper/builds/sm90/qk_int_sv_f8_cuda_sm90.sm_90a.host_call.cu")
                  .find("S2TP_EXPORT_HOST_FUNCTION(qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf)"),
              std::string::npos);
    ASSERT_EQ(sage2tp({"clean", "--yes", "hopper"}).exit_code, 0);

    // A run directory deleted by hand leaves registrations behind; the next prepare prunes them.
    fs::remove_all(dir_ / "headers");
    EXPECT_NE(git({"worktree", "list", "--porcelain"}).out.find("headers/trees/baseline"), std::string::npos);
    r = prepare(source_root / "data/experiments/upstream-vs-embedded.toml", "again");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(git({"worktree", "list", "--porcelain"}).out.find("headers/trees"), std::string::npos);
    ASSERT_EQ(sage2tp({"clean", "--yes", "again"}).exit_code, 0);
    EXPECT_EQ(git({"worktree", "list", "--porcelain"}).out.find("/trees/"), std::string::npos);
}

// wgmma exists only on sm_90a: a build of the sm90 kernel for anything else is refused before any
// compile, naming both architectures and the kernel (exit 2, sage2tp-build(1)).
TEST_F(Upstream, Sm90KernelBelowSm90aIsRefusedNamingTheArchAndTheKernel) {
    ProcessResult r = prepare(source_root / "tests/manifests/sageattention-sm90-granularity.toml", "sm90");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    for (const char *arch : {"sm_89", "sm_120a"}) {
        r = sage2tp({"build", "--run", "sm90", "--arch", arch});
        EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
        EXPECT_NE(r.err.find("[source] abi sageattention-sm90-accum-f32-fuse-v-scale: its kernel (the launcher "
                             "sm90_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf) compiles only for sm_90a, not "
                             "for " + std::string(arch) + "; build with --arch sm_90a"),
                  std::string::npos)
            << r.err;
        EXPECT_FALSE(fs::exists(dir_ / "sm90/checkpoints/02-build.toml")) << arch << ": nothing was built";
    }
}

