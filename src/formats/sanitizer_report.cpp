#include "formats/sanitizer_report.h"

#include "support/text_lines.h"
#include "support/text_scan.h"

#include "support/errors.h"

#include <algorithm>
#include <limits>

namespace s2tp {
namespace {

constexpr SanitizerTool kAllTools[] = {SanitizerTool::memcheck, SanitizerTool::racecheck, SanitizerTool::synccheck,
                                       SanitizerTool::initcheck};

// Every line compute-sanitizer writes about the target starts with this.
constexpr std::string_view kRecordPrefix = "=========";

// Counts can be printed with thousands separators ("67,112,960 bytes"), so the summaries may be too.
// A count too large for int64 saturates at its maximum: it still fails the check, with no overflow.
std::int64_t parse_count(std::string_view digits) {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    std::int64_t value = 0;
    for (char c : digits) {
        if (c == ',') continue;
        const int digit = c - '0';
        if (value > (kMax - digit) / 10) return kMax;
        value = value * 10 + digit;
    }
    return value;
}

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    return a > kMax - b ? kMax : a + b;  // both are counts, never negative
}

// A count as the tool prints it: a digit, then digits and commas. Empty when there is none.
std::string_view consume_count(std::string_view &text) {
    if (text.empty() || !is_digit(text.front())) return {};
    std::size_t n = 1;
    while (n < text.size() && (is_digit(text[n]) || text[n] == ',')) ++n;
    std::string_view count = text.substr(0, n);
    text.remove_prefix(n);
    return count;
}

// `noun` or its plural with 's', e.g. "error" or "errors".
bool consume_noun(std::string_view &text, std::string_view noun) {
    if (!consume(text, noun)) return false;
    consume(text, "s");
    return true;
}

// The summaries are found with a hand-written scan, not std::regex, which recurses per character and
// overflows the stack on a long line. Each tries every occurrence of its label in the line, as a
// regex search would.
//   "ERROR SUMMARY: N error(s)" followed by the end of a word.
std::optional<std::int64_t> error_summary(std::string_view line) {
    constexpr std::string_view label = "ERROR SUMMARY: ";
    for (std::size_t at = line.find(label); at != std::string_view::npos; at = line.find(label, at + 1)) {
        std::string_view rest = line.substr(at + label.size());
        const std::string_view count = consume_count(rest);
        if (count.empty() || !consume(rest, " error")) continue;
        // "errors?\b": "error" or "errors", not the start of a longer word
        if (!rest.empty() && rest.front() == 's' && (rest.size() == 1 || !is_word(rest[1]))) return parse_count(count);
        if (rest.empty() || !is_word(rest.front())) return parse_count(count);
    }
    return std::nullopt;
}

struct RaceSummary {
    std::int64_t hazards = 0, errors = 0, warnings = 0;
};

//   "RACECHECK SUMMARY: N hazard(s) displayed (N error(s), N warning(s))"
std::optional<RaceSummary> race_summary(std::string_view line) {
    constexpr std::string_view label = "RACECHECK SUMMARY: ";
    for (std::size_t at = line.find(label); at != std::string_view::npos; at = line.find(label, at + 1)) {
        std::string_view rest = line.substr(at + label.size());
        const std::string_view hazards = consume_count(rest);
        if (hazards.empty() || !consume(rest, " ") || !consume_noun(rest, "hazard") || !consume(rest, " displayed ("))
            continue;
        const std::string_view errors = consume_count(rest);
        if (errors.empty() || !consume(rest, " ") || !consume_noun(rest, "error") || !consume(rest, ", ")) continue;
        const std::string_view warnings = consume_count(rest);
        if (warnings.empty() || !consume(rest, " ") || !consume_noun(rest, "warning") || !consume(rest, ")")) continue;
        return RaceSummary{parse_count(hazards), parse_count(errors), parse_count(warnings)};
    }
    return std::nullopt;
}

// The record text after the "=========" prefix, or nullopt for a line that is not a record. Continuation
// lines keep their indentation so a stored record still reads as the tool printed it.
std::optional<std::string_view> record_body(std::string_view line) {
    std::size_t at = line.find(kRecordPrefix);
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view body = line.substr(at + kRecordPrefix.size());
    if (!body.empty() && body.front() == ' ') body.remove_prefix(1);
    return body;
}

bool is_noise_record(std::string_view body) {
    std::string_view t = trimmed(body);
    // The banner, empty separators and host backtraces say nothing about what went wrong on the device.
    return t.empty() || t == "COMPUTE-SANITIZER" || t.rfind("Saved host backtrace", 0) == 0 ||
           t.rfind("Host Frame:", 0) == 0 || t.find("SUMMARY:") != std::string_view::npos;
}

std::string summary_name(SanitizerTool tool) {
    return tool == SanitizerTool::racecheck ? "RACECHECK SUMMARY" : "ERROR SUMMARY";
}

}  // namespace

const char *sanitizer_tool_name(SanitizerTool tool) {
    switch (tool) {
        case SanitizerTool::memcheck: return "memcheck";
        case SanitizerTool::racecheck: return "racecheck";
        case SanitizerTool::synccheck: return "synccheck";
        case SanitizerTool::initcheck: return "initcheck";
    }
    return "unknown";
}

SanitizerTool parse_sanitizer_tool(std::string_view name) {
    for (SanitizerTool tool : kAllTools)
        if (name == sanitizer_tool_name(tool)) return tool;
    fail(ExitCode::usage, "unknown compute-sanitizer tool '" + std::string(name) +
                              "'; valid: memcheck, racecheck, synccheck, initcheck");
}

std::vector<std::string> sanitizer_argv(const SanitizerRun &run, const std::vector<std::string> &target_argv) {
    if (target_argv.empty()) fail(ExitCode::internal, "sanitizer_argv: no target program given");
    if (run.print_limit < 0)
        fail(ExitCode::usage, "compute-sanitizer print limit must be >= 0, got " + std::to_string(run.print_limit));
    std::vector<std::string> argv = {
        run.sanitizer.string(),
        "--tool", sanitizer_tool_name(run.tool),
        // Without this the exit status is the target's own, and races or uninitialised reads in a
        // program that exits 0 would be invisible to it.
        "--error-exitcode", std::to_string(kSanitizerErrorExitCode),
        "--print-limit", std::to_string(run.print_limit),
    };
    if (run.log_file) {
        argv.push_back("--log-file");
        argv.push_back(run.log_file->string());
    }
    argv.insert(argv.end(), target_argv.begin(), target_argv.end());
    return argv;
}

SanitizerReport parse_sanitizer_output(SanitizerTool tool, std::string_view output, int exit_code,
                                       std::size_t max_error_lines) {
    SanitizerReport report;
    report.tool = sanitizer_tool_name(tool);
    report.exit_code = exit_code;

    // "1 error" and "2 errors", "1 hazard" and "0 hazards": a plural-only pattern reads a single
    // error as no summary at all (compute-sanitizer 2025.3.1 writes the singular for a count of 1).
    bool race_summary_found = false, error_summary_found = false;
    std::int64_t race_errors = 0, summary_errors = 0;
    for (std::string_view line : split_lines(output)) {
        std::string_view text = line;
        if (text.find("SUMMARY:") != std::string_view::npos) {
            // Several summaries appear when several processes were tracked; each counts.
            if (std::optional<RaceSummary> race = race_summary(text)) {
                race_summary_found = true;
                report.hazards = saturating_add(report.hazards, race->hazards);
                race_errors = saturating_add(race_errors, race->errors);
                report.warnings = saturating_add(report.warnings, race->warnings);
            } else if (std::optional<std::int64_t> errors = error_summary(text)) {
                error_summary_found = true;
                summary_errors = saturating_add(summary_errors, *errors);
            }
            continue;
        }
        if (text.find("Target application returned an error") != std::string_view::npos) report.target_returned_error = true;

        std::optional<std::string_view> body = record_body(line);
        bool keep = false;
        if (body) keep = !is_noise_record(*body);
        else if (text.find("Target application") != std::string_view::npos) keep = true;  // the tool could not run it
        if (keep && report.first_error_lines.size() < max_error_lines)
            report.first_error_lines.emplace_back(body ? *body : trimmed(line));
    }

    if (tool == SanitizerTool::racecheck) {
        report.summary_found = race_summary_found;
        // racecheck may add an ERROR SUMMARY for non-race problems; keeping the larger count neither
        // hides those nor counts one problem twice.
        report.errors = std::max(race_errors, summary_errors);
    } else {
        report.summary_found = error_summary_found;
        report.errors = summary_errors;
    }

    const std::string tool_name = report.tool;
    if (!report.summary_found) {
        report.verdict = tool_name + " printed no " + summary_name(tool) + " line (compute-sanitizer exit status " +
                         std::to_string(exit_code) + "), so the check did not run to completion";
    } else if (report.errors > 0) {
        report.verdict = tool_name + " found " + std::to_string(report.errors) +
                         (report.errors == 1 ? " error" : " errors");
        if (tool == SanitizerTool::racecheck)
            report.verdict += " (" + std::to_string(report.hazards) + " hazards displayed, " +
                              std::to_string(report.warnings) + " warnings)";
    } else if (report.target_returned_error) {
        report.verdict = "the program under " + tool_name + " exited with an error (compute-sanitizer exit status " +
                         std::to_string(exit_code) + ")";
    } else if (exit_code != 0) {
        report.verdict = "compute-sanitizer exited with status " + std::to_string(exit_code) + " although " +
                         tool_name + " reported 0 errors";
    } else {
        report.passed = true;
        report.verdict = tool_name + ": 0 errors";
        if (tool == SanitizerTool::racecheck)
            report.verdict += ", " + std::to_string(report.hazards) + " hazards displayed, " +
                              std::to_string(report.warnings) + " warnings";
    }
    return report;
}

}  // namespace s2tp
