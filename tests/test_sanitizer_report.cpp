// The compute-sanitizer verdict. The fixtures are written from the record and summary formats measured
// with compute-sanitizer 2025.3.1 on an H200, including the planted-bug cases measured there.
#include "support/errors.h"
#include "formats/sanitizer_report.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace s2tp::unit_sanitizer_report {
namespace {

// memcheck, a 4-byte out-of-bounds write in a program that then exits 3: the summary counts the
// write and the target's error exit.
const char *const kMemcheckOutOfBounds = R"(========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at oob_kernel(float *, int)+0xc0 in test.cu:10
=========     by thread (32,0,0) in block (0,0,0)
=========     Access to 0x7fcb24001000 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7fcb20000000 of size 67,112,960 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: cuLaunchKernel [0x2cd4c1] in libcuda.so.1
=========         Host Frame: main [0x1a2b] in test
=========
oob_kernel done
========= Target application returned an error
========= ERROR SUMMARY: 2 errors
)";

// racecheck on a shared-memory race in a program that exits 0: only the summary reveals it.
const char *const kRacecheckOneHazard = R"(========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at race_kernel(float *)+0xa0 in test.cu:11
=========     and Read access at race_kernel(float *)+0xb0 in test.cu:11 [1024 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
)";

const char *const kRacecheckClean = R"(========= COMPUTE-SANITIZER
shapes: 24 of 24 passed
========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)
)";

const char *const kInitcheckUninitialised = R"(========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at read_kernel(const float *, float *)+0x70 in test.cu:20
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f5e80000000
=========
========= ERROR SUMMARY: 32 errors
)";

const char *const kSynccheckDivergentBarrier = R"(========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in warp.
=========     at sync_kernel(float *)+0x60 in test.cu:30
=========     by thread (1,0,0) in block (0,0,0)
=========
========= Target application returned an error
========= ERROR SUMMARY: 16 errors
)";

TEST(SanitizerArgv, SetsToolErrorExitCodeAndPrintLimitBeforeTheTarget) {
    SanitizerRun run;
    run.sanitizer = "/opt/cuda/bin/compute-sanitizer";
    run.tool = SanitizerTool::racecheck;
    run.print_limit = 0;
    auto argv = sanitizer_argv(run, {"/bin/prog", "shapes", "--variant", "both"});
    std::vector<std::string> expected = {"/opt/cuda/bin/compute-sanitizer", "--tool", "racecheck", "--error-exitcode",
                                         "86", "--print-limit", "0", "/bin/prog", "shapes", "--variant", "both"};
    EXPECT_EQ(argv, expected);
}

TEST(SanitizerArgv, AddsTheLogFileWhenAsked) {
    SanitizerRun run;
    run.log_file = "/tmp/out dir/memcheck.log";
    auto argv = sanitizer_argv(run, {"/bin/prog"});
    ASSERT_EQ(argv.size(), 10u);
    EXPECT_EQ(argv[7], "--log-file");
    EXPECT_EQ(argv[8], "/tmp/out dir/memcheck.log");  // one argument, spaces and all: no shell involved
    EXPECT_EQ(argv[9], "/bin/prog");
}

TEST(SanitizerArgv, NeverUsesTheMesonSkipOrHardErrorCodes) {
    EXPECT_NE(kSanitizerErrorExitCode, 77);
    EXPECT_NE(kSanitizerErrorExitCode, 99);
    EXPECT_GT(kSanitizerErrorExitCode, 5);  // also clear of sage2tp's own exit codes
}

TEST(SanitizerArgv, RejectsAnEmptyTargetAndANegativePrintLimit) {
    SanitizerRun run;
    EXPECT_THROW(sanitizer_argv(run, {}), Error);
    run.print_limit = -1;
    EXPECT_THROW(sanitizer_argv(run, {"/bin/prog"}), Error);
}

TEST(SanitizerTools, NamesRoundTripAndUnknownNamesAreUsageErrors) {
    for (auto tool : {SanitizerTool::memcheck, SanitizerTool::racecheck, SanitizerTool::synccheck,
                      SanitizerTool::initcheck})
        EXPECT_EQ(parse_sanitizer_tool(sanitizer_tool_name(tool)), tool);
    try {
        parse_sanitizer_tool("leakcheck");
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_NE(std::string(e.what()).find("'leakcheck'"), std::string::npos);
    }
}

TEST(SanitizerParse, MemcheckOutOfBoundsWriteFails) {
    auto r = parse_sanitizer_output(SanitizerTool::memcheck, kMemcheckOutOfBounds, 86);
    EXPECT_TRUE(r.summary_found);
    EXPECT_EQ(r.errors, 2);
    EXPECT_TRUE(r.target_returned_error);
    EXPECT_FALSE(r.passed);
    EXPECT_EQ(r.verdict, "memcheck found 2 errors");
    ASSERT_GE(r.first_error_lines.size(), 4u);
    EXPECT_EQ(r.first_error_lines[0], "Invalid __global__ write of size 4 bytes");
    EXPECT_EQ(r.first_error_lines[1], "    at oob_kernel(float *, int)+0xc0 in test.cu:10");
    for (const auto &line : r.first_error_lines) {
        EXPECT_EQ(line.find("Host Frame"), std::string::npos) << line;
        EXPECT_EQ(line.find("COMPUTE-SANITIZER"), std::string::npos) << line;
        EXPECT_EQ(line.find("SUMMARY"), std::string::npos) << line;
    }
    EXPECT_EQ(r.first_error_lines.back(), "Target application returned an error");
}

TEST(SanitizerParse, SingularHazardIsReadNotMistakenForMissingSummary) {
    auto r = parse_sanitizer_output(SanitizerTool::racecheck, kRacecheckOneHazard, 86);
    EXPECT_TRUE(r.summary_found);
    EXPECT_EQ(r.hazards, 1);
    EXPECT_EQ(r.errors, 1);
    EXPECT_EQ(r.warnings, 0);
    EXPECT_FALSE(r.passed);
    ASSERT_EQ(r.first_error_lines.size(), 2u);
    EXPECT_EQ(r.first_error_lines[0].rfind("Error: Race reported between Write access", 0), 0u);
}

TEST(SanitizerParse, CleanRacecheckPasses) {
    auto r = parse_sanitizer_output(SanitizerTool::racecheck, kRacecheckClean, 0);
    EXPECT_TRUE(r.summary_found);
    EXPECT_EQ(r.hazards, 0);
    EXPECT_EQ(r.errors, 0);
    EXPECT_TRUE(r.passed) << r.verdict;
    EXPECT_TRUE(r.first_error_lines.empty());  // the program's own output is not a record
}

TEST(SanitizerParse, RacecheckWarningsAloneDoNotFail) {
    const char *text = "========= RACECHECK SUMMARY: 100 hazards displayed (0 errors, 992 warnings)\n";
    auto r = parse_sanitizer_output(SanitizerTool::racecheck, text, 0);
    EXPECT_TRUE(r.passed);
    EXPECT_EQ(r.hazards, 100);
    EXPECT_EQ(r.warnings, 992);
}

TEST(SanitizerParse, RacecheckNeedsItsOwnSummaryLine) {
    // An ERROR SUMMARY alone is not racecheck's verdict.
    auto r = parse_sanitizer_output(SanitizerTool::racecheck, "========= ERROR SUMMARY: 0 errors\n", 0);
    EXPECT_FALSE(r.summary_found);
    EXPECT_FALSE(r.passed);
}

TEST(SanitizerParse, RacecheckKeepsNonRaceErrorsFromAnErrorSummary) {
    const char *text = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
                       "========= ERROR SUMMARY: 1 error\n";
    auto r = parse_sanitizer_output(SanitizerTool::racecheck, text, 86);
    EXPECT_EQ(r.errors, 1);
    EXPECT_FALSE(r.passed);
}

TEST(SanitizerParse, InitcheckAndSynccheckCountsAreRead) {
    auto init = parse_sanitizer_output(SanitizerTool::initcheck, kInitcheckUninitialised, 86);
    EXPECT_EQ(init.errors, 32);
    EXPECT_FALSE(init.passed);
    EXPECT_EQ(init.first_error_lines.at(0), "Uninitialized __global__ memory read of size 4 bytes");
    auto sync = parse_sanitizer_output(SanitizerTool::synccheck, kSynccheckDivergentBarrier, 86);
    EXPECT_EQ(sync.errors, 16);
    EXPECT_TRUE(sync.target_returned_error);
    EXPECT_EQ(sync.first_error_lines.at(0), "Barrier error detected. Divergent thread(s) in warp.");
}

TEST(SanitizerParse, SingularErrorIsRead) {
    auto r = parse_sanitizer_output(SanitizerTool::memcheck, "========= ERROR SUMMARY: 1 error\n", 86);
    EXPECT_TRUE(r.summary_found);
    EXPECT_EQ(r.errors, 1);
    EXPECT_EQ(r.verdict, "memcheck found 1 error");
}

TEST(SanitizerParse, CountsWithThousandsSeparatorsAndCarriageReturns) {
    auto r = parse_sanitizer_output(SanitizerTool::memcheck, "========= ERROR SUMMARY: 30,335 errors\r\n", 86);
    EXPECT_EQ(r.errors, 30335);
}

TEST(SanitizerParse, CleanMemcheckPasses) {
    auto r = parse_sanitizer_output(SanitizerTool::memcheck, "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n", 0);
    EXPECT_TRUE(r.passed);
    EXPECT_EQ(r.verdict, "memcheck: 0 errors");
}

TEST(SanitizerParse, SummariesOfSeveralProcessesAddUp) {
    const char *text = "========= ERROR SUMMARY: 0 errors\n========= ERROR SUMMARY: 3 errors\n";
    auto r = parse_sanitizer_output(SanitizerTool::memcheck, text, 86);
    EXPECT_EQ(r.errors, 3);
    EXPECT_FALSE(r.passed);
}

TEST(SanitizerParse, MissingSummaryFailsEvenWithExitZero) {
    auto r = parse_sanitizer_output(SanitizerTool::synccheck, "shapes: 24 of 24 passed\n", 0);
    EXPECT_FALSE(r.summary_found);
    EXPECT_FALSE(r.passed);
    EXPECT_NE(r.verdict.find("no ERROR SUMMARY line"), std::string::npos);
}

TEST(SanitizerParse, ToolThatCouldNotRunTheTargetFailsWithItsMessage) {
    const char *text = "========= COMPUTE-SANITIZER\n"
                       "========= Error: Target application terminated before first instrumented API call\n";
    auto r = parse_sanitizer_output(SanitizerTool::memcheck, text, 255);
    EXPECT_FALSE(r.passed);
    ASSERT_EQ(r.first_error_lines.size(), 1u);
    EXPECT_EQ(r.first_error_lines[0], "Error: Target application terminated before first instrumented API call");

    auto missing = parse_sanitizer_output(SanitizerTool::memcheck,
                                          "Target application doesn't exist or is not a valid executable\n", 1);
    EXPECT_FALSE(missing.passed);
    ASSERT_EQ(missing.first_error_lines.size(), 1u);
    EXPECT_NE(missing.verdict.find("exit status 1"), std::string::npos);
}

TEST(SanitizerParse, TargetErrorWithZeroCountStillFails) {
    const char *text = "========= Target application returned an error\n========= ERROR SUMMARY: 0 errors\n";
    auto r = parse_sanitizer_output(SanitizerTool::memcheck, text, 86);
    EXPECT_FALSE(r.passed);
    EXPECT_NE(r.verdict.find("exited with an error"), std::string::npos);
}

TEST(SanitizerParse, NonZeroExitWithCleanSummaryFails) {
    auto r = parse_sanitizer_output(SanitizerTool::initcheck, "========= ERROR SUMMARY: 0 errors\n", 134);
    EXPECT_FALSE(r.passed);
    EXPECT_NE(r.verdict.find("status 134"), std::string::npos);
}

TEST(SanitizerParse, KeepsAtMostTheRequestedNumberOfRecordLines) {
    std::string text;
    for (int i = 0; i < 50; ++i) text += "========= Invalid __global__ read of size 16 bytes\n";
    text += "========= ERROR SUMMARY: 50 errors\n";
    auto r = parse_sanitizer_output(SanitizerTool::memcheck, text, 86, 5);
    EXPECT_EQ(r.first_error_lines.size(), 5u);
    EXPECT_EQ(r.errors, 50);
}

// parse_count multiplied without a check: a count of 19 or more digits was signed overflow (UB), and
// a wrapped count could read as 0 errors. It saturates and the check fails.
TEST(SanitizerParse, CountsTooLargeForInt64SaturateAndFail) {
    auto r = parse_sanitizer_output(SanitizerTool::memcheck,
                                    "========= ERROR SUMMARY: 18446744073709551616 errors\n", 0);
    EXPECT_TRUE(r.summary_found);
    EXPECT_EQ(r.errors, std::numeric_limits<std::int64_t>::max());
    EXPECT_FALSE(r.passed);

    auto sum = parse_sanitizer_output(SanitizerTool::racecheck,
                                      "========= RACECHECK SUMMARY: 9,223,372,036,854,775,807 hazards displayed "
                                      "(9223372036854775807 errors, 0 warnings)\n"
                                      "========= RACECHECK SUMMARY: 5 hazards displayed (5 errors, 0 warnings)\n",
                                      86);
    EXPECT_EQ(sum.hazards, std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(sum.errors, std::numeric_limits<std::int64_t>::max());
    EXPECT_FALSE(sum.passed);
}

// The summaries were read with std::regex, which recurses per character of a line.
TEST(SanitizerParse, LongLinesAreReadWithoutRecursion) {
    const std::string text = "========= " + std::string(200000, 'x') + " ERROR SUMMARY: " + std::string(200000, '1') +
                             "\n========= ERROR SUMMARY: 1 error\n";
    auto r = parse_sanitizer_output(SanitizerTool::synccheck, text, 86);
    EXPECT_TRUE(r.summary_found);
    EXPECT_EQ(r.errors, 1);
    EXPECT_EQ(parse_sanitizer_output(SanitizerTool::memcheck, "========= ERROR SUMMARY: 3 errorsome\n", 0).summary_found,
              false);
}

}  // namespace
}  // namespace s2tp::unit_sanitizer_report
