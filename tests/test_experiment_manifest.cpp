#include "support/errors.h"
#include "scratch_directory.h"
#include "build_config.h"
#include "model/experiment_manifest.h"

#include "figures/gate_figures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_experiment_manifest {

namespace {

const fs::path source_root = S2TP_SOURCE_ROOT;

class ManifestErrors : public ::testing::Test {
protected:
    void SetUp() override {
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
    ScratchDirectory scratch_{"manifest"};
    const fs::path dir_ = scratch_.path();
};

// The text of sage2tp-experiment(5) from the section ".Ss [table]" (its heading may go on: "(required)",
// " or [[candidate]]") to the next section.
std::string man_section(const std::string &table) {
    std::ifstream in(source_root / "man" / "sage2tp-experiment.5");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string heading = "\n.Ss [" + table + "]";
    const std::size_t begin = text.find(heading);
    if (begin == std::string::npos) return "";
    const std::size_t end = std::min(text.find("\n.Ss ", begin + heading.size()), text.find("\n.Sh ", begin + heading.size()));
    return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// The keys a section documents on its tag lines (".It Ic key", ".It Ic min_cosine , max_rel_l1 Pq ... ;
// Ic max_rmse"): each name that follows Ic, or follows such a name after a comma; an array of tables
// ("Ic [[parity.shape]]") documents its last part. A table's own name ("Ic [parity]") is no key of it.
std::set<std::string> documented_keys(const std::string &section) {
    std::set<std::string> keys;
    std::istringstream lines(section);
    static const std::regex name("[a-z_][a-z0-9_]*"), sub_table(R"(\[\[?[a-z_]+\.([a-z_]+)\]\]?)");
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(".It ", 0) != 0) continue;
        std::istringstream words(line);
        bool naming = false;
        for (std::string word; words >> word;) {
            std::smatch part;
            if (word == "Ic" || (naming && word == ",")) naming = true;
            else if (naming && std::regex_match(word, name)) keys.insert(word);
            else if (naming && std::regex_match(word, part, sub_table)) keys.insert(part[1]), naming = false;
            else naming = false;
        }
    }
    return keys;
}

}  // namespace

// Issue 38: sage2tp-experiment(5) documents every key of the manifest's key table, each in its table's
// section ([[gate.waiver]]'s in [gate]'s), and no key the table lacks.
TEST(Manifest, TheManualDocumentsEveryKeyOfTheKeyTableAndNoOther) {
    std::map<std::string, std::set<std::string>> by_section;
    for (const SchemaKey &key : manifest_keys()) {
        const std::string table = key.table;
        by_section[table.substr(0, table.find('.'))].insert(key.key);
    }
    for (const auto &[table, keys] : by_section) {
        const std::string section = man_section(table);
        ASSERT_FALSE(section.empty()) << "sage2tp-experiment(5) has no [" << table << "] section";
        const std::set<std::string> documented = documented_keys(section);
        for (const std::string &key : keys)
            EXPECT_TRUE(documented.count(key) || section.find("\n.Ic " + key + "\n") != std::string::npos ||
                        !man_section(table + "." + key).empty())
                << "the key table has [" << table << "] " << key << ", which sage2tp-experiment(5) does not document there";
        for (const std::string &key : documented)
            EXPECT_TRUE(keys.count(key)) << "sage2tp-experiment(5) documents [" << table << "] " << key
                                         << ", which the key table lacks";
    }
}

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
    EXPECT_EQ(e.max_candidate_p50_ms, 220.0) << "the manifest writes it: its own bound";
    EXPECT_TRUE(fs::path(e.candidates.front().patch).is_absolute());
}

TEST(Manifest, ResolvedCopyLoadsToTheSameExperiment) {
    Experiment e = load_experiment(source_root / "data/experiments/temporal-pair.toml");
    const ScratchDirectory dir("resolved");
    const fs::path copy = dir / "experiment.toml";
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
    const ScratchDirectory dir("versus");
    const fs::path copy = dir / "experiment.toml";
    std::ofstream(copy) << experiment_to_toml(versus);
    EXPECT_EQ(experiment_to_toml(load_experiment(copy)), experiment_to_toml(versus));
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
    const PinKey sm89{bare_pin_kernel, "sm_90a"}, spark{bare_pin_kernel, "sm_121a"};
    workload.expected_sha256 = {{sm89, a}};
    const fs::path pins = dir_ / "pins.toml";
    // The manifest's pin is the one replaced first; the second pin replaces the run's own.
    EXPECT_EQ(pin_expected_output_sha256(pins, workload, sm89, b), a);
    EXPECT_EQ(pin_expected_output_sha256(pins, workload, sm89, c), b);
    EXPECT_EQ(pin_expected_output_sha256(pins, workload, spark, a), std::nullopt);
    EXPECT_EQ(pin_expected_output_sha256(pins, workload, spark, a), std::nullopt);  // the same pin again
    WorkloadSpec applied = workload;
    apply_run_pins(applied, pins);
    EXPECT_EQ(expected_output_sha256(applied, sm89), c);
    EXPECT_EQ(expected_output_sha256(applied, spark), a);
    EXPECT_EQ(expected_output_sha256(workload, sm89), a);

    std::ofstream(pins) << "[expected_sha256]\nsm_90a = \"XYZ\"\n";
    try {
        apply_run_pins(applied, pins);
        FAIL() << "a malformed pin was accepted";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_NE(std::string(e.what()).find("pins.toml:2: [expected_sha256] 'sm_90a'"), std::string::npos) << e.what();
    }
}

// Issue 39 item 3: a pin belongs to a kernel. Upstream's sm90 kernel pinned on sm_90a neither replaces
// nor is checked against the sm89 kernel's pin on the same arch, and the pins file names its kernel.
TEST_F(ManifestErrors, APinBelongsToItsKernelNotOnlyToTheArch) {
    WorkloadSpec workload;
    const std::string sm89_sha(64, 'a'), sm90_sha(64, 'b');
    const PinKey sm89{bare_pin_kernel, "sm_90a"}, sm90{"sageattention-sm90-accum-f32-fuse-v-scale", "sm_90a"};
    workload.expected_sha256 = {{sm89, sm89_sha}};
    EXPECT_EQ(expected_output_sha256(workload, sm90), std::nullopt) << "the sm89 kernel's pin is not the sm90 kernel's";
    const fs::path pins = dir_ / "pins.toml";
    EXPECT_EQ(pin_expected_output_sha256(pins, workload, sm90, sm90_sha), std::nullopt) << "nothing replaced";
    WorkloadSpec applied = workload;
    apply_run_pins(applied, pins);
    EXPECT_EQ(expected_output_sha256(applied, sm89), sm89_sha);
    EXPECT_EQ(expected_output_sha256(applied, sm90), sm90_sha);
    std::ifstream in(pins);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    EXPECT_NE(text.find("[expected_sha256.sageattention-sm90-accum-f32-fuse-v-scale]\nsm_90a = '" + sm90_sha + "'"),
              std::string::npos) << text;
}

namespace {

// The valid manifest with its [candidate] replaced by `candidates` ([[candidate]] tables).
std::string with_candidates(const std::string &candidates) {
    const std::string single = "[candidate]\npatch = \"c.patch\"\n";
    std::string text = "[experiment]\nname = \"t\"\n[source]\nkind = \"embedded\"\nkernel_sources = [\"kernels/x.cu\"]\n" + single +
                       "[build]\narch = \"sm_90a\"\n[workload]\nname = \"w\"\nlen_q = 256\n";
    text.replace(text.find(single), single.size(), candidates);
    return text;
}

const char *const three_candidates = "[[candidate]]\n"                    // line 6
                                     "name = \"fast\"\n"                   // 7
                                     "patch = \"c.patch\"\n"               // 8
                                     "[[candidate]]\n"                     // 9
                                     "name = \"other-tree\"\n"             // 10
                                     "abi = \"sageattention-sm89\"\n"      // 11
                                     "[candidate.source]\n"                // 12
                                     "kind = \"git\"\n"                    // 13
                                     "repository = \"r\"\n"                // 14
                                     "commit = \"v2\"\n"                   // 15
                                     "[[candidate]]\n"                     // 16
                                     "name = \"both2\"\n"                  // 17
                                     "patch = \"c.patch\"\n"               // 18
                                     "[candidate.source]\n"                // 19
                                     "kind = \"git\"\n"                    // 20
                                     "repository = \"r\"\n"                // 21
                                     "commit = \"v3\"\n";                  // 22

}  // namespace

TEST_F(ManifestErrors, SeveralCandidatesEachWithTheirOwnSourceAndPatch) {
    std::ofstream(dir_ / "m.toml") << with_candidates(three_candidates);
    Experiment e = load_experiment(dir_ / "m.toml");
    ASSERT_EQ(e.candidates.size(), 3u);
    EXPECT_EQ(e.variant_names(), (std::vector<std::string>{"baseline", "fast", "other-tree", "both2"}));
    EXPECT_TRUE(e.candidate("fast").source.same_checkout(e.baseline_source));
    EXPECT_EQ(e.candidate("fast").patch, (dir_ / "c.patch").string());
    EXPECT_EQ(e.source("other-tree").kind, "git");
    EXPECT_EQ(e.source("other-tree").commit, "v2");
    EXPECT_EQ(e.abi("other-tree"), "sageattention-sm89");
    EXPECT_EQ(e.abi("both2"), "sage2tp");
    EXPECT_TRUE(e.candidate("other-tree").patch.empty());
    EXPECT_EQ(e.source("both2").commit, "v3");

    // The resolved copy (the run's experiment.toml) loads back to the same experiment.
    const std::string resolved = experiment_to_toml(e);
    std::ofstream(dir_ / "resolved.toml") << resolved;
    const Experiment again = load_experiment(dir_ / "resolved.toml");
    EXPECT_EQ(experiment_to_toml(again), resolved);
    ASSERT_EQ(again.candidates.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(again.candidates[i].name, e.candidates[i].name);
        EXPECT_EQ(again.candidates[i].patch, e.candidates[i].patch);
        EXPECT_EQ(again.candidates[i].abi, e.candidates[i].abi);
        EXPECT_TRUE(again.candidates[i].source.same_checkout(e.candidates[i].source));
        EXPECT_EQ(again.candidates[i].source.kernel_sources, e.candidates[i].source.kernel_sources);
    }
}

TEST_F(ManifestErrors, ASingleCandidateMayNameItselfAndKeepsItsNameThroughTheResolvedCopy) {
    std::ofstream(dir_ / "m.toml") << with_candidates("[candidate]\nname = \"pair\"\npatch = \"c.patch\"\n");
    Experiment e = load_experiment(dir_ / "m.toml");
    EXPECT_EQ(e.variant_names(), (std::vector<std::string>{"baseline", "pair"}));
    std::ofstream(dir_ / "resolved.toml") << experiment_to_toml(e);
    EXPECT_EQ(load_experiment(dir_ / "resolved.toml").candidates.front().name, "pair");
    // Without a name it is "candidate", and the resolved copy stays a single [candidate] table.
    std::ofstream(dir_ / "m.toml") << valid();
    const std::string resolved = experiment_to_toml(load_experiment(dir_ / "m.toml"));
    EXPECT_NE(resolved.find("[candidate]"), std::string::npos) << resolved;
    EXPECT_EQ(resolved.find("name = 'candidate'"), std::string::npos) << resolved;
}

TEST_F(ManifestErrors, CandidateNamesAreCheckedWhereTheyStand) {
    auto message = [&](const std::string &candidates) {
        std::ofstream(dir_ / "m.toml") << with_candidates(candidates);
        try {
            load_experiment(dir_ / "m.toml");
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage);
            return std::string(e.what());
        }
        ADD_FAILURE() << "no error for " << candidates;
        return std::string();
    };
    const std::string patch = "patch = \"c.patch\"\n";
    std::string m = message("[[candidate]]\n" + patch);
    EXPECT_NE(m.find("m.toml:6:1: [[candidate]] 1 is missing the required key 'name'"), std::string::npos) << m;
    m = message("[[candidate]]\nname = \"Fast\"\n" + patch);
    EXPECT_NE(m.find("m.toml:7:8: candidate name 'Fast' must be a lower-case letter"), std::string::npos) << m;
    m = message("[[candidate]]\nname = \"" + std::string(33, 'a') + "\"\n" + patch);
    EXPECT_NE(m.find("up to 31"), std::string::npos) << m;
    for (const char *taken : {"baseline", "support"}) {
        m = message("[[candidate]]\nname = \"" + std::string(taken) + "\"\n" + patch);
        EXPECT_NE(m.find("candidate name '" + std::string(taken) + "' is taken"), std::string::npos) << m;
    }
    m = message("[[candidate]]\nname = \"a\"\n" + patch + "[[candidate]]\nname = \"a\"\n" + patch);
    EXPECT_NE(m.find("m.toml:10:8: candidate name 'a' is used twice"), std::string::npos) << m;
    m = message("[[candidate]]\nname = \"a\"\n" + patch + "[[candidate]]\nname = \"b\"\n");
    EXPECT_NE(m.find("m.toml:9:1: candidate 'b' is the baseline itself"), std::string::npos) << m;
    m = message("[[candidate]]\nname = \"a\"\nabi = \"x\"\n" + patch + "[candidate.source]\nabi = \"y\"\n");
    EXPECT_NE(m.find("candidate 'a': the abi is given twice"), std::string::npos) << m;
    // Both forms in one manifest: TOML itself refuses to define candidate twice, at the second one.
    m = message("[candidate]\n" + patch + "[[candidate]]\nname = \"a\"\n" + patch);
    EXPECT_NE(m.find("m.toml:8:"), std::string::npos) << m;
}

TEST_F(ManifestErrors, AtMostSixCandidatesBecauseTimeInterleavesThemAll) {
    std::string six;
    for (int i = 1; i <= 7; ++i) {
        std::string table = "[[candidate]]\nname = \"c" + std::to_string(i) + "\"\npatch = \"c.patch\"\n";
        if (i <= 6) six += table;
        std::ofstream(dir_ / "m.toml") << with_candidates(i <= 6 ? six : six + table);
        if (i <= 6) {
            EXPECT_EQ(load_experiment(dir_ / "m.toml").candidates.size(), static_cast<std::size_t>(i));
            continue;
        }
        try {
            load_experiment(dir_ / "m.toml");
            ADD_FAILURE() << "7 candidates loaded";
        } catch (const Error &e) {
            const std::string m = e.what();
            EXPECT_NE(m.find("m.toml:24:1: 7 candidates; at most 6"), std::string::npos) << m;
            EXPECT_NE(m.find("A/A control"), std::string::npos) << m;
        }
    }
}

TEST_F(ManifestErrors, CandidateCommitTakesNameEqualsRevWithSeveralCandidates) {
    std::ofstream(dir_ / "m.toml") << with_candidates(three_candidates);
    SourceOverrides overrides;
    add_candidate_commit_override(overrides, "both2=feature");
    add_candidate_commit_override(overrides, "other-tree=abc123");
    Experiment e = load_experiment(dir_ / "m.toml", overrides);
    EXPECT_EQ(e.source("both2").commit, "feature");
    EXPECT_EQ(e.source("other-tree").commit, "abc123");
    EXPECT_THROW(add_candidate_commit_override(overrides, "both2=again"), Error);

    auto refused = [&](const std::string &value, const std::string &expected) {
        SourceOverrides o;
        add_candidate_commit_override(o, value);
        try {
            load_experiment(dir_ / "m.toml", o);
            ADD_FAILURE() << value;
        } catch (const Error &error) {
            EXPECT_EQ(error.code(), ExitCode::usage);
            EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
        }
    };
    refused("v9", "--candidate-commit takes NAME=REV");
    refused("nobody=v9", "has no candidate named 'nobody' (it has fast, other-tree, both2)");
    refused("fast=v9", "candidate 'fast', but it is not a git source");

    // One candidate: a plain REV, or NAME=REV with its name.
    std::ofstream(dir_ / "m.toml") << with_candidates("[candidate]\nname = \"pair\"\n[candidate.source]\nkind = \"git\"\n"
                                                      "repository = \"r\"\ncommit = \"v1\"\n");
    SourceOverrides plain, named;
    add_candidate_commit_override(plain, "v7");
    add_candidate_commit_override(named, "pair=v8");
    EXPECT_EQ(load_experiment(dir_ / "m.toml", plain).source("pair").commit, "v7");
    EXPECT_EQ(load_experiment(dir_ / "m.toml", named).source("pair").commit, "v8");
}

TEST_F(ManifestErrors, AMistypedCandidateKeyIsNamedWithTheKeyMeant) {
    std::string message = error_for("patch = \"c.patch\"\n", "patchh = \"c.patch\"\n");
    EXPECT_NE(message.find("m.toml:7:1: unknown key 'patchh' in [candidate]; did you mean 'patch'?"), std::string::npos) << message;
}

// Issue 26: a misspelled required key is the error to report, with its suggestion, not the key's absence.
// Issue 38: a key read only when present (a candidate's parity_mode) is offered for its misspelling all the
// same: the reader expects every key of its table in the key table, not only those it has read.
TEST_F(ManifestErrors, AMistypedOptionalKeyIsNamedWithTheKeyMeant) {
    std::string message = error_for("patch = \"c.patch\"\n", "patch = \"c.patch\"\nparity_mod = \"exact\"\n");
    EXPECT_NE(message.find("m.toml:8:1: unknown key 'parity_mod' in [candidate]; did you mean 'parity_mode'?"),
              std::string::npos) << message;
}

// Issue 38: the key table's default of each key is what the resolved copy of a manifest that leaves the
// key out records, so the table, the manual and Experiment cannot drift apart on a default.
TEST_F(ManifestErrors, TheKeyTableDefaultsAreTheResolvedCopysValues) {
    std::ofstream(dir_ / "m.toml") << valid() << "[parity]\n[time]\n[gate]\n[sanitize]\n";
    const toml::table resolved = toml::parse(experiment_to_toml(load_experiment(dir_ / "m.toml")));
    const std::set<std::string> set_by_valid{"experiment.name", "build.arch"};
    int checked = 0;
    for (const SchemaKey &key : manifest_keys()) {
        const std::string path = std::string(key.table) + "." + key.key;
        if (std::string(key.fallback).empty() || set_by_valid.count(path) || key.table == std::string("candidate")) continue;
        const toml::node *value = resolved.at_path(path).node();
        ASSERT_NE(value, nullptr) << path << " is not in the resolved copy";
        std::ostringstream written, expected;
        toml::table holding;
        holding.insert("v", *value);
        written << holding;
        expected << toml::parse("v = " + std::string(key.fallback));
        EXPECT_EQ(expected.str(), written.str()) << path << ": the key table's default against the resolved copy's value";
        ++checked;
    }
    EXPECT_GT(checked, 20);
}

TEST_F(ManifestErrors, AMisspelledRequiredKeyIsReportedAsTheUnknownKey) {
    const std::string message = error_for("kernel_sources = [\"kernels/x.cu\"]\n", "kernel_source = [\"kernels/x.cu\"]\n");
    EXPECT_NE(message.find("m.toml:5:1: unknown key 'kernel_source' in [source]; did you mean 'kernel_sources'?"),
              std::string::npos) << message;
}

// Issue 26: without [gate] max_ratio_upper the gate asks for a faster candidate; "off" is the only way out,
// and the resolved copy says which it is.
TEST_F(ManifestErrors, RelativeSpeedIsOnByDefaultAndOffOnlyWhenSaid) {
    std::ofstream(dir_ / "m.toml") << valid();
    Experiment e = load_experiment(dir_ / "m.toml");
    ASSERT_TRUE(e.max_ratio_upper);
    EXPECT_DOUBLE_EQ(*e.max_ratio_upper, 1.0);

    std::ofstream(dir_ / "off.toml") << valid() << "[gate]\nmax_ratio_upper = \"off\"\n";
    e = load_experiment(dir_ / "off.toml");
    EXPECT_FALSE(e.max_ratio_upper);
    std::ofstream(dir_ / "resolved.toml") << experiment_to_toml(e);
    EXPECT_FALSE(load_experiment(dir_ / "resolved.toml").max_ratio_upper);

    const std::string message = error_for("len_q = 256\n", "len_q = 256\n[gate]\nmax_ratio_upper = \"of\"\n");
    EXPECT_NE(message.find("m.toml:14:19: [gate] key 'max_ratio_upper' is a number or \"off\""), std::string::npos)
        << message;
}

// Issue 26: --manifest NAME finds a shipped manifest; a word that names nothing says so and lists them.
TEST(Manifest, FindManifestByNameAndListsTheShippedOnes) {
    EXPECT_EQ(find_manifest("upstream-vs-embedded").filename(), "upstream-vs-embedded.toml");
    EXPECT_EQ(find_manifest("temporal-pair.toml").filename(), "temporal-pair.toml");
    try {
        find_manifest("temporal-pari");
        ADD_FAILURE() << "found temporal-pari";
    } catch (const Error &e) {
        const std::string message = e.what();
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_NE(message.find("--manifest 'temporal-pari': no such file, and no shipped manifest of that name; "
                               "did you mean 'temporal-pair'?"),
                  std::string::npos) << message;
        EXPECT_NE(message.find("long-sequence, sageattention-sm90-schedules, sageattention-temporal-pair, sageattention2-vs-2pp, sm80-accum, sm89-vs-sm90-hopper, temporal-pair, upstream-vs-embedded"), std::string::npos)
            << message;
    }
}

// Issue 26: --patch replaces the only candidate's patch and --no-patch removes it; a candidate left
// without a patch or a commit of its own is refused as the baseline itself.
TEST_F(ManifestErrors, PatchOverrides) {
    std::ofstream(dir_ / "m.toml") << valid();
    std::ofstream(dir_ / "other.patch") << "--- a/kernels/x.cu\n+++ b/kernels/x.cu\n@@ -1 +1 @@\n-a\n+c\n";
    SourceOverrides overrides;
    overrides.candidate_patch = (dir_ / "other.patch").string();
    EXPECT_EQ(load_experiment(dir_ / "m.toml", overrides).candidates.front().patch, (dir_ / "other.patch").string());
    overrides.candidate_patch = "";
    try {
        load_experiment(dir_ / "m.toml", overrides);
        ADD_FAILURE() << "a candidate without patch or commit was accepted";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("is the baseline itself"), std::string::npos) << e.what();
    }
    overrides.candidate_patch = (dir_ / "missing.patch").string();
    try {
        load_experiment(dir_ / "m.toml", overrides);
        ADD_FAILURE() << "a missing --patch file was accepted";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("missing.patch': no such file"), std::string::npos) << e.what();
    }
}

// A manifest whose only candidate is one [[candidate]] table (the shipped temporal-pair less a candidate)
// takes --patch as one with a [candidate] table does; it said "the manifest has 1 candidates".
TEST_F(ManifestErrors, OneCandidateTableTakesThePatchOverride) {
    std::string text = valid();
    text.replace(text.find("[candidate]\n"), 12, "[[candidate]]\nname = \"only\"\n");
    std::ofstream(dir_ / "m.toml") << text;
    std::ofstream(dir_ / "other.patch") << "--- a/kernels/x.cu\n+++ b/kernels/x.cu\n@@ -1 +1 @@\n-a\n+c\n";
    SourceOverrides overrides;
    overrides.candidate_patch = (dir_ / "other.patch").string();
    const Experiment e = load_experiment(dir_ / "m.toml", overrides);
    ASSERT_EQ(e.candidates.size(), 1u);
    EXPECT_EQ(e.candidates.front().name, "only");
    EXPECT_EQ(e.candidates.front().patch, (dir_ / "other.patch").string());
}

// The set bounds of [gate]: off unless set, read back through the resolved copy, and a bad value names
// file, line and key.
TEST_F(ManifestErrors, SetRatioBoundsAreReadCheckedAndKept) {
    std::ofstream(dir_ / "m.toml") << valid() << "[gate]\nmax_geomean_ratio_upper = 1.0\nmax_worst_ratio_upper = 1.02\n";
    const Experiment e = load_experiment(dir_ / "m.toml");
    EXPECT_EQ(e.max_geomean_ratio_upper, 1.0);
    EXPECT_EQ(e.max_worst_ratio_upper, 1.02);
    std::ofstream(dir_ / "resolved.toml") << experiment_to_toml(e);
    const Experiment again = load_experiment(dir_ / "resolved.toml");
    EXPECT_EQ(again.max_geomean_ratio_upper, 1.0);
    EXPECT_EQ(again.max_worst_ratio_upper, 1.02);
    EXPECT_FALSE(load_experiment(source_root / "data/experiments/temporal-pair.toml").max_geomean_ratio_upper);

    const std::string low = error_for("len_q = 256\n", "len_q = 256\n[gate]\nmax_geomean_ratio_upper = 0.001\n");
    EXPECT_NE(low.find("m.toml:14:"), std::string::npos) << low;
    EXPECT_NE(low.find("max_geomean_ratio_upper"), std::string::npos) << low;
    const std::string typed = error_for("len_q = 256\n", "len_q = 256\n[gate]\nmax_worst_ratio_upper = \"1.02\"\n");
    EXPECT_NE(typed.find("m.toml:14:"), std::string::npos) << typed;
    EXPECT_NE(typed.find("'max_worst_ratio_upper' must be"), std::string::npos) << typed;
}

// [[gate.waiver]]: a known condition and a reason, kept through the resolved copy; a name that is no
// condition, or a blank reason, is an error naming the line.
TEST_F(ManifestErrors, GateWaiversNameAConditionAndGiveAReason) {
    std::ofstream(dir_ / "m.toml") << valid()
                                   << "[gate]\n[[gate.waiver]]\ncondition = \"plausible-ratio\"\n"
                                      "reason = \"skips masked tiles by design\"\n";
    const Experiment e = load_experiment(dir_ / "m.toml");
    ASSERT_EQ(e.gate_waivers.size(), 1u);
    EXPECT_EQ(e.gate_waivers[0].condition, "plausible-ratio");
    EXPECT_EQ(e.gate_waivers[0].reason, "skips masked tiles by design");
    std::ofstream(dir_ / "resolved.toml") << experiment_to_toml(e);
    EXPECT_EQ(load_experiment(dir_ / "resolved.toml").gate_waivers, e.gate_waivers);
    EXPECT_TRUE(load_experiment(source_root / "data/experiments/temporal-pair.toml").gate_waivers.empty());

    const std::string unknown = error_for(
        "len_q = 256\n", "len_q = 256\n[gate]\n[[gate.waiver]]\ncondition = \"plausible-ratios\"\nreason = \"x\"\n");
    EXPECT_NE(unknown.find("m.toml:15:"), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("'plausible-ratios' is no gate condition"), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("plausible-ratio"), std::string::npos) << unknown;
    const std::string blank = error_for(
        "len_q = 256\n", "len_q = 256\n[gate]\n[[gate.waiver]]\ncondition = \"spills\"\nreason = \" \"\n");
    EXPECT_NE(blank.find("m.toml:16:"), std::string::npos) << blank;
    EXPECT_NE(blank.find("needs a reason"), std::string::npos) << blank;
    const std::string missing =
        error_for("len_q = 256\n", "len_q = 256\n[gate]\n[[gate.waiver]]\ncondition = \"spills\"\n");
    EXPECT_NE(missing.find("reason"), std::string::npos) << missing;
}

}  // namespace s2tp::unit_experiment_manifest
