// The kernels' PTX, instruction for instruction: each kernel source (the baseline entry file, the
// candidates made by data/patches/temporal-pair.patch and temporal-pair-double-v.patch, the quantizers)
// is compiled to PTX with the build stage's flags and its digest compared with tests/data/kernel_ptx.toml.
// A refactoring of the kernel headers must leave these digests alone; a change meant to alter the kernels
// updates the file (the failure message prints the new digest) and says so in kernels/NOTES.md.
//
// Comment lines ("//", the compiler's banner) are left out of the digest, and path hashes masked. The digests hold for the nvcc
// recorded in the file; with another nvcc the test is skipped, since PTX legitimately changes with it.
#include "build_config.h"
#include "scratch_directory.h"
#include "tools/kernel_build.h"
#include "support/hashing.h"
#include "support/process_runner.h"

#include <gtest/gtest.h>

#include <optional>
#include <toml++/toml.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

const fs::path source_root = S2TP_SOURCE_ROOT;

// The candidates' entry files, each the baseline's with one patch of data/patches applied.
struct PatchedEntry {
    const char *source;  // the file's name without .cu, and its table in tests/data/kernel_ptx.toml
    const char *patch;
};
const PatchedEntry patched_entries[] = {
    {"candidate_attention_entry", "temporal-pair.patch"},
    {"temporal_pair_double_v_attention_entry", "temporal-pair-double-v.patch"},
};

// Anonymous namespaces get a hash of the source's path in their mangled names
// ("_INTERNAL_2fdd947d_", "_GLOBAL__N__2fdd947d_"); the same code compiled from another folder must
// compare equal, so the hash is masked.
std::string ptx_digest_without_comments(const fs::path &ptx) {
    static const std::regex path_hash("(_INTERNAL_|_GLOBAL__N__)[0-9a-f]{8}_");
    std::ifstream in(ptx);
    std::string line, code;
    while (std::getline(in, line))
        if (line.rfind("//", 0) != 0) code += std::regex_replace(line, path_hash, "$1x_") + "\n";
    return sha256_hex(code);
}

class KernelPtx : public ::testing::TestWithParam<const char *> {
protected:
    static void SetUpTestSuite() {
        try {
            nvcc_ = find_nvcc(std::nullopt);
        } catch (const std::exception &) {
            return;
        }
        scratch_.emplace("ptx");
        dir_ = scratch_->path();
        // Each candidate's entry file, exactly as prepare makes it: the baseline's with its patch applied.
        fs::copy(source_root / "kernels", dir_ / "kernels");
        for (const PatchedEntry &entry : patched_entries) {
            ProcessResult patched = run_process({"patch", "--quiet", "-p1", "-d", dir_.string(), "-i",
                                                 (source_root / "data/patches" / entry.patch).string()});
            ASSERT_EQ(patched.exit_code, 0) << entry.patch << ": " << patched.err;
            fs::rename(dir_ / "kernels/attention_entry.cu", dir_ / "kernels" / (std::string(entry.source) + ".cu"));
            fs::copy_file(source_root / "kernels/attention_entry.cu", dir_ / "kernels/attention_entry.cu");
        }
        recorded_ = toml::parse_file((source_root / "tests/data/kernel_ptx.toml").string());
    }
    static void TearDownTestSuite() {
        scratch_.reset();
        dir_.clear();
    }
    static std::optional<fs::path> nvcc_;
    static std::optional<ScratchDirectory> scratch_;
    static fs::path dir_;
    static toml::table recorded_;
};
std::optional<fs::path> KernelPtx::nvcc_;
std::optional<ScratchDirectory> KernelPtx::scratch_;
fs::path KernelPtx::dir_;
toml::table KernelPtx::recorded_;

TEST_P(KernelPtx, IsTheRecordedPtx) {
    if (!nvcc_) GTEST_SKIP() << "no nvcc on this host";
    const std::string version = nvcc_version(*nvcc_);
    const std::string recorded_version = recorded_["nvcc"].value_or(std::string());
    if (version != recorded_version)
        GTEST_SKIP() << "the digests are for '" << recorded_version << "', this nvcc is '" << version << "'";
    const std::string source = GetParam();
    for (const char *arch : {"sm_90a", "sm_89"}) {
        const fs::path ptx = dir_ / (source + "." + arch + ".ptx");
        // The build stage's flags for the embedded kernels (data/experiments/temporal-pair.toml).
        ProcessResult compiled = run_process({nvcc_->string(), "-ptx",
                                              "-gencode=arch=compute_" + std::string(arch + 3) + ",code=" + arch,
                                              "-O3", "--use_fast_math", "-I", (dir_ / "kernels").string(), "-o",
                                              ptx.string(), (dir_ / "kernels" / (source + ".cu")).string()});
        ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
        const std::string digest = ptx_digest_without_comments(ptx);
        EXPECT_EQ(digest, recorded_[source][arch].value_or(std::string()))
            << source << ".cu for " << arch << " compiles to other PTX than recorded in tests/data/kernel_ptx.toml; "
            << "if the kernel change is meant to alter the code, record " << source << "." << arch << " = \"" << digest
            << "\"";
    }
}

INSTANTIATE_TEST_SUITE_P(Kernels, KernelPtx,
                         ::testing::Values("attention_entry", "candidate_attention_entry",
                                           "temporal_pair_double_v_attention_entry", "quantize"));

}  // namespace
