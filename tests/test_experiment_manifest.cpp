#include "support/errors.h"
#include "build_config.h"
#include "model/experiment_manifest.h"

#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

const fs::path source_root = S2TP_SOURCE_ROOT;

class ManifestErrors : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("s2tp-manifest-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        std::ofstream(dir_ / "c.patch") << "--- a/kernels/x.cu\n+++ b/kernels/x.cu\n@@ -1 +1 @@\n-a\n+b\n";
    }
    // A valid manifest with `replace` substituted for the line `marker`, written and loaded.
    std::string error_for(const std::string &marker, const std::string &replace) {
        std::string text = valid();
        auto at = text.find(marker);
        EXPECT_NE(at, std::string::npos) << marker;
        text.replace(at, marker.size(), replace);
        std::ofstream(dir_ / "m.toml") << text;
        try {
            load_experiment(dir_ / "m.toml");
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage);
            return e.what();
        }
        ADD_FAILURE() << "no error for: " << replace;
        return "";
    }
    static std::string valid() {
        return "[experiment]\n"                                   // line 1
               "name = \"t\"\n"                                    // 2
               "[source]\n"                                        // 3
               "kind = \"embedded\"\n"                             // 4
               "kernel_sources = [\"kernels/x.cu\"]\n"            // 5
               "[candidate]\n"                                     // 6
               "patch = \"c.patch\"\n"                             // 7
               "[build]\n"                                         // 8
               "arch = \"sm_90a\"\n"                               // 9
               "[workload]\n"                                      // 10
               "name = \"w\"\n"                                    // 11
               "len_q = 256\n";                                    // 12
    }
    fs::path dir_;
};

}  // namespace

TEST(Manifest, DefaultExperimentLoads) {
    Experiment e = load_experiment(source_root / "data/experiments/temporal-pair.toml");
    EXPECT_EQ(e.name, "temporal-pair");
    EXPECT_EQ(e.baseline_source.kind, "embedded");
    EXPECT_TRUE(e.candidates.front().source.same_checkout(e.baseline_source));
    EXPECT_EQ(e.candidates.front().abi, "sage2tp");
    EXPECT_EQ(e.arch, "sm_121a");
    EXPECT_EQ(e.workload.problem.shape.len_q, 32760);
    EXPECT_EQ(e.workload.problem.shape.heads_q, 40);
    EXPECT_EQ(e.workload.problem.dtype, DType::bf16);
    EXPECT_FLOAT_EQ(e.workload.problem.sm_scale, 0.08838834764831845f);
    EXPECT_DOUBLE_EQ(e.max_candidate_p50_ms, 220.0);
    EXPECT_TRUE(fs::path(e.candidates.front().patch).is_absolute());
}

TEST(Manifest, ResolvedCopyLoadsToTheSameExperiment) {
    Experiment e = load_experiment(source_root / "data/experiments/temporal-pair.toml");
    fs::path copy = fs::temp_directory_path() / ("s2tp-resolved-" + std::to_string(::getpid()) + ".toml");
    std::ofstream(copy) << experiment_to_toml(e);
    Experiment again = load_experiment(copy);
    EXPECT_EQ(experiment_to_toml(again), experiment_to_toml(e));
}

TEST_F(ManifestErrors, UnknownKeyNamesFileLineAndColumn) {
    std::string message = error_for("arch = \"sm_90a\"\n", "arch = \"sm_90a\"\narhc = \"typo\"\n");
    EXPECT_NE(message.find("m.toml:10:1: unknown key 'arhc' in [build]"), std::string::npos) << message;
}

TEST_F(ManifestErrors, WrongTypeNamesTheValue) {
    std::string message = error_for("len_q = 256\n", "len_q = \"256\"\n");
    EXPECT_NE(message.find("m.toml:12:9:"), std::string::npos) << message;
    EXPECT_NE(message.find("'len_q' must be an integer, not a string"), std::string::npos) << message;
}

TEST_F(ManifestErrors, MissingKeyNamesTheTable) {
    std::string message = error_for("name = \"w\"\n", "");
    EXPECT_NE(message.find("m.toml:"), std::string::npos) << message;
    EXPECT_NE(message.find("[workload] is missing the required key 'name'"), std::string::npos) << message;
}

TEST_F(ManifestErrors, BadChoiceListsTheValidOnes) {
    std::string message = error_for("kind = \"embedded\"\n", "kind = \"svn\"\n");
    EXPECT_NE(message.find("m.toml:4:8:"), std::string::npos) << message;
    EXPECT_NE(message.find("expected one of: embedded, git"), std::string::npos) << message;
}

TEST_F(ManifestErrors, SyntaxErrorNamesLineAndColumn) {
    std::string message = error_for("len_q = 256\n", "len_q = = 256\n");
    EXPECT_NE(message.find("m.toml:12:"), std::string::npos) << message;
}

// Bytes that made toml++ 3.3.0 abort the binary, in the manifest and in a workload file it names:
// each is Error(usage) (exit 2) naming the file.
TEST_F(ManifestErrors, InputsThatAbortedTheParserAreUsageErrorsNamingTheFile) {
    EXPECT_EQ(error_for("[build]\n", "[/\n").rfind((dir_ / "m.toml").string() + ": ", 0), 0u);
    EXPECT_NE(error_for("len_q = 256\n", "len_q = 256\xc3\xa9\n").find("m.toml:12:12:"), std::string::npos);
    std::string invalid = error_for("name = \"t\"", "name = \"t\xff\"");
    EXPECT_NE(invalid.find("m.toml: invalid UTF-8 at byte offset 22 (line 2)"), std::string::npos) << invalid;

    std::ofstream(dir_ / "w.toml", std::ios::binary) << "[workload]\nname = 'w'\n[)l)";
    std::string workload = error_for("[workload]\nname = \"w\"\nlen_q = 256\n", "[workload]\nfile = \"w.toml\"\n");
    EXPECT_EQ(workload.rfind((dir_ / "w.toml").string() + ": ", 0), 0u) << workload;
}

TEST_F(ManifestErrors, MissingPatchFileIsNamed) {
    std::string message = error_for("patch = \"c.patch\"", "patch = \"nowhere.patch\"");
    EXPECT_NE(message.find("m.toml:7:9:"), std::string::npos) << message;
    EXPECT_NE(message.find("nowhere.patch"), std::string::npos) << message;
}

TEST_F(ManifestErrors, SourcePathsMayNotLeaveTheTree) {
    std::string message = error_for("[\"kernels/x.cu\"]", "[\"../../etc/passwd\"]");
    EXPECT_NE(message.find("must be relative and stay inside the source tree"), std::string::npos) << message;
}

TEST_F(ManifestErrors, OutOfRangeNumberIsRejected) {
    std::string message = error_for("len_q = 256\n", "len_q = 256\nhead_dim = 96\n");
    EXPECT_NE(message.find("head_dim must be 64 or 128"), std::string::npos) << message;
    EXPECT_NE(message.find("m.toml:10:1:"), std::string::npos) << message;
}

TEST_F(ManifestErrors, GroupedQueryHeadsMustDivide) {
    std::string message = error_for("len_q = 256\n", "len_q = 256\nheads_q = 6\nheads_kv = 4\n");
    EXPECT_NE(message.find("heads_q (6) is not a multiple of heads_kv (4)"), std::string::npos) << message;
}

TEST(Manifest, ShippedSageAttentionManifestsNameTheirSourcesPerVariant) {
    SourceOverrides overrides;
    overrides.repository = "/home/me/SageAttention";
    Experiment pair = load_experiment(source_root / "data/experiments/sageattention-temporal-pair.toml", overrides);
    EXPECT_EQ(pair.baseline_source.kind, "git");
    EXPECT_EQ(pair.baseline_source.repository, "/home/me/SageAttention");
    EXPECT_EQ(pair.baseline_source.commit, "d1a57a546c3d395b1ffcbeecc66d81db76f3b4b5");
    EXPECT_TRUE(pair.baseline_source.needs_torch_headers);
    EXPECT_TRUE(pair.candidates.front().source.same_checkout(pair.baseline_source));
    EXPECT_EQ(pair.baseline_abi, "sageattention-sm89");
    EXPECT_EQ(pair.candidates.front().abi, "sageattention-sm89");
    EXPECT_TRUE(pair.needs_support_tree());
    EXPECT_FALSE(pair.candidates.front().patch.empty());

    overrides.commit = "HEAD";
    Experiment versus = load_experiment(source_root / "data/experiments/upstream-vs-embedded.toml", overrides);
    EXPECT_EQ(versus.baseline_source.commit, "HEAD");
    EXPECT_EQ(versus.candidates.front().source.kind, "embedded");
    EXPECT_TRUE(versus.candidates.front().source.repository.empty());
    EXPECT_FALSE(versus.candidates.front().source.needs_torch_headers);
    EXPECT_EQ(versus.candidates.front().source.kernel_sources, std::vector<std::string>{"kernels/attention_entry.cu"});
    EXPECT_EQ(versus.baseline_abi, "sageattention-sm89");
    EXPECT_EQ(versus.candidates.front().abi, "sage2tp");
    EXPECT_TRUE(versus.candidates.front().patch.empty());

    // The resolved copy keeps both sources, and loading it needs no command-line values.
    fs::path copy = fs::temp_directory_path() / ("s2tp-versus-" + std::to_string(::getpid()) + ".toml");
    std::ofstream(copy) << experiment_to_toml(versus);
    EXPECT_EQ(experiment_to_toml(load_experiment(copy)), experiment_to_toml(versus));
    fs::remove(copy);
}

TEST(Manifest, AGitSourceWithoutRepositoryAsksForTheOption) {
    try {
        load_experiment(source_root / "data/experiments/sageattention-temporal-pair.toml");
        ADD_FAILURE() << "no error";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_NE(std::string(e.what()).find("--repository"), std::string::npos) << e.what();
    }
}

TEST_F(ManifestErrors, CandidateSourceOverridesPerKey) {
    std::string text = valid();
    text.replace(text.find("[build]"), 0, "abi = \"other\"\n[candidate.source]\nkind = \"git\"\nrepository = \"r\"\ncommit = \"b\"\n");
    std::ofstream(dir_ / "m.toml") << text;
    Experiment e = load_experiment(dir_ / "m.toml");
    EXPECT_EQ(e.baseline_source.kind, "embedded");
    EXPECT_EQ(e.candidates.front().source.kind, "git");
    EXPECT_EQ(e.candidates.front().source.repository, (dir_ / "r").string());
    EXPECT_EQ(e.candidates.front().source.kernel_sources, e.baseline_source.kernel_sources);
    EXPECT_EQ(e.candidates.front().abi, "other");
}

TEST_F(ManifestErrors, CandidateAbiGivenTwiceIsRefused) {
    std::string message = error_for("[build]", "abi = \"a\"\n[candidate.source]\nabi = \"b\"\n[build]");
    EXPECT_NE(message.find("abi is given twice"), std::string::npos) << message;
}

TEST_F(ManifestErrors, ACandidateThatIsTheBaselineIsRefused) {
    std::string message = error_for("patch = \"c.patch\"\n", "");
    EXPECT_NE(message.find("the candidate is the baseline itself"), std::string::npos) << message;
}

TEST_F(ManifestErrors, RepositoryIsOnlyForGitSources) {
    std::string message = error_for("kind = \"embedded\"\n", "kind = \"embedded\"\nrepository = \"r\"\n");
    EXPECT_NE(message.find("'repository' is for git sources"), std::string::npos) << message;
}

TEST_F(ManifestErrors, RunPinsOverrideTheManifestsAndLeaveItAlone) {
    WorkloadSpec workload;
    const std::string a(64, 'a'), b(64, 'b'), c(64, 'c');
    workload.expected_sha256 = {{"sm_90a", a}};
    const fs::path pins = dir_ / "pins.toml";
    // The manifest's pin is the one replaced first; the second pin replaces the run's own.
    EXPECT_EQ(pin_expected_output_sha256(pins, workload, "sm_90a", b), a);
    EXPECT_EQ(pin_expected_output_sha256(pins, workload, "sm_90a", c), b);
    EXPECT_EQ(pin_expected_output_sha256(pins, workload, "sm_121a", a), std::nullopt);
    EXPECT_EQ(pin_expected_output_sha256(pins, workload, "sm_121a", a), std::nullopt);  // the same pin again
    WorkloadSpec applied = workload;
    apply_run_pins(applied, pins);
    EXPECT_EQ(expected_output_sha256(applied, "sm_90a"), c);
    EXPECT_EQ(expected_output_sha256(applied, "sm_121a"), a);
    EXPECT_EQ(expected_output_sha256(workload, "sm_90a"), a);

    std::ofstream(pins) << "[expected_sha256]\nsm_90a = \"XYZ\"\n";
    try {
        apply_run_pins(applied, pins);
        FAIL() << "a malformed pin was accepted";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_NE(std::string(e.what()).find("pins.toml:2: [expected_sha256] 'sm_90a'"), std::string::npos) << e.what();
    }
}
