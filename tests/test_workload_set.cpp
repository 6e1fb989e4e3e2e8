#include "model/workload_set.h"
#include "scratch_directory.h"

#include "build_config.h"
#include "gpu/kernel_abi.h"
#include "model/experiment_manifest.h"
#include "model/shape_sets.h"
#include "model/workload_cost.h"
#include "support/errors.h"

#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_workload_set {

namespace {

const fs::path source_root = S2TP_SOURCE_ROOT;

struct Expected {
    const char *name;
    std::int64_t heads_q, heads_kv, len_q, len_kv, head_dim;
    bool causal;
};

void expect_set(const std::string &set_name, const std::vector<Expected> &expected) {
    const WorkloadSet set = load_workload_set(source_root / "data/workloads/sets" / (set_name + ".toml"));
    EXPECT_EQ(set.name, set_name);
    ASSERT_EQ(set.workloads.size(), expected.size()) << set_name;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const SetWorkload &w = set.workloads[i];
        const AttentionShape &s = w.workload.problem.shape;
        EXPECT_EQ(w.workload.name, expected[i].name);
        EXPECT_EQ(s.heads_q, expected[i].heads_q) << expected[i].name;
        EXPECT_EQ(s.heads_kv, expected[i].heads_kv) << expected[i].name;
        EXPECT_EQ(s.len_q, expected[i].len_q) << expected[i].name;
        EXPECT_EQ(s.len_kv, expected[i].len_kv) << expected[i].name;
        EXPECT_EQ(s.head_dim, expected[i].head_dim) << expected[i].name;
        EXPECT_EQ(w.workload.problem.causal, expected[i].causal) << expected[i].name;
        EXPECT_EQ(s.batch, 1);
        // Every shape says which public config it comes from, with its token count.
        EXPECT_NE(w.source.find("config"), std::string::npos) << w.source;
    }
}

class SetErrors : public ::testing::Test {
protected:
    // The message of loading `text` as a set file, which must fail with a usage error.
    std::string error_for(const std::string &text) {
        std::ofstream(dir_ / "s.toml") << text;
        try {
            load_workload_set(dir_ / "s.toml");
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage);
            return e.what();
        }
        ADD_FAILURE() << "no error for:\n" << text;
        return "";
    }
    std::string file() const { return (dir_ / "s.toml").string(); }
    static std::string head() { return "[set]\nname = \"s\"\n"; }  // lines 1-2
    static std::string entry(const std::string &name, const std::string &extra = "") {
        return "[[workload]]\nname = \"" + name + "\"\nsource = \"a config\"\nlen_q = 256\n" + extra;
    }
    ScratchDirectory scratch_{"set"};
    const fs::path dir_ = scratch_.path();
};

}  // namespace

TEST(WorkloadSet, ShippedSetsHoldTheIssuesShapesExactly) {
    expect_set("wan21-14b", {{"t2v-480p", 40, 40, 32760, 32760, 128, false},
                             {"t2v-720p", 40, 40, 75600, 75600, 128, false},
                             {"i2v-480p-image-cross", 40, 40, 32760, 257, 128, false}});
    expect_set("video-dits", {{"wan2.2-ti2v-5b-720p", 24, 24, 27280, 27280, 128, false},
                              {"hunyuanvideo-544p", 24, 24, 67320, 67320, 128, false},
                              {"cogvideox-5b-480p", 48, 48, 17776, 17776, 64, false},
                              {"mochi-1-480p", 24, 24, 44520, 44520, 128, false}});
    expect_set("llm-prefill", {{"llama3.1-8b-prefill-8k", 32, 8, 8192, 8192, 128, true},
                               {"llama3.1-8b-prefill-32k", 32, 8, 32768, 32768, 128, true}});
    EXPECT_EQ(shipped_workload_sets(), (std::vector<std::string>{"llm-prefill", "video-dits", "wan21-14b"}));
}

TEST(WorkloadSet, AnEntryNamingAWorkloadFileTakesItsShapeSeedAndPins) {
    const WorkloadSet set = load_workload_set(workload_set_file("wan21-14b", "/nonexistent"));
    const WorkloadSpec single = load_workload(source_root / "data/workloads/wan21-14b-block24.toml");
    const WorkloadSpec &in_set = set.workloads.front().workload;
    EXPECT_EQ(in_set.name, "t2v-480p");  // the set's name for it
    EXPECT_EQ(in_set.problem.describe(), single.problem.describe());
    EXPECT_EQ(in_set.seed, single.seed);
    const PinKey sm89{bare_pin_kernel, "sm_90a"};
    EXPECT_EQ(expected_output_sha256(in_set, sm89), expected_output_sha256(single, sm89));
    EXPECT_TRUE(expected_output_sha256(in_set, sm89).has_value());
    EXPECT_FALSE(set.weighted());
    EXPECT_EQ(set.weights(), (std::vector<double>{1, 1, 1}));
}

TEST(WorkloadSet, AnUnknownSetNameListsTheShippedOnes) {
    try {
        workload_set_file("wan22", "/tmp");
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        const std::string message = e.what();
        EXPECT_NE(message.find("'wan22'"), std::string::npos) << message;
        EXPECT_NE(message.find("llm-prefill, video-dits, wan21-14b"), std::string::npos) << message;
    }
}

TEST_F(SetErrors, WeightsAreOptionalNonNegativeAndNotAllZero) {
    std::ofstream(dir_ / "s.toml") << head() << entry("a", "weight = 3\n") << entry("b");
    const WorkloadSet set = load_workload_set(dir_ / "s.toml");
    EXPECT_TRUE(set.weighted());
    EXPECT_EQ(set.weights(), (std::vector<double>{3, 1}));

    std::string message = error_for(head() + entry("a", "weight = -1\n"));
    EXPECT_NE(message.find(file() + ":7"), std::string::npos) << message;
    EXPECT_NE(message.find("'weight'"), std::string::npos) << message;
    message = error_for(head() + entry("a", "weight = 0\n") + entry("b", "weight = 0.0\n"));
    EXPECT_NE(message.find(file() + ":12: [[workload]] key 'weight': every weight"), std::string::npos) << message;
}

TEST_F(SetErrors, ADuplicateNameIsNamedWithItsLine) {
    const std::string message = error_for(head() + entry("a") + entry("a"));
    EXPECT_NE(message.find(file() + ":8: [[workload]] key 'name': 'a' is listed twice"), std::string::npos) << message;
}

TEST_F(SetErrors, HeadsNotDivisibleByKvHeadsAreNamed) {
    const std::string message = error_for(head() + entry("a", "heads_q = 6\nheads_kv = 4\n"));
    EXPECT_NE(message.find(file() + ":3"), std::string::npos) << message;
    EXPECT_NE(message.find("heads_q (6) is not a multiple of heads_kv (4)"), std::string::npos) << message;
}

TEST_F(SetErrors, AMissingOrMalformedWorkloadFileIsNamed) {
    const std::string missing =
        error_for(head() + "[[workload]]\nname = \"a\"\nsource = \"c\"\nfile = \"nope.toml\"\n");
    EXPECT_NE(missing.find(file() + ":6"), std::string::npos) << missing;
    EXPECT_NE(missing.find("key 'file' names"), std::string::npos) << missing;
    EXPECT_NE(missing.find("nope.toml"), std::string::npos) << missing;

    std::ofstream(dir_ / "w.toml") << "[workload]\nname = \"w\"\nlen_q = 256\nhead_dim = 96\n";
    const std::string malformed = error_for(head() + "[[workload]]\nsource = \"c\"\nfile = \"w.toml\"\n");
    EXPECT_NE(malformed.find(file() + ":5: [[workload]] key 'file'"), std::string::npos) << malformed;
    EXPECT_NE(malformed.find((dir_ / "w.toml").string() + ":"), std::string::npos) << malformed;
    EXPECT_NE(malformed.find("head_dim"), std::string::npos) << malformed;

    // The shape is the file's: a shape key beside `file` would be silently ignored, so it is refused.
    const std::string beside = error_for(head() + "[[workload]]\nsource = \"c\"\nfile = \"w.toml\"\nlen_q = 1\n");
    EXPECT_NE(beside.find("len_q"), std::string::npos) << beside;
}

// Issue 39 item 3: [expected_sha256] holds the sm89 kernel's pins as bare ARCH entries (every pin written
// before pins named their kernel) and any other kernel's in a table of its own; it writes them back so.
TEST_F(SetErrors, PinsAreReadAndWrittenPerKernel) {
    const std::string a(64, 'a'), b(64, 'b'), c(64, 'c');
    std::ofstream(dir_ / "w.toml") << "[workload]\nname = \"w\"\nlen_q = 256\n[workload.expected_sha256]\nsm_90a = \""
                                   << a << "\"\n[workload.expected_sha256.sageattention-sm90-accum-f32-fuse-v-scale]\n"
                                   << "sm_90a = \"" << b << "\"\n[workload.expected_sha256.sageattention-sm80-accum-f32]\n"
                                   << "sm_90a = \"" << c << "\"\n";
    const WorkloadSpec w = load_workload(dir_ / "w.toml");
    EXPECT_EQ(expected_output_sha256(w, {bare_pin_kernel, "sm_90a"}), a);
    EXPECT_EQ(expected_output_sha256(w, {"sageattention-sm90-accum-f32-fuse-v-scale", "sm_90a"}), b);
    EXPECT_EQ(expected_output_sha256(w, {"sageattention-sm80-accum-f32", "sm_90a"}), c);
    EXPECT_EQ(expected_output_sha256(w, {"sageattention-sm80-accum-f32", "sm_89"}), std::nullopt);
    const toml::table written = workload_table(w);
    EXPECT_EQ(written["expected_sha256"]["sm_90a"].value_or(std::string()), a) << "the sm89 kernel's pin stays bare";
    EXPECT_EQ(written["expected_sha256"]["sageattention-sm90-accum-f32-fuse-v-scale"]["sm_90a"].value_or(std::string()), b);

    std::ofstream(dir_ / "nested.toml") << "[workload]\nname = \"w\"\nlen_q = 256\n"
                                        << "[workload.expected_sha256.sageattention-sm80-accum-f32.sm_90a]\nx = 1\n";
    try {
        load_workload(dir_ / "nested.toml");
        FAIL() << "a table inside a kernel's pins was accepted";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_NE(std::string(e.what()).find("[workload.expected_sha256.sageattention-sm80-accum-f32] 'sm_90a': a "
                                             "kernel's table holds only ARCH = \"sha256\" entries"),
                  std::string::npos) << e.what();
    }
    std::ofstream(dir_ / "arch.toml") << "[workload]\nname = \"w\"\nlen_q = 256\n[workload.expected_sha256]\nh200 = \""
                                      << a << "\"\n";
    try {
        load_workload(dir_ / "arch.toml");
        FAIL() << "a pin keyed by something other than a build target was accepted";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("'h200': a pin's key is a build target such as sm_90a"), std::string::npos)
            << e.what();
    }
    std::ofstream(dir_ / "name.toml") << "[workload]\nname = \"w\"\nlen_q = 256\n"
                                      << "[workload.expected_sha256.\"Sm90 Kernel\"]\nsm_90a = \"" << a << "\"\n";
    try {
        load_workload(dir_ / "name.toml");
        FAIL() << "a kernel name no abi could have was accepted";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("'Sm90 Kernel': a kernel is named as its abi is"), std::string::npos)
            << e.what();
    }
}

TEST_F(SetErrors, EverySetAndEntryNeedsItsKeys) {
    EXPECT_NE(error_for("[[workload]]\nname = \"a\"\n").find("[set]"), std::string::npos);
    EXPECT_NE(error_for(head()).find("lists no [[workload]]"), std::string::npos);
    const std::string no_source = error_for(head() + "[[workload]]\nname = \"a\"\nlen_q = 2\n");
    EXPECT_NE(no_source.find("'source'"), std::string::npos) << no_source;
    const std::string unknown = error_for(head() + entry("a", "lenq = 3\n"));
    EXPECT_NE(unknown.find(file() + ":7"), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("lenq"), std::string::npos) << unknown;
    const std::string bad_name = error_for(head() + entry("A b"));
    EXPECT_NE(bad_name.find(file() + ":4: [[workload]] key 'name'"), std::string::npos) << bad_name;
}

TEST_F(SetErrors, AManifestNamesASetAndItsResolvedCopyCarriesTheSetItself) {
    std::ofstream(dir_ / "c.patch") << "--- a/kernels/x.cu\n+++ b/kernels/x.cu\n@@ -1 +1 @@\n-a\n+b\n";
    std::ofstream(dir_ / "s.toml") << head() << entry("a", "weight = 2\n") << entry("b", "heads_q = 4\nheads_kv = 2\n");
    const std::string manifest = "[experiment]\nname = \"t\"\n[source]\nkind = \"embedded\"\n"
                                 "kernel_sources = [\"kernels/x.cu\"]\n[candidate]\npatch = \"c.patch\"\n"
                                 "[workload]\nset = \"s.toml\"\n";
    std::ofstream(dir_ / "m.toml") << manifest;
    const Experiment e = load_experiment(dir_ / "m.toml");
    ASSERT_TRUE(e.workload_set.has_value());
    EXPECT_EQ(e.workload_set->name, "s");
    EXPECT_EQ(e.workload.name, "a");  // the first shape, for what runs on one
    ASSERT_EQ(e.timed_workloads().size(), 2u);
    EXPECT_EQ(e.timed_workloads()[1].workload.problem.shape.heads_kv, 2);

    // The resolved copy holds the shapes, so the run keeps them when the set file changes or goes.
    const std::string resolved = experiment_to_toml(e);
    fs::remove(dir_ / "s.toml");
    std::ofstream(dir_ / "resolved.toml") << resolved;
    const Experiment again = load_experiment(dir_ / "resolved.toml");
    EXPECT_EQ(experiment_to_toml(again), resolved);
    EXPECT_EQ(again.workload_set->weights(), (std::vector<double>{2, 1}));

    // A set file that is not there is named; so is a shipped set the manifest names.
    const std::string message = [&] {
        try {
            load_experiment(dir_ / "m.toml");
        } catch (const Error &e) {
            return std::string(e.what());
        }
        return std::string();
    }();
    EXPECT_NE(message.find((dir_ / "s.toml").string()), std::string::npos) << message;
    std::ofstream(dir_ / "m.toml") << "[experiment]\nname = \"t\"\n[source]\nkind = \"embedded\"\n"
                                      "kernel_sources = [\"kernels/x.cu\"]\n[candidate]\npatch = \"c.patch\"\n"
                                      "[workload]\nset = \"video-dits\"\n";
    EXPECT_EQ(load_experiment(dir_ / "m.toml").timed_workloads().size(), 4u);
}

TEST(BoundaryProblems, KeepEachTimedShapesTailsAndHeadLayoutSmall) {
    const WorkloadSet dits = load_workload_set(source_root / "data/workloads/sets/video-dits.toml");
    const WorkloadSet llm = load_workload_set(source_root / "data/workloads/sets/llm-prefill.toml");
    const WorkloadSet wan = load_workload_set(source_root / "data/workloads/sets/wan21-14b.toml");
    std::vector<AttentionProblem> timed;
    for (const WorkloadSet *set : {&wan, &dits, &llm})
        for (const SetWorkload &w : set->workloads) timed.push_back(w.workload.problem);
    for (const AttentionProblem &t : timed) {
        const AttentionProblem b = boundary_problem(t);
        const AttentionShape &s = b.shape;
        EXPECT_EQ(s.len_kv % 64, t.shape.len_kv % 64) << t.describe();
        EXPECT_EQ(s.len_q % 128, t.shape.len_q % 128) << t.describe();
        EXPECT_GE(s.len_kv, std::min<std::int64_t>(t.shape.len_kv, 192)) << t.describe();  // three full tiles
        EXPECT_LT(s.len_kv, t.causal ? 384 : 256);
        EXPECT_EQ(s.heads_q / s.heads_kv, t.shape.heads_q / t.shape.heads_kv) << t.describe();
        EXPECT_LE(s.heads_kv, 2);
        EXPECT_EQ(s.head_dim, t.shape.head_dim);
        EXPECT_EQ(b.causal, t.causal);
        EXPECT_EQ(b.dtype, t.dtype);
        EXPECT_EQ(b.sm_scale, t.sm_scale);
        EXPECT_TRUE(b.with_lse);
    }
    // Wan's 480p: 56 keys of 64 in the last tile, 120 queries of 128 in the last CTA.
    EXPECT_EQ(boundary_problem(wan.workloads[0].workload.problem).describe(),
              "b=1 hq=2 hkv=2 nq=248 nkv=248 d=128 NHD bf16");
    // The image cross-attention's 257 keys: four full tiles and one key, as three and one.
    EXPECT_EQ(boundary_problem(wan.workloads[2].workload.problem).shape.len_kv, 193);
    // Llama's grouped heads (4 query heads per KV head) and causal mask, len 8192 = 64 x 128: no tail.
    EXPECT_EQ(boundary_problem(llm.workloads[0].workload.problem).describe(),
              "b=1 hq=8 hkv=2 nq=256 nkv=256 d=128 NHD bf16 causal");
    // A problem already checked is not added again, nor one that two shapes share.
    const std::vector<AttentionProblem> once = boundary_problems({timed[0], timed[0]}, {});
    EXPECT_EQ(once.size(), 1u);
    EXPECT_TRUE(boundary_problems({timed[0]}, once).empty());
}

TEST(WorkloadCost, CountsEveryDeviceBufferOfTheTimeStage) {
    const WorkloadSet wan = load_workload_set(source_root / "data/workloads/sets/wan21-14b.toml");
    // 720p: 75,600 tokens x 40 heads x 128 = 387,072,000 elements per tensor.
    const AttentionProblem &problem = wan.workloads[1].workload.problem;
    const QuantizationRecipe sm89 = kernel_abi("sageattention-sm89", "test").quantization(128);
    const WorkloadCost c = workload_cost(problem, {sm89, sm89, sm89}, 4, 3);  // arms that agree share one set
    const std::size_t elements = 387072000;
    EXPECT_EQ(c.input_bytes, 3 * 2 * elements);  // bf16 q, k, v
    EXPECT_EQ(c.output_bytes, 2 * elements);     // bf16 o, no LSE
    // int8 q and k, fp8 v padded to 75,648 keys, and their scales and mean.
    EXPECT_GT(c.quantized_bytes, 3 * elements);
    EXPECT_LT(c.quantized_bytes, 3 * elements + elements / 100);
    // The last set's q, k, v, three sets quantized, 4 arms' outputs and the output check's copy per set.
    EXPECT_EQ(c.peak_bytes, c.input_bytes + 3 * c.quantized_bytes + 7 * c.output_bytes);
    EXPECT_DOUBLE_EQ(c.operations, 4.0 * 40 * 75600.0 * 75600.0 * 128);
    EXPECT_EQ(bytes_text(c.output_bytes), "774.1 MB");

    EXPECT_FALSE(memory_refusal("t2v-720p", c, std::int64_t(140) << 30, std::int64_t(141) << 30));
    const auto refused = memory_refusal("t2v-720p", c, std::int64_t(4) << 30, std::int64_t(8) << 30);
    ASSERT_TRUE(refused);
    EXPECT_NE(refused->find("t2v-720p does not fit: peak " + bytes_text(c.peak_bytes)), std::string::npos) << *refused;
    EXPECT_NE(refused->find("3 input sets of 2.32 GB"), std::string::npos) << *refused;
    EXPECT_NE(refused->find("4 + 3 outputs of 774.1 MB"), std::string::npos) << *refused;
    EXPECT_NE(refused->find("117.1 TOP per launch"), std::string::npos) << *refused;
    EXPECT_NE(refused->find("4.29 GB free of 8.59 GB"), std::string::npos) << *refused;
}

// The sm80 launchers read V as fp16 (2 bytes an element), the sm89 ones as e4m3 (1 byte, padded, with a
// scale); each adapter's quantization says which, and the cost counts one set per distinct recipe.
TEST(WorkloadCost, CountsVInTheDtypeItsAdapterQuantizesTo) {
    const WorkloadSet wan = load_workload_set(source_root / "data/workloads/sets/wan21-14b.toml");
    const AttentionProblem &problem = wan.workloads[1].workload.problem;  // 720p, bf16
    const std::size_t elements = 387072000;
    const QuantizationRecipe sm89 = kernel_abi("sageattention-sm89", "test").quantization(128);
    const QuantizationRecipe sm80 = kernel_abi("sageattention-sm80-accum-f32", "test").quantization(128);
    ASSERT_EQ(sm80.v_format, VFormat::f16);
    const std::size_t fp8_set = quantized_input_bytes(problem, sm89), f16_set = quantized_input_bytes(problem, sm80);
    // int8 q and k; e4m3 V padded to 75,648 keys (128 x 40 x 75,648) and its f32 scale [1, 40, 128]; per-warp
    // f32 scales, q's [1, 40, 591 x 4] and k's [1, 40, 1182]; k's bf16 mean [1, 1, 40, 128].
    EXPECT_EQ(fp8_set, 2 * elements + 387317760u + 40u * 128 * 4 + 40u * 2364 * 4 + 40u * 1182 * 4 + 40u * 128 * 2);
    // int8 q and k; fp16 V in k's shape; per-thread scales, q's [1, 40, 591 x 4 x 8] and k's [1, 40, 1182 x 4].
    EXPECT_EQ(f16_set, 2 * elements + 2 * elements + 40u * 18912 * 4 + 40u * 4728 * 4 + 40u * 128 * 2);
    EXPECT_EQ(workload_cost(problem, {sm80, sm80}, 3, 3).quantized_bytes, f16_set);
    // Arms of both families read a set each, in every input set.
    const WorkloadCost both = workload_cost(problem, {sm89, sm89, sm80}, 3, 3);
    EXPECT_EQ(both.quantized_bytes, fp8_set + f16_set);
    EXPECT_EQ(both.peak_bytes, both.input_bytes + 3 * both.quantized_bytes + 6 * both.output_bytes);
    // fuse_v_mean's V mean is sub_mean's, in the output dtype (bf16) over [B, Hk, D].
    const QuantizationRecipe sm80_mean =
        kernel_abi("sageattention-sm80-accum-f16-fuse-v-mean", "test").quantization(128);
    EXPECT_EQ(quantized_input_bytes(problem, sm80_mean) - f16_set, 40u * 128 * 2);
}

TEST(WorkloadCost, EachShapeGetsAFloorAndTheRestByItsWork) {
    // Wan 2.1 14B: 720p has 5.3 times the work of 480p; the image cross-attention almost none.
    const std::vector<double> ops{32760.0 * 32760, 75600.0 * 75600, 32760.0 * 257};
    double remaining = 60;
    std::vector<double> shares;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        shares.push_back(next_shape_budget(remaining, std::vector<double>(ops.begin() + i, ops.end())));
        remaining -= shares.back();  // every shape spends all of its share
    }
    EXPECT_NEAR(shares[0] + shares[1] + shares[2], 60.0, 1e-9);
    EXPECT_GE(shares[2], 60.0 / 3 / 4 - 1e-9);  // the floor
    EXPECT_GT(shares[1], 3 * shares[0]);
    // A shape that stops early leaves its time to the ones after it.
    const double first = next_shape_budget(60, ops);
    const double second_if_first_spent_all = next_shape_budget(60 - first, {ops[1], ops[2]});
    const double second_if_first_spent_half = next_shape_budget(60 - first / 2, {ops[1], ops[2]});
    EXPECT_GT(second_if_first_spent_half, second_if_first_spent_all);
    EXPECT_EQ(next_shape_budget(0, {1.0}), 0.0);
}

}  // namespace s2tp::unit_workload_set
