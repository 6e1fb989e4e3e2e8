// The sage2tp binary under hostile paths, signals and kills, with the real git and nvcc on a tiny
// kernel of the test's own (two compiles of about a second each, not the embedded kernels' minutes):
//  * no shell metacharacter in a run path or run id reaches a shell (nvcc runs one of its own);
//  * SIGINT and SIGTERM reach every child, the command exits 128+N only after they are gone, with
//    no checkpoint written and the lock free;
//  * SIGKILL of sage2tp takes nvcc, cicc and ptxas along;
//  * prepare and build killed at seeded random moments are redone and never trusted half-done
//    (S2TP_FAULT_TRIALS and S2TP_FAULT_SEED change the count and the seed);
//  * filesystem refusals exit 2 naming the path; --json always prints one object; status notices a
//    corrupted cubin; two prepare --new in one second make two runs.
#include "cli_fixture.h"

#include "formats/checkpoint_store.h"
#include "support/hashing.h"
#include "pipeline/stage_pipeline.h"
#include "support/process_runner.h"

#include <gtest/gtest.h>

#include <map>

#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sys/file.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

int env_int(const char *name, int fallback) {
    const char *value = std::getenv(name);
    return value && *value ? std::atoi(value) : fallback;
}

struct LiveProcess {
    pid_t pid;
    std::string name;
};

// Processes (not zombies) whose working directory or command line is inside `dir`: what sage2tp
// started there, nvcc's cicc and ptxas included, since they inherit nvcc's working directory.
std::vector<LiveProcess> processes_inside(const fs::path &dir) {
    std::vector<LiveProcess> found;
    const std::string prefix = fs::weakly_canonical(dir).string();
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        pid_t pid = std::stoi(name);
        if (pid == ::getpid()) continue;
        std::string stat = slurp(entry.path() / "stat");
        std::size_t close = stat.rfind(')');
        if (close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z') continue;
        std::error_code link_error;
        std::string cwd = fs::read_symlink(entry.path() / "cwd", link_error).string();
        std::string cmdline = slurp(entry.path() / "cmdline");
        bool inside = (!link_error && cwd.rfind(prefix, 0) == 0) || cmdline.find(prefix) != std::string::npos;
        if (inside) found.push_back({pid, stat.substr(stat.find('(') + 1, close - stat.find('(') - 1)});
    }
    return found;
}

std::string names(const std::vector<LiveProcess> &processes) {
    std::string text;
    for (const auto &p : processes) text += (text.empty() ? "" : ", ") + p.name + " (" + std::to_string(p.pid) + ")";
    return text.empty() ? "none" : text;
}

// Waits (bounded) until nothing runs inside `dir`; returns what is still there at the end.
std::vector<LiveProcess> wait_until_gone(const fs::path &dir, double seconds) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::vector<LiveProcess> left = processes_inside(dir);
    while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        left = processes_inside(dir);
    }
    return left;
}

const char *kernel_line(int value) {
    return value == 1 ? "extern \"C\" __global__ void s2tp_attn_hd64_f16_nomask(float *o) { o[threadIdx.x] = 1.0f; }\n"
                      : "extern \"C\" __global__ void s2tp_attn_hd64_f16_nomask(float *o) { o[threadIdx.x] = 2.0f; }\n";
}

class Reliability : public CliTest {
protected:
    void TearDown() override {
        std::error_code ec;
        fs::permissions(dir_ / "locked", fs::perms::owner_all, ec);
        CliTest::TearDown();
    }
    // A repository with one tiny kernel named like an ABI entry, a patch that changes its constant
    // (so the candidate's cubin must differ), and a manifest naming both.
    fs::path write_experiment(const std::string &extra_source_keys = "") {
        const fs::path repo = dir_ / "repo";
        fs::create_directories(repo / "kernels");
        std::ofstream(repo / "kernels/k.cu") << kernel_line(1);
        const std::string commit = commit_repository(repo);
        std::ofstream(dir_ / "c.patch") << "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -1 +1 @@\n-" << kernel_line(1) << "+"
                                        << kernel_line(2);
        std::ofstream(dir_ / "m.toml") << "[experiment]\nname = \"exp\"\n[source]\nkind = \"git\"\nrepository = \"repo\"\n"
                                       << "commit = \"" << commit << "\"\nkernel_sources = [\"kernels/k.cu\"]\n"
                                       << extra_source_keys
                                       << "[candidate]\npatch = \"c.patch\"\n[build]\narch = \"sm_90a\"\n"
                                          "[workload]\nname = \"w\"\nlen_q = 128\n";
        return dir_ / "m.toml";
    }
    static std::optional<Checkpoint> checkpoint(const fs::path &run, const char *file) {
        return read_checkpoint(run / "checkpoints" / file).checkpoint;
    }
    // A passed build checkpoint whose cubins are on disk as recorded, baseline and candidate different.
    static void expect_good_build(const fs::path &run, const std::string &context) {
        auto c = checkpoint(run, "02-build.toml");
        ASSERT_TRUE(c) << context;
        EXPECT_EQ(c->status, StageStatus::passed) << context;
        std::string digests[2];
        int i = 0;
        for (const char *key : {"baseline:kernels/k.cu", "candidate:kernels/k.cu"}) {
            std::string path = c->artifacts[key]["path"].value_or(std::string());
            ASSERT_FALSE(path.empty()) << context << ": no artifact " << key;
            digests[i] = sha256_file(run / path);
            EXPECT_EQ(digests[i], c->artifacts[key]["sha256"].value_or(std::string())) << context << ": " << path;
            ++i;
        }
        EXPECT_NE(digests[0], digests[1]) << context << ": the patched candidate built to the baseline's cubin";
    }
};

// Waits (bounded) until the run's lock is free; returns the processes that were still running inside
// the run at that moment, which must be none: the lock is released only after the children are gone.
std::vector<LiveProcess> wait_for_lock(const fs::path &run, double seconds, bool *freed) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    *freed = false;
    int fd = ::open((run / ".lock").c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        *freed = true;
        return processes_inside(run);
    }
    while (!(*freed = ::flock(fd, LOCK_EX | LOCK_NB) == 0) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto left = processes_inside(run);
    ::close(fd);
    return left;
}

// Waits (bounded) until a process named one of `wanted` runs inside `dir`; false when `pid` ended first.
bool wait_for_child(pid_t pid, const fs::path &dir, const std::set<std::string> &wanted) {
    for (int i = 0; i < 3000; ++i) {
        for (const auto &p : processes_inside(dir))
            if (wanted.count(p.name)) return true;
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
}

}  // namespace

TEST_F(Reliability, ShellMetacharactersInRunPathsAndIdsNeverRunACommand) {
    write_experiment();
    // Each run path either builds (the characters stay inert) or is refused with exit 2 naming the
    // character; the marker file that an injected command would create never appears.
    const std::vector<std::string> run_names = {"r $(touch PWNED)", "r `touch PWNED`", "r \"q\" $(touch PWNED)",
                                                "r with spaces", "r %d%s%n percent", "r ; touch PWNED &"};
    for (const auto &name : run_names) {
        ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", name, "-q"});
        ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
        r = sage2tp({"build", "--run", name});
        const bool refused = r.exit_code == 2;
        std::cout << "build --run '" << name << "': exit " << r.exit_code
                  << (refused ? ", refused: " + r.err.substr(0, r.err.find('\n')) : std::string(", built")) << "\n";
        EXPECT_TRUE(r.exit_code == 0 || refused) << name << ": " << r.out << r.err;
        if (refused) {
            EXPECT_NE(r.err.find("contains '"), std::string::npos) << r.err;
        }
        if (r.exit_code == 0) expect_good_build(dir_ / name, name);
        if (name.find_first_of("$`\"") == std::string::npos) {
            EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
        }
    }
    // The same characters in --root, whose runs are named by sage2tp itself.
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--root", "root $(touch PWNED)", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = sage2tp({"build", "--root", "root $(touch PWNED)"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    std::cout << "build --root 'root $(touch PWNED)': exit " << r.exit_code << "\n";

    // Run ids are checked when the command line is read, for every command and the environment variable.
    for (const std::string id : {"a$(touch PWNED)", "a`touch PWNED`", "a\"b", "a b", "a%b", "-a", ".a", "a/b", ""}) {
        for (const std::string command : {"prepare", "build", "status"}) {
            r = sage2tp({command, "--run-id", id});
            EXPECT_EQ(r.exit_code, 2) << command << " --run-id '" << id << "': " << r.err;
            EXPECT_NE(r.err.find("invalid run id"), std::string::npos) << r.err;
        }
        for (const std::string variable : {"SAGE2TP_RUN_ID", "SAGE2_TEMPORAL_RUN_ID"}) {
            r = sage2tp({"status"}, {{variable, id}});
            if (!id.empty()) {
                EXPECT_EQ(r.exit_code, 2) << variable << "='" << id << "': " << r.err;
            }
        }
    }
    r = sage2tp({"build", "--run-id", "a$(touch PWNED)"});
    EXPECT_NE(r.err.find("character '$'"), std::string::npos) << r.err;
    std::cout << "build --run-id 'a$(touch PWNED)': exit " << r.exit_code << ": " << r.err;
    r = sage2tp({"prepare", "--manifest", "m.toml", "--run-id", "good-id_1.0", "-q"});
    EXPECT_EQ(r.exit_code, 0) << r.err;

    std::vector<fs::path> markers;
    for (const auto &entry : fs::recursive_directory_iterator(dir_))
        if (entry.path().filename().string().find("PWNED") == 0) markers.push_back(entry.path());
    EXPECT_TRUE(markers.empty()) << "an injected command ran: " << markers.front();
    std::cout << "marker files found: " << markers.size() << "\n";
}

TEST_F(Reliability, ManifestSourcePathsWithShellCharactersAreRefused) {
    write_experiment("include_dirs = [\"kernels,$(touch PWNED)\"]\n");
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    ProcessResult r = sage2tp({"build", "--run", "run"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("include_dirs 'kernels,$(touch PWNED)' contains ','"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "PWNED"));
    EXPECT_FALSE(fs::exists(dir_ / "run/PWNED"));
}

TEST_F(Reliability, InterruptReachesEveryChildAndLeavesNoCheckpoint) {
    write_experiment();
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    const fs::path run = dir_ / "run";
    // Ctrl-C at a terminal signals the whole foreground job; SIGTERM from a supervisor reaches only sage2tp.
    for (auto [signo, to_group] : {std::pair{SIGINT, true}, std::pair{SIGTERM, false}, std::pair{SIGHUP, false}}) {
        bool caught_mid_compile = false;
        for (int attempt = 0; attempt < 10 && !caught_mid_compile; ++attempt) {
            pid_t pid = start({"build", "--run", "run", "--force"}, to_group);
            if (!wait_for_child(pid, run, {"cicc", "ptxas"})) {
                int status = 0;
                ::waitpid(pid, &status, 0);
                continue;  // the compile finished before a signal could land mid-way; try again
            }
            caught_mid_compile = true;
            const auto alive = processes_inside(run);
            ::kill(to_group ? -pid : pid, signo);
            int status = 0;
            ::waitpid(pid, &status, 0);
            // Nothing of the build may still run once sage2tp has exited: no grace period here.
            const auto left = processes_inside(run);
            std::cout << strsignal(signo) << (to_group ? " to the job" : " to sage2tp") << " with " << names(alive)
                      << " running: exit " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << ", left: " << names(left)
                      << "\n";
            ASSERT_TRUE(WIFEXITED(status)) << "sage2tp died of signal " << WTERMSIG(status);
            EXPECT_EQ(WEXITSTATUS(status), 128 + signo);
            EXPECT_TRUE(left.empty()) << names(left);
            EXPECT_FALSE(fs::exists(run / "checkpoints/02-build.toml")) << "an interrupted build wrote a checkpoint";
        }
        EXPECT_TRUE(caught_mid_compile) << "never caught nvcc's children running";
    }
    // The lock is free and the build completes.
    ProcessResult r = sage2tp({"build", "--run", "run"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    expect_good_build(run, "after the interrupts");
}

// build --force compiles into a staging directory and swaps it in whole: Ctrl-C during it leaves the
// build that passed before, which still verifies and is up to date.
TEST_F(Reliability, InterruptedForcedBuildKeepsTheLastPassedBuild) {
    write_experiment();
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    const fs::path run = dir_ / "run";
    ASSERT_EQ(sage2tp({"build", "--run", "run", "-q"}).exit_code, 0);
    expect_good_build(run, "before the interrupt");
    const std::string passed = slurp(run / "checkpoints/02-build.toml");
    bool caught_mid_compile = false;
    for (int attempt = 0; attempt < 10 && !caught_mid_compile; ++attempt) {
        pid_t pid = start({"build", "--run", "run", "--force"}, true);
        if (!wait_for_child(pid, run, {"cicc", "ptxas"})) {
            int status = 0;
            ::waitpid(pid, &status, 0);
            continue;
        }
        caught_mid_compile = true;
        ::kill(-pid, SIGINT);
        int status = 0;
        ::waitpid(pid, &status, 0);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGINT);
    }
    ASSERT_TRUE(caught_mid_compile) << "never caught nvcc's children running";
    EXPECT_EQ(slurp(run / "checkpoints/02-build.toml"), passed);
    expect_good_build(run, "after Ctrl-C during build --force");
    ProcessResult r = sage2tp({"build", "--run", "run"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE((r.out + r.err).find("build: up to date"), std::string::npos) << r.out << r.err;
    EXPECT_FALSE(fs::exists(run / ".build-new")) << "the killed build's staging is left behind";
}

// Issue 36 item 9: the interrupt's message names the command that resumes, and status and runs say
// the run stopped at the interrupted stage, not that it stands at its last checkpoint.
TEST_F(Reliability, InterruptedStageSaysHowToResume) {
    write_experiment();
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    const fs::path run = fs::canonical(dir_ / "run");
    bool caught_mid_compile = false;
    for (int attempt = 0; attempt < 10 && !caught_mid_compile; ++attempt) {
        fs::remove_all(run / "checkpoints/02-build.toml");
        const pid_t pid = start_sage2tp({"build", "--run", "run"}, dir_, true, {}, dir_ / "stderr");
        caught_mid_compile = wait_for_child(pid, run, {"cicc", "ptxas"});
        if (caught_mid_compile) ::kill(-pid, SIGINT);
        int status = 0;
        ::waitpid(pid, &status, 0);
    }
    ASSERT_TRUE(caught_mid_compile) << "never caught nvcc's children running";
    const std::string resume = "to resume: sage2tp build --run " + run.string() + ", with the options given before";
    const std::string err = slurp(dir_ / "stderr");
    EXPECT_NE(err.find("interrupted by SIGINT"), std::string::npos) << err;
    EXPECT_NE(err.find(resume), std::string::npos) << err;
    ProcessResult r = sage2tp({"status", "--run", "run"});
    EXPECT_NE(r.out.find("next: stopped at build: interrupted; " + resume), std::string::npos) << r.out;
    r = sage2tp({"runs", "--root", dir_.string()});
    EXPECT_NE(r.out.find("stopped at build: interrupted"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("prepare passed"), std::string::npos) << r.out;
    // The same command resumes, and the stop is history.
    r = sage2tp({"build", "--run", "run"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(fs::exists(run / "last-stop.toml"));
}

// A run carried to another host, where the repository is at another path. `run` re-prepares nothing and
// rebuilds nothing; it goes straight to the first GPU stage (which, on this host without a GPU, exits 3).
// A source that includes <torch/extension.h> builds against sage2tp's own torch subset, copied into the
// run, so nothing about either host's torch (or its absence) enters the build.
TEST_F(Reliability, CarriedRunGoesStraightToTheFirstGpuStage) {
    write_experiment("needs_torch_headers = true\n");
    const std::map<std::string, std::string> no_python = {{"PATH", "/usr/bin:/bin"}};
    ASSERT_EQ(run_sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}, dir_, no_python).exit_code, 0);
    ProcessResult r = run_sage2tp({"build", "--run", "run"}, dir_, no_python);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    // This suite runs with the compile cache off: every compile runs, and the build says why.
    EXPECT_NE(r.out.find("cache: off (SAGE2TP_CACHE=off)"), std::string::npos) << r.out;
    const std::optional<Checkpoint> built_here = checkpoint(dir_ / "run", "02-build.toml");
    ASSERT_TRUE(built_here);
    for (const auto &[key, artifact] : built_here->artifacts)
        EXPECT_FALSE(artifact.is_table() && (*artifact.as_table())["from_cache"].value_or(false))
            << key.str() << " came from the cache";
    EXPECT_FALSE(built_here->figures.contains("torch_headers"));
    bool saw_shim = false;
    for (const auto &entry : fs::recursive_directory_iterator(dir_ / "run" / "builds"))
        if (entry.path().extension() == ".cmd")
            saw_shim = saw_shim || slurp(entry.path()).find("-Itrees/support/kernels/torch_shim") != std::string::npos;
    EXPECT_TRUE(saw_shim) << "no compile of a needs_torch_headers source was given sage2tp's torch subset";

    fs::rename(dir_ / "repo", dir_ / "repo-elsewhere");
    fs::rename(dir_ / "run", dir_ / "carried");
    const fs::path carried = dir_ / "carried";
    const std::string prepared = slurp(carried / "checkpoints/01-prepare.toml");
    const std::string built = slurp(carried / "checkpoints/02-build.toml");

    r = run_sage2tp({"run", "--run", "carried"}, dir_, no_python);
    std::cout << r.out << r.err;
    EXPECT_EQ(r.exit_code, 3) << "sanitize without a GPU: " << r.out << r.err;
    EXPECT_NE(r.err.find("stopped at sanitize"), std::string::npos) << r.err;
    EXPECT_NE((r.out + r.err).find("prepare: up to date"), std::string::npos) << r.out << r.err;
    EXPECT_NE((r.out + r.err).find("not on this host"), std::string::npos) << r.out << r.err;
    EXPECT_NE((r.out + r.err).find("build: up to date"), std::string::npos) << r.out << r.err;
    EXPECT_EQ((r.out + r.err).find("compiling"), std::string::npos) << r.out << r.err;
    EXPECT_EQ(slurp(carried / "checkpoints/01-prepare.toml"), prepared);
    EXPECT_EQ(slurp(carried / "checkpoints/02-build.toml"), built);
    expect_good_build(carried, "carried");
}

TEST_F(Reliability, SigkillOfSage2tpTakesNvccAndItsChildrenAlong) {
    write_experiment();
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    const fs::path run = dir_ / "run";
    int caught = 0;
    for (int attempt = 0; attempt < 10 && caught < 3; ++attempt) {
        pid_t pid = start({"build", "--run", "run", "--force"});
        if (!wait_for_child(pid, run, {"cicc", "ptxas"})) {
            int status = 0;
            ::waitpid(pid, &status, 0);
            continue;
        }
        ++caught;
        const auto alive = processes_inside(run);
        ::kill(pid, SIGKILL);
        int status = 0;
        ::waitpid(pid, &status, 0);
        auto started = std::chrono::steady_clock::now();
        bool freed = false;
        const auto at_release = wait_for_lock(run, 5.0, &freed);
        std::cout << "SIGKILL with " << names(alive) << " running: the lock was free after "
                  << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
                  << " s; running then: " << names(at_release) << "\n";
        EXPECT_TRUE(freed) << "the lock is still held";
        EXPECT_TRUE(at_release.empty()) << "the lock was free while these still ran: " << names(at_release);
        EXPECT_TRUE(wait_until_gone(run, 5.0).empty());
    }
    EXPECT_GE(caught, 1) << "never caught nvcc's children running";
    ProcessResult r = sage2tp({"build", "--run", "run"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    expect_good_build(run, "after the kills");
}

TEST_F(Reliability, KilledAtSeededRandomMomentsPrepareAndBuildAreRedoneAndNeverTrustedHalfDone) {
    write_experiment();
    const fs::path run = dir_ / "run";
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(sage2tp({"build", "--run", "run"}).exit_code, 0);
    const double build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "--force", "-q"}).exit_code, 0);
    const double prepare_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    expect_good_build(run, "baseline run");
    const std::string patched = slurp(run / "trees/candidate/kernels/k.cu");

    // The killed builds and the reruns compile (the suite's SAGE2TP_CACHE=off): a compile taken from the
    // cache is never caught mid-way.
    const std::map<std::string, std::string> restoring_cache{{"SAGE2TP_CACHE", (dir_ / "restoring-cache").string()}};
    const int trials = env_int("S2TP_FAULT_TRIALS", 20);
    const unsigned seed = static_cast<unsigned>(env_int("S2TP_FAULT_SEED", 20261201));
    std::mt19937 random(seed);
    struct Tally {
        int trials = 0, killed_mid_way = 0, with_children = 0, reran_ok = 0, up_to_date = 0;
    };
    std::map<std::string, Tally> tally;
    for (int trial = 0; trial < 2 * trials; ++trial) {
        const bool build = trial % 2 == 1;
        const double span = build ? build_seconds : prepare_seconds;
        const auto delay = std::chrono::microseconds(
            static_cast<long>(std::uniform_real_distribution<double>(0.0, 1.2 * span)(random) * 1e6));
        const std::string what = build ? "build --force" : "prepare --force";
        const std::string context = what + " trial " + std::to_string(trial / 2) + " (seed " + std::to_string(seed) +
                                    ", kill after " + std::to_string(delay.count() / 1000) + " ms)";
        Tally &t = tally[what];
        ++t.trials;

        pid_t pid = build ? start({"build", "--run", "run", "--force"})
                          : start({"prepare", "--manifest", "m.toml", "--run", "run", "--force", "-q"});
        std::this_thread::sleep_for(delay);
        const bool had_children = !processes_inside(run).empty();
        ::kill(pid, SIGKILL);
        int status = 0;
        ::waitpid(pid, &status, 0);
        const bool mid_way = WIFSIGNALED(status);
        t.killed_mid_way += mid_way;
        t.with_children += mid_way && had_children;

        // No child of the killed command survives it: none runs once the lock is free again.
        bool freed = false;
        const auto at_release = wait_for_lock(run, 5.0, &freed);
        EXPECT_TRUE(freed) << context << ": the lock is still held";
        EXPECT_TRUE(at_release.empty()) << context << ": running when the lock was freed: " << names(at_release);
        const auto left = wait_until_gone(run, 5.0);
        EXPECT_TRUE(left.empty()) << context << ": left alive: " << names(left);

        // Whatever the kill left, a checkpoint the stages (and status) trust describes what is on disk.
        {
            RunDirectory inspected(run);
            for (const StageState &state : inspect_run(inspected)) {
                if (!state.read.checkpoint || state.stage != Stage::build) continue;
                for (const char *key : {"baseline:kernels/k.cu", "candidate:kernels/k.cu"}) {
                    const std::string path = state.read.checkpoint->artifacts[key]["path"].value_or(std::string());
                    std::error_code ec;
                    EXPECT_TRUE(path.empty() || (fs::is_regular_file(run / path, ec) &&
                                                 sha256_file(run / path) ==
                                                     state.read.checkpoint->artifacts[key]["sha256"].value_or(std::string())))
                        << context << ": a trusted build checkpoint records " << path << ", which is not as recorded";
                }
            }
        }

        // The stage run again completes; the next one builds on it; the A/B is still an A/B.
        ProcessResult r = build ? sage2tp({"build", "--run", "run"})
                                : sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"});
        EXPECT_EQ(r.exit_code, 0) << context << ": rerun: " << r.out << r.err;
        t.reran_ok += r.exit_code == 0;
        t.up_to_date += r.out.find("up to date") != std::string::npos;
        if (!build) {
            EXPECT_EQ(slurp(run / "trees/candidate/kernels/k.cu"), patched) << context << ": candidate tree not patched";
            EXPECT_EQ(slurp(run / "trees/baseline/kernels/k.cu"), kernel_line(1)) << context << ": baseline tree wrong";
            // Nothing of the killed prepare's staging is left, on disk or registered in the repository.
            EXPECT_FALSE(fs::exists(run / ".prepare-new")) << context;
            EXPECT_FALSE(fs::exists(run / ".prepare-old")) << context;
            const std::string worktrees =
                run_process({"git", "-C", (dir_ / "repo").string(), "worktree", "list", "--porcelain"}).out;
            EXPECT_EQ(worktrees.find(".prepare-"), std::string::npos) << context << ": " << worktrees;
            EXPECT_NE(worktrees.find("run/trees/candidate"), std::string::npos) << context << ": " << worktrees;
            // Only for the next trial's sake (a good build to keep), so taken from a cache of the test's
            // own after the first time: the support quantizer alone is four seconds of nvcc.
            r = sage2tp({"build", "--run", "run"}, restoring_cache);
            EXPECT_EQ(r.exit_code, 0) << context << ": build after the rerun: " << r.out << r.err;
        }
        expect_good_build(run, context);
        if (HasFailure()) break;
    }
    for (const auto &[what, t] : tally)
        std::cout << what << ": " << t.trials << " trials (seed " << seed << "), " << t.killed_mid_way
                  << " killed mid-way (" << t.with_children << " with children running), " << t.reran_ok
                  << " reruns completed (" << t.up_to_date << " of them up to date)\n";
}

TEST_F(Reliability, FilesystemRefusalsExitTwoNamingThePath) {
    write_experiment();
    std::ofstream(dir_ / "regular-file") << "x";
    fs::create_directories(dir_ / "locked");
    fs::permissions(dir_ / "locked", fs::perms::owner_read | fs::perms::owner_exec);
    const std::string too_long = "run/" + std::string(5000, 'x');
    struct Case {
        std::string run, named;
    };
    const std::vector<Case> cases = {{"regular-file", "regular-file"},
                                     {"regular-file/run", "regular-file"},
                                     {"locked/run", "locked/run"},
                                     {too_long, "xxxx"},
                                     {"/proc/s2tp-run", "/proc/s2tp-run"},
                                     {"/proc/self/s2tp-run", "/proc/self/s2tp-run"}};
    const bool root = ::geteuid() == 0;  // root writes into a read-only directory anyway
    for (const auto &c : cases) {
        if (root && c.run == "locked/run") continue;
        for (const std::string command : {"prepare", "build", "status"}) {
            std::vector<std::string> args{command, "--run", c.run};
            if (command == "prepare") args.insert(args.end(), {"--manifest", "m.toml"});
            ProcessResult r = sage2tp(args);
            // prepare must refuse with 2; a later stage may also report the run as not prepared (4).
            if (command == "prepare") {
                EXPECT_EQ(r.exit_code, 2) << command << " --run " << c.run.substr(0, 40) << ": " << r.err;
            } else {
                EXPECT_TRUE(r.exit_code == 2 || r.exit_code == 4) << command << " --run " << c.run.substr(0, 40) << ": " << r.err;
            }
            EXPECT_NE(r.err.find(c.named), std::string::npos) << command << ": " << r.err.substr(0, 300);
            EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err.substr(0, 300);
        }
    }
    for (const std::string command : {"prepare", "build", "status"}) {
        ProcessResult r = sage2tp({command, "--run", ""});
        EXPECT_EQ(r.exit_code, 2) << command << " --run '': " << r.err;
        r = sage2tp({command, "--root", ""});
        EXPECT_EQ(r.exit_code, 2) << command << " --root '': " << r.err;
    }
    // checkpoints/ being a file: the checkpoint write is refused with the path.
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    fs::remove_all(dir_ / "run/checkpoints");
    std::ofstream(dir_ / "run/checkpoints") << "not a directory";
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "--force"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("checkpoints"), std::string::npos) << r.err;
    r = sage2tp({"build", "--run", "run"});
    EXPECT_TRUE(r.exit_code == 2 || r.exit_code == 4) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

TEST_F(Reliability, JsonAlwaysPrintsExactlyOneObject) {
    for (std::vector<std::string> args : {std::vector<std::string>{"--json", "nosuch"}, {"nosuch", "--json"}, {"--json"},
                                          {"--json", "status"}, {"status", "--json", "--no-such-option"},
                                          {"--json", "build", "--run-id", "a b"}}) {
        ProcessResult r = sage2tp(args);
        EXPECT_NE(r.exit_code, 0);
        ASSERT_FALSE(r.out.empty()) << args[0] << ": no JSON on stdout; stderr: " << r.err;
        EXPECT_EQ(r.out.front(), '{') << r.out;
        EXPECT_EQ(r.out.find('{', 1), std::string::npos) << "more than one object: " << r.out;
        EXPECT_EQ(r.out.substr(r.out.size() - 2), "}\n") << r.out;
        EXPECT_NE(r.out.find("\"exit_code\" : " + std::to_string(r.exit_code)), std::string::npos) << r.out;
    }
}

TEST_F(Reliability, StatusNoticesACorruptedCubin) {
    write_experiment();
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    ASSERT_EQ(sage2tp({"build", "--run", "run"}).exit_code, 0);
    ProcessResult r = sage2tp({"status", "--run", "run"});
    EXPECT_EQ(r.out.find("untrusted"), std::string::npos) << r.out;
    std::string cubin = slurp(dir_ / "run/builds/candidate/k.sm_90a.cubin");
    cubin[cubin.size() / 2] ^= 1;
    std::ofstream(dir_ / "run/builds/candidate/k.sm_90a.cubin", std::ios::binary) << cubin;
    r = sage2tp({"status", "--run", "run"});
    EXPECT_EQ(r.exit_code, 0);
    std::cout << r.out;
    EXPECT_NE(r.out.find("build     untrusted"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("builds/candidate/k.sm_90a.cubin no longer has the sha256"), std::string::npos) << r.out;
    r = sage2tp({"status", "--run", "run", "--json"});
    EXPECT_NE(r.out.find("\"status\" : \"untrusted\""), std::string::npos) << r.out;
    // The next stage refuses; build runs again and is trusted again.
    r = sage2tp({"sanitize", "--run", "run"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    r = sage2tp({"build", "--run", "run"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    expect_good_build(dir_ / "run", "rebuilt");
}

TEST_F(Reliability, PrepareNewTwiceInOneSecondMakesTwoRuns) {
    write_experiment();
    std::set<std::string> runs;
    for (int i = 0; i < 3; ++i) {
        ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--new", "-q"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        runs.insert(fs::canonical(dir_ / "sage2tp-runs/latest").filename().string());
    }
    EXPECT_EQ(runs.size(), 3u);
    for (const auto &run : runs) {
        EXPECT_EQ(run.rfind("exp-", 0), 0u) << run;
        EXPECT_TRUE(checkpoint(dir_ / "sage2tp-runs" / run, "01-prepare.toml")) << run;
    }
}

// The compile cache as a careless or hostile user leaves it: the baseline's entry copied over the
// candidate's, the two swapped, the candidate's a link to the baseline's, the candidate's cubin replaced
// by the baseline's with its digest rewritten. Each `build --force` then builds the candidate's own
// cubin (never a silent A/A), says which entry it dropped, and repairs the store.
TEST_F(Reliability, ATamperedCompileCacheNeverServesTheBaselinesCubinForTheCandidate) {
    write_experiment();
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    const std::map<std::string, std::string> cached{{"SAGE2TP_CACHE", (dir_ / "cache").string()}};
    ProcessResult r = run_sage2tp({"build", "--run", "run"}, dir_, cached);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    expect_good_build(dir_ / "run", "first build");
    // The store's entries (whatever its layout version), and the baseline's and the candidate's entry:
    // the one holding the cubin that variant's build holds.
    fs::path entries;
    for (const auto &e : fs::directory_iterator(dir_ / "cache"))
        if (fs::is_directory(e.path() / "entries")) entries = e.path() / "entries";
    ASSERT_FALSE(entries.empty());
    auto entry_of = [&](const std::string &variant) {
        const std::string built = sha256_file(dir_ / "run/builds" / variant / "k.sm_90a.cubin");
        for (const auto &e : fs::directory_iterator(entries))
            if (fs::is_regular_file(fs::symlink_status(e.path() / "cubin")) && sha256_file(e.path() / "cubin") == built)
                return e.path();
        return fs::path();
    };
    for (const std::string damage : {"copied", "swapped", "linked", "re-digested"}) {
        const fs::path baseline = entry_of("baseline"), candidate = entry_of("candidate");
        ASSERT_FALSE(baseline.empty() || candidate.empty()) << damage;
        if (damage == "copied") {
            fs::remove_all(candidate);
            fs::copy(baseline, candidate, fs::copy_options::recursive);
        } else if (damage == "swapped") {
            fs::rename(candidate, dir_ / "aside");
            fs::rename(baseline, candidate);
            fs::rename(dir_ / "aside", baseline);
        } else if (damage == "linked") {
            fs::remove_all(candidate);
            fs::create_directory_symlink(baseline, candidate);
        } else {
            const std::string from = sha256_file(candidate / "cubin"), to = sha256_file(baseline / "cubin");
            fs::copy_file(baseline / "cubin", candidate / "cubin", fs::copy_options::overwrite_existing);
            std::string digests = slurp(candidate / "digests");
            digests.replace(digests.find(from), from.size(), to);
            std::ofstream(candidate / "digests", std::ios::trunc) << digests;
        }
        r = run_sage2tp({"build", "--run", "run", "--force"}, dir_, cached);
        ASSERT_EQ(r.exit_code, 0) << damage << ": " << r.out << r.err;
        expect_good_build(dir_ / "run", damage);
        EXPECT_NE(r.err.find("compile cache entry " + candidate.string()), std::string::npos) << damage << ": " << r.err;
    }
}
