// The prepare stage as a function (stages/prepare_stage.h): its typed figures, and prepare_stage on a
// real temporary git repository and on the embedded kernels, with real git.
#include "build_config.h"
#include "scratch_directory.h"
#include "formats/checkpoint_store.h"
#include "stages/prepare_stage.h"
#include "support/hashing.h"
#include "support/process_runner.h"

#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_prepare_stage {

namespace {

std::string slurp(const fs::path &p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

PrepareFigures sample_figures() {
    PrepareFigures f;
    f.manifest = "/home/u/m.toml";
    f.overrides.repository = "/home/u/repo";
    f.overrides.commit = "v1";
    f.overrides.candidate_commits = {{"fast", "feature"}, {"slow", "v0"}};
    f.source = "git";
    f.commit = std::string(40, 'a');
    f.arch = "sm_90a";
    f.baseline_tree_xxh3 = std::string(32, '1');
    f.support_tree_xxh3 = std::string(32, '2');
    f.candidates = {{"fast", "git", std::string(40, 'b'), "/home/u/fast.patch", std::string(64, 'c'), std::string(32, '3')},
                    {"slow", "embedded", std::string(40, 'd'), "", "", std::string(32, '4')}};
    f.summary = "git @ aaaaaaaaaaaa; fast: git @ bbbbbbbbbbbb, patch cccccccccccc; slow: embedded @ dddddddddddd, no patch";
    return f;
}

TEST(PrepareFigures, RoundTripThroughToml) {
    const PrepareFigures f = sample_figures();
    const toml::table t = f.to_toml();
    EXPECT_EQ(t["candidates"]["fast"]["patch_sha256"].value_or(std::string()), std::string(64, 'c'));
    EXPECT_EQ(t["overrides"]["candidate_commits"]["fast"].value_or(std::string()), "feature");
    const PrepareFigures back = PrepareFigures::from_toml(t, "prepare.toml");
    EXPECT_EQ(back.to_toml(), t);
    ASSERT_EQ(back.candidates.size(), 2u);
    EXPECT_EQ(back.candidates[1].name, "slow");
    EXPECT_EQ(back.candidates[1].patch, "");
    EXPECT_EQ(back.overrides.repository, f.overrides.repository);
    EXPECT_FALSE(back.overrides.candidate_commit);
    EXPECT_EQ(back.support_tree_xxh3, f.support_tree_xxh3);
}

// prepare's figures are required (their field table says so): a missing or mistyped one is an error
// naming the checkpoint file and the key, however deep the key is.
std::string prepare_figures_error(const toml::table &figures) {
    try {
        PrepareFigures::from_toml(figures, "runs/r/checkpoints/prepare.toml");
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

TEST(PrepareFigures, AMissingOrMistypedFigureNamesTheFileAndTheKey) {
    toml::table t = sample_figures().to_toml();
    t["candidates"]["slow"].as_table()->erase("tree_xxh3");
    EXPECT_EQ(prepare_figures_error(t),
              "runs/r/checkpoints/prepare.toml: figure 'candidates.slow.tree_xxh3' is missing or not of type string");
    t = sample_figures().to_toml();
    t.insert_or_assign("arch", 90);
    EXPECT_EQ(prepare_figures_error(t), "runs/r/checkpoints/prepare.toml: figure 'arch' is missing or not of type string");
    t = sample_figures().to_toml();
    t.erase("candidates");
    EXPECT_EQ(prepare_figures_error(t),
              "runs/r/checkpoints/prepare.toml: figure 'candidates' is missing, empty or not a table of tables");
    t.insert("candidates", toml::table{});
    EXPECT_NE(prepare_figures_error(t).find("figure 'candidates' is missing, empty"), std::string::npos);
    t.insert_or_assign("candidates", toml::table{{"fast", "not a table"}});
    EXPECT_NE(prepare_figures_error(t).find("figure 'candidates' is missing, empty"), std::string::npos);
    // What is not required reads back empty.
    t = sample_figures().to_toml();
    t.erase("support_tree_xxh3");
    t.erase("overrides");
    const PrepareFigures without = PrepareFigures::from_toml(t, "prepare.toml");
    EXPECT_EQ(without.support_tree_xxh3, "");
    EXPECT_FALSE(without.overrides.repository);
}

class PrepareStage : public ::testing::Test {
protected:
    void SetUp() override {
        if (!find_program("git")) GTEST_SKIP() << "git is not installed";
        fs::create_directories(dir_ / "repo/kernels");
        std::ofstream(dir_ / "repo/kernels/k.cu") << "// kernel\nint schedule = 0;\n";
        for (std::vector<std::string> args : {std::vector<std::string>{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "k"}}) {
            args.insert(args.begin(), {"git", "-C", (dir_ / "repo").string()});
            ProcessOptions options;
            options.extra_environment = {{"GIT_AUTHOR_NAME", "t"}, {"GIT_AUTHOR_EMAIL", "t@t"},
                                         {"GIT_COMMITTER_NAME", "t"}, {"GIT_COMMITTER_EMAIL", "t@t"}};
            ASSERT_EQ(run_process(args, options).exit_code, 0);
        }
        commit_ = run_process({"git", "-C", (dir_ / "repo").string(), "rev-parse", "HEAD"}).out.substr(0, 40);
    }
    // A manifest on the repository with one [[candidate]] per (name, patch text).
    PrepareRequest request(const std::vector<std::pair<std::string, std::string>> &candidates) {
        std::ofstream manifest(dir_ / "m.toml");
        manifest << "[experiment]\nname = \"e\"\n[source]\nkind = \"git\"\nrepository = \"repo\"\ncommit = \"" << commit_
                 << "\"\nkernel_sources = [\"kernels/k.cu\"]\nsupport_sources = [\"kernels/k.cu\"]\n";
        for (const auto &[name, patch] : candidates) {
            std::ofstream(dir_ / (name + ".diff")) << patch;
            manifest << "[[candidate]]\nname = \"" << name << "\"\npatch = \"" << name << ".diff\"\n";
        }
        manifest << "[workload]\nname = \"w\"\nlen_q = 128\n";
        manifest.close();
        PrepareRequest r;
        r.manifest = dir_ / "m.toml";
        r.experiment = load_experiment(r.manifest);
        r.embedded_kernels = [] { return fs::path(S2TP_SOURCE_ROOT) / "kernels"; };
        return r;
    }
    static std::string patch_to(int schedule) {
        return "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -1,2 +1,2 @@\n // kernel\n-int schedule = 0;\n+int schedule = " +
               std::to_string(schedule) + ";\n";
    }
    PrepareOutcome prepare(const PrepareRequest &r) {
        StageContext context(dir_ / "run", r.experiment);
        return prepare_stage(context, r, Reporter().without_results());
    }
    ScratchDirectory scratch_{"prepare-stage"};
    const fs::path dir_ = scratch_.path();
    std::string commit_;
};

TEST_F(PrepareStage, MakesATreeAndAPatchCopyPerCandidate) {
    const PrepareRequest r = request({{"one", patch_to(1)}, {"two", patch_to(2)}});
    const PrepareOutcome outcome = prepare(r);
    ASSERT_EQ(outcome.exit_code, ExitCode::ok);
    ASSERT_TRUE(outcome.figures);
    const PrepareFigures &f = *outcome.figures;
    EXPECT_EQ(f.commit, commit_);
    EXPECT_EQ(f.manifest, (dir_ / "m.toml").string());
    EXPECT_TRUE(f.support_tree_xxh3.empty()) << "the baseline lists support_sources";
    ASSERT_EQ(f.candidates.size(), 2u);
    for (int i = 0; i < 2; ++i) {
        const PreparedCandidateFigures &c = f.candidates[i];
        SCOPED_TRACE(c.name);
        EXPECT_EQ(c.commit, commit_);
        EXPECT_EQ(c.patch_sha256, sha256_hex(patch_to(i + 1)));
        const fs::path tree = dir_ / "run/trees" / c.name;
        EXPECT_NE(slurp(tree / "kernels/k.cu").find("schedule = " + std::to_string(i + 1)), std::string::npos);
        EXPECT_EQ(c.tree_xxh3, Fingerprint().add_tree("tree", tree).hex());
        EXPECT_EQ(slurp(dir_ / "run/inputs" / (c.name + ".patch")), patch_to(i + 1));
    }
    EXPECT_NE(f.summary.find("; one: patch "), std::string::npos) << f.summary;
    EXPECT_NE(slurp(dir_ / "run/trees/baseline/kernels/k.cu").find("schedule = 0"), std::string::npos);
    EXPECT_FALSE(fs::exists(dir_ / "run/.prepare-new"));

    // The same request again is up to date, and reports the standing figures.
    const PrepareOutcome again = prepare(r);
    EXPECT_EQ(again.exit_code, ExitCode::ok);
    ASSERT_TRUE(again.figures);
    EXPECT_EQ(again.figures->to_toml(), f.to_toml());
}

TEST_F(PrepareStage, APatchThatDoesNotApplyNamesItsCandidateAndLeavesThePreviousRun) {
    ASSERT_EQ(prepare(request({{"one", patch_to(1)}})).exit_code, ExitCode::ok);
    const std::string before = slurp(dir_ / "run/checkpoints/01-prepare.toml");
    const std::string bad = "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -1,2 +1,2 @@\n // kernel\n-int schedule = 9;\n+int x;\n";
    const PrepareOutcome outcome = prepare(request({{"one", patch_to(1)}, {"late", bad}}));
    EXPECT_EQ(outcome.exit_code, ExitCode::stop);
    EXPECT_FALSE(outcome.figures);
    ASSERT_EQ(outcome.reasons.size(), 1u);
    EXPECT_NE(outcome.reasons[0].find("of candidate 'late' does not apply at " + commit_), std::string::npos) << outcome.reasons[0];
    // Nothing half-made: the old checkpoint, trees and inputs stand; no staging; no tree of 'late'.
    EXPECT_EQ(slurp(dir_ / "run/checkpoints/01-prepare.toml"), before);
    EXPECT_FALSE(fs::exists(dir_ / "run/.prepare-new"));
    EXPECT_FALSE(fs::exists(dir_ / "run/trees/late"));
    EXPECT_FALSE(fs::exists(dir_ / "run/inputs/late.patch"));
    EXPECT_NE(slurp(dir_ / "run/trees/one/kernels/k.cu").find("schedule = 1"), std::string::npos);
    const std::string worktrees = run_process({"git", "-C", (dir_ / "repo").string(), "worktree", "list", "--porcelain"}).out;
    EXPECT_EQ(worktrees.find("late"), std::string::npos) << worktrees;
}

TEST_F(PrepareStage, RenamedCandidatesReplaceTheOldTreesAndTheirRegistrations) {
    ASSERT_EQ(prepare(request({{"old", patch_to(1)}})).exit_code, ExitCode::ok);
    ASSERT_EQ(prepare(request({{"new-a", patch_to(2)}, {"new-b", patch_to(3)}})).exit_code, ExitCode::ok);
    EXPECT_FALSE(fs::exists(dir_ / "run/trees/old"));
    EXPECT_FALSE(fs::exists(dir_ / "run/inputs/old.patch"));
    EXPECT_TRUE(fs::is_directory(dir_ / "run/trees/new-b"));
    const std::string worktrees = run_process({"git", "-C", (dir_ / "repo").string(), "worktree", "list", "--porcelain"}).out;
    EXPECT_EQ(worktrees.find("trees/old"), std::string::npos) << worktrees;
    EXPECT_NE(worktrees.find("trees/new-a"), std::string::npos) << worktrees;
    const CheckpointRead read = read_checkpoint(dir_ / "run/checkpoints/01-prepare.toml");
    ASSERT_TRUE(read.checkpoint) << read.problem;
    EXPECT_FALSE(read.checkpoint->artifacts["trees"]["old"]);
    EXPECT_EQ(read.checkpoint->artifacts["patches"]["new-b"]["path"].value_or(std::string()), "inputs/new-b.patch");
}

}  // namespace

}  // namespace s2tp::unit_prepare_stage
