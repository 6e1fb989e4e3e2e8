#include "support/errors.h"
#include "scratch_directory.h"
#include "pipeline/cli.h"
#include "pipeline/stage_pipeline.h"

#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_stage_pipeline {

namespace {

// Drives the real framework with stage bodies that record whether they ran.
class Pipeline : public ::testing::Test {
protected:
    void SetUp() override {
        run_ = std::make_unique<RunDirectory>(root_);
    }
    ExitCode stage(Stage s, const std::string &input, bool force = false, StageStatus status = StageStatus::passed) {
        StageWork work;
        work.stage = s;
        work.add_inputs = [&](Fingerprint &f) { f.add("input", input); };
        work.run = [&, status] {
            ++runs_;
            StageResult r;
            r.status = status;
            if (status == StageStatus::failed) r.reasons.push_back("planted failure");
            return r;
        };
        return run_stage(work, force);
    }
    // The framework's own way in: a context for the stage (which checks its precondition), then the stage.
    ExitCode run_stage(StageWork work, bool force) {
        std::optional<StageContext> context;
        if (work.stage == Stage::prepare) context.emplace(root_, std::nullopt);
        else context.emplace(work.stage, root_);
        work.force = force;
        return s2tp::run_stage(*context, work, quiet_);
    }
    bool fresh(Stage s) { return inspect_run(*run_)[static_cast<std::size_t>(s)].fresh; }

    ScratchDirectory scratch_{"pipeline"};
    const fs::path root_ = scratch_.path();
    std::unique_ptr<RunDirectory> run_;
    Reporter quiet_{false, 0};
    int runs_ = 0;
};

}  // namespace

TEST_F(Pipeline, LaterStageNeedsThePreviousCheckpoint) {
    try {
        stage(Stage::build, "x");
        FAIL() << "build ran without prepare";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::precondition);
        EXPECT_NE(std::string(e.what()).find("run 'sage2tp prepare' first"), std::string::npos) << e.what();
    }
    EXPECT_EQ(runs_, 0);
}

// A run that stopped for lack of a GPU says so at the next stage, instead of advising to run the stage
// that could not run here.
TEST_F(Pipeline, AMissingCheckpointOfARecordedStopRepeatsTheStop) {
    std::vector<StageState> states;
    for (Stage s : all_stages()) states.push_back(StageState{s, {}, false, ""});
    const StageStop stop{Stage::sanitize, "no GPU", "sanitize needs an NVIDIA GPU",
                         "copy the run to a GPU host and run 'sage2tp run --run runs/x' there", "2026-12-06T07:50:00Z"};
    try {
        require_previous(states, Stage::time, stop);
        FAIL() << "time ran without parity";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::precondition);
        EXPECT_NE(std::string(e.what()).find("which is missing: the run stopped at sanitize: no GPU; copy the run to a GPU "
                                             "host and run 'sage2tp run --run runs/x' there"),
                  std::string::npos)
            << e.what();
        EXPECT_EQ(std::string(e.what()).find("run 'sage2tp parity' first"), std::string::npos) << e.what();
    }
    // A stop after the missing stage explains nothing about it.
    try {
        require_previous(states, Stage::build, stop);
        FAIL() << "build ran without prepare";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("run 'sage2tp prepare' first"), std::string::npos) << e.what();
    }
}

TEST_F(Pipeline, UnchangedInputsAreUpToDate) {
    EXPECT_EQ(stage(Stage::prepare, "a"), ExitCode::ok);
    EXPECT_EQ(stage(Stage::prepare, "a"), ExitCode::ok);
    EXPECT_EQ(runs_, 1);
    EXPECT_EQ(stage(Stage::prepare, "a", /*force=*/true), ExitCode::ok);
    EXPECT_EQ(runs_, 2);
}

TEST_F(Pipeline, RerunningAStageMakesEveryLaterCheckpointStale) {
    stage(Stage::prepare, "a");
    stage(Stage::build, "b");
    stage(Stage::sanitize, "c");
    EXPECT_TRUE(fresh(Stage::build));
    EXPECT_TRUE(fresh(Stage::sanitize));

    stage(Stage::prepare, "a2");  // different inputs: runs again, new digest
    auto states = inspect_run(*run_);
    EXPECT_TRUE(states[0].fresh);
    EXPECT_FALSE(states[1].fresh);
    EXPECT_NE(states[1].stale_reason.find("prepare has been re-run"), std::string::npos) << states[1].stale_reason;
    EXPECT_FALSE(states[2].fresh);
    EXPECT_NE(states[2].stale_reason.find("build is stale"), std::string::npos) << states[2].stale_reason;

    // A stale previous checkpoint is not evidence: sanitize refuses until build runs again.
    EXPECT_THROW(stage(Stage::sanitize, "c"), Error);
    int before = runs_;
    stage(Stage::build, "b");  // same inputs, but the previous digest changed: it must run
    EXPECT_EQ(runs_, before + 1);
    EXPECT_TRUE(fresh(Stage::build));
}

TEST_F(Pipeline, FailedStageBlocksTheNextAndIsNeverUpToDate) {
    stage(Stage::prepare, "a");
    EXPECT_EQ(stage(Stage::build, "b", false, StageStatus::failed), ExitCode::stop);
    try {
        stage(Stage::sanitize, "c");
        FAIL();
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::precondition);
        EXPECT_NE(std::string(e.what()).find("build failed"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("planted failure"), std::string::npos) << e.what();
    }
    int before = runs_;
    stage(Stage::build, "b");
    EXPECT_EQ(runs_, before + 1);
}

TEST_F(Pipeline, SkippedStageLetsTheNextRun) {
    stage(Stage::prepare, "a");
    stage(Stage::build, "b");
    EXPECT_EQ(stage(Stage::sanitize, "c", false, StageStatus::skipped), ExitCode::ok);
    EXPECT_EQ(stage(Stage::parity, "d"), ExitCode::ok);
}

TEST_F(Pipeline, EditedCheckpointIsNotTrustedAndBlocksLaterStages) {
    stage(Stage::prepare, "a");
    stage(Stage::build, "b");
    std::ofstream(checkpoint_path(*run_, Stage::build), std::ios::app) << "# hand edit\nstatus = 'passed'\n";
    auto states = inspect_run(*run_);
    EXPECT_FALSE(states[1].read.checkpoint);
    EXPECT_NE(states[1].stale_reason.find("not trusted"), std::string::npos);
    EXPECT_THROW(stage(Stage::sanitize, "c"), Error);
    // Re-running the stage replaces the untrusted file.
    int before = runs_;
    stage(Stage::build, "b");
    EXPECT_EQ(runs_, before + 1);
    EXPECT_TRUE(fresh(Stage::build));
}

TEST_F(Pipeline, AnArtifactNoLongerAsRecordedMakesItsCheckpointUntrusted) {
    ASSERT_EQ(stage(Stage::prepare, "a"), ExitCode::ok);
    fs::create_directories(root_ / "builds");
    std::ofstream(root_ / "builds/k.cubin") << "cubin";
    StageWork work;
    work.stage = Stage::build;
    work.add_inputs = [](Fingerprint &f) { f.add("input", "b"); };
    work.run = [&] {
        StageResult r;
        r.artifacts.insert("baseline:k.cu", toml::table{{"path", "builds/k.cubin"}, {"sha256", sha256_file(root_ / "builds/k.cubin")}});
        return r;
    };
    ASSERT_EQ(run_stage(work, false), ExitCode::ok);
    EXPECT_TRUE(fresh(Stage::build));

    std::ofstream(root_ / "builds/k.cubin") << "changed";
    auto states = inspect_run(*run_);
    EXPECT_FALSE(states[1].read.checkpoint);
    EXPECT_NE(states[1].stale_reason.find("artifact builds/k.cubin no longer has the sha256"), std::string::npos)
        << states[1].stale_reason;
    fs::remove(root_ / "builds/k.cubin");
    states = inspect_run(*run_);
    EXPECT_NE(states[1].stale_reason.find("artifact builds/k.cubin is missing"), std::string::npos) << states[1].stale_reason;
    try {
        stage(Stage::sanitize, "c");
        FAIL() << "sanitize trusted a build whose cubin is gone";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::precondition);
    }
}

// A host without what a stage needs (work.unavailable): the stage's passed checkpoint stands while its
// outputs verify, without running the body; once they do not, the command ends with the stage's error.
TEST_F(Pipeline, AnUnavailableStageKeepsItsIntactCheckpointOrEndsWithItsError) {
    stage(Stage::prepare, "a");
    stage(Stage::build, "b");
    ASSERT_EQ(runs_, 2);
    bool intact = true;
    StageWork work;
    work.stage = Stage::build;
    work.run = [&] { ++runs_; return StageResult{}; };
    work.verify_outputs = [&](const Checkpoint &) { return intact ? std::string() : std::string("k.cubin is missing"); };
    work.unavailable = Error(ExitCode::missing_tool, "no nvcc here");
    work.keep_reason = "no nvcc on this host";
    int then_calls = 0;
    work.then = [&](ExitCode code) { ++then_calls; return code; };
    EXPECT_EQ(run_stage(work, false), ExitCode::ok);
    EXPECT_EQ(runs_, 2);
    EXPECT_EQ(then_calls, 1);
    intact = false;
    try {
        run_stage(work, false);
        FAIL() << "kept a checkpoint whose outputs do not verify";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::missing_tool);
        EXPECT_STREQ(e.what(), "no nvcc here");
    }
    EXPECT_EQ(runs_, 2);
}

TEST(TreeDigest, ASymbolicLinkIsHashedAsALinkNeverFollowed) {
    const ScratchDirectory scratch("tree");
    const fs::path &root = scratch.path();
    fs::create_directories(root / "tree/sub");
    std::ofstream(root / "outside.txt") << "secret";
    std::ofstream(root / "tree/sub/a.cu") << "a";
    fs::create_symlink(root / "outside.txt", root / "tree/link");
    fs::create_directory_symlink(root, root / "tree/sub/loop");
    const std::string before = Fingerprint().add_tree("t", root / "tree").hex();
    std::ofstream(root / "outside.txt") << "changed";
    EXPECT_EQ(Fingerprint().add_tree("t", root / "tree").hex(), before) << "the digest followed a link out of the tree";
    fs::remove(root / "tree/link");
    fs::create_symlink(root / "elsewhere.txt", root / "tree/link");
    EXPECT_NE(Fingerprint().add_tree("t", root / "tree").hex(), before) << "a changed link target went unnoticed";
}

namespace {

TEST(ElapsedAndEta, ExtrapolatesTheRestFromTheShareDone) {
    EXPECT_EQ(elapsed_and_eta(72, 0.5), "1m12s elapsed, ETA 1m12s");
    EXPECT_EQ(elapsed_and_eta(30, 0.75), "30s elapsed, ETA 10s");
    EXPECT_EQ(elapsed_and_eta(5, 0), "5s elapsed, ETA ?");
    EXPECT_EQ(elapsed_and_eta(5, 1), "5s elapsed, done");
}

}  // namespace

}  // namespace s2tp::unit_stage_pipeline
