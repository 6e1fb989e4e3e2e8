// Nothing sage2tp is pointed at may lose a user's files: clean removes only a provable run, entry by
// entry, with exactly its own worktree registrations, and asks before it does. Fast (git, no nvcc).
#include "cli_fixture.h"
#include "formats/checkpoint_store.h"

#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

class Safety : public CliTest {
protected:
    void SetUp() override {
        CliTest::SetUp();
        fs::create_directories(dir_ / "repo/kernels");
        std::ofstream(dir_ / "repo/kernels/k.cu") << "// kernel\nint schedule = 0;\n";
        commit_ = commit_repository(dir_ / "repo");
        std::ofstream(dir_ / "c.patch") << "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -1,2 +1,2 @@\n // kernel\n"
                                           "-int schedule = 0;\n+int schedule = 1;\n";
        std::ofstream(dir_ / "m.toml") << "[experiment]\nname = \"exp\"\n[source]\nkind = \"git\"\nrepository = \"repo\"\n"
                                          "commit = \"" << commit_ << "\"\nkernel_sources = [\"kernels/k.cu\"]\n"
                                          "[candidate]\npatch = \"c.patch\"\n[workload]\nname = \"w\"\nlen_q = 128\n";
    }
    // A prepared run at dir_/<name>, its trees worktrees of dir_/repo.
    fs::path prepare_run(const std::string &name) {
        const ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", name});
        EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
        return dir_ / name;
    }
    std::string worktree_list(const fs::path &repo) {
        return run_process({"git", "-C", repo.string(), "worktree", "list", "--porcelain"}).out;
    }
    std::string commit_;
};

// A directory holding a file to lose, and the file.
fs::path directory_with_a_file(const fs::path &dir) {
    fs::create_directories(dir);
    std::ofstream(dir / "work.txt") << "uncommitted work\n";
    return dir / "work.txt";
}

}  // namespace

TEST_F(Safety, CleanRefusesEveryDirectoryThatIsNotARun) {
    const fs::path plain = directory_with_a_file(dir_ / "plain");
    const fs::path project = directory_with_a_file(dir_ / "project").parent_path();
    ASSERT_FALSE(commit_repository(project).empty());
    std::ofstream(project / "work.txt") << "uncommitted work\n";
    const fs::path home = directory_with_a_file(dir_ / "home").parent_path();
    const fs::path inside = directory_with_a_file(dir_ / "plain/sub");
    // A directory that looks like a run at first sight, with a file of the user's in it.
    const fs::path lookalike = directory_with_a_file(dir_ / "lookalike");
    std::ofstream(dir_ / "lookalike/experiment.toml") << "\n";
    std::ofstream(dir_ / "lookalike/.lock") << "";
    const fs::path build_word = directory_with_a_file(dir_ / "build");
    struct Case {
        std::vector<std::string> args;
        fs::path cwd;
        std::string reason;
    };
    const std::vector<Case> cases{
        {{"clean", "."}, dir_ / "plain", "working directory"},
        {{"clean", ".."}, dir_ / "plain/sub", "holds the working directory"},
        {{"clean", "--run", home.string()}, dir_, "home directory"},
        {{"clean", "project"}, dir_, ".git"},
        {{"clean", "plain"}, dir_, "no .lock"},
        {{"clean", "--run", "plain"}, dir_, "no .lock"},
        {{"clean", "build"}, dir_, "no .lock"},
        {{"clean", "lookalike"}, dir_, "'work.txt', which is no part of a run"},
    };
    for (const Case &c : cases) {
        const ProcessResult r = run_sage2tp(c.args, c.cwd, {{"HOME", home.string()}});
        EXPECT_EQ(r.exit_code, 4) << c.args.back() << ": " << r.out << r.err;
        EXPECT_NE(r.err.find(c.reason), std::string::npos) << c.args.back() << ": " << r.err;
        EXPECT_NE(r.err.find("nothing was removed"), std::string::npos) << r.err;
    }
    for (const fs::path &file : {plain, project / "work.txt", home / "work.txt", inside, lookalike, build_word})
        EXPECT_TRUE(fs::exists(file)) << file;
    EXPECT_TRUE(fs::exists(project / ".git"));
}

// Its own test, so that an older binary's test run can leave it out: that binary removes what it can.
TEST_F(Safety, CleanRefusesTheRootDirectory) {
    const ProcessResult r = sage2tp({"clean", "--yes", "--run", "/"});
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    EXPECT_NE(r.err.find("root directory"), std::string::npos) << r.err;
}

TEST_F(Safety, CleanOfNoRunExitsFourAsItsPagePromises) {
    ProcessResult r = sage2tp({"clean", "no-such-run"});
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    r = sage2tp({"clean"});
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
}

TEST_F(Safety, CleanFollowsLatestOnlyInsideTheRunsRoot) {
    const fs::path plain = directory_with_a_file(dir_ / "plain");
    std::ofstream(dir_ / "plain/experiment.toml") << "\n";
    std::ofstream(dir_ / "plain/.lock") << "";
    fs::remove(dir_ / "plain/work.txt");  // a directory that is a run by its layout, but outside the root
    fs::create_directories(dir_ / "sage2tp-runs");
    fs::create_directory_symlink("../plain", dir_ / "sage2tp-runs/latest");
    const ProcessResult r = sage2tp({"clean", "--yes"});
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    EXPECT_TRUE(fs::exists(dir_ / "plain/experiment.toml"));
}

TEST_F(Safety, CleanWithoutYesRefusesWhereNoOneCanBeAsked) {
    const fs::path run = prepare_run("run");
    const ProcessResult r = sage2tp({"clean", "run"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("--yes"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::exists(run / "experiment.toml"));
    EXPECT_NE(worktree_list(dir_ / "repo").find("run/trees/baseline"), std::string::npos);
}

TEST_F(Safety, CleanDryRunListsWhatWouldGoAndRemovesNothing) {
    const fs::path run = prepare_run("run");
    const ProcessResult r = sage2tp({"clean", "-n", "run"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    for (const char *entry : {"experiment.toml", "checkpoints", "trees", "inputs", ".lock"})
        EXPECT_NE(r.out.find("  " + std::string(entry) + "\n"), std::string::npos) << entry << "\n" << r.out;
    EXPECT_NE(r.out.find("would unregister the worktree " + fs::canonical(run).string() + "/trees/baseline"),
              std::string::npos) << r.out;
    EXPECT_TRUE(fs::exists(run / "trees/baseline/kernels/k.cu"));
    EXPECT_NE(worktree_list(dir_ / "repo").find("run/trees/baseline"), std::string::npos);
}

TEST_F(Safety, CleanRemovesExactlyTheRunAndItsOwnRegistrations) {
    const fs::path run = prepare_run("run");
    // The user's own worktree, gone from disk but still registered (git keeps it until pruned), and
    // another run's registration: neither is the run's to drop.
    git(dir_ / "repo", {"worktree", "add", "-q", "--detach", (dir_ / "mine").string()});
    fs::remove_all(dir_ / "mine");
    // A planted .git file naming a repository that is not the run's.
    fs::create_directories(dir_ / "other/kernels");
    std::ofstream(dir_ / "other/kernels/k.cu") << "x\n";
    ASSERT_FALSE(commit_repository(dir_ / "other").empty());
    git(dir_ / "other", {"worktree", "add", "-q", "--detach", (dir_ / "theirs").string()});
    fs::remove_all(dir_ / "theirs");
    fs::create_directories(run / "trees/planted");
    std::ofstream(run / "trees/planted/.git") << "gitdir: " << (dir_ / "other/.git/worktrees/theirs").string() << "\n";
    const std::string sibling = (dir_ / "sibling.txt").string();
    std::ofstream(sibling) << "keep\n";

    const ProcessResult r = sage2tp({"clean", "--yes", "run"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("removed " + (fs::canonical(dir_) / "run").string()), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(run));
    const std::string repo_worktrees = worktree_list(dir_ / "repo");
    EXPECT_EQ(repo_worktrees.find("run/trees"), std::string::npos) << repo_worktrees;
    EXPECT_NE(repo_worktrees.find("mine"), std::string::npos) << "the user's own registration was pruned:\n" << repo_worktrees;
    EXPECT_TRUE(fs::exists(dir_ / "other/.git/worktrees/theirs")) << "a planted .git file made clean prune another repository";
    EXPECT_TRUE(fs::exists(sibling));
    EXPECT_TRUE(fs::exists(dir_ / "repo/kernels/k.cu"));
}

TEST_F(Safety, CleanThroughALinkRemovesTheRunItNamesAndSaysWhich) {
    const fs::path run = prepare_run("run");
    fs::create_directory_symlink("run", dir_ / "alias");
    const ProcessResult r = sage2tp({"clean", "--yes", "alias"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("removed " + (fs::canonical(dir_) / "run").string()), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(run));
    EXPECT_EQ(worktree_list(dir_ / "repo").find("run/trees"), std::string::npos);
}

namespace {

// Every file under `dir` with its content (a link as "-> target"): what must not change.
std::map<std::string, std::string> snapshot(const fs::path &dir) {
    std::map<std::string, std::string> files;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().lexically_relative(dir).string();
        if (it->is_symlink(ec)) files[name] = "-> " + fs::read_symlink(it->path(), ec).string();
        else if (it->is_regular_file(ec)) files[name] = slurp(it->path());
        else files[name] = "<directory>";
    }
    return files;
}

// A place outside the run holding what each layout entry would: trees, patches, tensors, cubins,
// checkpoints, a manifest.
void make_victim(const fs::path &victim) {
    for (const char *file : {"trees/baseline/kernels/k.cu", "baseline/kernels/k.cu", "candidate.patch", "workload/q.bin",
                             "baseline/k.sm_90a.cubin", "k.sm_90a.cubin", "01-prepare.toml", "experiment.toml", "x.log"}) {
        fs::create_directories((victim / file).parent_path());
        std::ofstream(victim / file) << "precious " << file << "\n";
    }
    std::ofstream(victim.string() + ".file") << "precious file\n";
}

}  // namespace

// The link fuzzer over the run layout: a link at each entry (as a run copied with rsync -a may carry)
// pointing outside the run, then every command that writes or deletes in a run. Nothing outside changes.
TEST_F(Safety, PlantedLinksInARunMakeNoWriteOrDeleteOutsideIt) {
    const std::vector<std::pair<std::string, bool>> entries{  // entry, whether it is a directory
        {"experiment.toml", false}, {"pins.toml", false},        {"checkpoints", true},      {"checkpoints/01-prepare.toml", false},
        {"trees", true},            {"trees/baseline", true},     {"trees/candidate", true},  {"builds", true},
        {"builds/baseline", true},  {"builds/candidate", true},   {"logs", true},             {"reports", true},
        {"inputs", true},           {"inputs/candidate.patch", false}, {".prepare-new", true}, {".prepare-new/trees", true},
        {".prepare-old", true},     {".lock", false},              {"slurm", true},            {".sage2tp-run", false}};
    const std::vector<std::vector<std::string>> commands{
        {"prepare", "--run", "run"},          {"prepare", "--force", "--run", "run"}, {"build", "--run", "run", "--nvcc", "/bin/false"},
        {"status", "--run", "run"},           {"compare", "run", "--svg", "c.svg"},    {"slurm", "collect", "--run", "run"},
        {"slurm", "--run", "run", "--arch", "sm_90a"}, {"clean", "--yes", "run"}};
    int covered = 0, changed = 0;
    for (const auto &[entry, directory] : entries) {
        fs::remove_all(dir_ / "run");
        fs::remove_all(dir_ / "victim");
        fs::remove(dir_ / "victim.file");
        run_process({"git", "-C", (dir_ / "repo").string(), "worktree", "prune"});
        prepare_run("run");
        make_victim(dir_ / "victim");
        const std::map<std::string, std::string> before = snapshot(dir_ / "victim");
        const std::string before_file = slurp(dir_ / "victim.file");
        const fs::path at = dir_ / "run" / entry;
        fs::create_directories(at.parent_path());
        fs::remove_all(at);
        if (directory) fs::create_directory_symlink(dir_ / "victim", at);
        else fs::create_symlink(dir_ / "victim.file", at);
        for (const std::vector<std::string> &command : commands) {
            const ProcessResult r = sage2tp(command);
            EXPECT_LT(r.exit_code, 5) << entry << ": " << command[0] << ": " << r.out << r.err;
        }
        ++covered;
        const bool same = snapshot(dir_ / "victim") == before && slurp(dir_ / "victim.file") == before_file;
        EXPECT_TRUE(same) << "a link at " << entry << " made sage2tp write or delete outside the run";
        changed += same ? 0 : 1;
    }
    std::cout << "planted links: " << covered << " layout entries covered, " << changed
              << " with writes or deletes outside the run\n";
    EXPECT_EQ(covered, static_cast<int>(entries.size()));
}

TEST_F(Safety, CompilerFlagsWithShellCharactersAreRefusedAtPrepareWithTheirLine) {
    for (const std::string flag : {"-DX=$(touch pwned)", "-DX=`touch pwned`", "-DX=\\\"a\\\"", "-DX=a;b", "-DX=a b"}) {
        std::ofstream(dir_ / "f.toml") << slurp(dir_ / "m.toml") << "[build]\narch = \"sm_90a\"\nextra_flags = [\"-O3\", \""
                                       << flag << "\"]\n";
        const ProcessResult r = sage2tp({"prepare", "--manifest", "f.toml", "--run", "flags"});
        EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.out << r.err;
        EXPECT_NE(r.err.find("f.toml:"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("[build] extra_flags"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(dir_ / "flags")) << flag;
    }
    EXPECT_FALSE(fs::exists(dir_ / "pwned"));
}

// The flags that would run a program of the manifest's choosing, in every spelling, at prepare (their
// line named) and again at build, for a received run whose experiment.toml carries them: none runs.
TEST_F(Safety, FlagsThatNameAProgramOrAFileAreRefusedInAManifestAndInAReceivedRun) {
    const fs::path tool = dir_ / "evil-cc";
    std::ofstream(tool) << "#!/bin/sh\ntouch " << (dir_ / "pwned").string() << "\nexit 1\n";
    fs::permissions(tool, fs::perms::owner_all);
    const std::string path = tool.string(), bin = dir_.string();
    const std::vector<std::string> hostile = {
        "-ccbin=" + path,          "-ccbin" + path,           "--compiler-bindir=" + path, "-ccbin",
        "--compiler-bindir",       "-Xcompiler=-fplugin=" + path, "-Xcompiler=-B" + bin, "--compiler-options=-B" + bin,
        "-Xlinker=--plugin=" + path, "-Xptxas=--output-file=" + path, "--dryrun", "-dryrun",
        "-include=/etc/passwd",    "-include",                "--pre-include=/etc/passwd", "-I/etc",
        "--options-file=" + path,  "-optf=" + path,           "-odir=" + bin,              "--keep-dir=" + bin,
        "-Xcompiler",              "-Xlinker",                "--run-args=x",              "--run",
        "-Xptxas=-dlcm=ca,--output-file=" + path,
    };
    for (const std::string &flag : hostile) {
        std::ofstream(dir_ / "f.toml") << slurp(dir_ / "m.toml") << "[build]\narch = \"sm_90a\"\nnvcc_flags = [\"-O3\", \""
                                       << flag << "\"]\n";
        const ProcessResult r = sage2tp({"prepare", "--manifest", "f.toml", "--run", "flags"});
        EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.out << r.err;
        EXPECT_NE(r.err.find("f.toml:"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("not one a manifest may carry"), std::string::npos) << flag << ": " << r.err;
        EXPECT_FALSE(fs::exists(dir_ / "flags")) << flag;
    }
    // A received run: its experiment.toml edited after prepare, and the digest its checkpoint records
    // with it, as a sender would (or an older sage2tp that let the flag through).
    const fs::path run = prepare_run("received");
    auto digest = [&] { return run_process({"sha256sum", (run / "experiment.toml").string()}).out.substr(0, 64); };
    const std::string before = digest();
    std::string manifest = slurp(run / "experiment.toml");
    const std::string from = "nvcc_flags = [";
    const auto at = manifest.find(from);
    ASSERT_NE(at, std::string::npos) << manifest;
    manifest.insert(at + from.size(), "\"-ccbin=" + path + "\", ");
    std::ofstream(run / "experiment.toml", std::ios::trunc) << manifest;
    CheckpointRead prepared = read_checkpoint(run / "checkpoints/01-prepare.toml");
    ASSERT_TRUE(prepared.checkpoint) << prepared.problem;
    bool restamped = false;
    for (auto &&[name, artifact] : prepared.checkpoint->artifacts)
        if (toml::table *fields = artifact.as_table(); fields && (*fields)["sha256"].value_or(std::string()) == before) {
            fields->insert_or_assign("sha256", digest());
            restamped = true;
        }
    ASSERT_TRUE(restamped);
    write_checkpoint(run / "checkpoints/01-prepare.toml", *prepared.checkpoint);
    const ProcessResult r = sage2tp({"build", "--run", "received", "--arch", "sm_90a", "--no-cache"});
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    if (r.exit_code != 3) {  // 3: no nvcc on this host, so nothing could have run it anyway
        EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
        EXPECT_NE(r.err.find("-ccbin"), std::string::npos) << r.err;
    }
    EXPECT_FALSE(fs::exists(dir_ / "pwned")) << "a manifest's flag ran " << path;
}

// The flags the shipped manifests carry are still accepted.
TEST_F(Safety, TheFlagsTheShippedManifestsCarryAreAccepted) {
    std::ofstream(dir_ / "f.toml") << slurp(dir_ / "m.toml")
                                   << "[build]\narch = \"sm_90a\"\nnvcc_flags = [\"-O3\", \"-std=c++17\", \"-U__CUDA_NO_HALF_OPERATORS__\", "
                                      "\"--use_fast_math\", \"-diag-suppress=174\", \"-D_GLIBCXX_USE_CXX11_ABI=1\", \"-lineinfo\", "
                                      "\"-Xptxas=-v\", \"-maxrregcount=128\"]\n";
    const ProcessResult r = sage2tp({"prepare", "--manifest", "f.toml", "--run", "flags"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// Sizes from a manifest go through checked arithmetic: 2^62 tokens x 40 heads was SIGFPE (exit 136),
// 2^63 - 1 tokens passed prepare.
TEST_F(Safety, AWorkloadWhoseSizesOverflowIsExitTwoNamingTheKey) {
    std::string manifest = slurp(dir_ / "m.toml");
    const std::string from = "len_q = 128\n";
    ASSERT_NE(manifest.find(from), std::string::npos);
    for (const std::string &shape : {std::string("len_q = 4611686018427387904\nheads_q = 40\n"),
                                     std::string("len_q = 9223372036854775807\n"),
                                     std::string("len_q = 16777216\nlen_kv = 16777216\n")}) {
        std::string text = manifest;
        text.replace(text.find(from), from.size(), shape);
        std::ofstream(dir_ / "f.toml") << text;
        const ProcessResult r = sage2tp({"prepare", "--manifest", "f.toml", "--run", "huge"});
        EXPECT_EQ(r.exit_code, 2) << shape << r.out << r.err;
        EXPECT_NE(r.err.find("len_q"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(dir_ / "huge")) << shape;
    }
}

// `slurm` and `slurm collect` refuse planted links as every writing command does (slurm/ is part of the
// run layout): nothing is written through a slurm/ or reports/ link. Fake Slurm clients (an squeue that
// knows no task) let collect get as far as writing; no cluster is needed for the refusal.
TEST_F(Safety, SlurmAndSlurmCollectRefusePlantedLinks) {
    const fs::path run = prepare_run("run");
    fs::create_directories(dir_ / "bin");
    for (const char *tool : {"squeue", "sinfo", "sbatch"}) {
        std::ofstream(dir_ / "bin" / tool) << "#!/bin/sh\nexit 0\n";
        fs::permissions(dir_ / "bin" / tool, fs::perms::owner_all);
    }
    const std::map<std::string, std::string> slurm_path{{"PATH", (dir_ / "bin").string() + ":" + std::getenv("PATH")}};
    fs::create_directories(dir_ / "victim");
    std::ofstream(dir_ / "victim" / "keep.txt") << "mine\n";

    fs::create_directory_symlink(dir_ / "victim", run / "slurm");
    ProcessResult r = sage2tp({"slurm", "--run", "run", "--arch", "sm_90a", "--no-wait"}, slurm_path);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
    r = sage2tp({"slurm", "collect", "--run", "run"}, slurm_path);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    fs::remove(run / "slurm");

    fs::create_directories(run / "slurm" / "S");
    std::ofstream(run / "slurm" / "S" / "plan.toml") << "job = \"7\"\n";
    std::ofstream(run / "slurm" / "latest") << "S\n";
    fs::remove_all(run / "reports");
    fs::create_directory_symlink(dir_ / "victim", run / "reports");
    r = sage2tp({"slurm", "collect", "--run", "run"}, slurm_path);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "victim" / "cluster.toml")) << "slurm collect wrote through reports/";
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto &e : fs::directory_iterator(dir_ / "victim")) ++entries;
    EXPECT_EQ(entries, 1u);
}

// A plan.toml or a task's result.toml that is a FIFO is refused (exit 2, naming it), never waited on.
TEST_F(Safety, SlurmCollectRefusesAFifoInsteadOfAPlanOrAResult) {
    const fs::path run = prepare_run("run");
    fs::create_directories(dir_ / "bin");
    std::ofstream(dir_ / "bin" / "squeue") << "#!/bin/sh\nexit 0\n";
    fs::permissions(dir_ / "bin" / "squeue", fs::perms::owner_all);
    const std::map<std::string, std::string> slurm_path{{"PATH", (dir_ / "bin").string() + ":" + std::getenv("PATH")}};
    fs::create_directories(run / "slurm" / "S" / "task-0");
    std::ofstream(run / "slurm" / "latest") << "S\n";
    for (const std::string fifo : {"plan.toml", "task-0/result.toml"}) {
        SCOPED_TRACE(fifo);
        fs::remove(run / "slurm" / "S" / "plan.toml");
        if (fifo != "plan.toml")
            std::ofstream(run / "slurm" / "S" / "plan.toml")
                << "job = \"7\"\n[[task]]\ntask = 0\narch = \"sm_90a\"\narch_feature = \"sm_90\"\ngpu_kind = \"any\"\n"
                   "repeat = 1\nconstraint = \"sm_90\"\nrun = \"slurm/S/task-0/run\"\n";
        ASSERT_EQ(::mkfifo((run / "slurm" / "S" / fifo).c_str(), 0644), 0);
        ProcessOptions options;
        options.working_directory = dir_;
        options.extra_environment = slurm_path;
        options.timeout = std::chrono::seconds(20);
        const ProcessResult r = run_process({sage2tp_binary(), "slurm", "collect", "--run", "run"}, options);
        EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
        EXPECT_NE(r.err.find(fifo.substr(fifo.find('/') + 1)), std::string::npos) << r.err;
        fs::remove(run / "slurm" / "S" / fifo);
    }
}

// A .lock hard-linked to a file elsewhere would get the pid written into that file: every command that
// locks refuses it (exit 2) and the file keeps its bytes.
TEST_F(Safety, AHardLinkedLockIsRefusedAndTheFileItSharesIsNotWritten) {
    const fs::path run = prepare_run("run");
    std::ofstream(dir_ / "victim.txt") << "precious\n";
    fs::remove(run / ".lock");
    fs::create_hard_link(dir_ / "victim.txt", run / ".lock");
    for (const std::vector<std::string> &command : std::vector<std::vector<std::string>>{
             {"prepare", "--manifest", "m.toml", "--run", "run"},
             {"build", "--run", "run", "--arch", "sm_90a"},
             {"sanitize", "--run", "run"},
             {"gate", "--run", "run"},
             {"clean", "--run", "run", "--yes"}}) {
        const ProcessResult r = sage2tp(command);
        EXPECT_EQ(r.exit_code, 2) << command[0] << ": " << r.out << r.err;
        EXPECT_NE(r.err.find("link"), std::string::npos) << command[0] << ": " << r.err;
        EXPECT_EQ(slurp(dir_ / "victim.txt"), "precious\n") << command[0] << " wrote through the hard-linked .lock";
    }
    EXPECT_TRUE(fs::exists(run / "experiment.toml"));
}

// A clean that fails midway (here: a mount point in the run that cannot be removed) leaves a run that a
// later clean finishes, registrations included, though experiment.toml and a tree are gone by then.
TEST_F(Safety, ACleanInterruptedMidwayIsFinishedByTheNextClean) {
    const fs::path run = prepare_run("run");
    if (::mount("tmpfs", (run / "trees/candidate").c_str(), "tmpfs", 0, "size=64k") != 0)
        GTEST_SKIP() << "mounting a tmpfs in the run needs root (CAP_SYS_ADMIN): " << std::strerror(errno);
    ProcessResult r = sage2tp({"clean", "--yes", "run"});
    ::umount((run / "trees/candidate").c_str());
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_FALSE(fs::exists(run / "experiment.toml")) << "the first clean did not get as far as the issue's";
    EXPECT_FALSE(fs::exists(run / "trees/baseline"));
    r = sage2tp({"clean", "--yes", "run"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_FALSE(fs::exists(run));
    EXPECT_EQ(worktree_list(dir_ / "repo").find("run/trees"), std::string::npos) << worktree_list(dir_ / "repo");
}

// A run that went through `sage2tp slurm` holds slurm/: it is cleaned and prepared again like any run.
TEST_F(Safety, ARunWithSlurmSubmissionsIsCleanedAndPreparedAgain) {
    const fs::path run = prepare_run("run");
    fs::create_directories(run / "slurm" / "20261206T000000Z" / "task-0");
    std::ofstream(run / "slurm" / "latest") << "20261206T000000Z\n";
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "--force"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    r = sage2tp({"clean", "--yes", "run"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_FALSE(fs::exists(run));
}

// prepare prunes no registration of the user's: not their stale worktree's, not even when it fails.
TEST_F(Safety, PrepareLeavesTheUsersOwnStaleRegistrationsAlone) {
    git(dir_ / "repo", {"worktree", "add", "--detach", (dir_ / "mine").string()});
    fs::remove_all(dir_ / "mine");
    ASSERT_NE(worktree_list(dir_ / "repo").find("mine"), std::string::npos);
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "failing", "--commit", "no-such-commit"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(worktree_list(dir_ / "repo").find("mine"), std::string::npos) << "a failed prepare pruned the user's registration";
    prepare_run("run");
    r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "--force"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(worktree_list(dir_ / "repo").find("mine"), std::string::npos) << "prepare pruned the user's registration";
    // sage2tp's own stale registrations (a run deleted by hand) still go.
    fs::remove_all(dir_ / "run");
    ASSERT_NE(worktree_list(dir_ / "repo").find("run/trees"), std::string::npos);
    prepare_run("again");
    EXPECT_EQ(worktree_list(dir_ / "repo").find("run/trees"), std::string::npos) << worktree_list(dir_ / "repo");
    EXPECT_NE(worktree_list(dir_ / "repo").find("mine"), std::string::npos);
}

// A directory is a run by its own marker, not by the names of the folders it holds: a .lock beside
// trees/ or inputs/ of the user's makes no run, and prepare deletes nothing there.
TEST_F(Safety, ALockBesideFoldersOfARunsNamesIsNoRun) {
    for (const char *folder : {"trees", "inputs", "builds"}) {
        SCOPED_TRACE(folder);
        const fs::path dir = dir_ / (std::string("look-alike-") + folder);
        const fs::path mine = directory_with_a_file(dir / folder / "baseline");
        std::ofstream(dir / ".lock") << "";
        const ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", dir.string()});
        EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
        EXPECT_NE(r.err.find("not a run"), std::string::npos) << r.err;
        EXPECT_EQ(slurp(mine), "uncommitted work\n");
        EXPECT_EQ(sage2tp({"clean", "--yes", dir.string()}).exit_code, 4);
        EXPECT_TRUE(fs::exists(mine));
    }
}

// "no such run" (4) for a path that is missing or names a file, as sage2tp-clean(1) says; not "invalid
// run id" (2).
TEST_F(Safety, CleanOfAMissingPathOrAFileExitsFour) {
    std::ofstream(dir_ / "file.txt") << "mine\n";
    for (const std::string &target : {(dir_ / "no/such/run").string(), std::string("no/such/run"), std::string("file.txt"),
                                     (dir_ / "file.txt").string()}) {
        const ProcessResult r = sage2tp({"clean", "--yes", target});
        EXPECT_EQ(r.exit_code, 4) << target << ": " << r.out << r.err;
        EXPECT_EQ(r.err.find("invalid run id"), std::string::npos) << r.err;
    }
    EXPECT_EQ(slurp(dir_ / "file.txt"), "mine\n");
}

// A prepare that cannot write its lock on a full disk leaves no new run directory behind.
TEST_F(Safety, APrepareOnAFullDiskLeavesNoNewRunDirectory) {
    fs::create_directories(dir_ / "small");
    if (::mount("tmpfs", (dir_ / "small").c_str(), "tmpfs", 0, "size=64k") != 0)
        GTEST_SKIP() << "mounting a 64 KiB tmpfs needs root (CAP_SYS_ADMIN): " << std::strerror(errno);
    {
        std::ofstream fill(dir_ / "small" / "fill", std::ios::binary);
        const std::string block(4096, 'x');
        for (int i = 0; i < 64 && fill; ++i) fill << block;
    }
    const ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", (dir_ / "small" / "new-run").string()});
    const bool left = fs::exists(dir_ / "small" / "new-run");
    ::umount((dir_ / "small").c_str());
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_FALSE(left) << "the failed prepare left its new run directory behind: " << r.err;
}

// A repeat's child (time-repeat) writes only a new measurement file in its run's reports/, never a file
// elsewhere.
TEST_F(Safety, TimeRepeatChildRefusesAFileOutsideTheRunsReports) {
    const fs::path run = prepare_run("run");
    std::ofstream(dir_ / "victim.toml") << "precious = true\n";
    for (const std::string &target : {(dir_ / "victim.toml").string(), (run / "experiment.toml").string()}) {
        const ProcessResult r = sage2tp({"time-repeat", "--run", "run", "--measurement", target, "--budget", "1",
                                         "--min-rounds", "1", "--target-half-width", "0.01", "--order-seed", "1"});
        EXPECT_EQ(r.exit_code, 2) << target << ": " << r.out << r.err;
        EXPECT_NE(r.err.find("time-repeat --measurement"), std::string::npos) << r.err;
    }
    EXPECT_EQ(slurp(dir_ / "victim.toml"), "precious = true\n");
}

TEST_F(Safety, CompareRefusesAnSvgPathThatIsNotARegularFile) {
    prepare_run("run");
    ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0644), 0);
    fs::create_directories(dir_ / "dir");
    for (const char *target : {"fifo", "dir"}) {
        const ProcessResult r = sage2tp({"compare", "run", "--svg", target});
        EXPECT_EQ(r.exit_code, 2) << target << ": " << r.out << r.err;
        EXPECT_NE(r.err.find("will not write"), std::string::npos) << r.err;
    }
    EXPECT_TRUE(fs::is_fifo(dir_ / "fifo"));
    EXPECT_TRUE(fs::is_directory(dir_ / "dir"));
}

TEST_F(Safety, HostileFilesInManifestAndCheckpointSlotsAreClearErrorsNeverAHang) {
    ASSERT_EQ(::mkfifo((dir_ / "fifo.toml").c_str(), 0644), 0);
    fs::create_directories(dir_ / "dir.toml");
    ProcessOptions bounded;
    bounded.working_directory = dir_;
    bounded.timeout = std::chrono::seconds(20);
    for (const std::string manifest : {"fifo.toml", "/dev/zero", "dir.toml"}) {
        const ProcessResult r = run_process({sage2tp_binary(), "prepare", "--manifest", manifest, "--run", "h"}, bounded);
        EXPECT_FALSE(r.timed_out) << manifest;
        EXPECT_EQ(r.exit_code, 2) << manifest << ": " << r.out << r.err;
        EXPECT_NE(r.err.find(manifest), std::string::npos) << r.err;
    }
    const fs::path run = prepare_run("run");
    const fs::path slot = run / "checkpoints/01-prepare.toml";
    for (const std::string kind : {"directory", "fifo"}) {
        fs::remove_all(slot);
        if (kind == "directory") fs::create_directories(slot);
        else ASSERT_EQ(::mkfifo(slot.c_str(), 0644), 0);
        for (const std::vector<std::string> &command :
             {std::vector<std::string>{"status", "--run", "run"}, {"compare", "run", "--svg", "c.svg"}, {"build", "--run", "run"}}) {
            std::vector<std::string> argv{sage2tp_binary()};
            argv.insert(argv.end(), command.begin(), command.end());
            const ProcessResult r = run_process(argv, bounded);
            EXPECT_FALSE(r.timed_out) << kind << ": " << command[0];
            EXPECT_NE(r.exit_code, 5) << kind << ": " << command[0] << ": " << r.out << r.err;
            EXPECT_EQ(r.err.find("basic_filebuf"), std::string::npos) << r.err;
        }
    }
}

TEST_F(Safety, PrepareRefusesANonEmptyDirectoryThatIsNotARun) {
    for (const char *file : {"proj/trees/keep.txt", "proj/inputs/mine.patch", "proj/experiment.toml", "proj/work.txt"}) {
        fs::create_directories((dir_ / file).parent_path());
        std::ofstream(dir_ / file) << "mine\n";
    }
    const std::map<std::string, std::string> before = snapshot(dir_ / "proj");
    const ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "proj"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("not a run"), std::string::npos) << r.err;
    EXPECT_EQ(snapshot(dir_ / "proj"), before);
}

TEST_F(Safety, PrepareFollowsLatestOnlyInsideTheRunsRoot) {
    fs::create_directories(dir_ / "sage2tp-runs");
    fs::create_directory_symlink("..", dir_ / "sage2tp-runs/latest");
    const ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "experiment.toml")) << "prepare made the project directory a run";
    EXPECT_FALSE(fs::exists(dir_ / "trees"));
}

TEST_F(Safety, PrepareOfARunWhoseCheckpointCannotBeReadNeedsTheManifest) {
    const fs::path run = prepare_run("run");
    const std::string recorded = slurp(run / "experiment.toml");
    std::ofstream(run / "checkpoints/01-prepare.toml") << "garbage";
    const ProcessResult r = sage2tp({"prepare", "--run", "run"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("--manifest"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(run / "experiment.toml"), recorded) << "prepare re-prepared the run from another manifest";
}

TEST_F(Safety, APrepareThatCannotWriteItsCheckpointChangesNothing) {
    const fs::path run = prepare_run("run");
    fs::remove_all(run / "checkpoints");
    std::ofstream(run / "checkpoints") << "a file where the checkpoints go\n";
    std::ofstream(dir_ / "c2.patch") << "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -1,2 +1,2 @@\n // kernel\n"
                                        "-int schedule = 0;\n+int schedule = 2;\n";
    std::string manifest = slurp(dir_ / "m.toml");
    manifest.replace(manifest.find("c.patch"), 7, "c2.patch");
    std::ofstream(dir_ / "m2.toml") << manifest;
    const std::map<std::string, std::string> before = snapshot(run);
    const ProcessResult r = sage2tp({"prepare", "--manifest", "m2.toml", "--run", "run", "--force"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    // Everything as it was, but the pid the lock file records.
    std::map<std::string, std::string> after = snapshot(run), expected = before;
    after.erase(".lock");
    expected.erase(".lock");
    EXPECT_EQ(after, expected);
    EXPECT_NE(slurp(run / "trees/candidate/kernels/k.cu").find("schedule = 1"), std::string::npos);
}

TEST_F(Safety, UnderJsonStandardOutputHoldsExactlyOneObject) {
    const std::vector<std::vector<std::string>> commands{
        {"help", "--json"},          {"help", "build", "--json"},        {"build", "--help", "--json"},
        {"--help", "--json"},        {"report", "--json", "--run", "none"}, {"status", "--json", "--run", "none"},
    };
    for (const std::vector<std::string> &command : commands) {
        const ProcessResult r = sage2tp(command);
        EXPECT_EQ(top_level_json_values(r.out), 1u) << command[0] << " " << command[1] << ":\n" << r.out;
        EXPECT_EQ(r.out.find_first_not_of(" \n"), r.out.find('{')) << r.out;
    }
    EXPECT_NE(sage2tp({"help", "--json"}).out.find("\"name\" : \"prepare\""), std::string::npos);
    EXPECT_NE(sage2tp({"build", "--help", "--json"}).out.find("--arch"), std::string::npos);
    const ProcessResult r = sage2tp({"report", "--json", "--format", "csv", "--run", "none"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(top_level_json_values(r.out), 1u) << r.out;
    EXPECT_NE(r.err.find("--format csv"), std::string::npos) << r.err;
}

TEST_F(Safety, PrepareRefusesAnArchAndAPinThatBuildAndTimeCouldNeverUse) {
    std::string manifest = slurp(dir_ / "m.toml");
    std::ofstream(dir_ / "arch.toml") << manifest << "[build]\narch = \"sm_75\"\n";
    ProcessResult r = sage2tp({"prepare", "--manifest", "arch.toml", "--run", "arch"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("arch.toml:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("unsupported arch 'sm_75'"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "arch"));
    // 64 characters, but not a SHA-256 as sha256_hex writes it: no output could ever match it.
    std::ofstream(dir_ / "pin.toml") << manifest << "[workload.expected_sha256]\nsm_90a = \"" << std::string(64, 'g') << "\"\n";
    r = sage2tp({"prepare", "--manifest", "pin.toml", "--run", "pin"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("pin.toml:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("64 lower-case hex digits"), std::string::npos) << r.err;
}

TEST_F(Safety, ARunThatCannotBeReadIsAnErrorNeverAnEmptyTable) {
    const fs::path run = prepare_run("run");
    fs::remove_all(run / "checkpoints");
    std::ofstream(run / "checkpoints") << "a file\n";
    ProcessResult r = sage2tp({"status", "--run", "run"});
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    EXPECT_NE(r.err.find("is not a directory"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("STAGE"), std::string::npos) << r.out;
    // A regular file named as the run: not "does not exist".
    std::ofstream(dir_ / "notes.txt") << "mine\n";
    r = sage2tp({"status", "--run", "notes.txt"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_EQ(r.err.find("does not exist"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is not a directory"), std::string::npos) << r.err;
}

TEST_F(Safety, OutputThatCannotBeWrittenIsAFailure) {
    prepare_run("run");
    ProcessOptions in_dir;
    in_dir.working_directory = dir_;
    const ProcessResult r = run_process({"bash", "-c", "exec \"$0\" status --run run > /dev/full", sage2tp_binary()}, in_dir);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("could not write standard output"), std::string::npos) << r.err;
}

TEST_F(Safety, CompareInsideARunWritesNothingIntoIt) {
    const fs::path run = prepare_run("run");
    const std::map<std::string, std::string> before = snapshot(run);
    const ProcessResult r = run_sage2tp({"compare", "--svg", "ratios.svg"}, run);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("inside the run"), std::string::npos) << r.err;
    std::map<std::string, std::string> after = snapshot(run), expected = before;
    after.erase(".lock");
    expected.erase(".lock");
    EXPECT_EQ(after, expected);
    EXPECT_EQ(run_sage2tp({"compare", "--svg", (dir_ / "ratios.svg").string()}, run).exit_code, 0);
}

TEST_F(Safety, ARepositoryThatIsNotGitIsNamedAsSuch) {
    fs::create_directories(dir_ / "plain/kernels");
    const ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--repository", "plain", "--run", "run"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("is not a git repository"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("does not exist"), std::string::npos) << r.err;
}

// Two prepares started together on one new directory: the one that lost its lock never removes it, even
// when it was the one whose mkdir made the directory.
TEST_F(Safety, TwoPreparesRacingForANewRunLeaveTheWinnersRun) {
    for (int trial = 0; trial < 12; ++trial) {
        const std::string name = "race-" + std::to_string(trial);
        const pid_t first = start_sage2tp({"prepare", "--manifest", "m.toml", "--run", name}, dir_);
        const pid_t second = start_sage2tp({"prepare", "--manifest", "m.toml", "--run", name}, dir_);
        int first_status = 0, second_status = 0;
        ::waitpid(first, &first_status, 0);
        ::waitpid(second, &second_status, 0);
        const bool any_passed = (WIFEXITED(first_status) && WEXITSTATUS(first_status) == 0) ||
                                (WIFEXITED(second_status) && WEXITSTATUS(second_status) == 0);
        ASSERT_TRUE(any_passed) << "trial " << trial;
        EXPECT_TRUE(fs::is_regular_file(dir_ / name / "checkpoints/01-prepare.toml"))
            << "trial " << trial << ": the losing prepare removed the winner's run";
        EXPECT_EQ(sage2tp({"status", "--run", name}).exit_code, 0) << "trial " << trial;
    }
}
