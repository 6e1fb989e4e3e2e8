// The kernels' PTX, instruction for instruction: each variant of kernels/variants.toml (the baseline entry
// file, and each candidate: that file with data/patches/<name>.patch applied) and the quantization cubin
// is compiled to PTX with the build stage's flags and its digest compared with the list's `ptx`.
// A refactoring of the kernel headers must leave these digests alone; a change meant to alter the kernels
// updates the list (the failure message prints the new digest) and says so in kernels/NOTES.md.
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

#include <cctype>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

const fs::path source_root = S2TP_SOURCE_ROOT;

const fs::path variants_file = source_root / "kernels/variants.toml";

// A kernel source of the test: a variant's entry file or the quantization cubin's.
struct PtxSource {
    std::string name;      // the variant's name, or "quantize"
    std::string schedule;  // the ActiveSchedule a variant's entry file selects; "" for quantize
    const toml::table *recorded = nullptr;  // its table in the list, with `ptx`
};

const toml::table &variant_list() {
    static const toml::table list = toml::parse_file(variants_file.string());
    return list;
}

// The list's variants in order, the baseline first, then the quantization cubin.
std::vector<PtxSource> ptx_sources() {
    std::vector<PtxSource> sources;
    if (const toml::array *variants = variant_list()["variant"].as_array())
        for (const toml::node &node : *variants) {
            const toml::table &variant = *node.as_table();
            sources.push_back({variant["name"].value_or(std::string()), variant["schedule"].value_or(std::string()),
                               &variant});
        }
    sources.push_back({"quantize", "", variant_list()["quantize"].as_table()});
    return sources;
}

fs::path source_file(const fs::path &kernels, const PtxSource &source) {
    return kernels / (source.name == "quantize" ? "quantize.cu" : source.name + "_attention_entry.cu");
}

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

class KernelPtx : public ::testing::TestWithParam<PtxSource> {
protected:
    static void SetUpTestSuite() {
        try {
            nvcc_ = find_nvcc(std::nullopt);
        } catch (const std::exception &) {
        }
        scratch_.emplace("ptx");
        dir_ = scratch_->path();
        // Each variant's entry file, exactly as prepare makes it: the baseline's with the variant's patch
        // applied (none for the baseline, the first).
        fs::copy(source_root / "kernels", dir_ / "kernels");
        const std::vector<PtxSource> sources = ptx_sources();
        for (std::size_t i = 0; i + 1 < sources.size(); ++i) {
            if (i > 0) {
                const fs::path patch = source_root / "data/patches" / (sources[i].name + ".patch");
                ProcessResult patched =
                    run_process({"patch", "--quiet", "-p1", "-d", dir_.string(), "-i", patch.string()});
                ASSERT_EQ(patched.exit_code, 0) << patch << ": " << patched.err;
            }
            fs::rename(dir_ / "kernels/attention_entry.cu", source_file(dir_ / "kernels", sources[i]));
            fs::copy_file(source_root / "kernels/attention_entry.cu", dir_ / "kernels/attention_entry.cu");
        }
    }
    static void TearDownTestSuite() {
        scratch_.reset();
        dir_.clear();
    }
    static std::optional<fs::path> nvcc_;
    static std::optional<ScratchDirectory> scratch_;
    static fs::path dir_;
};
std::optional<fs::path> KernelPtx::nvcc_;
std::optional<ScratchDirectory> KernelPtx::scratch_;
fs::path KernelPtx::dir_;

TEST(KernelVariants, TheListNamesABaselineAndCandidatesWithPatchesAndSchedules) {
    const std::vector<PtxSource> sources = ptx_sources();
    ASSERT_GE(sources.size(), 3u) << variants_file << " must list a baseline and at least one candidate";
    EXPECT_EQ(sources.front().name, "baseline");
    for (const PtxSource &source : sources) {
        ASSERT_NE(source.recorded, nullptr) << variants_file << " has no [quantize]";
        EXPECT_FALSE(source.name.empty()) << variants_file << " has a [[variant]] without a name";
        if (source.name == "quantize") continue;
        EXPECT_FALSE(source.schedule.empty()) << source.name << " names no schedule";
        if (&source != &sources.front()) {
            EXPECT_TRUE(fs::is_regular_file(source_root / "data/patches" / (source.name + ".patch"))) << source.name;
        }
    }
}

// A variant's entry file selects the schedule the list says, the line a patch changes.
TEST_P(KernelPtx, SelectsTheListedSchedule) {
    const PtxSource &source = GetParam();
    if (source.schedule.empty()) GTEST_SKIP() << source.name << " is not a variant";
    std::ifstream in(source_file(dir_ / "kernels", source));
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    EXPECT_NE(text.find("\nusing ActiveSchedule = " + source.schedule + ";\n"), std::string::npos)
        << source.name << "'s entry file does not select " << source.schedule;
}

TEST_P(KernelPtx, IsTheRecordedPtx) {
    if (!nvcc_) GTEST_SKIP() << "no nvcc on this host";
    const std::string version = nvcc_version(*nvcc_);
    const std::string recorded_version = variant_list()["ptx_nvcc"].value_or(std::string());
    if (version != recorded_version)
        GTEST_SKIP() << "the digests are for '" << recorded_version << "', this nvcc is '" << version << "'";
    const PtxSource &source = GetParam();
    for (const char *arch : {"sm_90a", "sm_89"}) {
        const fs::path ptx = dir_ / (source.name + "." + arch + ".ptx");
        // The build stage's flags for the embedded kernels (data/experiments/temporal-pair.toml).
        ProcessResult compiled = run_process({nvcc_->string(), "-ptx",
                                              "-gencode=arch=compute_" + std::string(arch + 3) + ",code=" + arch,
                                              "-O3", "--use_fast_math", "-I", (dir_ / "kernels").string(), "-o",
                                              ptx.string(), source_file(dir_ / "kernels", source).string()});
        ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
        const std::string digest = ptx_digest_without_comments(ptx);
        EXPECT_EQ(digest, (*source.recorded)["ptx"][arch].value_or(std::string()))
            << source.name << " for " << arch << " compiles to other PTX than recorded in kernels/variants.toml; "
            << "if the kernel change is meant to alter the code, record its ptx." << arch << " = \"" << digest << "\"";
    }
}

INSTANTIATE_TEST_SUITE_P(Kernels, KernelPtx, ::testing::ValuesIn(ptx_sources()),
                         [](const ::testing::TestParamInfo<PtxSource> &info) {
                             std::string name = info.param.name;
                             for (char &c : name)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return name;
                         });

}  // namespace
