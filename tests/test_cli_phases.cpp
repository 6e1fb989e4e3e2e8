// `sage2tp phases` end to end, without a GPU: its usage and precondition errors (suite cli), and
// (PhasesBuild, suite slow) the instrumented twins of the embedded kernels compiled with the real nvcc:
// -DS2TP_PHASE_TIMING on the run's own build command, into builds/<variant>/phases/, the plain cubins
// and the build checkpoint untouched, "up to date", --force, and exit 3 when it comes to the GPU.
#include "build_config.h"
#include "scratch_directory.h"
#include "formats/checkpoint_store.h"
#include "formats/tensor_io.h"
#include "model/experiment_manifest.h"
#include "model/input_generator.h"
#include "support/file_io.h"
#include "support/hashing.h"
#include "support/process_runner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

const std::string binary = std::getenv("SAGE2TP_BIN") ? std::getenv("SAGE2TP_BIN") : "";

class PhasesTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(binary.empty()) << "SAGE2TP_BIN is not set";
    }
    // A git repository of one tiny kernel and a patch of it (repo/, c.patch); returns a manifest of that
    // experiment with a generated workload (len_q 128).
    std::string write_tiny_experiment() {
        fs::create_directories(dir_ / "repo/kernels");
        std::ofstream(dir_ / "repo/kernels/k.cu") << "// kernel\nint schedule = 0;\n";
        for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
                 {"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "k"}}) {
            args.insert(args.begin(), {"git", "-C", (dir_ / "repo").string()});
            EXPECT_EQ(run_process(args).exit_code, 0);
        }
        std::ofstream(dir_ / "c.patch") << "--- a/kernels/k.cu\n+++ b/kernels/k.cu\n@@ -1,2 +1,2 @@\n // kernel\n"
                                           "-int schedule = 0;\n+int schedule = 1;\n";
        return "[experiment]\nname = \"exp\"\n[source]\nkind = \"git\"\nrepository = \"repo\"\n"
               "commit = \"HEAD\"\nkernel_sources = [\"kernels/k.cu\"]\n[candidate]\npatch = \"c.patch\"\n"
               "[workload]\nname = \"w\"\nlen_q = 128\n";
    }
    // No GPU is ever used: CUDA_VISIBLE_DEVICES hides any the host has.
    ProcessResult sage2tp(std::vector<std::string> args) {
        args.insert(args.begin(), binary);
        ProcessOptions options;
        options.working_directory = dir_;
        options.extra_environment = {{"CUDA_VISIBLE_DEVICES", ""}};
        return run_process(args, options);
    }
    Checkpoint build_checkpoint(const fs::path &run) {
        CheckpointRead read = read_checkpoint(run / "checkpoints/02-build.toml");
        EXPECT_TRUE(read.checkpoint) << read.problem;
        return read.checkpoint ? *read.checkpoint : Checkpoint{};
    }
    ScratchDirectory scratch_{"phases"};
    const fs::path dir_ = scratch_.path();
};

using PhasesCli = PhasesTest;
using PhasesBuild = PhasesTest;

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_F(PhasesCli, UsageErrorsComeBeforeAnything) {
    const std::pair<std::vector<std::string>, std::string> cases[] = {
        {{"--seq-len", "0"}, "--seq-len must be at least 1, got 0"},
        {{"--seq-len", "-5"}, "--seq-len must be at least 1, got -5"},
        {{"--seq-len", "x"}, "failed to parse"},
        {{"--jobs", "0"}, "--jobs must be at least 1"},
        {{"--bogus"}, "bogus"}};
    for (const auto &[bad, message] : cases) {
        std::vector<std::string> args{"phases"};
        args.insert(args.end(), bad.begin(), bad.end());
        const ProcessResult r = sage2tp(args);
        EXPECT_EQ(r.exit_code, 2) << bad[0] << ": " << r.err;
        EXPECT_TRUE(contains(r.err, message)) << r.err;
    }
    const ProcessResult help = sage2tp({"help", "phases"});
    EXPECT_EQ(help.exit_code, 0);
    for (const char *option : {"--seq-len", "--build-only", "--force", "--jobs", "--nvcc", "--device", "[RUN]"})
        EXPECT_TRUE(contains(help.out, option)) << option << " missing from: " << help.out;
    // Listed among the commands, and so offered by the bash completion.
    EXPECT_TRUE(contains(sage2tp({"help"}).out, "\n  phases "));
}

TEST_F(PhasesCli, ItNeedsAPassedFreshBuild) {
    ProcessResult r = sage2tp({"phases"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_TRUE(contains(r.err, "sage2tp prepare")) << r.err;
    r = sage2tp({"prepare", "--run", "run", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // The run by its directory, as the one word that is not an option.
    r = sage2tp({"phases", "run", "--build-only"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_TRUE(contains(r.err, "the build checkpoint is missing; run 'sage2tp build' first")) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "run/builds/baseline/phases"));
}

// Issue 36 item 9: a kernel without phase stamps (upstream's, here a tiny one) is refused before anything
// is compiled, not after the instrumented build.
TEST_F(PhasesCli, KernelsWithoutPhaseStampsAreRefusedBeforeAnythingIsCompiled) {
    std::ofstream(dir_ / "m.toml") << write_tiny_experiment();
    ASSERT_EQ(sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"}).exit_code, 0);
    const ProcessResult r = sage2tp({"phases", "--run", "run", "--build-only"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_TRUE(contains(r.err, "baseline's kernels have no phase stamps")) << r.err;
    EXPECT_TRUE(contains(r.err, "nothing was compiled")) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "run/builds/baseline/phases"));
}

TEST_F(PhasesCli, SeqLenDoesNotApplyToAWorkloadOfTensorFiles) {
    const std::string manifest = write_tiny_experiment();
    std::ofstream(dir_ / "plain.toml") << manifest;
    const AttentionProblem problem = load_experiment(dir_ / "plain.toml").workload.problem;
    const GeneratedInputs inputs = generate_inputs(problem.shape, problem.dtype, 7);
    save_npy(dir_ / "q.npy", inputs.q);
    save_npy(dir_ / "k.npy", inputs.k);
    save_npy(dir_ / "v.npy", inputs.v);
    std::ofstream(dir_ / "m.toml") << manifest << "[workload.tensors]\nq = \"q.npy\"\nk = \"k.npy\"\nv = \"v.npy\"\n";
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    r = sage2tp({"phases", "--run", "run", "--seq-len", "64"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "--seq-len does not apply: the workload 'w' reads tensor files")) << r.err;
}

// A length whose tensors would pass 2^31 elements is refused before a build checkpoint or a GPU is asked
// for, with checked arithmetic (99999999999999 x heads x 128 overflows nothing it should not).
TEST_F(PhasesCli, ASeqLenTooLargeForTheTensorsIsExitTwoBeforeAnythingElse) {
    std::ofstream(dir_ / "m.toml") << write_tiny_experiment();
    ProcessResult r = sage2tp({"prepare", "--manifest", "m.toml", "--run", "run", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    for (const char *length : {"99999999999999", "9223372036854775807", "16777216"}) {
        r = sage2tp({"phases", "--run", "run", "--seq-len", length});
        EXPECT_EQ(r.exit_code, 2) << length << ": " << r.err;
        EXPECT_TRUE(contains(r.err, std::string("--seq-len ") + length)) << r.err;
        EXPECT_TRUE(contains(r.err, "fewer than 2^31 elements")) << r.err;
    }
}

TEST_F(PhasesCli, BashCompletionOffersRunDirectoriesAsItsArgument) {
    fs::create_directories(dir_ / "runs-here/one");
    const std::string script = (fs::path(S2TP_SOURCE_ROOT) / "data/completion/sage2tp.bash").string();
    ProcessOptions options;
    options.working_directory = dir_;
    const ProcessResult r = run_process(
        {"bash", "-c", "source '" + script + "'; COMP_WORDS=('" + binary + "' phases runs-here/); COMP_CWORD=2; _sage2tp; "
                       "printf '%s\\n' \"${COMPREPLY[@]}\""},
        options);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "runs-here/one\n");
}

// The embedded kernels for sm_90a with the real nvcc (the whole attention_entry.cu, every head dim:
// its entries are one translation unit): the build first, then the instrumented twins.
TEST_F(PhasesBuild, BuildOnlyCompilesInstrumentedTwinsAndLeavesTheBuildAlone) {
    ProcessResult r = sage2tp({"prepare", "--run", "run", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = sage2tp({"build", "--run", "run", "--arch", "sm_90a", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const fs::path run = dir_ / "run";
    const Checkpoint before = build_checkpoint(run);

    const auto began = std::chrono::steady_clock::now();
    r = sage2tp({"phases", "--run", "run", "--build-only"});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    std::cout << "---- sage2tp phases --build-only (" << seconds << " s)\n" << r.out << r.err << std::flush;
    // The default experiment: the baseline and its two candidates, one kernel source each.
    EXPECT_TRUE(contains(r.err + r.out, "compiling 3 kernel sources for sm_90a with -DS2TP_PHASE_TIMING")) << r.out;
    for (const char *variant : {"baseline", "candidate", "double-v"}) {
        const fs::path stem = run / "builds" / variant / "phases" / "attention_entry.sm_90a";
        ASSERT_TRUE(fs::is_regular_file(stem.string() + ".cubin")) << stem;
        EXPECT_TRUE(fs::is_regular_file(stem.string() + ".log")) << stem;
        // The plain build's command, with the define and the phases output.
        const std::string plain = read_text_file(run / "builds" / variant / "attention_entry.sm_90a.cmd");
        const std::string timed = read_text_file(stem.string() + ".cmd");
        EXPECT_FALSE(contains(plain, "S2TP_PHASE_TIMING")) << plain;
        EXPECT_TRUE(contains(timed, " -DS2TP_PHASE_TIMING -o builds/" + std::string(variant) +
                                        "/phases/attention_entry.sm_90a.cubin trees/" + variant +
                                        "/kernels/attention_entry.cu\n"))
            << timed;
        // The plain build compiled into build's staging directory (swapped in whole afterwards); the
        // instrumented one writes its outputs, the dependency file too, under builds/<variant>/phases.
        std::string expected = plain;
        const std::string staged = ".build-new/" + std::string(variant) + "/";
        for (std::size_t at = expected.find(staged); at != std::string::npos; at = expected.find(staged, at))
            expected.replace(at, staged.size(), "builds/" + std::string(variant) + "/phases/");
        expected.replace(expected.find(" -o "), 4, " -DS2TP_PHASE_TIMING -o ");
        EXPECT_EQ(timed, expected);
        EXPECT_TRUE(contains(r.out, std::string(variant) + ":kernels/attention_entry.cu -> builds/" + variant +
                                        "/phases/attention_entry.sm_90a.cubin"))
            << r.out;
        // The quantization kernels are not timed, so not built again.
        EXPECT_FALSE(fs::exists(run / "builds" / variant / "phases" / "quantize.sm_90a.cubin"));
    }
    // Every stage's cubins stay as the build checkpoint recorded them.
    const Checkpoint after = build_checkpoint(run);
    EXPECT_EQ(after.finished_utc, before.finished_utc);
    for (const auto &[key, artifact] : after.artifacts) {
        const toml::table *recorded = artifact.as_table();
        if (!recorded || !(*recorded)["path"].is_string()) continue;
        EXPECT_EQ(sha256_file(run / (*recorded)["path"].value_or(std::string())),
                  (*recorded)["sha256"].value_or(std::string())) << key.str();
    }
    EXPECT_TRUE(fs::is_regular_file(run / "builds/phase-timing.toml"));

    // Same sources, flags and nvcc: up to date, nothing compiled.
    const auto written = fs::last_write_time(run / "builds/candidate/phases/attention_entry.sm_90a.cubin");
    r = sage2tp({"phases", "--run", "run", "--build-only", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.err, "phases: instrumented build up to date")) << r.err;
    EXPECT_TRUE(contains(r.out, "\"status\" : \"built\"") || contains(r.out, "\"status\": \"built\"")) << r.out;
    EXPECT_TRUE(contains(r.out, "builds/baseline/phases/attention_entry.sm_90a.cubin")) << r.out;
    EXPECT_EQ(fs::last_write_time(run / "builds/candidate/phases/attention_entry.sm_90a.cubin"), written);

    // Without a GPU the measurement exits 3, after the build, and says how to go on.
    r = sage2tp({"phases", "--run", "run", "--seq-len", "256"});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_TRUE(contains(r.err, "phases needs an NVIDIA GPU")) << r.err;
    EXPECT_TRUE(contains(r.err, "--build-only")) << r.err;
    EXPECT_FALSE(fs::exists(run / "reports/phases.toml"));

    // A changed instrumented cubin is rebuilt; --force rebuilds an intact one.
    std::ofstream(run / "builds/baseline/phases/attention_entry.sm_90a.cubin", std::ios::app) << "x";
    r = sage2tp({"phases", "--run", "run", "--build-only"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out + r.err, "changed since it was built")) << r.out << r.err;
    r = sage2tp({"phases", "--run", "run", "--build-only", "--force"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out + r.err, "compiling 3 kernel sources")) << r.out << r.err;

    // A tree that changed since the build makes the build checkpoint stale: the precondition.
    std::ofstream(run / "trees/candidate/kernels/schedule.cuh", std::ios::app) << "// changed\n";
    r = sage2tp({"phases", "--run", "run", "--build-only"});
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "build checkpoint")) << r.err;
}
