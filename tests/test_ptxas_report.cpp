// The ptxas -v parser against recorded logs (tests/data/ptxas/): hand-written ones in the exact line
// formats nvcc 13.0 prints with -Xptxas -v, and one real nvcc 13.0 log (nvcc13_sm90a_probe.log, from probe_kernels.cu).
#include "build_config.h"
#include "support/errors.h"
#include "formats/ptxas_report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace s2tp::unit_ptxas_report {
namespace {

std::string fixture_path(const std::string &name) {
    return std::string(S2TP_SOURCE_ROOT) + "/tests/data/ptxas/" + name;
}

PtxasReport parse_fixture(const std::string &name) {
    std::ifstream in(fixture_path(name), std::ios::binary);
    EXPECT_TRUE(in) << fixture_path(name);
    std::stringstream text;
    text << in.rdbuf();
    return parse_ptxas_report(text.str(), name);
}

const KernelResources &at(const PtxasReport &report, const std::string &name, const std::string &arch) {
    auto it = report.find({name, arch});
    if (it == report.end()) throw std::runtime_error("no record for " + name + " / " + arch);
    return it->second;
}

// The parse error's message, or "" if the log parsed.
std::string parse_error(const std::string &log) {
    try {
        parse_ptxas_report(log, "inline.log");
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        return e.what();
    }
    return "";
}

TEST(PtxasReport, Cuda13Sm89WithCmemAndModuleLine) {
    PtxasReport report = parse_fixture("cuda13_sm89.log");
    ASSERT_EQ(report.size(), 2u);

    const KernelResources &cand = at(report, "_Z9attn_candILi16EEvPKfPfi", "sm_89");
    EXPECT_EQ(cand.registers, 14);
    EXPECT_EQ(cand.barriers, 1);
    EXPECT_EQ(cand.stack_frame_bytes, 0);
    EXPECT_EQ(cand.static_smem_bytes, 0);
    EXPECT_EQ(cand.cumulative_stack_bytes, 0);
    EXPECT_EQ(cand.cmem_bytes, (std::map<int, std::int64_t>{{0, 372}}));  // the module's cmem[4] is not the kernel's
    EXPECT_EQ(cand.line, 2);

    const KernelResources &base = at(report, "attn_base", "sm_89");
    EXPECT_EQ(base.registers, 96);
    EXPECT_EQ(base.barriers, 1);
    EXPECT_EQ(base.stack_frame_bytes, 256);
    EXPECT_EQ(base.spill_store_bytes, 0);
    EXPECT_EQ(base.spill_load_bytes, 0);
    EXPECT_EQ(base.cumulative_stack_bytes, 256);
    EXPECT_EQ(base.static_smem_bytes, 16896);
    EXPECT_EQ(base.cmem_bytes.at(0), 372);
    EXPECT_FALSE(base.spill_warning.has_value());
    EXPECT_FALSE(base.local_memory_warning_bytes.has_value());
}

TEST(PtxasReport, Cuda13Sm90aWithoutCmemAndWithAdvisory) {
    PtxasReport report = parse_fixture("cuda13_sm90a.log");
    ASSERT_EQ(report.size(), 3u);

    const KernelResources &base = at(report, "attn_base", "sm_90a");
    EXPECT_EQ(base.registers, 35);
    EXPECT_EQ(base.static_smem_bytes, 16896);
    EXPECT_TRUE(base.cmem_bytes.empty());

    const KernelResources &warpspec = at(report, "_Z13attn_warpspecILi128EEvPK6__halfPfi", "sm_90a");
    EXPECT_EQ(warpspec.registers, 168);
    EXPECT_EQ(warpspec.barriers, 16);
    EXPECT_EQ(warpspec.cumulative_stack_bytes, 64);
    EXPECT_EQ(warpspec.static_smem_bytes, 0);

    const KernelResources &wgmma = at(report, "_Z10attn_wgmmaPKaS0_Pf", "sm_90a");
    EXPECT_EQ(wgmma.registers, 224);
    EXPECT_EQ(wgmma.barriers, 1);
    EXPECT_EQ(wgmma.static_smem_bytes, 9216);
    EXPECT_EQ(wgmma.cumulative_stack_bytes, 0);
}

TEST(PtxasReport, SpillWarningsAttachToTheirKernelOnly) {
    PtxasReport report = parse_fixture("spill_sm90a.log");
    ASSERT_EQ(report.size(), 2u);

    const KernelResources &spilly = at(report, "_Z6spillyPK6float4Pf", "sm_90a");
    EXPECT_EQ(spilly.registers, 32);
    EXPECT_EQ(spilly.barriers, 0);
    EXPECT_EQ(spilly.stack_frame_bytes, 288);
    EXPECT_EQ(spilly.spill_store_bytes, 328);
    EXPECT_EQ(spilly.spill_load_bytes, 328);
    EXPECT_EQ(spilly.cumulative_stack_bytes, 288);
    ASSERT_TRUE(spilly.spill_warning.has_value());
    EXPECT_EQ(spilly.spill_warning->store_bytes, 328);
    EXPECT_EQ(spilly.spill_warning->load_bytes, 328);
    EXPECT_EQ(spilly.local_memory_warning_bytes, 288);

    const KernelResources &tidy = at(report, "_Z5tidyPf", "sm_90a");
    EXPECT_EQ(tidy.registers, 8);
    EXPECT_EQ(tidy.spill_store_bytes, 0);
    EXPECT_FALSE(tidy.spill_warning.has_value());
    EXPECT_FALSE(tidy.local_memory_warning_bytes.has_value());
}

TEST(PtxasReport, NonEntryFunctionBlocksAreSkipped) {
    PtxasReport report = parse_fixture("nonentry_function.log");
    ASSERT_EQ(report.size(), 2u);  // _Z6helperf, _Z7reducerPff and _Z9last_stepv are not kernels

    const KernelResources &kernel = at(report, "_Z6kernelPf", "sm_90a");
    EXPECT_EQ(kernel.stack_frame_bytes, 16);  // its own frame, not _Z6helperf's 48
    EXPECT_EQ(kernel.cumulative_stack_bytes, 64);
    EXPECT_EQ(kernel.registers, 24);

    const KernelResources &rows = at(report, "finish_rows", "sm_90a");
    EXPECT_EQ(rows.stack_frame_bytes, 0);  // not _Z7reducerPff's or _Z9last_stepv's
    EXPECT_EQ(rows.spill_store_bytes, 0);
    EXPECT_EQ(rows.spill_load_bytes, 0);
    EXPECT_EQ(rows.static_smem_bytes, 1024);
}

TEST(PtxasReport, MsbuildPrefixAndCrlfAreStripped) {
    PtxasReport report = parse_fixture("msbuild_prefix.log");
    ASSERT_EQ(report.size(), 2u);

    const KernelResources &search = at(report, "_Z6searchPjS_j", "sm_50");
    EXPECT_EQ(search.registers, 255);
    EXPECT_FALSE(search.barriers.has_value());
    EXPECT_EQ(search.stack_frame_bytes, 312);
    EXPECT_EQ(search.cumulative_stack_bytes, 312);
    EXPECT_EQ(search.static_smem_bytes, 8192);
    EXPECT_EQ(search.cmem_bytes, (std::map<int, std::int64_t>{{0, 324}, {2, 4}}));

    const KernelResources &fill = at(report, "_Z4fillPjj", "sm_50");
    EXPECT_EQ(fill.registers, 6);
    EXPECT_EQ(fill.cmem_bytes.at(0), 324);
}

TEST(PtxasReport, OlderCudaFormatWithoutBarriersOrCompileTime) {
    PtxasReport report = parse_fixture("old_cuda.log");
    ASSERT_EQ(report.size(), 2u);

    const KernelResources &assign = at(report, "_Z17kmeans_assign_lloydjjPKfS0_Pj", "sm_35");
    EXPECT_EQ(assign.registers, 27);
    EXPECT_FALSE(assign.barriers.has_value());
    EXPECT_EQ(assign.static_smem_bytes, 32768);
    EXPECT_EQ(assign.cmem_bytes, (std::map<int, std::int64_t>{{0, 376}, {2, 16}}));

    const KernelResources &texel = at(report, "_Z12gather_texelPf", "sm_35");
    EXPECT_EQ(texel.textures, 2);
    EXPECT_EQ(texel.samplers, 1);
    EXPECT_EQ(texel.surfaces, 1);
}

TEST(PtxasReport, TwoGencodesAreKeyedByArch) {
    PtxasReport report = parse_fixture("two_gencodes.log");
    ASSERT_EQ(report.size(), 2u);
    EXPECT_EQ(at(report, "attn_base", "sm_89").registers, 96);
    EXPECT_EQ(at(report, "attn_base", "sm_89").cmem_bytes.at(0), 372);
    EXPECT_EQ(at(report, "attn_base", "sm_90a").registers, 35);
    EXPECT_TRUE(at(report, "attn_base", "sm_90a").cmem_bytes.empty());
    EXPECT_EQ(report.count({"attn_base", "sm_90"}), 0u);  // the arch is kept exactly as printed
}

// With two -gencodes, the second ptxas run prints its warnings while the first run's entry of the
// same kernel is still the last one seen; they belong to the second run's entry.
TEST(PtxasReport, SpillWarningsOfTheSecondGencodeGoToTheSecondArch) {
    const std::string log =
        "ptxas warning : Registers are spilled to local memory in function 'k', 40 bytes spill stores, 40 bytes spill loads\n"
        "ptxas info    : 0 bytes gmem, 8 bytes cmem[4]\n"
        "ptxas info    : Compiling entry function 'k' for 'sm_89'\n"
        "ptxas info    : Function properties for k\n"
        "    40 bytes stack frame, 40 bytes spill stores, 40 bytes spill loads\n"
        "ptxas info    : Used 32 registers, used 0 barriers, 40 bytes cumulative stack size, 360 bytes cmem[0]\n"
        "ptxas warning : Registers are spilled to local memory in function 'k', 12 bytes spill stores, 12 bytes spill loads\n"
        "ptxas info    : 0 bytes gmem\n"
        "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
        "ptxas info    : Function properties for k\n"
        "    12 bytes stack frame, 12 bytes spill stores, 12 bytes spill loads\n"
        "ptxas info    : Used 32 registers, used 0 barriers, 12 bytes cumulative stack size\n";
    PtxasReport report = parse_ptxas_report(log, "inline.log");
    ASSERT_EQ(report.size(), 2u);
    EXPECT_EQ(at(report, "k", "sm_89").spill_warning->store_bytes, 40);
    EXPECT_EQ(at(report, "k", "sm_90a").spill_warning->store_bytes, 12);
}

// A real nvcc 13.0.88 log; see the header of tests/data/ptxas/probe_kernels.cu.
TEST(PtxasReport, RealNvcc13Sm90aLog) {
    PtxasReport report = parse_fixture("nvcc13_sm90a_probe.log");
    ASSERT_EQ(report.size(), 3u);  // probe_pick is a __noinline__ device function, not an entry

    const KernelResources &spill = at(report, "_Z11probe_spillPK6float4Pf", "sm_90a");
    EXPECT_EQ(spill.registers, 32);
    EXPECT_EQ(spill.barriers, 0);
    EXPECT_EQ(spill.stack_frame_bytes, 232);
    EXPECT_EQ(spill.spill_store_bytes, 220);
    EXPECT_EQ(spill.spill_load_bytes, 220);
    EXPECT_EQ(spill.cumulative_stack_bytes, 232);
    ASSERT_TRUE(spill.spill_warning.has_value());
    EXPECT_EQ(spill.spill_warning->store_bytes, spill.spill_store_bytes);
    EXPECT_EQ(spill.spill_warning->load_bytes, spill.spill_load_bytes);
    EXPECT_EQ(spill.local_memory_warning_bytes, spill.stack_frame_bytes);

    const KernelResources &scaled = at(report, "_Z12probe_scaledILi4EEvPf", "sm_90a");
    EXPECT_EQ(scaled.registers, 24);
    EXPECT_EQ(scaled.stack_frame_bytes, 64);
    EXPECT_EQ(scaled.spill_store_bytes, 0);
    EXPECT_EQ(scaled.local_memory_warning_bytes, 64);  // stack without spills: only the lmem warning
    EXPECT_FALSE(scaled.spill_warning.has_value());

    const KernelResources &tile = at(report, "probe_tile_shift", "sm_90a");
    EXPECT_EQ(tile.registers, 10);
    EXPECT_EQ(tile.barriers, 1);
    EXPECT_EQ(tile.static_smem_bytes, 1024);
    EXPECT_EQ(tile.stack_frame_bytes, 0);
    EXPECT_TRUE(tile.cmem_bytes.empty());
}

TEST(PtxasReport, EmptyLogHasNoKernels) {
    EXPECT_TRUE(parse_ptxas_report("", "empty.log").empty());
    EXPECT_TRUE(parse_ptxas_report("nvcc warning : something unrelated\n", "x.log").empty());
}

TEST(PtxasReport, UnknownUsedItemIsRejectedWithLine) {
    const std::string log =
        "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
        "ptxas info    : Function properties for k\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 8 registers, used 0 barriers, 12 bytes lmem\n";
    std::string message = parse_error(log);
    EXPECT_NE(message.find("inline.log:4:"), std::string::npos) << message;
    EXPECT_NE(message.find("'12 bytes lmem'"), std::string::npos) << message;
}

TEST(PtxasReport, MalformedReportsAreRejected) {
    const std::string entry = "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n";
    const std::string properties = "ptxas info    : Function properties for k\n";
    const std::string stack = "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
    const std::string used = "ptxas info    : Used 8 registers, used 0 barriers\n";

    EXPECT_NE(parse_error(used).find("outside"), std::string::npos);
    EXPECT_NE(parse_error(stack).find("without a preceding"), std::string::npos);
    EXPECT_NE(parse_error(entry + properties + stack).find("no 'Used"), std::string::npos);
    EXPECT_NE(parse_error(entry + used).find("no 'N bytes stack frame"), std::string::npos);
    EXPECT_NE(parse_error(entry + properties + stack + used + used).find("second 'Used'"), std::string::npos);
    EXPECT_NE(parse_error(entry + properties + stack + "ptxas info    : Used 8 registers, used 0 barriers, used 1 barriers\n")
                  .find("repeats"),
              std::string::npos);
    EXPECT_NE(parse_error(entry + properties + stack + "ptxas info    : Used 1024 bytes smem\n").find("does not start"),
              std::string::npos);

    std::string twice = parse_error(entry + properties + stack + used + entry + properties + stack + used);
    EXPECT_NE(twice.find("repeats the entry at line 1"), std::string::npos) << twice;
    EXPECT_EQ(parse_error(entry + properties + stack + used), "");
}

// std::regex recursed once per character and overflowed the stack (SIGSEGV) on a 100 KB line.
TEST(PtxasReport, HundredKilobyteLinesAreReadWithoutRecursion) {
    const std::string long_name(200000, 'k');
    const std::string log = std::string(150000, 'x') + "\n" + "ptxas info    : " + std::string(150000, ' ') + "\n" +
                            "ptxas info    : Compiling entry function '" + long_name + "' for 'sm_90a'\n" +
                            "ptxas info    : Function properties for " + long_name + "\n" +
                            "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n" +
                            "ptxas info    : Used 8 registers, used 0 barriers\n";
    PtxasReport report = parse_ptxas_report(log, "long.log");
    ASSERT_EQ(report.size(), 1u);
    EXPECT_EQ(at(report, long_name, "sm_90a").registers, 8);

    const std::string unknown = parse_error("ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
                                            "ptxas info    : Function properties for k\n"
                                            "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                                            "ptxas info    : Used 8 registers, " + std::string(100000, '9') + " bytes lmem\n");
    EXPECT_NE(unknown.find("inline.log:4: ptxas report: unknown item"), std::string::npos) << unknown.substr(0, 300);
    EXPECT_LT(unknown.size(), 1000u);  // the item is quoted cut short, not 100 KB of it
    EXPECT_TRUE(first_error_lines(std::string(100000, 'e') + " fatal" + std::string(100000, ' '), 3).size() == 1);
}

// std::stoi threw std::out_of_range, which ended the command as an internal error (exit 5).
TEST(PtxasReport, NumbersOutOfRangeAreParseErrorsNamingTheLine) {
    const std::string head = "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
                             "ptxas info    : Function properties for k\n";
    const std::string stack = "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
    const std::string registers = parse_error(head + stack + "ptxas info    : Used 2147483648 registers, used 0 barriers\n");
    EXPECT_NE(registers.find("inline.log:4: ptxas report: the number 2147483648 is out of range"), std::string::npos)
        << registers;
    EXPECT_EQ(parse_error(head + stack + "ptxas info    : Used 2147483647 registers\n"), "");
    EXPECT_NE(parse_error(head + stack + "ptxas info    : Used 1 registers, 99999999999999999999 bytes smem\n")
                  .find("inline.log:4:"),
              std::string::npos);
    EXPECT_NE(parse_error(head + "    99999999999999999999 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n")
                  .find("inline.log:3: ptxas report: the number 99999999999999999999 is out of range"),
              std::string::npos);
    EXPECT_NE(parse_error(head + stack + "ptxas info    : Used 1 registers, 4 bytes cmem[2147483648]\n").find("out of range"),
              std::string::npos);
    EXPECT_NE(parse_error("ptxas warning : Registers are spilled to local memory in function 'k', "
                          "99999999999999999999 bytes spill stores, 0 bytes spill loads\n")
                  .find("inline.log:1:"),
              std::string::npos);
}

// Captured from nvcc 13.0.88: a front-end error, a ptxas error (whose report still follows) and an
// nvcc fatal error.
TEST(FirstErrorLines, PicksErrorAndFatalLinesInOrderUpToTheLimit) {
    const std::string output =
        "broken.cu(1): error: identifier \"undeclared_value\" is undefined\n"
        "  __attribute__((global)) void broken(float *o) { o[threadIdx.x] = undeclared_value; }\n"
        "                                                                   ^\n"
        "\n"
        "1 error detected in the compilation of \"broken.cu\".\r\n"
        "ptxas error   : Entry function '_Z3bigPf' uses too much shared data (0x445c0 bytes, 0x38c00 max)   \n"
        "ptxas info    : Compiling entry function '_Z14error_feedbackPf' for 'sm_90a'\n"
        "ptxas info    : Used 10 registers, used 1 barriers, 280000 bytes smem\n"
        "nvcc fatal   : Unsupported gpu architecture 'compute_70'\n";

    std::vector<std::string> all = first_error_lines(output, 10);
    ASSERT_EQ(all.size(), 4u);
    EXPECT_EQ(all[0], "broken.cu(1): error: identifier \"undeclared_value\" is undefined");
    EXPECT_EQ(all[1], "1 error detected in the compilation of \"broken.cu\".");
    EXPECT_EQ(all[2], "ptxas error   : Entry function '_Z3bigPf' uses too much shared data (0x445c0 bytes, 0x38c00 max)");
    EXPECT_EQ(all[3], "nvcc fatal   : Unsupported gpu architecture 'compute_70'");

    std::vector<std::string> two = first_error_lines(output, 2);
    ASSERT_EQ(two.size(), 2u);
    EXPECT_EQ(two[1], all[1]);

    EXPECT_TRUE(first_error_lines("ptxas info    : Used 8 registers, used 0 barriers\n", 5).empty());
}

// A 'Used' line of 100,000 cmem banks (a hostile log) parses in n log n: the repeat check was a linear
// search per item, 16 s at this size. The figures must all arrive, and a repeated bank still fails.
TEST(PtxasReport, AUsedLineOfManyCmemBanksParsesWhole) {
    std::string log = "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
                      "ptxas info    : Function properties for k\n"
                      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                      "ptxas info    : Used 8 registers";
    const int banks = 100000;
    for (int bank = 0; bank < banks; ++bank) log += ", 4 bytes cmem[" + std::to_string(bank) + "]";
    PtxasReport report = parse_ptxas_report(log + "\n", "many.log");
    ASSERT_EQ(report.size(), 1u);
    EXPECT_EQ(at(report, "k", "sm_90a").cmem_bytes.size(), static_cast<std::size_t>(banks));
    EXPECT_THROW(parse_ptxas_report(log + ", 4 bytes cmem[7]\n", "repeat.log"), Error);
}

}  // namespace
}  // namespace s2tp::unit_ptxas_report
