// What sage2tp slurm decides without a cluster: the tasks it plans, the clusters it refuses, the batch
// script's quoting, how it reads sacct and squeue, and the one rule that turns a task into a verdict
// (a pass only when Slurm completed it, unrequeued, with every stage and the gate passed).
#include "build_config.h"
#include "figures/cluster_verdicts.h"
#include "support/errors.h"
#include "tools/slurm/slurm_jobs.h"
#include "tools/slurm/slurm_submission.h"

#include <gtest/gtest.h>

using namespace s2tp;

namespace s2tp::unit_slurm_plan {

namespace {

const ArchLimitsTable &limits() {
    static const ArchLimitsTable table = load_arch_limits(std::string(S2TP_SOURCE_ROOT) + "/data/arch_limits.toml");
    return table;
}

template <typename Body>
std::string usage_error(Body body) {
    try {
        body();
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no Error(usage)";
    return "";
}

ClusterTaskResult finished(std::vector<ClusterStageOutcome> stages, int restarts = 0) {
    ClusterTaskResult result;
    result.node = "n1";
    result.finished = true;
    result.restart_count = restarts;
    result.stages = std::move(stages);
    return result;
}

const ClusterTaskIdentity kTask{0, "sm_90a", "h200", "slurm/s/task-0/run", 1};

}  // namespace

TEST(SlurmPlan, OneTaskPerArchKindAndRepeatWithTheArchRowAsFeature) {
    const std::vector<SlurmTaskPlan> tasks = plan_slurm_tasks({"sm_89", "sm_90a"}, {"h100", "h200"}, 2, limits());
    ASSERT_EQ(tasks.size(), 8u);
    EXPECT_EQ(tasks[0].constraint, "sm_89&h100");
    EXPECT_EQ(tasks[7].constraint, "sm_90&h200");
    EXPECT_EQ(tasks[7].repeat, 2);
    for (std::size_t i = 0; i < tasks.size(); ++i) EXPECT_EQ(tasks[i].task, static_cast<int>(i));
    const std::vector<SlurmTaskPlan> any = plan_slurm_tasks({"sm_90a"}, {}, 1, limits());
    ASSERT_EQ(any.size(), 1u);
    EXPECT_EQ(any[0].constraint, "sm_90");
    EXPECT_EQ(any[0].gpu_kind, "any");
}

TEST(SlurmPlan, RefusesWhatCannotBecomeAConstraint) {
    EXPECT_NE(usage_error([] { plan_slurm_tasks({"sm_90a"}, {"h200|a100"}, 1, limits()); }).find("not a node feature"),
              std::string::npos);
    EXPECT_NE(usage_error([] { plan_slurm_tasks({"sm_90a"}, {"$(touch x)"}, 1, limits()); }).find("not a node feature"),
              std::string::npos);
    EXPECT_NE(usage_error([] { plan_slurm_tasks({"sm_42"}, {}, 1, limits()); }).find("sm_42"), std::string::npos);
    usage_error([] { plan_slurm_tasks({"sm_90a"}, {}, 0, limits()); });
}

TEST(SlurmPlan, ClusterCheckNamesTheKindTheArchAndThePair) {
    const std::vector<SlurmNode> nodes{{"a", {"sm_89", "rtx4090"}, "idle"}, {"b", {"sm_90", "h100"}, "idle"}};
    check_cluster_can_run(plan_slurm_tasks({"sm_90a"}, {"h100"}, 1, limits()), nodes);
    EXPECT_NE(usage_error([&] { check_cluster_can_run(plan_slurm_tasks({"sm_90a"}, {"h200"}, 1, limits()), nodes); })
                  .find("unknown GPU constraint 'h200'"),
              std::string::npos);
    const std::string arch = usage_error([&] { check_cluster_can_run(plan_slurm_tasks({"sm_120a"}, {}, 1, limits()), nodes); });
    EXPECT_NE(arch.find("no node of the cluster can run sm_120a"), std::string::npos) << arch;
    EXPECT_NE(arch.find("b (h100,sm_90)"), std::string::npos) << arch;
    EXPECT_NE(usage_error([&] { check_cluster_can_run(plan_slurm_tasks({"sm_89"}, {"h100"}, 1, limits()), nodes); })
                  .find("both 'sm_89' and 'h100'"),
              std::string::npos);
}

TEST(SlurmPlan, BatchScriptQuotesEveryPath) {
    EXPECT_EQ(shell_quoted("/a b/it's $(x)"), "'/a b/it'\\''s $(x)'");
    const std::string script = slurm_batch_script("/opt/s2tp/sage2tp", "/runs/r `x`/slurm/s/plan.toml");
    EXPECT_NE(script.find("exec '/opt/s2tp/sage2tp' slurm task --plan '/runs/r `x`/slurm/s/plan.toml'\n"), std::string::npos)
        << script;
    usage_error([] { shell_quoted("a\nb"); });
}

TEST(SlurmJobs, ReadsSacctAndSqueueTasksAndSkipsSteps) {
    const auto sacct = parse_sacct_lines("12", "12_0|FAILED|3:0|n1|NonZeroExitCode\n12_0.batch|FAILED|3:0|n1|\n"
                                               "12_1|CANCELLED by 0|0:0|None assigned|None\n12_[2-3]|PENDING|0:0|None assigned|ReqNodeNotAvail\n"
                                               "13_0|COMPLETED|0:0|n2|None\n");
    ASSERT_EQ(sacct.size(), 2u);
    EXPECT_EQ(sacct.at(0).state, "FAILED");
    EXPECT_EQ(sacct.at(0).exit_code, "3:0");
    EXPECT_EQ(sacct.at(1).state, "CANCELLED");
    EXPECT_EQ(sacct.at(1).node, "");
    EXPECT_EQ(sacct.at(1).reason, "");
    const auto squeue = parse_squeue_lines("0|FAILED|NonZeroExitCode|n1\n1|CANCELLED|JobHeldUser|\n2|PENDING|ReqNodeNotAvail, UnavailableNodes:n1|\n");
    ASSERT_EQ(squeue.size(), 3u);
    EXPECT_EQ(squeue.at(2).reason, "ReqNodeNotAvail, UnavailableNodes:n1");
    EXPECT_TRUE(valid_feature_name("rtx-4090_a.b"));
    EXPECT_FALSE(valid_feature_name("a&b"));
    EXPECT_FALSE(valid_feature_name(""));
}

TEST(ClusterVerdict, PassesOnlyWhenCompletedUnrequeuedAndEveryStagePassed) {
    const std::vector<ClusterStageOutcome> all_pass{{"sanitize", 0, ""}, {"parity", 0, ""}, {"time", 0, ""}, {"gate", 0, "PASS"}};
    EXPECT_TRUE(judge_cluster_task(kTask, ClusterSlurmState{"COMPLETED", "", "n1"}, finished(all_pass)).passed);
    // Requeued once, then everything passed: shown as requeued, not a pass.
    const ClusterTaskVerdict requeued = judge_cluster_task(kTask, ClusterSlurmState{"COMPLETED", "", "n1"}, finished(all_pass, 1));
    EXPECT_FALSE(requeued.passed);
    EXPECT_EQ(requeued.verdict, "PASS, requeued 1 time");
    // The process wrote its last pass and Slurm still did not complete the job.
    EXPECT_EQ(judge_cluster_task(kTask, ClusterSlurmState{"TIMEOUT", "", "n1"}, finished(all_pass)).verdict, "timeout");
    const ClusterTaskVerdict no_gpu = judge_cluster_task(kTask, ClusterSlurmState{"FAILED", "NonZeroExitCode", "n1"},
                                                         finished({{"sanitize", 3, "sanitize needs an NVIDIA GPU"}}));
    EXPECT_EQ(no_gpu.verdict, "no GPU or tool (exit 3) at sanitize");
    EXPECT_EQ(no_gpu.detail, "sanitize needs an NVIDIA GPU");
    EXPECT_FALSE(no_gpu.passed);
    EXPECT_EQ(judge_cluster_task(kTask, ClusterSlurmState{"FAILED", "", "n1"},
                                 finished({{"sanitize", 0, ""}, {"parity", 1, "bytes differ"}}))
                  .verdict,
              "failed at parity (exit 1)");
    EXPECT_EQ(judge_cluster_task(kTask, ClusterSlurmState{"FAILED", "", "n1"},
                                 finished({{"sanitize", 0, ""}, {"parity", 0, ""}, {"time", 0, ""}, {"gate", 1, "FAIL: x"}}))
                  .verdict,
              "FAIL");
}

TEST(ClusterVerdict, UnfinishedCancelledAndLostTasksSayWhatTheyAre) {
    const ClusterTaskVerdict pending =
        judge_cluster_task(kTask, ClusterSlurmState{"PENDING", "ReqNodeNotAvail, UnavailableNodes:n1", ""}, std::nullopt);
    EXPECT_EQ(pending.verdict, "pending");
    EXPECT_EQ(pending.detail, "ReqNodeNotAvail, UnavailableNodes:n1");
    EXPECT_EQ(judge_cluster_task(kTask, ClusterSlurmState{"CANCELLED", "", ""}, std::nullopt).detail, "before it started");
    ClusterTaskResult stopped;
    stopped.stages = {{"sanitize", 0, ""}, {"parity", -1, "started"}};
    const ClusterTaskVerdict cancelled = judge_cluster_task(kTask, ClusterSlurmState{"CANCELLED", "", "n1"}, stopped);
    EXPECT_EQ(cancelled.verdict, "cancelled");
    EXPECT_EQ(cancelled.detail, "during parity");
    EXPECT_EQ(judge_cluster_task(kTask, ClusterSlurmState{"NODE_FAIL", "", "n1"}, stopped).verdict, "node_fail");
    EXPECT_EQ(judge_cluster_task(kTask, std::nullopt, std::nullopt).verdict, "lost");
    EXPECT_EQ(judge_cluster_task(kTask, ClusterSlurmState{"REQUEUED", "", ""}, stopped).verdict, "requeued");
    for (const auto &state : {"PENDING", "RUNNING", "CANCELLED", "REQUEUED"})
        EXPECT_FALSE(judge_cluster_task(kTask, ClusterSlurmState{state, "", ""}, finished({{"gate", 0, ""}})).passed) << state;
}

TEST(ClusterVerdict, TableRoundTripsThroughToml) {
    ClusterVerdicts verdicts;
    verdicts.job = "12";
    verdicts.submission = "slurm/s";
    verdicts.tasks.push_back(judge_cluster_task(kTask, ClusterSlurmState{"FAILED", "", "n1"}, finished({{"sanitize", 3, "no GPU"}})));
    const ClusterVerdicts back = ClusterVerdicts::from_toml(verdicts.to_toml(), "cluster.toml");
    ASSERT_EQ(back.tasks.size(), 1u);
    EXPECT_EQ(back.tasks[0].verdict, verdicts.tasks[0].verdict);
    EXPECT_EQ(back.tasks[0].node, "n1");
    EXPECT_FALSE(back.all_passed());
    toml::table broken = verdicts.to_toml();
    broken["task"].as_array()->get(0)->as_table()->erase("verdict");
    EXPECT_NE(usage_error([&] { ClusterVerdicts::from_toml(broken, "cluster.toml"); }).find("lacks 'verdict'"), std::string::npos);
}

}  // namespace s2tp::unit_slurm_plan
