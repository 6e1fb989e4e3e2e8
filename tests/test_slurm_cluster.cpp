// `sage2tp slurm` on a real one-node Slurm cluster, started by the test from Debian's slurm-wlm and munge:
// munged, slurmctld and slurmd configured in a temporary directory (its own munge key, ports and state),
// all stopped at the end, every wait bounded. The run is a tiny kernel of the test's own (two nvcc
// compiles of about a second), and this host has no GPU, so every task's sanitize exits 3; the collector
// must say exactly that. Array of 4 tasks: one cancelled with scancel while pending, and the node
// drained mid-array, which keeps the tasks still pending until it is resumed. Bad input (an unknown GPU
// constraint, an arch no node runs, a partition sbatch refuses, sbatch missing) exits 2 or 3 with
// Slurm's message and leaves the run directory as it was.
//
// Skips, saying why, without the packages, without nvcc, or when not root (slurmd starts job steps as
// the submitting user, which only root may do).
#include "cli_fixture.h"

#include "support/process_runner.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <utility>
#include <thread>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

constexpr const char *kNode = "s2tpnode";

// A TCP port nothing listens on now.
int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address);
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
    ::close(fd);
    return ntohs(address.sin_port);
}

// A daemon in the foreground, its output in `log`.
pid_t start_daemon(const std::vector<std::string> &argv, const fs::path &log) {
    std::vector<std::string> words = argv;
    std::vector<char *> args;
    for (auto &word : words) args.push_back(word.data());
    args.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::setpgid(0, 0);
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
        ::execvp(args[0], args.data());
        ::_exit(127);
    }
    return pid;
}

// SIGTERM, then SIGKILL after 10 s, to the daemon's process group; reaped.
void stop_daemon(pid_t pid) {
    if (pid <= 0) return;
    ::kill(-pid, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(-pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

ProcessResult slurm(std::vector<std::string> argv) { return run_process(argv); }

// Polls `done` every 200 ms for up to `seconds`; true when it held.
template <typename Done>
bool wait_for(double seconds, Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return done();
}

// Slurm's state of the task (%T), or with `format` another of squeue's fields (%r: the reason).
std::string task_state(const std::string &job, int task, const std::string &format = "%T") {
    const ProcessResult r = slurm({"squeue", "--noheader", "--array", "--states=all", "--jobs", job + "_" + std::to_string(task),
                                   "--format=" + format});
    std::string state = r.out;
    state.erase(state.find_last_not_of(" \n") + 1);
    return state;
}

// Every file under `dir` with its size and contents' first bytes: what "left as it was" compares.
std::string listing(const fs::path &dir) {
    std::string text;
    for (const auto &entry : fs::recursive_directory_iterator(dir)) {
        if (entry.path().filename() == ".lock") continue;  // holds the pid of the last command
        text += entry.path().lexically_relative(dir).string();
        if (entry.is_regular_file()) text += " " + std::to_string(entry.file_size()) + " " + slurp(entry.path()).substr(0, 64);
        text += "\n";
    }
    return text;
}

class SlurmCluster : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        for (const char *program : {"munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"})
            if (!find_program(program) && !fs::exists(std::string("/usr/sbin/") + program)) {
                skip_reason_ = std::string(program) + " is not installed (Debian 12: apt-get install slurm-wlm munge)";
                return;
            }
        if (!find_program("nvcc")) {
            skip_reason_ = "nvcc is not in PATH: the run cannot be built";
            return;
        }
        if (::geteuid() != 0) {
            skip_reason_ = "not root: slurmd starts job steps as the submitting user, which only root may do";
            return;
        }
        scratch_.emplace("slurm-cluster");
        dir_ = scratch_->path();
        for (const char *sub : {"munge", "state", "spool", "log"}) fs::create_directories(dir_ / sub);
        fs::permissions(dir_ / "munge", fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
        const fs::path key = dir_ / "munge/munge.key";
        ASSERT_EQ(run_process({"mungekey", "--create", "--keyfile=" + key.string()}).exit_code, 0);
        const fs::path socket = dir_ / "munge/socket";
        munged_ = start_daemon({"munged", "--force", "--foreground", "--socket=" + socket.string(), "--key-file=" + key.string(),
                                "--log-file=" + (dir_ / "log/munged.log").string(),
                                "--pid-file=" + (dir_ / "munge/munged.pid").string(),
                                "--seed-file=" + (dir_ / "munge/seed").string()},
                               dir_ / "log/munged.out");
        ASSERT_TRUE(wait_for(10, [&] { return fs::exists(socket); })) << slurp(dir_ / "log/munged.out");

        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        std::string short_host = host;
        short_host = short_host.substr(0, short_host.find('.'));
        const fs::path conf = dir_ / "slurm.conf";
        std::ofstream(conf) << "ClusterName=s2tptest\nSlurmctldHost=" << short_host << "(127.0.0.1)\n"
                            << "SlurmctldPort=" << free_port() << "\nSlurmdPort=" << free_port() << "\n"
                            << "SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nCredType=cred/munge\n"
                            << "AuthInfo=socket=" << socket.string() << "\n"
                            << "StateSaveLocation=" << (dir_ / "state").string() << "\n"
                            << "SlurmdSpoolDir=" << (dir_ / "spool").string() << "\n"
                            << "SlurmctldPidFile=" << (dir_ / "slurmctld.pid").string() << "\n"
                            << "SlurmdPidFile=" << (dir_ / "slurmd.pid").string() << "\n"
                            << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                            << "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
                            << "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nSchedulerType=sched/builtin\n"
                            << "ReturnToService=2\nMinJobAge=3600\nMpiDefault=none\n"
                            // One CPU: one task at a time. The node names its arch (the arch-limits row) and
                            // its GPU kind as features, as sage2tp-slurm(1) asks of GPU nodes.
                            << "NodeName=" << kNode << " NodeHostname=" << short_host
                            << " NodeAddr=127.0.0.1 CPUs=1 Feature=sm_90,h200 State=UNKNOWN\n"
                            << "PartitionName=gpu Nodes=" << kNode << " Default=YES MaxTime=10 State=UP\n";
        ::setenv("SLURM_CONF", conf.c_str(), 1);
        slurmctld_ = start_daemon({"slurmctld", "-D", "-i"}, dir_ / "log/slurmctld.log");
        slurmd_ = start_daemon({"slurmd", "-D", "-N", kNode}, dir_ / "log/slurmd.log");
        ASSERT_TRUE(wait_for(30, [] {
            const ProcessResult r = run_process({"sinfo", "--noheader", "--Node", "--format=%t"});
            return r.exit_code == 0 && r.out.find("idle") != std::string::npos;
        })) << "the node never came up:\n"
            << slurp(dir_ / "log/slurmctld.log") << slurp(dir_ / "log/slurmd.log");
    }

    static void TearDownTestSuite() {
        if (!dir_.empty()) {
            // No job may outlive the cluster: cancel what is left and wait for it to end.
            run_process({"scancel", "--user=root"});
            wait_for(20, [] {
                const ProcessResult r = run_process({"squeue", "--noheader", "--states=RUNNING,COMPLETING"});
                return r.exit_code != 0 || r.out.empty();
            });
        }
        stop_daemon(slurmd_);
        stop_daemon(slurmctld_);
        stop_daemon(munged_);
        scratch_.reset();
        dir_.clear();
    }

    void SetUp() override {
        if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
        ASSERT_FALSE(sage2tp_binary().empty()) << "SAGE2TP_BIN is not set";
        work_ = dir_ / ::testing::UnitTest::GetInstance()->current_test_info()->name();
        fs::create_directories(work_);
        // A repository with one tiny kernel named like an ABI entry and a patch that changes it.
        const fs::path repo = work_ / "repo";
        fs::create_directories(repo / "kernels");
        const std::string line1 = "extern \"C\" __global__ void s2tp_attn_hd64_f16_nomask(float *o) { o[threadIdx.x] = 1.0f; }\n";
        const std::string line2 = "extern \"C\" __global__ void s2tp_attn_hd64_f16_nomask(float *o) { o[threadIdx.x] = 2.0f; }\n";
        std::ofstream(repo / "kernels/k.cu") << line1;
        for (std::vector<std::string> args : {std::vector<std::string>{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "k"}})
            ASSERT_EQ(run_git(repo, args).exit_code, 0);
        const std::string commit = run_git(repo, {"rev-parse", "HEAD"}).out.substr(0, 40);
        std::ofstream(work_ / "c.patch") << "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -1 +1 @@\n-" << line1 << "+" << line2;
        std::ofstream(work_ / "m.toml") << "[experiment]\nname = \"exp\"\n[source]\nkind = \"git\"\nrepository = \"repo\"\n"
                                        << "commit = \"" << commit << "\"\nkernel_sources = [\"kernels/k.cu\"]\n"
                                        << "[candidate]\npatch = \"c.patch\"\n[build]\narch = \"sm_90a\"\n"
                                           "[workload]\nname = \"w\"\nlen_q = 128\n";
        const ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run"});
        ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    }

    ProcessResult sage2tp(std::vector<std::string> args) {
        ProcessResult r = run_sage2tp(std::move(args), work_);
        return r;
    }
    ProcessResult collect() {
        ProcessResult r = sage2tp({"slurm", "collect", "--run", "run", "--format", "csv"});
        std::cout << "$ sage2tp slurm collect --format csv   (exit " << r.exit_code << ")\n" << r.out << r.err;
        return r;
    }
    // The collected table's rows, by task index: "arch,gpu,repeat,task,node,slurm,verdict,detail".
    std::map<int, std::vector<std::string>> rows(const std::string &csv) {
        std::map<int, std::vector<std::string>> table;
        std::istringstream in(csv);
        std::string line;
        std::getline(in, line);  // headings
        while (std::getline(in, line)) {
            std::vector<std::string> cells;
            std::string cell;
            bool quoted = false;
            for (char c : line) {
                if (c == '"') quoted = !quoted;
                else if (c == ',' && !quoted) cells.push_back(std::exchange(cell, ""));
                else cell += c;
            }
            cells.push_back(cell);
            if (cells.size() == 8) table[std::stoi(cells[3])] = cells;
        }
        return table;
    }
    static void scontrol(std::vector<std::string> args) {
        args.insert(args.begin(), "scontrol");
        const ProcessResult r = run_process(args);
        ASSERT_EQ(r.exit_code, 0) << r.err;
    }

    static inline std::string skip_reason_;
    static inline std::optional<ScratchDirectory> scratch_;
    static inline fs::path dir_;
    static inline pid_t munged_ = 0, slurmctld_ = 0, slurmd_ = 0;
    fs::path work_;
};

}  // namespace

TEST_F(SlurmCluster, ArrayOfFourOneCancelledOneOnADrainedNodeReportsEachTaskAsItEnded) {
    // The node drained first, so that the array waits while the test cancels one task and holds two.
    scontrol({"update", std::string("NodeName=") + kNode, "State=DRAIN", "Reason=s2tp-test-drain"});
    ProcessResult r = sage2tp({"slurm", "--run", "run", "--no-wait", "--repeat", "4", "--constraint", "h200"});
    std::cout << "$ sage2tp slurm --no-wait --repeat 4 --constraint h200   (exit " << r.exit_code << ")\n" << r.out << r.err;
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string job = r.out;  // the last line; progress comes before it
    job.erase(job.find_last_not_of(" \n") + 1);
    job = job.substr(job.find_last_of('\n') + 1);
    ASSERT_FALSE(job.empty());
    const ProcessResult cancel = slurm({"scancel", job + "_1"});
    ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
    scontrol({"hold", job + "_2", job + "_3"});
    ASSERT_TRUE(wait_for(20, [&] { return task_state(job, 1) == "CANCELLED"; })) << task_state(job, 1);
    // The controller gives a pending task its reason at its next scheduling pass.
    ASSERT_TRUE(wait_for(30, [&] { return task_state(job, 0, "%r").find("DRAINED") != std::string::npos; }))
        << task_state(job, 0, "%r");

    r = collect();
    EXPECT_EQ(r.exit_code, 1);
    auto table = rows(r.out);
    ASSERT_EQ(table.size(), 4u) << r.out;
    EXPECT_EQ(table[0][6], "pending");
    EXPECT_NE(table[0][7].find("DRAINED"), std::string::npos) << "the drained node is not the reason: " << table[0][7];
    EXPECT_EQ(table[1][6], "cancelled");
    EXPECT_EQ(table[1][7], "before it started");
    for (int task : {2, 3}) EXPECT_EQ(table[task][6], "pending") << task;

    // Task 0 runs once the node is back; then the node is drained again with tasks 2 and 3 still to run.
    scontrol({"update", std::string("NodeName=") + kNode, "State=RESUME"});
    ASSERT_TRUE(wait_for(60, [&] { return task_state(job, 0) == "FAILED"; })) << task_state(job, 0);
    scontrol({"update", std::string("NodeName=") + kNode, "State=DRAIN", "Reason=s2tp-test-drain-mid-array"});
    scontrol({"release", job + "_2", job + "_3"});
    ASSERT_TRUE(wait_for(30, [&] { return task_state(job, 2, "%r").find("DRAINED") != std::string::npos; }))
        << task_state(job, 2, "%r");
    r = collect();
    table = rows(r.out);
    ASSERT_EQ(table.size(), 4u) << r.out;
    EXPECT_NE(table[0][6], "pending");
    // Task 2 waits for the drained node; task 3 waits behind it (Resources or Priority).
    for (int task : {2, 3}) EXPECT_EQ(table[task][6], "pending") << "task " << task << " ran on a drained node";
    EXPECT_NE(table[2][7].find("DRAINED"), std::string::npos) << table[2][7];

    scontrol({"update", std::string("NodeName=") + kNode, "State=RESUME"});
    ASSERT_TRUE(wait_for(90, [&] { return task_state(job, 2) == "FAILED" && task_state(job, 3) == "FAILED"; }))
        << task_state(job, 2) << " " << task_state(job, 3);
    r = collect();
    EXPECT_EQ(r.exit_code, 1) << "a table without a single pass must not exit 0";
    table = rows(r.out);
    ASSERT_EQ(table.size(), 4u) << r.out;
    for (int task : {0, 2, 3}) {
        EXPECT_EQ(table[task][0], "sm_90a");
        EXPECT_EQ(table[task][1], "h200");
        EXPECT_EQ(table[task][4], kNode);
        EXPECT_EQ(table[task][5], "FAILED");
        EXPECT_EQ(table[task][6], "no GPU or tool (exit 3) at sanitize") << "task " << task;
        EXPECT_NE(table[task][7].find("needs an NVIDIA GPU"), std::string::npos) << table[task][7];
    }
    EXPECT_EQ(table[1][5], "CANCELLED");
    EXPECT_EQ(table[1][6], "cancelled");
    EXPECT_EQ(r.out.find("PASS"), std::string::npos);

    // report and compare read the table.
    r = sage2tp({"report", "--run", "run"});
    std::cout << "$ sage2tp report\n" << r.out << r.err;
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("no GPU or tool (exit 3) at sanitize"), std::string::npos) << r.out;
    r = sage2tp({"compare", "run", "--svg", "c.svg"});
    std::cout << "$ sage2tp compare run\n" << r.out << r.err;
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("cancelled"), std::string::npos) << r.out;
}

TEST_F(SlurmCluster, BadInputExitsWithSlurmsMessageAndLeavesTheRunAsItWas) {
    const std::string before = listing(work_ / "run");
    struct Case {
        std::vector<std::string> args;
        int exit_code;
        std::string says;
    };
    const std::vector<Case> cases{
        {{"--constraint", "a100"}, 2, "unknown GPU constraint 'a100'"},
        {{"--arch", "sm_89"}, 2, "no node of the cluster can run sm_89"},
        {{"--constraint", "h200;touch PWNED"}, 2, "not a node feature name"},
        {{"--partition", "nosuch"}, 2, "sbatch refused the job array"},
    };
    for (const Case &c : cases) {
        std::vector<std::string> args{"slurm", "--run", "run", "--no-wait"};
        args.insert(args.end(), c.args.begin(), c.args.end());
        const ProcessResult r = sage2tp(args);
        std::cout << "$ sage2tp slurm " << c.args[0] << " " << c.args[1] << ": exit " << r.exit_code << ": " << r.err;
        EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
        EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
        EXPECT_EQ(listing(work_ / "run"), before) << "the run changed";
    }
    // sbatch missing: PATH without Slurm's commands.
    ProcessOptions options;
    options.working_directory = work_;
    options.extra_environment = {{"PATH", "/nonexistent"}};
    const ProcessResult r = run_process({sage2tp_binary(), "slurm", "--run", "run", "--no-wait"}, options);
    std::cout << "$ PATH=/nonexistent sage2tp slurm: exit " << r.exit_code << ": " << r.err;
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("sbatch not found"), std::string::npos) << r.err;
    EXPECT_EQ(listing(work_ / "run"), before);
    EXPECT_FALSE(fs::exists(work_ / "PWNED"));
}
