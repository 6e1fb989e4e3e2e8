// What the GPU stages promise without a GPU: the built-in shape sets cover every code path they claim
// to, and sanitize, parity and exec refuse plainly (exit 3, a sentence naming the missing GPU) on a run
// whose build passed, while --skip / RUN_SANITIZER=0 still records a skipped sanitize stage.
//
// The CLI tests need SAGE2TP_BIN and SAGE2TP_DATA_DIR (as test_cli_prepare) and build one run with
// `sage2tp prepare` + `sage2tp build --arch sm_90a` (about a minute); they skip on a host with a GPU,
// where the stages would really run, and on one without nvcc, where build cannot pass.
#include "cli_fixture.h"

#include "formats/checkpoint_store.h"
#include "gpu/gpu_runtime.h"
#include "support/process_runner.h"
#include "model/shape_sets.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <set>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

std::int64_t tiles_of(std::int64_t len_kv) { return (len_kv + 63) / 64; }

std::set<std::int64_t> kv_lengths(const std::vector<AttentionProblem> &shapes) {
    std::set<std::int64_t> lengths;
    for (const auto &p : shapes) lengths.insert(p.shape.len_kv);
    return lengths;
}

// For each value of an attribute, the distinct KV lengths it is combined with.
template <typename Attribute>
std::map<std::string, std::set<std::int64_t>> lengths_by(const std::vector<AttentionProblem> &shapes, Attribute attribute) {
    std::map<std::string, std::set<std::int64_t>> result;
    for (const auto &p : shapes) result[attribute(p)].insert(p.shape.len_kv);
    return result;
}

std::string layout_of(const AttentionProblem &p) { return layout_name(p.shape.layout); }
std::string mask_of(const AttentionProblem &p) { return p.causal ? "causal" : "nomask"; }
std::string head_dim_of(const AttentionProblem &p) { return std::to_string(p.shape.head_dim); }
std::string dtype_of(const AttentionProblem &p) { return dtype_name(p.dtype); }
std::string grouping_of(const AttentionProblem &p) { return p.shape.heads_q == p.shape.heads_kv ? "mha" : "gqa"; }

void expect_both_values_with_lengths(const std::vector<AttentionProblem> &shapes, std::size_t min_lengths) {
    const std::vector<std::pair<const char *, std::map<std::string, std::set<std::int64_t>>>> attributes = {
        {"layout", lengths_by(shapes, layout_of)},   {"mask", lengths_by(shapes, mask_of)},
        {"head_dim", lengths_by(shapes, head_dim_of)}, {"dtype", lengths_by(shapes, dtype_of)},
        {"grouping", lengths_by(shapes, grouping_of)}};
    for (const auto &[name, values] : attributes) {
        EXPECT_EQ(values.size(), 2u) << name << " does not take both values";
        for (const auto &[value, lengths] : values)
            EXPECT_GE(lengths.size(), min_lengths) << name << " = " << value << " meets too few KV lengths";
    }
}

void expect_unique(const std::vector<AttentionProblem> &shapes) {
    std::set<std::string> seen;
    for (const auto &p : shapes) EXPECT_TRUE(seen.insert(p.describe()).second) << "duplicate shape " << p.describe();
}

}  // namespace

TEST(ParityShapes, CoverEveryTileBoundaryAndTail) {
    const auto &shapes = default_parity_shapes();
    const std::set<std::int64_t> lengths = kv_lengths(shapes);
    // Exactly 1, 2, 3 and 4 tiles, and one key either side of each boundary (257 is also the image
    // cross-attention length).
    for (std::int64_t boundary : {64, 128, 192, 256})
        for (std::int64_t len : {boundary - 1, boundary, boundary + 1}) EXPECT_TRUE(lengths.count(len)) << len;
    std::set<std::int64_t> tiles, tails;
    for (std::int64_t len : lengths) {
        tiles.insert(tiles_of(len));
        tails.insert(len % 64);
    }
    for (std::int64_t count : {1, 2, 3, 4, 5}) EXPECT_TRUE(tiles.count(count)) << count << " tiles";
    EXPECT_TRUE(tails.count(56)) << "no KV length whose last tile holds 56 of 64 keys (the 480p tail)";
    EXPECT_TRUE(tails.count(16)) << "no KV length whose last tile holds 16 of 64 keys (the 720p tail)";
    EXPECT_EQ(32760 % 64, 56);
    EXPECT_EQ(75600 % 64, 16);
}

TEST(ParityShapes, CoverQueryLengthsAndEveryAttributeWithManyKvLengths) {
    const auto &shapes = default_parity_shapes();
    std::int64_t ragged_queries = 0, multi_cta = 0;
    for (const auto &p : shapes) {
        ragged_queries += p.shape.len_q % 128 != 0;
        multi_cta += p.shape.len_q > 128;
        EXPECT_TRUE(p.with_lse) << p.describe();
    }
    EXPECT_GE(ragged_queries, 10) << "query lengths that are not multiples of 128";
    EXPECT_GE(multi_cta, 5) << "shapes with several query CTAs";
    expect_both_values_with_lengths(shapes, 8);
    expect_unique(shapes);
}

// Upstream SageAttention's NaN reports for tails read from unwritten shared memory (issues 376, 377):
// every length 1 to 65 and Q 1001 / KV 503, which parity checks with shared memory full of NaN.
TEST(ParityShapes, EveryShortLengthAndUpstreamsRaggedShape) {
    const auto &shapes = default_parity_shapes();
    std::set<std::int64_t> self_lengths;
    bool ragged = false;
    for (const auto &p : shapes) {
        if (p.shape.len_q == p.shape.len_kv) self_lengths.insert(p.shape.len_q);
        ragged = ragged || (p.shape.len_q == 1001 && p.shape.len_kv == 503);
    }
    for (std::int64_t len = 1; len <= 65; ++len) EXPECT_TRUE(self_lengths.count(len)) << "no shape of " << len << " tokens";
    EXPECT_TRUE(ragged) << "no Q 1001 / KV 503 shape";
    expect_unique(shapes);
}

TEST(SanitizerShapes, SmallAndCoveringOneToFiveTiles) {
    const auto &shapes = sanitizer_shapes();
    EXPECT_GE(shapes.size(), 8u);
    EXPECT_LE(shapes.size(), 12u) << "racecheck runs every shape once per variant: keep the list short";
    std::set<std::int64_t> tiles;
    for (const auto &p : shapes) {
        tiles.insert(tiles_of(p.shape.len_kv));
        EXPECT_LE(p.shape.len_q, 320) << p.describe();
        EXPECT_LE(p.shape.batch * p.shape.heads_q, 8) << p.describe();
    }
    for (std::int64_t count : {1, 2, 3, 4, 5}) EXPECT_TRUE(tiles.count(count)) << count << " tiles";
    expect_both_values_with_lengths(shapes, 2);
    expect_unique(shapes);
}

// ---- The CLI on a host without a GPU ----

namespace {

class GpuStagesWithoutGpu : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (sage2tp_binary().empty()) return;
        if (probe_gpu().available) {
            skip_reason_ = "a GPU is present: the stages would really run";
            return;
        }
        scratch_.emplace("gpu-stages-cpu");
        dir_ = scratch_->path();
        ProcessResult prepared = sage2tp({"prepare", "--run", run_dir().string()});
        if (prepared.exit_code != 0) {
            setup_error_ = "prepare exited " + std::to_string(prepared.exit_code) + ": " + prepared.err;
            return;
        }
        ProcessResult built = sage2tp({"build", "--run", run_dir().string(), "--arch", "sm_90a"});
        if (built.exit_code == 3) skip_reason_ = "no nvcc: build cannot pass here (" + built.err + ")";
        else if (built.exit_code != 0) setup_error_ = "build exited " + std::to_string(built.exit_code) + ": " + built.err;
    }
    static void TearDownTestSuite() {
        scratch_.reset();
        dir_.clear();
    }
    void SetUp() override {
        ASSERT_FALSE(sage2tp_binary().empty()) << "SAGE2TP_BIN is not set";
        if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
        ASSERT_TRUE(setup_error_.empty()) << setup_error_;
    }

    static fs::path run_dir() { return dir_ / "run"; }
    // RUN_SANITIZER is pinned so that the caller's environment cannot change what is tested.
    static ProcessResult sage2tp(std::vector<std::string> args, const std::string &run_sanitizer = "1") {
        return run_sage2tp(std::move(args), dir_, {{"RUN_SANITIZER", run_sanitizer}});
    }
    static CheckpointRead checkpoint(const std::string &file) { return read_checkpoint(run_dir() / "checkpoints" / file); }

    static std::optional<ScratchDirectory> scratch_;
    static fs::path dir_;
    static std::string skip_reason_;
    static std::string setup_error_;
};

std::optional<ScratchDirectory> GpuStagesWithoutGpu::scratch_;
fs::path GpuStagesWithoutGpu::dir_;
std::string GpuStagesWithoutGpu::skip_reason_;
std::string GpuStagesWithoutGpu::setup_error_;

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

}  // namespace

// One test, because the steps build on each other's checkpoints.
TEST_F(GpuStagesWithoutGpu, RefuseWithExitThreeAndSkipStillRecordsTheStage) {
    const std::string run = run_dir().string();

    ProcessResult r = sage2tp({"sanitize", "--run", run});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "sanitize needs an NVIDIA GPU, and none is usable here: ")) << r.err;
    EXPECT_FALSE(checkpoint("03-sanitize.toml").exists) << "a refused stage must not write a checkpoint";

    // Parity comes after sanitize: without a sanitize checkpoint that is the first thing it says.
    r = sage2tp({"parity", "--run", run});
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "sanitize")) << r.err;

    r = sage2tp({"sanitize", "--run", run, "--skip"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    CheckpointRead skipped = checkpoint("03-sanitize.toml");
    ASSERT_TRUE(skipped.checkpoint) << skipped.problem;
    EXPECT_EQ(skipped.checkpoint->status, StageStatus::skipped);
    ASSERT_FALSE(skipped.checkpoint->reasons.empty());
    EXPECT_TRUE(contains(skipped.checkpoint->reasons.front(), "--skip")) << skipped.checkpoint->reasons.front();
    EXPECT_FALSE(skipped.checkpoint->figures["checks"]) << "a skipped stage reports no checks";

    r = sage2tp({"sanitize", "--run", run, "--force"}, "0");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    skipped = checkpoint("03-sanitize.toml");
    ASSERT_TRUE(skipped.checkpoint) << skipped.problem;
    EXPECT_EQ(skipped.checkpoint->status, StageStatus::skipped);
    ASSERT_FALSE(skipped.checkpoint->reasons.empty());
    EXPECT_TRUE(contains(skipped.checkpoint->reasons.front(), "RUN_SANITIZER=0")) << skipped.checkpoint->reasons.front();

    // A skipped sanitize stage is a usable predecessor: parity now stops only at the missing GPU.
    r = sage2tp({"parity", "--run", run});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "parity needs an NVIDIA GPU, and none is usable here: ")) << r.err;
    EXPECT_FALSE(checkpoint("04-parity.toml").exists);

    // A skip does not satisfy a later request to really run: the fingerprint differs, so it runs and refuses.
    r = sage2tp({"sanitize", "--run", run});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
}

// --devices: a list typed wrong is refused whatever GPUs there are (exit 2, before the run is read);
// a list of GPUs on a host without one stops as --device does (exit 3), for each GPU stage and run.
TEST_F(GpuStagesWithoutGpu, DevicesIsCheckedAsTypedThenNeedsItsGpus) {
    const std::string run = run_dir().string();
    for (const char *stage : {"sanitize", "parity", "time", "run"}) {
        ProcessResult r = sage2tp({stage, "--run", run, "--devices", "0,0"});
        EXPECT_EQ(r.exit_code, 2) << stage << r.out << r.err;
        EXPECT_TRUE(contains(r.err, "--devices '0,0' names GPU 0 twice")) << stage << r.err;
        r = sage2tp({stage, "--run", run, "--device", "0", "--devices", "0"});
        EXPECT_EQ(r.exit_code, 2) << stage << r.out << r.err;
        EXPECT_TRUE(contains(r.err, "--device and --devices were both given")) << stage << r.err;
        r = sage2tp({stage, "--run", run, "--devices", "gpu1"});
        EXPECT_EQ(r.exit_code, 2) << stage << r.out << r.err;
        EXPECT_TRUE(contains(r.err, "'gpu1' is not a GPU index")) << stage << r.err;
    }
    ProcessResult r = sage2tp({"sanitize", "--run", run, "--force", "--devices", "1"});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "sanitize needs an NVIDIA GPU, and none is usable here: ")) << r.err;
    r = sage2tp({"sanitize", "--run", run, "--force", "--devices", "all"});
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
}

TEST_F(GpuStagesWithoutGpu, ExecChecksItsArgumentsThenNeedsAGpu) {
    const std::string run = run_dir().string();
    ProcessResult r = sage2tp({"exec", "--run", run, "--variant", "sideways", "--sanitize-shape", "0"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "sideways")) << r.err;

    r = sage2tp({"exec", "--run", run, "--variant", "baseline"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    r = sage2tp({"exec", "--run", run, "--variant", "baseline", "--sanitize-shape", "0", "--workload"});
    EXPECT_EQ(r.exit_code, 2) << r.err;

    r = sage2tp({"exec", "--run", run, "--variant", "baseline", "--sanitize-shape", "999"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "out of range")) << r.err;
    r = sage2tp({"exec", "--run", run, "--variant", "baseline", "--sanitize-shape", "0,4,0"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "names shape 0 twice")) << r.err;

    for (const std::vector<std::string> &target :
         {std::vector<std::string>{"--sanitize-shape", "0"}, std::vector<std::string>{"--sanitize-shape", "0,3,9"},
          std::vector<std::string>{"--workload"}}) {
        std::vector<std::string> args = {"exec", "--run", run, "--variant", "candidate"};
        args.insert(args.end(), target.begin(), target.end());
        r = sage2tp(args);
        EXPECT_EQ(r.exit_code, 3) << r.err;
        EXPECT_TRUE(contains(r.err, "exec needs an NVIDIA GPU")) << r.err;
    }
}
