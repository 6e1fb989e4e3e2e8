// compute-sanitizer as a checker: the argument vector that runs a program under one of its tools, and
// the verdict read back from what the tool printed.
//
// Usage:
//   s2tp::SanitizerRun run;
//   run.sanitizer = "/usr/local/cuda/bin/compute-sanitizer";
//   run.tool = s2tp::SanitizerTool::racecheck;
//   run.log_file = "out/racecheck.log";                       // optional
//   auto argv = s2tp::sanitizer_argv(run, {"/path/to/program", "shapes", "--variant", "both"});
//   s2tp::ProcessResult r = s2tp::run_process(argv);
//   std::string text = r.out + r.err;                          // plus the log file's text, if one was used
//   s2tp::SanitizerReport report = s2tp::parse_sanitizer_output(run.tool, text, r.exit_code);
//   if (!report.passed) std::cerr << report.verdict << "\n";
//
// The verdict is strict: a missing summary line, a non-zero exit status, or the "Target application
// returned an error" record each fail the check even when the error count is 0, since a count of 0
// alone does not show that the kernels ran to the end under the tool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s2tp {

enum class SanitizerTool { memcheck, racecheck, synccheck, initcheck };

const char *sanitizer_tool_name(SanitizerTool tool);
// Inverse of sanitizer_tool_name; throws Error(usage) naming the value and the valid names.
SanitizerTool parse_sanitizer_tool(std::string_view name);

// The exit status compute-sanitizer is told to return when it finds anything. Not 77 or 99, which
// meson reads as "skipped" and "hard error", and not one of sage2tp's own exit codes.
constexpr int kSanitizerErrorExitCode = 86;

struct SanitizerRun {
    std::filesystem::path sanitizer = "compute-sanitizer";
    SanitizerTool tool = SanitizerTool::memcheck;
    // How many records are printed; the summary still counts all of them. 0 means unlimited.
    int print_limit = 100;
    // When set, the tool writes its records there instead of to the target's stdout, which keeps the
    // full log apart from the program's own output.
    std::optional<std::filesystem::path> log_file;
};

// compute-sanitizer argv for running `target_argv` (program first) under run.tool.
std::vector<std::string> sanitizer_argv(const SanitizerRun &run, const std::vector<std::string> &target_argv);

struct SanitizerReport {
    std::string tool;
    std::int64_t errors = 0;     // ERROR SUMMARY count, or the error count inside RACECHECK SUMMARY
    std::int64_t hazards = 0;    // racecheck only: hazards displayed
    std::int64_t warnings = 0;   // racecheck only
    bool summary_found = false;  // the tool's own summary line was present
    bool target_returned_error = false;
    int exit_code = -1;
    bool passed = false;
    std::string verdict;                        // one sentence: why it passed or failed
    std::vector<std::string> first_error_lines;  // the first records, prefix stripped, in order
};

// Reads the tool's output (stdout, stderr and log file text, concatenated in any order) and the exit
// status of the compute-sanitizer process. At most `max_error_lines` record lines are kept.
SanitizerReport parse_sanitizer_output(SanitizerTool tool, std::string_view output, int exit_code,
                                       std::size_t max_error_lines = 20);

}  // namespace s2tp
