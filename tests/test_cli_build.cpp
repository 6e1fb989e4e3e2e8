// The build stage end to end with the real nvcc (no GPU needed): the embedded default compiled for
// every supported arch, its ptxas resources and occupancy, "up to date", and a candidate that does
// not compile. Prints the register/spill/shared-memory table of both schedules for each arch.
#include "cli_fixture.h"

#include "formats/checkpoint_store.h"
#include "build_config.h"
#include "support/process_runner.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

const fs::path source_root = S2TP_SOURCE_ROOT;

// Keyed by the adapters' short names, the same for every kernel ABI.
const char *const attention_entries[] = {
    "hd64_f16_nomask",   "hd64_f16_causal",   "hd64_bf16_nomask",   "hd64_bf16_causal",
    "hd128_f16_nomask",  "hd128_f16_causal",  "hd128_bf16_nomask",  "hd128_bf16_causal"};

class Build : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        scratch_.emplace("build");
        dir_ = scratch_->path();
    }
    static void TearDownTestSuite() {
        scratch_.reset();
        dir_.clear();
    }
    // The suite's compile cache, cold when it starts: the first test's compiles are real nvcc runs, and
    // the later tests take the default experiment's baseline from it.
    static fs::path own_cache() { return dir_ / "own-cache"; }
    static ProcessResult sage2tp(std::vector<std::string> args) {
        return run_sage2tp(std::move(args), dir_, {{"SAGE2TP_CACHE", own_cache().string()}});
    }
    static Checkpoint build_checkpoint(const fs::path &run) {
        CheckpointRead read = read_checkpoint(run / "checkpoints/02-build.toml");
        EXPECT_TRUE(read.checkpoint) << read.problem;
        return read.checkpoint ? *read.checkpoint : Checkpoint{};
    }
    static std::optional<ScratchDirectory> scratch_;
    static fs::path dir_;
};
std::optional<ScratchDirectory> Build::scratch_;
fs::path Build::dir_;

// The figures of one variant of one entry must follow the occupancy rules among themselves.
void expect_consistent(const toml::table &v, const std::string &what, int warps_per_sm) {
    const auto registers = v["registers"].value_or<int64_t>(0);
    EXPECT_GE(registers, 1) << what;
    EXPECT_LE(registers, 255) << what;
    const auto threads = v["threads_per_block"].value_or<int64_t>(0);
    const auto blocks = v["blocks_per_sm"].value_or<int64_t>(0);
    const auto warps = v["resident_warps"].value_or<int64_t>(0);
    EXPECT_EQ(threads, 128) << what;
    EXPECT_GE(blocks, 1) << what;
    EXPECT_EQ(warps, blocks * threads / 32) << what;
    EXPECT_LE(warps, warps_per_sm) << what;
    EXPECT_DOUBLE_EQ(v["warps_per_scheduler"].value_or(0.0), warps / 4.0) << what;
    // 128 threads at R registers: 4 warps of ceil(32R/256)*256 registers in 4 x 16384-register sub-partitions.
    const auto per_warp = (32 * registers + 255) / 256 * 256;
    EXPECT_LE(blocks, 16384 / per_warp) << what << ": more blocks than the register file holds";
    EXPECT_EQ(v["smem_per_block"].value_or<int64_t>(0),
              v["static_smem_bytes"].value_or<int64_t>(0) + v["dynamic_smem_bytes"].value_or<int64_t>(0)) << what;
}

}  // namespace

// The default experiment (baseline and two candidates) compiled for every supported arch with the suite's
// own cache, cold at first: each arch's compiles are real nvcc runs. Then, as a user switching back
// and starting a second experiment on the same sources: the first arch again comes wholly from the
// cache, its cubins beside the other arch's in builds/, and the second experiment compiles only its own
// candidate.
TEST_F(Build, EmbeddedDefaultForEverySupportedArchThenTheCacheServesASwitchBackAndASecondExperiment) {
    ASSERT_FALSE(sage2tp_binary().empty()) << "SAGE2TP_BIN is not set";
    auto build = [&](const std::string &run, const std::string &arch) {
        ProcessResult r = sage2tp({"build", "--run", run, "--arch", arch});
        EXPECT_EQ(r.exit_code, 0) << run << " " << arch << ": " << r.out << r.err;
        std::cout << "---- sage2tp build --run " << run << " --arch " << arch << " (" << r.seconds << " s)\n" << r.out << std::flush;
        return r;
    };
    auto from_cache = [&](const std::string &run) {
        std::set<std::string> keys;
        const Checkpoint c = build_checkpoint(dir_ / run);
        for (const auto &[key, artifact] : c.artifacts)
            if ((*artifact.as_table())["from_cache"].value_or(false)) keys.insert(std::string(key.str()));
        return keys;
    };
    ProcessResult r = sage2tp({"prepare", "--run", "default", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::pair<const char *, int> arches[] = {{"sm_90a", 64}, {"sm_89", 48}, {"sm_120a", 48}, {"sm_121a", 48}};
    for (const auto &[arch, warps_per_sm] : arches) {
        r = build("default", arch);
        ASSERT_EQ(r.exit_code, 0);
        // No arch before this one compiled for it: every compile ran.
        EXPECT_TRUE(from_cache("default").empty()) << arch << ": " << r.out;
        Checkpoint c = build_checkpoint(dir_ / "default");
        EXPECT_EQ(c.status, StageStatus::passed);
        EXPECT_EQ(c.figures["arch"].value_or(std::string()), arch);
        // The baseline's entries once, each candidate's under its name.
        const toml::table *variants[] = {c.figures["baseline"]["kernels"].as_table(),
                                         c.figures["candidates"]["candidate"]["kernels"].as_table()};
        for (const char *entry : attention_entries) {
            for (std::size_t i = 0; i < 2; ++i) {
                const char *variant = i == 0 ? "baseline" : "candidate";
                ASSERT_TRUE(variants[i]) << arch << " has no kernels table for the " << variant;
                const toml::table *v = (*variants[i])[entry].as_table();
                ASSERT_TRUE(v) << arch << " " << entry << " " << variant;
                expect_consistent(*v, std::string(arch) + " " + entry + " " + variant, warps_per_sm);
                // The full name of the entry the row describes: the sage2tp ABI's extern "C" name.
                EXPECT_EQ((*v)["entry"].value_or(std::string()), std::string("s2tp_attn_") + entry);
                // Both schedules use exactly upstream's shared memory: 256 * D.
                const int64_t expected_smem = std::string(entry).find("hd64") != std::string::npos ? 16384 : 32768;
                EXPECT_EQ((*v)["smem_per_block"].value_or<int64_t>(0), expected_smem) << entry << " " << variant;
            }
        }
        for (const char *variant : {"baseline", "candidate"})
            for (const char *file : {"attention_entry", "quantize"}) {
                fs::path stem = dir_ / "default/builds" / variant / (std::string(file) + "." + arch);
                EXPECT_TRUE(fs::is_regular_file(stem.string() + ".cubin")) << stem;
                EXPECT_TRUE(fs::is_regular_file(stem.string() + ".log")) << stem;
                EXPECT_TRUE(fs::is_regular_file(stem.string() + ".cmd")) << stem;
            }
    }
    // Same sources, flags, arch and compiler: up to date, the checkpoint untouched.
    const std::string finished = build_checkpoint(dir_ / "default").finished_utc;
    r = build("default", "sm_121a");
    EXPECT_NE(r.out.find("build: up to date"), std::string::npos) << r.out;
    EXPECT_EQ(build_checkpoint(dir_ / "default").finished_utc, finished);

    // --sass on an up-to-date build counts the cubins on disk and leaves the checkpoint alone; without a
    // disassembler it says so and still passes.
    r = sage2tp({"build", "--run", "default", "--sass"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("build: up to date"), std::string::npos) << r.out;
    EXPECT_EQ(build_checkpoint(dir_ / "default").finished_utc, finished);
    if (r.err.find("neither cuobjdump nor nvdisasm was found") == std::string::npos) {
        EXPECT_TRUE(fs::is_regular_file(dir_ / "default/reports/sass.toml")) << r.err;
        EXPECT_NE(r.out.find("s2tp_attn_hd128_bf16_nomask; main loop"), std::string::npos) << r.out;
    } else {
        EXPECT_FALSE(fs::exists(dir_ / "default/reports/sass.toml"));
    }

    // Back to the first arch: every compile from the cache, said per source; the other arch's cubins stay.
    const std::size_t compiles = build_checkpoint(dir_ / "default").artifacts.size();
    ProcessResult back = build("default", "sm_90a");
    EXPECT_NE(back.out.find("cache: " + std::to_string(compiles) + " of " + std::to_string(compiles) + " compiles from " +
                            own_cache().string()),
              std::string::npos)
        << back.out;
    EXPECT_NE(back.out.find("] baseline:kernels/attention_entry.cu from the cache"), std::string::npos) << back.out;
    EXPECT_EQ(from_cache("default").size(), compiles);
    EXPECT_TRUE(fs::is_regular_file(dir_ / "default/builds/baseline/attention_entry.sm_121a.cubin"));
    // Taken from the cache, the cubins and ptxas figures are those of a compile.
    ProcessResult status = sage2tp({"status", "--run", "default"});
    EXPECT_NE(status.out.find("build     passed"), std::string::npos) << status.out;

    // A second experiment on the same sources, its candidate only a comment: that one compile runs.
    const fs::path second = dir_ / "second.toml";
    std::ofstream(second) << "[experiment]\nname = \"second\"\n[source]\nkind = \"embedded\"\n"
                          << "kernel_sources = [\"kernels/attention_entry.cu\"]\nsupport_sources = [\"kernels/quantize.cu\"]\n"
                          << "include_dirs = [\"kernels\"]\n[[candidate]]\nname = \"candidate\"\npatch = \""
                          << (source_root / "tests/patches/comment-a.patch").string() << "\"\n[build]\narch = \"sm_90a\"\n"
                          << "nvcc_flags = [\"-O3\", \"--use_fast_math\"]\n[workload]\nfile = \""
                          << (source_root / "data/workloads/wan21-14b-block24.toml").string() << "\"\n";
    ASSERT_EQ(sage2tp({"prepare", "--manifest", second.string(), "--run", "second", "-q"}).exit_code, 0);
    ProcessResult other = build("second", "sm_90a");
    EXPECT_NE(other.out.find("cache: 3 of 4 compiles"), std::string::npos) << other.out;
    EXPECT_EQ(from_cache("second"), (std::set<std::string>{"baseline:kernels/attention_entry.cu", "baseline:kernels/quantize.cu",
                                                            "candidate:kernels/quantize.cu"}));
    EXPECT_EQ(build_checkpoint(dir_ / "second").artifacts["baseline:kernels/attention_entry.cu"]["sha256"].value_or(std::string()),
              build_checkpoint(dir_ / "default").artifacts["baseline:kernels/attention_entry.cu"]["sha256"].value_or(std::string()));
    // With the cache off, every compile runs and the build says why: test_cli_reliability, whose tests run
    // with SAGE2TP_CACHE=off, checks that on its small kernel.
}

// Two shells on one runs root (issue 26): `sage2tp run` in the first, and while its build stage runs,
// `prepare --new` in the second, which points `latest` at a new, unbuilt run. The first run's later
// stages must stay on its own run. Deterministic: an nvcc wrapper on CUDA_HOME holds the build stage at
// its `nvcc --version` until the second prepare is done, then runs the real nvcc.
TEST_F(Build, RunStaysOnItsRunWhenAnotherShellPreparesANewOne) {
    const fs::path built = dir_ / "default";
    if (!fs::exists(built / "checkpoints/02-build.toml")) {
        ASSERT_EQ(sage2tp({"prepare", "--run", "default", "-q"}).exit_code, 0);
    }
    ASSERT_EQ(sage2tp({"build", "--run", "default", "--arch", "sm_90a"}).exit_code, 0);
    const std::optional<fs::path> real_nvcc = find_program("nvcc") ? find_program("nvcc") : find_program("/usr/local/cuda/bin/nvcc");
    ASSERT_TRUE(real_nvcc) << "no nvcc";

    const fs::path root = dir_ / "two-shells";
    fs::remove_all(root);
    fs::create_directories(root);
    // A run directory copied whole is still the same run (sage2tp-checkpoint(5)): its build is up to date.
    fs::copy(built, root / "first", fs::copy_options::recursive);
    fs::create_directory_symlink("first", root / "latest");

    const fs::path hook = dir_ / "nvcc-hook";
    fs::create_directories(hook / "bin");
    {
        std::ofstream script(hook / "bin/nvcc");
        script << "#!/bin/sh\n"
               << "if [ \"$1\" = --version ]; then\n"
               << "  : > '" << (hook / "reached").string() << "'\n"
               << "  while [ ! -e '" << (hook / "go").string() << "' ]; do sleep 0.05; done\n"
               << "fi\n"
               << "exec '" << real_nvcc->string() << "' \"$@\"\n";
    }
    fs::permissions(hook / "bin/nvcc", fs::perms::owner_all, fs::perm_options::add);

    // The first shell: `sage2tp run` with the hook on CUDA_HOME, not waited for.
    const pid_t first = start_sage2tp({"run", "--root", root.string(), "--skip-sanitize"}, dir_, false,
                                      {{"CUDA_HOME", hook.string()}});
    ASSERT_GE(first, 0);
    // Whatever fails below, the first shell is let go, not left waiting for ever.
    struct LetGo {
        fs::path go;
        ~LetGo() { std::ofstream(go).flush(); }
    } let_go{hook / "go"};
    for (int waited = 0; !fs::exists(hook / "reached") && waited < 3000; ++waited) ::usleep(50 * 1000);
    ASSERT_TRUE(fs::exists(hook / "reached")) << "the first shell's build never asked nvcc for its version";
    const ProcessResult second = sage2tp({"prepare", "--new", "-q", "--root", root.string(), "--manifest",
                                          (source_root / "tests/manifests/two-candidates.toml").string()});
    ASSERT_EQ(second.exit_code, 0) << second.err;
    const fs::path second_run = fs::path(second.out.substr(0, second.out.find('\n')));
    EXPECT_TRUE(fs::equivalent(root / "latest", second_run)) << "the second prepare did not move latest";
    { std::ofstream(hook / "go").flush(); }
    int status = 0;
    ASSERT_EQ(::waitpid(first, &status, 0), first);
    ASSERT_TRUE(WIFEXITED(status));

    // The first shell's sanitize (skipped) landed on its own run; the second run has no stage past prepare.
    EXPECT_NE(WEXITSTATUS(status), 4) << "a stage of the first run looked for its checkpoint in the second run";
    EXPECT_TRUE(fs::exists(root / "first/checkpoints/03-sanitize.toml"));
    EXPECT_FALSE(fs::exists(second_run / "checkpoints/02-build.toml"));
    EXPECT_FALSE(fs::exists(second_run / "checkpoints/03-sanitize.toml"));
}

// Without a GPU (none is made visible, on any host), the stage stops with the next step in its error,
// and status, run --json, report and compare all say where and why the run stopped (issue 26).
TEST_F(Build, NoGpuStopGivesTheNextStepEverywhere) {
    const fs::path built = dir_ / "default";
    if (!fs::exists(built / "checkpoints/02-build.toml")) {
        ASSERT_EQ(sage2tp({"prepare", "--run", "default", "-q"}).exit_code, 0);
    }
    ASSERT_EQ(sage2tp({"build", "--run", "default", "--arch", "sm_90a"}).exit_code, 0);
    const fs::path run = dir_ / "no-gpu";
    fs::remove_all(run);
    fs::copy(built, run, fs::copy_options::recursive);
    const std::map<std::string, std::string> no_gpu{{"CUDA_VISIBLE_DEVICES", ""}};
    // Issue 36 item 4: three short commands, printed once.
    const std::string next_step = "\n  rsync -a " + run.string() + "/ HOST:runs/no-gpu/\n  sage2tp run --run runs/no-gpu";

    ProcessResult r = run_sage2tp({"run", "--run", run.string(), "--json"}, dir_, no_gpu);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("sanitize needs an NVIDIA GPU"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(next_step), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(next_step), r.err.rfind(next_step)) << "printed once:\n" << r.err;
    EXPECT_NE(r.err.find("this run is built for sm_90a, for H100, H200, GH200"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("sm_90a (H100, H200, GH200)"), std::string::npos) << r.err;
    for (std::size_t at = 0, end; (end = r.err.find('\n', at)) != std::string::npos; at = end + 1)
        EXPECT_LE(end - at, 300u) << "a line of " << end - at << " characters:\n" << r.err.substr(at, end - at);
    EXPECT_NE(r.out.find("\"next\" : \"stopped at sanitize: no GPU; to go on"), std::string::npos) << r.out;
    r = run_sage2tp({"run", "--run", run.string()}, dir_, no_gpu);
    EXPECT_EQ(r.err.find(next_step), r.err.rfind(next_step)) << "printed once:\n" << r.err;
    EXPECT_NE(r.err.find("next: stopped at sanitize: no GPU, as above"), std::string::npos) << r.err;

    r = run_sage2tp({"status", "--run", run.string()}, dir_, no_gpu);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("next: stopped at sanitize: no GPU; "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(next_step), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("next: sage2tp run"), std::string::npos) << "status recommends the command that just failed:\n" << r.out;
    EXPECT_NE(r.out.find("gate: candidate p50 < 220 ms"), std::string::npos) << r.out;

    r = run_sage2tp({"report", "--run", run.string()}, dir_, no_gpu);
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("stopped at sanitize: no GPU"), std::string::npos) << r.err;
    r = run_sage2tp({"compare", run.string(), "--format", "csv"}, dir_, no_gpu);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("missing: stopped at sanitize: no GPU"), std::string::npos) << r.out;

    // A stage that moves the run on makes the stop history; the next GPU stage records its own.
    ASSERT_TRUE(fs::is_regular_file(run / "last-stop.toml"));
    r = run_sage2tp({"sanitize", "--run", run.string(), "--skip"}, dir_, no_gpu);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(fs::exists(run / "last-stop.toml"));
    r = run_sage2tp({"parity", "--run", run.string()}, dir_, no_gpu);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    r = run_sage2tp({"status", "--run", run.string()}, dir_, no_gpu);
    EXPECT_NE(r.out.find("next: stopped at parity: no GPU; "), std::string::npos) << r.out;
    // The record is part of the run: clean removes a run that holds one.
    r = run_sage2tp({"clean", "--yes", "--run", run.string()}, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_FALSE(fs::exists(run));
}

// Issue 26: piped (a CI log), build prints a progress line at least every 30 s while a compile runs, and
// the line fits 80 columns. An nvcc wrapper stands in for the compiles: the first takes 32 s, and every
// one fails (the stage's verdict does not matter here, only what it printed while it waited).
TEST_F(Build, PipedBuildPrintsProgressEveryThirtySeconds) {
    ASSERT_EQ(sage2tp({"prepare", "--run", "progress", "-q"}).exit_code, 0);
    const std::optional<fs::path> real_nvcc = find_program("nvcc") ? find_program("nvcc") : find_program("/usr/local/cuda/bin/nvcc");
    ASSERT_TRUE(real_nvcc) << "no nvcc";
    const fs::path slow = dir_ / "slow-nvcc";
    {
        std::ofstream script(slow);
        script << "#!/bin/sh\n"
               << "[ \"$1\" = -cubin ] || exec '" << real_nvcc->string() << "' \"$@\"\n"
               << "mkdir '" << (dir_ / "slowed").string() << "' 2>/dev/null && sleep 32\n"
               << "echo 'slow-nvcc: no compile here' >&2; exit 1\n";
    }
    fs::permissions(slow, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir_ / "slowed");
    const ProcessResult r = run_sage2tp({"build", "--run", "progress", "--arch", "sm_89", "--nvcc", slow.string()}, dir_,
                                        {{"SAGE2TP_CACHE", "off"}});
    ASSERT_TRUE(fs::exists(dir_ / "slowed")) << "no compile reached the wrapper:\n" << r.out << r.err;
    std::istringstream lines(r.out);
    std::string line;
    int progress_lines = 0;
    while (std::getline(lines, line)) {
        if (line.find(" elapsed, ETA ") == std::string::npos) continue;
        ++progress_lines;
        EXPECT_LE(line.size(), 79u) << line;
        EXPECT_NE(line.find(".cu for "), std::string::npos) << "the line names what runs: " << line;
        EXPECT_EQ(line.find('\r'), std::string::npos) << "a rewritten terminal line in a pipe: " << line;
    }
    EXPECT_EQ(progress_lines, 1) << "32 s in a pipe: one line at 30 s, not one a second, not none:\n" << r.out << r.err;
}

TEST_F(Build, UsageAndMissingToolErrors) {
    ASSERT_EQ(sage2tp({"prepare", "--run", "errors", "-q"}).exit_code, 0);
    ProcessResult r = sage2tp({"build", "--run", "errors", "--arch", "sm_70"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("unsupported arch 'sm_70'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("sm_90a"), std::string::npos) << r.err;
    r = sage2tp({"build", "--run", "errors", "--arch", "sm_90a", "--nvcc", "/nonexistent/nvcc"});
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_NE(r.err.find("/nonexistent/nvcc"), std::string::npos) << r.err;
    r = sage2tp({"build", "--run", "never-prepared", "--arch", "sm_90a"});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("sage2tp prepare"), std::string::npos) << r.err;
}

TEST_F(Build, CandidateThatDoesNotCompileFailsWithTheErrorQuoted) {
    ProcessResult r = sage2tp({"prepare", "--manifest", (source_root / "tests/manifests/syntax-error.toml").string(),
                               "--run", "broken", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = sage2tp({"build", "--run", "broken"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    Checkpoint c = build_checkpoint(dir_ / "broken");
    EXPECT_EQ(c.status, StageStatus::failed);
    ASSERT_FALSE(c.reasons.empty());
    EXPECT_NE(c.reasons.front().find("candidate:kernels/attention_entry.cu does not compile"), std::string::npos)
        << c.reasons.front();
    EXPECT_NE(c.reasons.front().find("error"), std::string::npos) << c.reasons.front();
    EXPECT_NE(r.out.find("does not compile"), std::string::npos) << r.out;
    // In a pipe: one line per finished compile, the failed one marked.
    EXPECT_NE(r.out.find("] candidate:kernels/attention_entry.cu "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" s, FAILED (nvcc exit "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  [1/"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find('\r'), std::string::npos) << "no in-place progress in a pipe";
    // A failed build is never "up to date": the next stage refuses, the build runs again.
    r = sage2tp({"sanitize", "--run", "broken"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
}
