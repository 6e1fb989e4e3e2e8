// End-to-end tests of the sage2tp binary: the CLI contract (exit codes, messages, --json) and the
// prepare stage on the embedded default and on real temporary git repositories.
#include "cli_fixture.h"

#include "formats/checkpoint_store.h"
#include "build_config.h"
#include "formats/tensor_io.h"
#include "model/experiment_manifest.h"
#include "model/input_generator.h"
#include "lock_holder.h"
#include "support/hashing.h"
#include "support/process_runner.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

class Cli : public CliTest {
protected:
    // A git repository holding kernels/k.cu ("int schedule = 0;") and its commit id.
    std::string make_repository(const fs::path &repo) {
        fs::create_directories(repo / "kernels");
        std::ofstream(repo / "kernels/k.cu") << "// kernel\nint schedule = 0;\n";
        return commit_repository(repo);
    }
    fs::path write_manifest(const std::string &source, const std::string &patch_text) {
        std::ofstream(dir_ / "c.patch") << patch_text;
        std::ofstream(dir_ / "m.toml") << "[experiment]\nname = \"exp\"\n[source]\n" << source
                                       << "kernel_sources = [\"kernels/k.cu\"]\n[candidate]\npatch = \"c.patch\"\n"
                                          "[workload]\nname = \"w\"\nlen_q = 128\n";
        return dir_ / "m.toml";
    }
    static std::string good_patch() {
        return "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -1,2 +1,2 @@\n // kernel\n-int schedule = 0;\n+int schedule = 1;\n";
    }
    Checkpoint prepare_checkpoint(const fs::path &run) {
        CheckpointRead read = read_checkpoint(run / "checkpoints/01-prepare.toml");
        EXPECT_TRUE(read.checkpoint) << read.problem;
        return read.checkpoint ? *read.checkpoint : Checkpoint{};
    }
};

}  // namespace

TEST_F(Cli, UsageErrorsExitTwoWithAClearMessage) {
    ProcessResult r = sage2tp({"prepare", "--no-such-option"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("no-such-option"), std::string::npos) << r.err;
    r = sage2tp({"status", "stray"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("unexpected argument 'stray'"), std::string::npos) << r.err;
    r = sage2tp({"frobnicate"});
    EXPECT_EQ(r.exit_code, 2);
    r = sage2tp({});
    EXPECT_EQ(r.exit_code, 2);
    r = sage2tp({"--version"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out.rfind("sage2tp ", 0), 0u);
}

TEST_F(Cli, OverridesAcceptExactlyTheManifestsRanges) {
    // One range table serves the manifest and the flags: what [gate] max_candidate_p50_ms accepts (0
    // included), --max-p50-ms accepts, and the message names the manifest key.
    struct Case {
        std::vector<std::string> args;
        const char *message;
    };
    for (const Case &c : std::vector<Case>{
             {{"gate", "--max-p50-ms", "-1"}, "--max-p50-ms must be in [0, 1e+09] (as [gate] max_candidate_p50_ms)"},
             // Issue 36 item 9: the value given, never rounded ("got 0").
             {{"gate", "--max-ratio", "0.001"}, "--max-ratio must be in [0.01, 100] (as [gate] max_ratio_upper), got 0.001"},
             {{"gate", "--max-ratio", "0.005"}, "got 0.005"},
             {{"gate", "--max-spill-growth-bytes", "1.5"}, "--max-spill-growth-bytes must be a whole number"},
             {{"time", "--repeat", "0"}, "--repeat must be in [1, 100] (as [time] repeats)"},
             {{"time", "--min-rounds", "20.5"}, "--min-rounds must be a whole number (as [time] min_rounds)"},
             {{"time", "--budget", "0.5"}, "--budget must be in [1, 86400] (as [time] budget_seconds)"}}) {
        const ProcessResult r = sage2tp(c.args);
        EXPECT_EQ(r.exit_code, 2) << c.args[1] << " " << c.args[2] << ": " << r.err;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    }
    // In range, a limit of 0 is a value like any other: the command goes on to look for a run.
    const ProcessResult zero = sage2tp({"gate", "--max-p50-ms", "0"});
    EXPECT_EQ(zero.exit_code, 4) << zero.err;
}

TEST_F(Cli, EveryCommandHasHelp) {
    for (std::string command : {"prepare", "build", "sanitize", "parity", "time", "gate", "run", "status", "compare", "clean"}) {
        ProcessResult r = sage2tp({command, "--help"});
        EXPECT_EQ(r.exit_code, 0) << command;
        EXPECT_NE(r.out.find("sage2tp " + command), std::string::npos) << command << ": " << r.out;
    }
}

// Issue 36 item 2: the gate's help states the relative speed gate's real default, as sage2tp-gate(1) and
// Experiment::default_max_ratio_upper have it (1.0), not "off".
TEST_F(Cli, TheGatesHelpStatesTheRatioGatesRealDefault) {
    const ProcessResult r = sage2tp({"gate", "--help"});
    ASSERT_EQ(r.exit_code, 0);
    std::string help;  // the option's text, its wrapped lines joined
    for (char c : r.out) help += c == '\n' ? ' ' : c;
    while (help.find("  ") != std::string::npos) help.replace(help.find("  "), 2, " ");
    EXPECT_NE(help.find("1.0, faster, when it sets none"), std::string::npos) << r.out;
    EXPECT_EQ(help.find("max_ratio_upper, else off"), std::string::npos) << r.out;
    // Issue 36 item 9: --max-ratio off parses (it turns the gate off); anything else but a ratio is named.
    ProcessResult off = sage2tp({"gate", "--max-ratio", "off"});
    EXPECT_EQ(off.exit_code, 4) << "no run, but the option parsed: " << off.err;
    off = sage2tp({"gate", "--max-ratio", "1.5x"});
    EXPECT_EQ(off.exit_code, 2);
    EXPECT_NE(off.err.find("--max-ratio '1.5x': expected a ratio such as 1.0, or off"), std::string::npos) << off.err;
    EXPECT_NE(slurp(fs::path(S2TP_SOURCE_ROOT) / "man/sage2tp-gate.1").find(".Ic max_ratio_upper ,\nelse 1.0."),
              std::string::npos);
}

// Issue 36 item 9: a mistyped run id gets a did-you-mean naming the run next to it.
TEST_F(Cli, AMistypedRunIdNamesTheRunItWasMeantFor) {
    ASSERT_EQ(sage2tp({"prepare", "--run-id", "tp-fast", "-q"}).exit_code, 0);
    ProcessResult r = sage2tp({"status", "--run-id", "tp-fats"});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("did you mean 'tp-fast'?"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("run 'sage2tp prepare' first"), std::string::npos) << "the run exists; no advice to make one";
    r = sage2tp({"status", "--run-id", "other"});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("run 'sage2tp prepare' first"), std::string::npos) << r.err;
}

TEST_F(Cli, StatusWithoutARunIsAPreconditionError) {
    ProcessResult r = sage2tp({"status"});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("sage2tp prepare"), std::string::npos) << r.err;
}

TEST_F(Cli, PrepareEmbeddedDefaultThenUpToDate) {
    ProcessResult r = sage2tp({"prepare"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    fs::path run = fs::canonical(dir_ / "sage2tp-runs/latest");
    Checkpoint c = prepare_checkpoint(run);
    EXPECT_EQ(c.status, StageStatus::passed);
    EXPECT_EQ(c.figures["source"].value<std::string>(), "embedded");
    EXPECT_EQ(c.figures["commit"].value_or(std::string()).size(), 40u);
    // The candidate is exactly baseline + patch: the schedule line differs, nothing else does.
    std::string base = slurp(run / "trees/baseline/kernels/attention_entry.cu");
    std::string cand = slurp(run / "trees/candidate/kernels/attention_entry.cu");
    EXPECT_NE(base, cand);
    EXPECT_NE(cand.find("TemporalPairSchedule"), std::string::npos);
    EXPECT_EQ(slurp(run / "trees/baseline/kernels/schedule.cuh"), slurp(run / "trees/candidate/kernels/schedule.cuh"));

    r = sage2tp({"prepare"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("prepare: up to date"), std::string::npos) << r.out;

    r = sage2tp({"status", "--json"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out.front(), '{') << r.out;
    EXPECT_NE(r.out.find("\"status\" : \"passed\""), std::string::npos) << r.out;
    // Issue 36 item 9: no "-" in JSON: a stage without a checkpoint is "missing", with no finished_utc.
    EXPECT_EQ(r.out.find("\"-\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"status\" : \"missing\""), std::string::npos) << r.out;
}

// Issue 36 item 1: a prepare naming another experiment never re-purposes the latest run without a word,
// and --new --run-id X makes X.
TEST_F(Cli, AnotherExperimentIsNeverPreparedOverTheLatestRunSilently) {
    // The shipped embedded experiment under another name: another experiment on the same kernels.
    std::string other = slurp(fs::path(S2TP_SOURCE_ROOT) / "data/experiments/temporal-pair.toml");
    other.replace(other.find("name = \"temporal-pair\""), std::string("name = \"temporal-pair\"").size(),
                  "name = \"long-sequence\"");
    for (const std::string folder : {"patches", "workloads"})
        for (std::size_t at; (at = other.find("\"../" + folder + "/")) != std::string::npos;)
            other.replace(at, folder.size() + 5, "\"" + std::string(S2TP_SOURCE_ROOT) + "/data/" + folder + "/");
    std::ofstream(dir_ / "long-sequence.toml") << other;
    ASSERT_EQ(sage2tp({"prepare", "--run-id", "tp", "-q"}).exit_code, 0);
    const std::string held = slurp(dir_ / "sage2tp-runs/tp/experiment.toml");
    ProcessResult r = sage2tp({"prepare", "--manifest", "long-sequence.toml"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("holds the experiment 'temporal-pair'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is the experiment 'long-sequence'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("Pass --new"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(dir_ / "sage2tp-runs/tp/experiment.toml"), held) << "the run is left as it was";
    EXPECT_EQ(sage2tp({"prepare", "--manifest", "temporal-pair"}).exit_code, 0) << "the same experiment again";

    r = sage2tp({"prepare", "--manifest", "long-sequence.toml", "--new", "--run-id", "long"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::is_regular_file(dir_ / "sage2tp-runs/long/experiment.toml")) << "--new --run-id X makes X";
    EXPECT_EQ(fs::canonical(dir_ / "sage2tp-runs/latest"), fs::canonical(dir_ / "sage2tp-runs/long"));
    r = sage2tp({"prepare", "--manifest", "long-sequence.toml", "--new", "--run-id", "tp"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--new: '"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("holds a run already"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(dir_ / "sage2tp-runs/tp/experiment.toml"), held);

    r = sage2tp({"prepare", "--manifest", "long-sequence.toml", "--run-id", "tp", "--force"});
    EXPECT_EQ(r.exit_code, 0) << "--force re-purposes the run on purpose: " << r.err;
    EXPECT_NE(slurp(dir_ / "sage2tp-runs/tp/experiment.toml").find("long-sequence"), std::string::npos);
}

// Issue 36 item 6: a run of another change than the manifest's is named as that change, through prepare
// and through run; a later prepare keeps the name; run passes every prepare option on.
TEST_F(Cli, NameAndDescriptionFollowTheChangeThroughPrepareAndRun) {
    ProcessResult r = sage2tp({"prepare", "--run-id", "refactor", "--name", "refactor-softmax", "--description",
                               "the softmax split into its own header", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const fs::path run = dir_ / "sage2tp-runs/refactor";
    const Experiment prepared = load_experiment(run / "experiment.toml");
    EXPECT_EQ(prepared.name, "refactor-softmax");
    EXPECT_EQ(prepared.description, "the softmax split into its own header");
    EXPECT_EQ(prepare_checkpoint(run).figures["overrides"]["experiment_name"].value_or(std::string()), "refactor-softmax");
    r = sage2tp({"prepare", "--run-id", "refactor"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("prepare: up to date"), std::string::npos) << "the name is kept: " << r.out;
    EXPECT_EQ(load_experiment(run / "experiment.toml").name, "refactor-softmax");
    r = sage2tp({"prepare", "--run-id", "bad", "--name", "a/b"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--name 'a/b'"), std::string::npos) << r.err;

    // run takes prepare's options and passes them on (an arch no table row has stops it at build, after
    // prepare, without compiling anything).
    r = sage2tp({"run", "--new", "--run-id", "via-run", "--name", "via-run-name", "--arch", "sm_1"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("stopped at build"), std::string::npos) << r.err;
    EXPECT_EQ(load_experiment(dir_ / "sage2tp-runs/via-run/experiment.toml").name, "via-run-name") << r.err;
    r = sage2tp({"run", "--no-patch"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--patch and --no-patch are for a manifest with one candidate"), std::string::npos)
        << "prepare got --no-patch from run: " << r.err;
}

// What a killed prepare --candidate-worktree leaves at the run's root is part of the run until the next
// prepare removes it: the run is still a run, and clean removes it with the rest.
TEST_F(Cli, AWorkingTreeDiffLeftByAKilledPrepareIsPartOfTheRun) {
    ASSERT_EQ(sage2tp({"prepare", "--run-id", "r", "-q"}).exit_code, 0);
    const fs::path run = dir_ / "sage2tp-runs/r";
    std::ofstream(run / ".candidate-worktree-0123456789abcdef.patch") << "diff\n";
    EXPECT_EQ(sage2tp({"status", "--run-id", "r"}).exit_code, 0);
    ProcessResult r = sage2tp({"prepare", "--run-id", "r"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(fs::exists(run / ".candidate-worktree-0123456789abcdef.patch")) << "the next prepare removes it";
    std::ofstream(run / ".candidate-worktree-fedcba9876543210.patch") << "diff\n";
    r = sage2tp({"clean", "--yes", "--run-id", "r"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(fs::exists(run));
}

TEST_F(Cli, PrepareFromAGitRepositoryWithAPatchThatApplies) {
    std::string commit = make_repository(dir_ / "repo");
    write_manifest("kind = \"git\"\nrepository = \"repo\"\ncommit = \"" + commit + "\"\n", good_patch());
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(prepare_checkpoint(dir_ / "run").figures["commit"].value<std::string>(), commit);
    EXPECT_NE(slurp(dir_ / "run/trees/candidate/kernels/k.cu").find("schedule = 1"), std::string::npos);
    EXPECT_NE(slurp(dir_ / "run/trees/baseline/kernels/k.cu").find("schedule = 0"), std::string::npos);
    ProcessResult worktrees = run_process({"git", "-C", (dir_ / "repo").string(), "worktree", "list"});
    EXPECT_NE(worktrees.out.find("run/trees/baseline"), std::string::npos) << worktrees.out;
    EXPECT_NE(worktrees.out.find("run/trees/candidate"), std::string::npos) << worktrees.out;
}

TEST_F(Cli, AnUnknownKernelAbiFailsPrepareWithADidYouMeanAndTheAdapters) {
    std::string commit = make_repository(dir_ / "repo");
    write_manifest("kind = \"git\"\nrepository = \"repo\"\ncommit = \"" + commit + "\"\nabi = \"flash\"\n", good_patch());
    // Refused by prepare, before any tree is made or anything compiled.
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("[source] abi: unknown kernel ABI 'flash'; the known adapters are sage2tp, sageattention-sm89"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "run" / "trees"));
    write_manifest("kind = \"git\"\nrepository = \"repo\"\ncommit = \"" + commit + "\"\nabi = \"sageattention-sm98\"\n",
                   good_patch());
    r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("unknown kernel ABI 'sageattention-sm98'; did you mean 'sageattention-sm89'?"), std::string::npos)
        << r.err;
}

TEST_F(Cli, PatchThatDoesNotApplyFailsAndLeavesNoTree) {
    std::string commit = make_repository(dir_ / "repo");
    write_manifest("kind = \"git\"\nrepository = \"repo\"\ncommit = \"" + commit + "\"\n",
                   "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -1,2 +1,2 @@\n // kernel\n-int schedule = 7;\n+int schedule = 1;\n");
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("does not apply"), std::string::npos) << r.out;
    // The run directory was new: a failed prepare leaves none, and no worktree registered.
    EXPECT_FALSE(fs::exists(dir_ / "run"));
    ProcessResult worktrees = run_process({"git", "-C", (dir_ / "repo").string(), "worktree", "list", "--porcelain"});
    EXPECT_EQ(worktrees.out.find("run/"), std::string::npos) << worktrees.out;
}

TEST_F(Cli, PatchThatEscapesTheTreeIsRefused) {
    std::string commit = make_repository(dir_ / "repo");
    write_manifest("kind = \"git\"\nrepository = \"repo\"\ncommit = \"" + commit + "\"\n",
                   "--- a/../../outside.txt\n+++ b/../../outside.txt\n@@ -0,0 +1 @@\n+owned\n");
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("outside the source tree"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("c.patch:1"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "outside.txt"));
    EXPECT_FALSE(fs::exists(dir_ / "run/trees"));
}

TEST_F(Cli, UnknownCommitIsAUsageError) {
    make_repository(dir_ / "repo");
    write_manifest("kind = \"git\"\nrepository = \"repo\"\ncommit = \"0123456789abcdef0123456789abcdef01234567\"\n", good_patch());
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("does not exist in repository"), std::string::npos) << r.err;
    // What to do about it, for a shipped manifest pinned to a commit the user's checkout lacks.
    EXPECT_NE(r.err.find("pass --commit REV for the baseline or --candidate-commit REV for a candidate"),
              std::string::npos)
        << r.err;
}

TEST_F(Cli, ManifestErrorsNameFileLineColumn) {
    std::ofstream(dir_ / "bad.toml") << "[experiment]\nname = \"x\"\ncolour = 3\n";
    ProcessResult r = sage2tp({"prepare", "--manifest", "bad.toml"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("bad.toml:3:1: unknown key 'colour'"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "sage2tp-runs"));  // bad input creates no run directory
}

TEST_F(Cli, InterruptedPrepareIsRedoneAndNothingStaleIsTrusted) {
    std::string commit = make_repository(dir_ / "repo");
    write_manifest("kind = \"git\"\nrepository = \"repo\"\ncommit = \"" + commit + "\"\n", good_patch());
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "clean"}).exit_code, 0);
    const std::string expected = prepare_checkpoint(dir_ / "clean").figures["candidates"]["candidate"]["tree_xxh3"].value_or(std::string());
    ASSERT_EQ(expected.size(), 32u);

    // Kill prepare at different moments, then run it again: it must complete and agree with a clean run.
    for (int delay_ms : {0, 5, 20, 60, 150}) {
        fs::path run = dir_ / ("killed-" + std::to_string(delay_ms));
        pid_t pid = start({"prepare", "--manifest", "m.toml", "--run", run.string(), "-q"});
        ASSERT_GE(pid, 0);
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        ::kill(pid, SIGKILL);
        int status = 0;
        ::waitpid(pid, &status, 0);
        ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", run.string()});
        ASSERT_EQ(r.exit_code, 0) << "delay " << delay_ms << ": " << r.out << r.err;
        Checkpoint c = prepare_checkpoint(run);
        EXPECT_EQ(c.status, StageStatus::passed);
        EXPECT_EQ(c.figures["candidates"]["candidate"]["tree_xxh3"].value_or(std::string()), expected) << "delay " << delay_ms;
    }

    // A half-written checkpoint and a damaged tree are never trusted either.
    fs::path run = dir_ / "damaged";
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", run.string()}).exit_code, 0);
    std::string text = slurp(run / "checkpoints/01-prepare.toml");
    std::ofstream(run / "checkpoints/01-prepare.toml") << text.substr(0, text.size() / 2);
    std::ofstream(run / "trees/candidate/kernels/k.cu") << "garbage";
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", run.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("not trusted"), std::string::npos) << r.err;
    EXPECT_NE(slurp(run / "trees/candidate/kernels/k.cu").find("schedule = 1"), std::string::npos);

    // A tree edited after a passed prepare is noticed and rebuilt, not reported up to date.
    std::ofstream(run / "trees/baseline/kernels/k.cu") << "tampered";
    r = sage2tp({"prepare", "--manifest", "m.toml", "--run", run.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("trees/baseline was modified"), std::string::npos) << r.err;
    EXPECT_NE(slurp(run / "trees/baseline/kernels/k.cu").find("schedule = 0"), std::string::npos);
}

TEST_F(Cli, CopiedRunStaysCompleteWithoutTheOriginalManifestAndPatch) {
    std::string commit = make_repository(dir_ / "repo");
    write_manifest("kind = \"git\"\nrepository = \"repo\"\ncommit = \"" + commit + "\"\n", good_patch());
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    // The run carries its own copy of the patch, and its experiment.toml names that copy.
    EXPECT_EQ(slurp(dir_ / "run/inputs/candidate.patch"), good_patch());
    EXPECT_NE(slurp(dir_ / "run/experiment.toml").find("patch = 'inputs/candidate.patch'"), std::string::npos);

    // As on a GPU host: the run directory elsewhere, the manifest and patch it came from gone.
    fs::rename(dir_ / "run", dir_ / "copied");
    fs::remove(dir_ / "m.toml");
    fs::remove(dir_ / "c.patch");
    ProcessResult r = sage2tp({"prepare", "--run", "copied", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("which is not on this host"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("\"up_to_date\" : true"), std::string::npos) << r.out;
    r = sage2tp({"status", "--run", "copied"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("prepare   passed"), std::string::npos) << r.out;

    // A damaged copy is not passed off as prepared.
    std::ofstream(dir_ / "copied/trees/candidate/kernels/k.cu") << "damaged";
    r = sage2tp({"prepare", "--run", "copied"});
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.err.find("pass --manifest"), std::string::npos) << r.err;
}

TEST_F(Cli, BranchExperimentFromOneRepositoryThenClean) {
    // Two commits of one repository: the baseline at the first, the candidate at the second, no patch.
    const std::string first = make_repository(dir_ / "repo");
    std::ofstream(dir_ / "repo/kernels/k.cu") << "// kernel\nint schedule = 1;\n";
    git(dir_ / "repo", {"commit", "-q", "-a", "-m", "schedule 1"});
    std::ofstream(dir_ / "m.toml") << "[experiment]\nname = \"branch\"\n[source]\nkind = \"git\"\ncommit = \"" << first
                                   << "\"\nkernel_sources = [\"kernels/k.cu\"]\n[candidate.source]\ncommit = \"HEAD\"\n"
                                      "[workload]\nname = \"w\"\nlen_q = 128\n";
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("--repository"), std::string::npos) << r.err;

    r = sage2tp({"prepare", "--manifest", "m.toml", "--repository", "repo"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const fs::path run = fs::canonical(dir_ / "sage2tp-runs/latest");
    Checkpoint c = prepare_checkpoint(run);
    EXPECT_EQ(c.figures["commit"].value_or(std::string()), first);
    EXPECT_NE(c.figures["candidates"]["candidate"]["commit"].value_or(std::string()), first);
    EXPECT_EQ(c.figures["candidates"]["candidate"]["patch"].value_or(std::string("x")), "");
    EXPECT_NE(slurp(run / "trees/baseline/kernels/k.cu").find("schedule = 0"), std::string::npos);
    EXPECT_NE(slurp(run / "trees/candidate/kernels/k.cu").find("schedule = 1"), std::string::npos);
    // No support_sources: the embedded quantization kernels get a tree of their own.
    EXPECT_TRUE(fs::is_regular_file(run / "trees/support/kernels/quantize.cu"));

    // Without options, the run is prepared again from the same manifest and repository.
    r = sage2tp({"prepare"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("prepare: up to date"), std::string::npos) << r.out;

    ProcessResult worktrees = run_process({"git", "-C", (dir_ / "repo").string(), "worktree", "list"});
    EXPECT_NE(worktrees.out.find("trees/candidate"), std::string::npos) << worktrees.out;
    r = sage2tp({"clean", "--yes"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_FALSE(fs::exists(run));
    EXPECT_FALSE(fs::is_symlink(dir_ / "sage2tp-runs/latest"));
    worktrees = run_process({"git", "-C", (dir_ / "repo").string(), "worktree", "list", "--porcelain"});
    EXPECT_EQ(worktrees.out.find("trees/"), std::string::npos) << worktrees.out;
    EXPECT_EQ(sage2tp({"clean"}).exit_code, 4);
}

namespace {

// Everything a prepare owns in a run, by digest: a failed prepare must leave all of it as it was.
std::map<std::string, std::string> prepare_state(const fs::path &run, const fs::path &repository) {
    std::map<std::string, std::string> state;
    for (const char *file : {"experiment.toml", "inputs/candidate.patch", "checkpoints/01-prepare.toml"})
        state[file] = fs::exists(run / file) ? sha256_file(run / file) : "absent";
    for (const char *tree : {"trees/baseline", "trees/candidate", "trees/support"})
        state[tree] = fs::exists(run / tree) ? Fingerprint().add_tree("tree", run / tree).hex() : "absent";
    state["worktrees"] = run_process({"git", "-C", repository.string(), "worktree", "list", "--porcelain"}).out;
    std::error_code ec;
    for (const char *leftover : {".prepare-new", ".prepare-old"})
        if (fs::exists(run / leftover, ec)) state[leftover] = "present";
    return state;
}

}  // namespace

TEST_F(Cli, FailedPrepareOnAnExistingRunChangesNothing) {
    std::string commit = make_repository(dir_ / "repo");
    const std::string source = "kind = \"git\"\nrepository = \"repo\"\ncommit = \"" + commit + "\"\n";
    write_manifest(source, good_patch());
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    const auto before = prepare_state(dir_ / "run", dir_ / "repo");
    ASSERT_EQ(before.at("inputs/candidate.patch"), sha256_hex(good_patch()));

    struct Attempt {
        std::string what, manifest_tail, patch;
        int exit_code;
        std::string message;
    };
    const std::string workload = "[workload]\nname = \"w\"\nlen_q = 128\n";
    const std::vector<Attempt> attempts = {
        {"a typo in kernel_sources and a changed gate threshold",
         "kernel_sources = [\"kernels/kk.cu\"]\n[candidate]\npatch = \"c.patch\"\n" + workload +
             "[gate]\nmax_candidate_p50_ms = 1.0\n",
         good_patch(), 2, "kernels/kk.cu"},
        {"a patch that escapes the tree", "kernel_sources = [\"kernels/k.cu\"]\n[candidate]\npatch = \"c.patch\"\n" + workload,
         "--- a/x\n+++ \"b/\\056\\056/x\"\n", 2, "outside the source tree"},
        {"a patch that does not apply", "kernel_sources = [\"kernels/k.cu\"]\n[candidate]\npatch = \"c.patch\"\n" + workload,
         "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -1,2 +1,2 @@\n // kernel\n-int schedule = 7;\n+int schedule = 1;\n", 1,
         "does not apply"},
        {"a missing patch file", "kernel_sources = [\"kernels/k.cu\"]\n[candidate]\npatch = \"gone.patch\"\n" + workload,
         good_patch(), 2, "gone.patch"},
    };
    for (const Attempt &attempt : attempts) {
        std::ofstream(dir_ / "c.patch") << attempt.patch;
        std::ofstream(dir_ / "m.toml") << "[experiment]\nname = \"exp\"\n[source]\n" << source << attempt.manifest_tail;
        ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "--force"});
        EXPECT_EQ(r.exit_code, attempt.exit_code) << attempt.what << ": " << r.out << r.err;
        EXPECT_NE((r.out + r.err).find(attempt.message), std::string::npos) << attempt.what << ": " << r.out << r.err;
        EXPECT_EQ(prepare_state(dir_ / "run", dir_ / "repo"), before) << attempt.what;
        r = sage2tp({"status", "--run", "run"});
        EXPECT_NE(r.out.find("passed"), std::string::npos) << attempt.what << ": " << r.out;
        EXPECT_EQ(r.out.find("not trusted"), std::string::npos) << attempt.what << ": " << r.out;
    }
}

TEST_F(Cli, AnEditByHandToThePreparedRunIsNotTrusted) {
    std::string commit = make_repository(dir_ / "repo");
    write_manifest("kind = \"git\"\nrepository = \"repo\"\ncommit = \"" + commit + "\"\n", good_patch());
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    std::string manifest = slurp(dir_ / "run/experiment.toml");
    // A gate threshold that the resolved copy always holds (the p50 bound only when the manifest sets it).
    const auto at = manifest.find("max_spill_growth_bytes = ");
    ASSERT_NE(at, std::string::npos) << manifest;
    manifest.replace(at, std::string("max_spill_growth_bytes = ").size(), "max_spill_growth_bytes = 9");
    std::ofstream(dir_ / "run/experiment.toml") << manifest;

    ProcessResult r = sage2tp({"status", "--run", "run"});
    EXPECT_NE(r.out.find("not trusted: artifact experiment.toml no longer has the sha256"), std::string::npos) << r.out;
    r = sage2tp({"build", "--run", "run"});
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    EXPECT_NE(r.err.find("experiment.toml"), std::string::npos) << r.err;

    // Same for the patch copy and a tree; prepare then redoes the run.
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    std::ofstream(dir_ / "run/inputs/candidate.patch", std::ios::app) << "\n";
    r = sage2tp({"status", "--run", "run"});
    EXPECT_NE(r.out.find("artifact inputs/candidate.patch no longer has the sha256"), std::string::npos) << r.out;
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    std::ofstream(dir_ / "run/trees/support/kernels/quantize.cu", std::ios::app) << "// edited\n";
    r = sage2tp({"build", "--run", "run"});
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    EXPECT_NE(r.err.find("trees/support was modified"), std::string::npos) << r.err;
}

TEST_F(Cli, FailedPrepareInANewRunLeavesNothingAndKeepsLatest) {
    std::string commit = make_repository(dir_ / "repo");
    const std::string source = "kind = \"git\"\nrepository = \"repo\"\ncommit = \"" + commit + "\"\n";
    write_manifest(source, good_patch());
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "-q"}).exit_code, 0);
    const fs::path latest = fs::read_symlink(dir_ / "sage2tp-runs/latest");
    std::ofstream(dir_ / "m.toml") << "[experiment]\nname = \"exp\"\n[source]\n" << source
                                   << "kernel_sources = [\"kernels/typo.cu\"]\n[workload]\nname = \"w\"\nlen_q = 128\n";
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--new"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(fs::read_symlink(dir_ / "sage2tp-runs/latest"), latest);
    std::vector<std::string> entries;
    for (const auto &entry : fs::directory_iterator(dir_ / "sage2tp-runs")) entries.push_back(entry.path().filename().string());
    std::sort(entries.begin(), entries.end());
    EXPECT_EQ(entries, (std::vector<std::string>{latest.filename().string(), "latest"}));
    ProcessResult worktrees = run_process({"git", "-C", (dir_ / "repo").string(), "worktree", "list", "--porcelain"});
    EXPECT_EQ(worktrees.out.find(".prepare-new"), std::string::npos) << worktrees.out;
}

TEST_F(Cli, WorkloadTensorsAreCheckedAndCopiedIntoTheRun) {
    std::string commit = make_repository(dir_ / "repo");
    const std::string source = "kind = \"git\"\nrepository = \"repo\"\ncommit = \"" + commit + "\"\n";
    write_manifest(source, good_patch());
    const Experiment experiment = load_experiment(dir_ / "m.toml");
    const AttentionProblem &problem = experiment.workload.problem;
    GeneratedInputs inputs = generate_inputs(problem.shape, problem.dtype, 7);
    save_npy(dir_ / "q.npy", inputs.q);
    save_npy(dir_ / "k.npy", inputs.k);
    save_npy(dir_ / "v.npy", inputs.v);
    AttentionShape shorter = problem.shape;
    shorter.len_q /= 2;
    save_npy(dir_ / "short.npy", generate_inputs(shorter, problem.dtype, 7).q);
    auto manifest_with = [&](const std::string &q) {
        std::ofstream(dir_ / "m.toml") << "[experiment]\nname = \"exp\"\n[source]\n" << source
                                       << "kernel_sources = [\"kernels/k.cu\"]\n[candidate]\npatch = \"c.patch\"\n"
                                          "[workload]\nname = \"w\"\nlen_q = 128\n[workload.tensors]\nq = \""
                                       << q << "\"\nk = \"k.npy\"\nv = \"v.npy\"\n";
    };
    manifest_with("short.npy");
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "bad"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("short.npy"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "bad"));

    manifest_with("q.npy");
    r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(sha256_file(dir_ / "run/inputs/workload/q.npy"), sha256_file(dir_ / "q.npy"));
    const Experiment recorded = load_experiment(dir_ / "run/experiment.toml");
    ASSERT_TRUE(recorded.workload.q_file);
    EXPECT_EQ(fs::path(*recorded.workload.q_file), dir_ / "run/inputs/workload/q.npy");
    Checkpoint c = prepare_checkpoint(dir_ / "run");
    EXPECT_EQ(c.artifacts["workload_tensors"]["v"]["path"].value_or(std::string()), "inputs/workload/v.npy");
    // The run is complete without the originals; a changed copy is not trusted.
    fs::remove(dir_ / "q.npy");
    std::ofstream(dir_ / "run/inputs/workload/k.npy", std::ios::app) << "x";
    r = sage2tp({"status", "--run", "run"});
    EXPECT_NE(r.out.find("artifact inputs/workload/k.npy no longer has the sha256"), std::string::npos) << r.out;
}

// run --json carries each stage's status, reasons and summary from its checkpoint, and the error of a
// stage that ended without one (here build, refusing an arch before any compile).
TEST_F(Cli, RunJsonCarriesEachStagesStatusReasonsAndSummary) {
    ProcessResult r = sage2tp({"run", "--run", "run", "--json", "--arch", "sm_70"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    const std::size_t prepare = r.out.find("\"stage\" : \"prepare\"");
    const std::size_t build = r.out.find("\"stage\" : \"build\"");
    ASSERT_NE(prepare, std::string::npos) << r.out;
    ASSERT_NE(build, std::string::npos) << r.out;
    const std::size_t split = r.out.find("}", prepare);  // the end of prepare's object (keys are sorted)
    ASSERT_LT(split, build) << r.out;
    const std::string prepare_part = r.out.substr(0, split);
    EXPECT_NE(prepare_part.find("\"status\" : \"passed\""), std::string::npos) << r.out;
    EXPECT_NE(prepare_part.find("\"reasons\" : []"), std::string::npos) << r.out;
    EXPECT_NE(prepare_part.find("\"summary\" : \"embedded @ "), std::string::npos) << r.out;
    EXPECT_NE(prepare_part.find("\"checkpoint\" : \"checkpoints/01-prepare.toml\""), std::string::npos) << r.out;
    const std::string build_part = r.out.substr(split);
    EXPECT_NE(build_part.find("unsupported arch 'sm_70'"), std::string::npos) << r.out;
    EXPECT_EQ(build_part.find("\"status\""), std::string::npos) << r.out;
}

// status names the command to run next, and finds the run from inside its directory.
TEST_F(Cli, StatusSaysWhatToRunNextFromInsideTheRun) {
    ASSERT_EQ(sage2tp({"prepare", "--run", "run", "-q"}).exit_code, 0);
    ProcessOptions options;
    options.working_directory = dir_ / "run/trees";
    ProcessResult r = run_process({sage2tp_binary(), "status"}, options);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("run " + fs::canonical(dir_ / "run").string()), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("next: sage2tp run   (or sage2tp build for build alone)"), std::string::npos) << r.out;
    r = sage2tp({"status", "--run", "run"});
    EXPECT_NE(r.out.find("next: sage2tp run --run run"), std::string::npos) << r.out;
}

// time's --budget, --target-half-width, --min-rounds and --repeat take the ranges of the manifest's [time] keys,
// checked before anything else; --pin records the manifest's own workload, so it refuses --workload.
TEST_F(Cli, TimeOptionsUseTheManifestsRanges) {
    for (const std::vector<std::string> &bad : std::vector<std::vector<std::string>>{
             {"--min-rounds", "2"}, {"--min-rounds", "1000001"}, {"--min-rounds", "20.5"},
             {"--budget", "0.5"}, {"--target-half-width", "0.6"}, {"--repeat", "0"}, {"--repeat", "101"},
             {"--repeat", "2.5"}}) {
        std::vector<std::string> args{"time"};
        args.insert(args.end(), bad.begin(), bad.end());
        ProcessResult r = sage2tp(args);
        EXPECT_EQ(r.exit_code, 2) << bad[0] << " " << bad[1] << ": " << r.err;
        EXPECT_NE(r.err.find(bad[0]), std::string::npos) << r.err;
    }
    ProcessResult r = sage2tp({"time", "--min-rounds", "2"});
    EXPECT_NE(r.err.find("--min-rounds must be in [3, "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("(as [time] min_rounds), got 2"), std::string::npos) << r.err;
    r = sage2tp({"time", "--pin", "--workload", "w.toml"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("cannot be combined with --workload"), std::string::npos) << r.err;
}

// A --repeat child gets values its parent derived, not values a user typed: `time --repeat 100` with the
// manifest's 60 s hands each child a budget of 0.6 s, and `time --repeat 5 --budget 4` one of 0.8 s, both
// below the user range [1, 86400] of --budget. The child takes them as they are (and here, with no
// build, stops at the missing build checkpoint).
TEST_F(Cli, ARepeatChildTakesItsParentsDerivedBudget) {
    ASSERT_EQ(sage2tp({"prepare", "--run", "run", "-q"}).exit_code, 0);
    for (const char *budget : {"0.6", "0.8"}) {
        // A new file in the run's reports/, as the parent names it (any other is refused, Safety's test).
        const ProcessResult r = sage2tp({"time-repeat", "--run", "run", "--measurement",
                                         (dir_ / "run/reports/time-repeat-1.toml").string(), "--budget", budget,
                                         "--min-rounds", "20", "--target-half-width", "0.0005", "--order-seed", "42",
                                         "--device", "0"});
        EXPECT_NE(r.exit_code, 2) << budget << ": " << r.err;
        EXPECT_EQ(r.err.find("must be in"), std::string::npos) << r.err;
        EXPECT_EQ(r.exit_code, 4) << r.err;
        EXPECT_NE(r.err.find("build"), std::string::npos) << r.err;
    }
}

// Issue 38 item 4: no internal option on a user's command. A repeat's child is the internal command
// time-repeat, which neither the command list nor time's help shows; time itself no longer takes the
// child's options.
TEST_F(Cli, TheRepeatChildIsAnInternalCommandOutOfTheUsersHelp) {
    for (const std::vector<std::string> &help : {std::vector<std::string>{"--help"}, {"help"}, {"--json", "help"}}) {
        const ProcessResult r = sage2tp(help);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(r.out.find("time-repeat"), std::string::npos) << r.out;
    }
    const ProcessResult time_help = sage2tp({"time", "--help"});
    EXPECT_EQ(time_help.exit_code, 0) << time_help.err;
    for (const char *word : {"repeat-child", "order-seed", "internal"})
        EXPECT_EQ(time_help.out.find(word), std::string::npos) << word << " in:\n" << time_help.out;
    for (const char *option : {"--repeat-child", "--order-seed"}) {
        const ProcessResult r = sage2tp({"time", option, "1"});
        EXPECT_EQ(r.exit_code, 2) << option << ": " << r.err;
    }
    const ProcessResult child_help = sage2tp({"help", "time-repeat"});
    EXPECT_EQ(child_help.exit_code, 0) << child_help.err;
    EXPECT_NE(child_help.out.find("--measurement"), std::string::npos) << child_help.out;
}

// time --workload-set: a set by name or file for a run of one workload; it names one thing to time, so
// not with --workload; a set that does not load is exit 2 naming the file, line and key; --pin and
// --ncu are one workload's; a good set goes on to the stage's own preconditions (here: no parity).
TEST_F(Cli, TimeWorkloadSetIsParsedAndCheckedBeforeTheStage) {
    ProcessResult r = sage2tp({"time", "--workload-set", "wan21-14b", "--workload", "w.toml"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--workload-set and --workload each name what to time"), std::string::npos) << r.err;

    ASSERT_EQ(sage2tp({"prepare", "--run", "run", "-q"}).exit_code, 0);
    r = sage2tp({"time", "--run", "run", "--workload-set", "no-such-set"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("wan21-14b"), std::string::npos) << "the shipped sets are named: " << r.err;

    std::ofstream(dir_ / "dup.toml") << "[set]\nname = \"dup\"\n[[workload]]\nname = \"a\"\nsource = \"s\"\nlen_q = 128\n"
                                        "[[workload]]\nname = \"a\"\nsource = \"s\"\nlen_q = 256\n";
    r = sage2tp({"time", "--run", "run", "--workload-set", (dir_ / "dup.toml").string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("dup.toml:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("'a'"), std::string::npos) << r.err;

    r = sage2tp({"time", "--run", "run", "--workload-set", "wan21-14b", "--pin"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("the shapes of the set 'wan21-14b' are pinned in their set entries"), std::string::npos) << r.err;
    r = sage2tp({"time", "--run", "run", "--workload-set", "wan21-14b", "--ncu"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("profile one of its shapes with --workload FILE --ncu"), std::string::npos) << r.err;

    r = sage2tp({"time", "--run", "run", "--workload-set", "wan21-14b"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("time needs the parity checkpoint"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "run/checkpoints/05-time.toml"));
}

// The bash completion offers every command (from the binary's own `sage2tp help`) and each command's
// options (from `sage2tp help CMD`).
TEST_F(Cli, BashCompletionListsEveryCommandAndItsOptions) {
    const std::string script = (fs::path(S2TP_SOURCE_ROOT) / "data/completion/sage2tp.bash").string();
    const auto complete = [&](const std::string &words, int cword) {
        return run_process({"bash", "-c", "cd '" + dir_.string() + "' && source '" + script + "'; COMP_WORDS=(" + words +
                                              "); COMP_CWORD=" + std::to_string(cword) +
                                              "; _sage2tp; printf '%s\\n' \"${COMPREPLY[@]}\""});
    };
    ProcessResult r = complete("'" + sage2tp_binary() + "' ''", 1);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char *command : {"prepare", "build", "sanitize", "parity", "time", "gate", "run", "status", "report",
                                "compare", "clean", "help"})
        EXPECT_NE(r.out.find(std::string(command) + "\n"), std::string::npos) << command << " missing from: " << r.out;
    // Exactly the commands `sage2tp help` lists.
    ProcessResult help = sage2tp({"help"});
    std::size_t listed = 0;
    for (std::size_t at = help.out.find("\n  "); at != std::string::npos && at < help.out.find("\n\nglobal");
         at = help.out.find("\n  ", at + 1))
        ++listed;
    EXPECT_EQ(static_cast<std::size_t>(std::count(r.out.begin(), r.out.end(), '\n')), listed) << r.out;
    r = complete("'" + sage2tp_binary() + "' --run x time --", 4);
    EXPECT_NE(r.out.find("--min-rounds\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--workload\n"), std::string::npos) << r.out;
    r = complete("'" + sage2tp_binary() + "' help bu", 2);
    EXPECT_EQ(r.out, "build\n");
    // compare's runs: the run ids under the runs root (not its latest link), then directories.
    for (const char *id : {"tp-a", "tp-b"}) {
        fs::create_directories(dir_ / "runs" / id);
        std::ofstream(dir_ / "runs" / id / "experiment.toml") << "";
    }
    fs::create_directory_symlink("tp-a", dir_ / "runs/latest");
    r = complete("'" + sage2tp_binary() + "' --root runs compare tp", 4);
    EXPECT_EQ(r.out, "tp-a\ntp-b\n") << r.err;
    r = complete("'" + sage2tp_binary() + "' compare --format ''", 3);
    EXPECT_EQ(r.out, "text\nmarkdown\ncsv\n") << r.err;
    // Issue 36 item 9: --run-id offers the runs' ids, --arch build's targets, --manifest the shipped
    // manifests' names (and files).
    r = complete("'" + sage2tp_binary() + "' --root runs status --run-id tp-", 5);
    EXPECT_EQ(r.out, "tp-a\ntp-b\n") << r.err;
    r = complete("'" + sage2tp_binary() + "' build --arch sm_9", 3);
    EXPECT_EQ(r.out, "sm_90a\n") << r.err;
    r = complete("'" + sage2tp_binary() + "' run --arch ''", 3);
    for (const char *arch : {"auto", "sm_89", "sm_90a", "sm_100a", "sm_103a", "sm_120a", "sm_121a"})
        EXPECT_NE(r.out.find(std::string(arch) + "\n"), std::string::npos) << arch << " missing from: " << r.out;
    r = complete("'" + sage2tp_binary() + "' prepare --manifest upstream", 3);
    EXPECT_EQ(r.out, "upstream-vs-embedded\n") << r.err;
    r = complete("'" + sage2tp_binary() + "' run --manifest ''", 3);
    for (const fs::directory_entry &shipped : fs::directory_iterator(fs::path(S2TP_SOURCE_ROOT) / "data/experiments"))
        EXPECT_NE(r.out.find(shipped.path().stem().string() + "\n"), std::string::npos) << shipped.path() << ": " << r.out;
}

TEST_F(Cli, QuietPreparePrintsOnlyTheRunDirectory) {
    ProcessResult r = sage2tp({"prepare", "-q", "--run", "quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out, "quiet\n");
    EXPECT_TRUE(fs::is_regular_file(dir_ / "quiet/checkpoints/01-prepare.toml"));
    // Up to date: the same one line, so that `run=$(sage2tp prepare -q)` always works.
    r = sage2tp({"prepare", "-q", "--run", "quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "quiet\n");
    // A prepare that fails prints no run directory (none was made) and its reason on stderr.
    std::string commit = make_repository(dir_ / "repo");
    write_manifest("kind = \"git\"\nrepository = \"repo\"\ncommit = \"" + commit + "\"\n",
                   "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -1,2 +1,2 @@\n // kernel\n-int schedule = 7;\n+int schedule = 8;\n");
    r = sage2tp({"prepare", "-q", "--manifest", "m.toml", "--run", "failed"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("the patch " + (dir_ / "c.patch").string() + " of candidate 'candidate' does not apply"), std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "failed"));
}

TEST_F(Cli, TwoCandidatesGetATreeAndAPatchCopyEach) {
    const fs::path manifest = fs::path(S2TP_SOURCE_ROOT) / "tests/manifests/two-candidates.toml";
    ProcessResult r = sage2tp({"prepare", "--manifest", manifest.string(), "--run", "two"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const fs::path run = dir_ / "two";
    const std::string base = slurp(run / "trees/baseline/kernels/attention_entry.cu");
    for (const char *name : {"comment-a", "comment-b"}) {
        SCOPED_TRACE(name);
        const std::string tree = slurp(run / "trees" / name / "kernels/attention_entry.cu");
        EXPECT_NE(tree, base);
        EXPECT_NE(tree.find("Candidate \"" + std::string(name) + "\""), std::string::npos);
        EXPECT_EQ(slurp(run / "trees" / name / "kernels/schedule.cuh"), slurp(run / "trees/baseline/kernels/schedule.cuh"));
        const std::string patch = "inputs/" + std::string(name) + ".patch";
        EXPECT_EQ(slurp(run / patch), slurp(fs::path(S2TP_SOURCE_ROOT) / "tests/patches" / (std::string(name) + ".patch")));
        EXPECT_NE(r.out.find("  " + std::string(name)), std::string::npos) << r.out;
    }
    EXPECT_FALSE(fs::exists(run / "trees/candidate"));
    EXPECT_FALSE(fs::exists(run / "inputs/candidate.patch"));

    Checkpoint c = prepare_checkpoint(run);
    EXPECT_EQ(c.status, StageStatus::passed);
    const toml::table *candidates = c.figures["candidates"].as_table();
    ASSERT_TRUE(candidates);
    EXPECT_EQ(candidates->size(), 2u);
    for (const char *name : {"comment-a", "comment-b"}) {
        SCOPED_TRACE(name);
        const toml::table &figures = *(*candidates)[name].as_table();
        EXPECT_EQ(figures["commit"].value_or(std::string()), c.figures["commit"].value_or(std::string("x")));
        EXPECT_EQ(figures["patch_sha256"].value_or(std::string()),
                  sha256_file(fs::path(S2TP_SOURCE_ROOT) / "tests/patches" / (std::string(name) + ".patch")));
        EXPECT_EQ(figures["tree_xxh3"].value_or(std::string()), Fingerprint().add_tree("tree", run / "trees" / name).hex());
        EXPECT_EQ(c.artifacts["trees"][name]["path"].value_or(std::string()), "trees/" + std::string(name));
        EXPECT_EQ(c.artifacts["patches"][name]["path"].value_or(std::string()), "inputs/" + std::string(name) + ".patch");
    }
    const Experiment recorded = load_experiment(run / "experiment.toml");
    EXPECT_EQ(recorded.variant_names(), (std::vector<std::string>{"baseline", "comment-a", "comment-b"}));
    EXPECT_EQ(recorded.candidate("comment-b").patch, (run / "inputs/comment-b.patch").string());

    r = sage2tp({"prepare", "--run", "two"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("prepare: up to date"), std::string::npos) << r.out;

    // Prepared again with one candidate (another experiment, so on purpose: --force): the other
    // candidates' trees and patch copies go.
    r = sage2tp({"prepare", "--run", "two", "--force", "--manifest",
                 (fs::path(S2TP_SOURCE_ROOT) / "data/experiments/temporal-pair.toml").string()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(fs::is_directory(run / "trees/candidate"));
    for (const char *gone : {"trees/comment-a", "trees/comment-b", "inputs/comment-a.patch", "inputs/comment-b.patch"})
        EXPECT_FALSE(fs::exists(run / gone)) << gone;
    EXPECT_TRUE(fs::is_regular_file(run / "inputs/candidate.patch"));
}

// Read from the TOML itself: load_experiment refuses a git source that names no repository, as the
// shipped ones do (prepare --repository gives it).
static bool names_a_git_source(const fs::path &manifest) {
    const toml::table document = toml::parse_file(manifest.string());
    std::vector<const toml::table *> sources{document["source"].as_table(), document["candidate"]["source"].as_table()};
    if (const toml::array *candidates = document["candidate"].as_array())
        for (const toml::node &candidate : *candidates)
            if (candidate.is_table()) sources.push_back(candidate.as_table()->get_as<toml::table>("source"));
    return std::any_of(sources.begin(), sources.end(), [](const toml::table *source) {
        return source && (*source)["kind"].value_or(std::string()) == "git";
    });
}

// The patches of the shipped experiments and of the GPU suite's fixtures are diffs against kernels/: a
// rewrite of the kernels that leaves one behind would otherwise show only on a GPU host, as prepare's
// "does not apply" inside the GPU suite. Every manifest whose variants are all embedded and that patches
// a candidate must prepare; git-sourced ones need a checkout this test does not have.
TEST_F(Cli, EveryEmbeddedManifestWithAPatchPrepares) {
    std::vector<std::string> prepared;
    for (const char *folder : {"tests/manifests", "data/experiments"}) {
        for (const fs::directory_entry &entry : fs::directory_iterator(fs::path(S2TP_SOURCE_ROOT) / folder)) {
            if (entry.path().extension() != ".toml") continue;
            if (names_a_git_source(entry.path())) continue;
            const Experiment experiment = load_experiment(entry.path());
            bool patched = false;
            for (const CandidateSpec &candidate : experiment.candidates) patched = patched || !candidate.patch.empty();
            if (!patched) continue;

            const std::string name = std::string(folder) + "/" + entry.path().filename().string();
            const std::string run = "run-" + std::to_string(prepared.size());
            const ProcessResult r = sage2tp({"prepare", "-q", "--manifest", entry.path().string(), "--run", run});
            EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
            prepared.push_back(name);
        }
    }
    // The GPU suite's two planted bugs and the shipped experiment are among them, so the loop cannot
    // pass by finding nothing.
    for (const char *expected : {"tests/manifests/missing-barrier.toml", "tests/manifests/broken-rounding.toml",
                                 "data/experiments/temporal-pair.toml"})
        EXPECT_NE(std::find(prepared.begin(), prepared.end(), expected), prepared.end()) << expected;
}

TEST_F(Cli, ASecondCandidatesPatchThatDoesNotApplyNamesItAndChangesNothing) {
    const std::string commit = make_repository(dir_ / "repo");
    std::ofstream(dir_ / "good.patch") << good_patch();
    std::ofstream(dir_ / "bad.patch")
        << "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -1,2 +1,2 @@\n // kernel\n-int schedule = 5;\n+int schedule = 6;\n";
    auto manifest = [&](const std::string &second_patch) {
        std::ofstream(dir_ / "m.toml") << "[experiment]\nname = \"two\"\n[source]\nkind = \"git\"\nrepository = \"repo\"\ncommit = \""
                                       << commit << "\"\nkernel_sources = [\"kernels/k.cu\"]\n"
                                       << "[[candidate]]\nname = \"one\"\npatch = \"good.patch\"\n"
                                       << "[[candidate]]\nname = \"two\"\npatch = \"" << second_patch << "\"\n"
                                       << "[workload]\nname = \"w\"\nlen_q = 128\n";
    };
    manifest("good.patch");
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run"}).exit_code, 0);
    const Checkpoint before = prepare_checkpoint(dir_ / "run");

    manifest("bad.patch");
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("the patch " + (dir_ / "bad.patch").string() + " of candidate 'two' does not apply at " + commit),
              std::string::npos)
        << r.out;
    EXPECT_EQ(prepare_checkpoint(dir_ / "run").digest, before.digest);
    EXPECT_FALSE(fs::exists(dir_ / "run/.prepare-new"));
    for (const char *name : {"one", "two"})
        EXPECT_NE(slurp(dir_ / "run/trees" / name / "kernels/k.cu").find("schedule = 1"), std::string::npos) << name;
    // Both candidate trees are worktrees of the repository, and clean unregisters every one.
    ProcessResult worktrees = run_process({"git", "-C", (dir_ / "repo").string(), "worktree", "list", "--porcelain"});
    for (const char *name : {"baseline", "one", "two"})
        EXPECT_NE(worktrees.out.find("run/trees/" + std::string(name)), std::string::npos) << worktrees.out;
    ASSERT_EQ(sage2tp({"clean", "--yes", (dir_ / "run").string()}).exit_code, 0);
    worktrees = run_process({"git", "-C", (dir_ / "repo").string(), "worktree", "list", "--porcelain"});
    EXPECT_EQ(worktrees.out.find("run/trees"), std::string::npos) << worktrees.out;
}

TEST_F(Cli, CandidateCommitTakesNameEqualsRevForSeveralCandidates) {
    const std::string first = make_repository(dir_ / "repo");
    std::ofstream(dir_ / "repo/kernels/k.cu") << "// kernel\nint schedule = 2;\n";
    git(dir_ / "repo", {"commit", "-q", "-a", "-m", "schedule 2"});
    std::ofstream(dir_ / "m.toml") << "[experiment]\nname = \"branches\"\n[source]\nkind = \"git\"\nrepository = \"repo\"\ncommit = \""
                                   << first << "\"\nkernel_sources = [\"kernels/k.cu\"]\n"
                                   << "[[candidate]]\nname = \"x\"\n[candidate.source]\ncommit = \"" << first << "\"\n"
                                   << "[[candidate]]\nname = \"y\"\n[candidate.source]\ncommit = \"" << first << "\"\n"
                                   << "[workload]\nname = \"w\"\nlen_q = 128\n";
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "--candidate-commit", "HEAD"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--candidate-commit takes NAME=REV"), std::string::npos) << r.err;
    r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "--candidate-commit", "x=HEAD", "--candidate-commit", "y=HEAD"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    for (const char *name : {"x", "y"})
        EXPECT_NE(slurp(dir_ / "run/trees" / name / "kernels/k.cu").find("schedule = 2"), std::string::npos) << name;
    // Without options, prepare redoes the same experiment, with the same per-candidate commits.
    r = sage2tp({"prepare", "--run", "run"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("prepare: up to date"), std::string::npos) << r.out;
}

// Issue 26: --candidate-commit with a manifest's patch says that the patch goes on top of the commit;
// --no-patch takes the commit alone, --patch FILE another patch.
TEST_F(Cli, CandidateCommitWithAPatchWarnsAndNoPatchTakesTheCommitAlone) {
    const std::string first = make_repository(dir_ / "repo");
    std::ofstream(dir_ / "repo/kernels/k.cu") << "// kernel\nint schedule = 2;\n";
    git(dir_ / "repo", {"commit", "-q", "-a", "-m", "schedule 2"});
    write_manifest("kind = \"git\"\ncommit = \"" + first + "\"\n", good_patch());
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--repository", "repo", "--candidate-commit", "HEAD"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // the patch does not apply to the second commit
    EXPECT_NE(r.err.find("warning: candidate 'candidate' is commit HEAD with the patch "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("pass --no-patch for the commit alone"), std::string::npos) << r.err;

    r = sage2tp({"prepare", "--new", "--manifest", "m.toml", "--repository", "repo", "--candidate-commit", "HEAD", "--no-patch"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.err.find("warning: candidate"), std::string::npos) << r.err;
    const fs::path run = fs::canonical(dir_ / "sage2tp-runs/latest");
    EXPECT_NE(slurp(run / "trees/candidate/kernels/k.cu").find("schedule = 2"), std::string::npos);
    EXPECT_EQ(prepare_checkpoint(run).figures["candidates"]["candidate"]["patch"].value_or(std::string("x")), "");

    std::ofstream(dir_ / "other.patch") << "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -1,2 +1,2 @@\n // kernel\n"
                                           "-int schedule = 0;\n+int schedule = 3;\n";
    r = sage2tp({"prepare", "--new", "--manifest", "m.toml", "--repository", "repo", "--patch", "other.patch"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(slurp(fs::canonical(dir_ / "sage2tp-runs/latest") / "trees/candidate/kernels/k.cu").find("schedule = 3"),
              std::string::npos);
    r = sage2tp({"prepare", "--manifest", "m.toml", "--patch", "other.patch", "--no-patch"});
    EXPECT_EQ(r.exit_code, 2);
}

// Issue 26: shipped manifests by name; runs found from a subdirectory as git finds its repository, or
// through SAGE2TP_ROOT; `sage2tp runs` lists them with where each stands.
TEST_F(Cli, ManifestByNameRunsFromAnyDirectoryAndTheRunsList) {
    ProcessResult r = sage2tp({"prepare", "--manifest", "no-such-manifest"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--manifest 'no-such-manifest': no such file, and no shipped manifest of that name"),
              std::string::npos) << r.err;
    EXPECT_NE(r.err.find("temporal-pair, upstream-vs-embedded"), std::string::npos) << r.err;

    r = sage2tp({"prepare", "--manifest", "temporal-pair", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string first = fs::path(r.out.substr(0, r.out.find('\n'))).filename().string();
    fs::create_directories(dir_ / "deep/er");
    r = run_sage2tp({"status"}, dir_ / "deep/er");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(first), std::string::npos) << r.out;
    r = run_sage2tp({"runs"}, fs::temp_directory_path(), {{"SAGE2TP_ROOT", (dir_ / "sage2tp-runs").string()}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("* " + first), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("temporal-pair  prepare passed"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("latest"), std::string::npos) << r.out;
    r = sage2tp({"runs", "--json"});
    EXPECT_NE(r.out.find("\"state\" : \"prepare passed\""), std::string::npos) << r.out;
}

// Issue 26: the STATUS column is as wide as its widest cell, so that "running (pid N)" leaves every
// later column where the header puts it.
TEST_F(Cli, StatusColumnHoldsARunningPid) {
    ASSERT_EQ(sage2tp({"prepare", "--run", "busy", "-q"}).exit_code, 0);
    ProcessResult r;
    pid_t holder = 0;
    {
        const LockHolder other(dir_ / "busy");
        holder = other.pid();
        r = sage2tp({"status", "--run", "busy"});
    }
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream lines(r.out);
    std::string line, header, prepare, build;
    while (std::getline(lines, line)) {
        if (line.rfind("STAGE", 0) == 0) header = line;
        if (line.rfind("prepare ", 0) == 0) prepare = line;
        if (line.rfind("build ", 0) == 0) build = line;
    }
    const std::string running = "running (pid " + std::to_string(holder) + ")";
    ASSERT_NE(build.find(running), std::string::npos) << r.out;
    const std::size_t finished = header.find("FINISHED (UTC)");
    ASSERT_NE(finished, std::string::npos) << r.out;
    EXPECT_EQ(prepare.find("20"), finished) << r.out;  // the prepare checkpoint's time, under its header
    EXPECT_EQ(build.find(" -", build.find(running)) + 1, finished) << r.out;
    EXPECT_EQ(header.find("FRESH"), prepare.find("yes")) << r.out;
}

// Issue 26: an unknown --format is a usage error whatever the run (the check comes before the run
// lookup); --output FILE takes the report instead of stdout, and refuses what is not a regular file.
TEST_F(Cli, ReportChecksItsFormatFirstAndWritesToOutput) {
    ProcessResult r = sage2tp({"report", "--format", "bogus", "--run", (dir_ / "nonexistent").string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--format 'bogus': expected text, markdown, csv or json"), std::string::npos) << r.err;
    r = sage2tp({"report", "--output", "", "--run", (dir_ / "nonexistent").string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
}

// Issue 26: --arch auto on a host without a GPU names the target for each GPU family; a target one slip
// from a valid one is named.
TEST_F(Cli, ArchAutoWithoutAGpuNamesTheTargetsByGpu) {
    ASSERT_EQ(sage2tp({"prepare", "--run", "arch", "-q"}).exit_code, 0);
    ProcessResult r = run_sage2tp({"build", "--run", "arch", "--arch", "auto"}, dir_, {{"CUDA_VISIBLE_DEVICES", ""}});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("--arch auto needs a GPU"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("pass --arch for the GPU the run will use: sm_89 (RTX 40xx"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("sm_90a (H100, H200, GH200)"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("sm_121a (DGX Spark (GB10))"), std::string::npos) << r.err;
    r = sage2tp({"build", "--run", "arch", "--arch", "sm_90"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("did you mean 'sm_90a'?"), std::string::npos) << r.err;
}

// Issue 36 item 5: `slurm -n` previews a submission on a host without Slurm (PATH an empty directory,
// whatever this host has installed): the plan and task.sh written to slurm/dry-run/ and printed, the
// builds listed, nothing built or submitted, exit 0; the same usage errors as a submission; without -n
// the missing sbatch is still exit 3.
TEST_F(Cli, SlurmDryRunPrintsThePlanAndBatchScriptWithoutSlurm) {
    ASSERT_EQ(sage2tp({"prepare", "-q"}).exit_code, 0);
    fs::create_directories(dir_ / "no-slurm");
    const std::map<std::string, std::string> no_slurm{{"PATH", (dir_ / "no-slurm").string()}};
    const fs::path run = fs::canonical(dir_ / "sage2tp-runs/latest");
    ProcessResult r = sage2tp({"slurm", "-n", "--arch", "sm_89,sm_90a", "--constraint", "h200", "--repeat", "2"}, no_slurm);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    std::cout << r.out;
    const fs::path preview = run / "slurm/dry-run";
    const std::string plan = slurp(preview / "plan.toml");
    const std::string script = slurp(preview / "task.sh");
    ASSERT_FALSE(plan.empty());
    EXPECT_NE(r.out.find(plan), std::string::npos) << "the plan as written is printed";
    EXPECT_NE(r.out.find(script.substr(0, script.size() - 1)), std::string::npos) << "task.sh as written is printed";
    EXPECT_NE(r.out.find("builds on this host, one per arch:\n  sm_89\n  sm_90a\n"), std::string::npos) << r.out;
    EXPECT_NE(plan.find("sm_90&h200"), std::string::npos) << plan;
    EXPECT_NE(plan.find("slurm/dry-run/task-3/run"), std::string::npos) << "four tasks: " << plan;
    EXPECT_EQ(plan.find("task-4"), std::string::npos) << plan;
    EXPECT_EQ(plan.find("job"), std::string::npos) << "Slurm gave no job id: " << plan;
    EXPECT_NE(script.find("slurm task --plan '" + preview.string() + "/plan.toml'"), std::string::npos) << script;
    EXPECT_FALSE(fs::exists(preview / "arch-sm_89")) << "nothing built";
    EXPECT_FALSE(fs::exists(run / "slurm/latest")) << "nothing submitted";
    EXPECT_EQ(sage2tp({"slurm", "collect", "--submission", "dry-run"}).exit_code, 2) << "a preview is never collected";

    r = sage2tp({"slurm", "--dry-run", "--repeat", "0"}, no_slurm);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--repeat must be at least 1"), std::string::npos) << r.err;
    r = sage2tp({"slurm", "-n", "--constraint", "h200&x"}, no_slurm);
    EXPECT_EQ(r.exit_code, 2) << r.err;

    r = sage2tp({"slurm"}, no_slurm);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("sbatch not found"), std::string::npos) << r.err;
}

// Issue 36 item 7: prepare --candidate-worktree takes an uncommitted edit as the candidate, recording
// `git diff HEAD` as its patch; refused (exit 2) without an edit, with two candidates, with --patch or
// --no-patch, and for a source without a working tree.
TEST_F(Cli, CandidateWorktreeTakesTheUncommittedEditAsThePatch) {
    const std::string commit = make_repository(dir_ / "repo");
    write_manifest("kind = \"git\"\ncommit = \"" + commit + "\"\n", good_patch());
    const std::vector<std::string> prepare{"prepare", "--manifest", "m.toml", "--repository", "repo", "--candidate-worktree"};
    ProcessResult r = sage2tp(prepare);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("has no change against commit " + commit.substr(0, 12)), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "sage2tp-runs/latest")) << "a refused prepare leaves no run";

    std::ofstream(dir_ / "repo/kernels/k.cu") << "// kernel\nint schedule = 7;\n";
    std::ofstream(dir_ / "repo/kernels/untracked.cu") << "int untracked = 1;\n";
    const std::string diff = run_git(dir_ / "repo", {"diff", "HEAD"}).out;
    r = sage2tp(prepare);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("candidate 'candidate': the working tree of " + fs::absolute(dir_ / "repo").string() +
                         ", as 'git diff " + commit.substr(0, 12) + "' gives it"),
              std::string::npos) << r.out;
    const fs::path run = fs::canonical(dir_ / "sage2tp-runs/latest");
    EXPECT_NE(slurp(run / "trees/candidate/kernels/k.cu").find("schedule = 7"), std::string::npos);
    EXPECT_NE(slurp(run / "trees/baseline/kernels/k.cu").find("schedule = 0"), std::string::npos);
    EXPECT_FALSE(fs::exists(run / "trees/candidate/kernels/untracked.cu")) << "untracked files are not in git diff";
    EXPECT_EQ(slurp(run / "inputs/candidate.patch"), diff) << "the recorded patch is git diff HEAD";
    Checkpoint c = prepare_checkpoint(run);
    EXPECT_EQ(c.figures["candidates"]["candidate"]["patch_sha256"].value_or(std::string()), sha256_hex(diff));
    EXPECT_EQ(c.figures["overrides"]["candidate_worktree"].value_or(false), true);
    EXPECT_EQ(c.figures["candidates"]["candidate"]["patch"].value_or(std::string()), (run / "inputs/candidate.patch").string())
        << "the working tree's diff, removed after prepare, is recorded as the run's copy";
    for (const auto &entry : fs::directory_iterator(run))
        EXPECT_EQ(entry.path().filename().string().find(".candidate-worktree"), std::string::npos) << entry.path();

    r = sage2tp({"prepare"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("prepare: up to date"), std::string::npos) << "an unchanged working tree: " << r.out;
    std::ofstream(dir_ / "repo/kernels/k.cu") << "// kernel\nint schedule = 8;\n";
    r = sage2tp({"prepare"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(slurp(run / "trees/candidate/kernels/k.cu").find("schedule = 8"), std::string::npos)
        << "prepare again follows the working tree";

    for (const std::vector<std::string> &also : {std::vector<std::string>{"--patch", "c.patch"}, {"--no-patch"}}) {
        std::vector<std::string> args = prepare;
        args.insert(args.end(), also.begin(), also.end());
        r = sage2tp(args);
        EXPECT_EQ(r.exit_code, 2) << also.front() << ": " << r.err;
        EXPECT_NE(r.err.find("without --patch or --no-patch"), std::string::npos) << r.err;
    }
    std::ofstream(dir_ / "two.toml") << "[experiment]\nname = \"exp\"\n[source]\nkind = \"git\"\ncommit = \"" << commit
                                     << "\"\nkernel_sources = [\"kernels/k.cu\"]\n[[candidate]]\nname = \"a\"\npatch = "
                                        "\"c.patch\"\n[[candidate]]\nname = \"b\"\npatch = \"c.patch\"\n"
                                        "[workload]\nname = \"w\"\nlen_q = 128\n";
    r = sage2tp({"prepare", "--new", "--manifest", "two.toml", "--repository", "repo", "--candidate-worktree"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("the manifest has 2 candidates"), std::string::npos) << r.err;
    // A manifest whose candidate has no patch of its own: the working tree gives it one.
    std::ofstream(dir_ / "bare.toml") << "[experiment]\nname = \"exp\"\n[source]\nkind = \"git\"\ncommit = \"HEAD\"\n"
                                         "kernel_sources = [\"kernels/k.cu\"]\n[candidate]\n[workload]\nname = \"w\"\nlen_q = 128\n";
    r = sage2tp({"prepare", "--new", "--run-id", "bare", "--manifest", "bare.toml", "--repository", "repo", "--candidate-worktree"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(slurp(dir_ / "sage2tp-runs/bare/trees/candidate/kernels/k.cu").find("schedule = 8"), std::string::npos);
    EXPECT_EQ(sage2tp({"prepare", "--new", "--manifest", "bare.toml", "--repository", "repo"}).exit_code, 2)
        << "without it, that candidate is the baseline itself";

    std::vector<std::string> own_commit = prepare;
    own_commit.insert(own_commit.end(), {"--new", "--candidate-commit", "HEAD"});
    r = sage2tp(own_commit);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("candidate 'candidate' is commit HEAD of its own"), std::string::npos) << r.err;
    r = sage2tp({"prepare", "--new", "--manifest", "temporal-pair", "--candidate-worktree"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("has no working tree"), std::string::npos) << r.err;
}
