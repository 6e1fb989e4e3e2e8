// Command-line plumbing shared by every subcommand: global options, one cxxopts parser per
// subcommand, and the reporter that keeps human text and the --json object apart.
#pragma once

#include "support/errors.h"
#include "pipeline/run_directory.h"

#include <cxxopts.hpp>
#include <toml++/toml.h>

#include <string>
#include <vector>

namespace s2tp {

const char *sage2tp_version();

// "--run", "--run-id" and "--root": the global options that take a value, which may stand before the
// subcommand (so main must skip their values when it looks for the command's name).
bool is_global_option_with_value(const std::string &word);

// Human output goes to stdout, or to stderr under --json so that stdout carries exactly one JSON
// object. -q silences progress, -v adds detail.
class Reporter {
public:
    Reporter() = default;
    Reporter(bool json, int verbosity) : json_(json), verbosity_(verbosity) {}
    bool json() const { return json_; }
    bool verbose() const { return verbosity_ > 1; }
    void say(const std::string &line) const;       // results a person wants to read
    void progress(const std::string &line) const;  // what is happening now (silent under -q)
    void detail(const std::string &line) const;    // only under -v
    void warn(const std::string &line) const;      // always, on stderr
    void emit_json(const toml::table &result) const;  // the one JSON object, under --json
    // The same reporter without its results and progress (warnings and the JSON object stay): for a
    // command whose -q output is one line of its own, such as prepare's run directory.
    Reporter without_results() const { return Reporter(json_, -1); }

    // In-place progress, only when stdout is a terminal (not under -q or --json): live_line rewrites
    // one line; the next say/progress/detail or end_live_line clears it first.
    bool live() const;
    void live_line(const std::string &line) const;
    void end_live_line() const;

private:
    void clear_live_line() const;
    bool json_ = false;
    int verbosity_ = 1;
    mutable bool live_shown_ = false;
};

// "1m12s elapsed, ETA 40s" from the seconds so far and the share done (0..1); "ETA ?" before any is done.
std::string elapsed_and_eta(double elapsed_seconds, double done_fraction);

class CommandLine {
public:
    // `args` are the words after the program name with the subcommand removed; global options may
    // stand before or after the subcommand.
    CommandLine(std::string command, std::string summary, std::vector<std::string> args);

    cxxopts::OptionAdder add_options(const std::string &group = "");
    void positional_help(const std::string &text) { options_.positional_help(text); }
    // Words without a leading dash fill the named option (declared with add_options) instead of
    // being rejected as stray arguments.
    void positional(const std::string &option) { options_.parse_positional({option}); }

    // Parses; returns false when --help was printed (the command then exits 0). Unknown options and
    // stray positional arguments throw Error(usage).
    bool parse();
    const cxxopts::ParseResult &result() const { return result_; }
    bool has(const std::string &name) const { return result_.count(name) > 0; }

    const std::string &command() const { return command_; }
    const RunSelection &selection() const { return selection_; }
    const Reporter &reporter() const { return reporter_; }

private:
    // "; did you mean '--manifest'?" for the first word that names no option of this command.
    std::string unknown_option_hint() const;
    std::string command_;
    std::vector<std::string> args_;
    cxxopts::Options options_;
    cxxopts::ParseResult result_;
    RunSelection selection_;
    Reporter reporter_;
};

}  // namespace s2tp
