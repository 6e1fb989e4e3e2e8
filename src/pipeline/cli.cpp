#include "pipeline/cli.h"
#include "build_config.h"
#include "support/did_you_mean.h"

#include <algorithm>

#include <iostream>

#include <sys/ioctl.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace s2tp {

const char *sage2tp_version() { return S2TP_VERSION; }

namespace {
const char *const global_options_with_value[] = {"run", "run-id", "root"};
}

bool is_global_option_with_value(const std::string &word) {
    for (const char *name : global_options_with_value)
        if (word == std::string("--") + name) return true;
    return false;
}

void Reporter::say(const std::string &line) const {
    clear_live_line();
    if (verbosity_ < 0) return;
    (json_ ? std::cerr : std::cout) << line << std::endl;
}

void Reporter::progress(const std::string &line) const {
    clear_live_line();
    if (verbosity_ > 0) (json_ ? std::cerr : std::cout) << line << std::endl;
}

void Reporter::detail(const std::string &line) const {
    clear_live_line();
    if (verbosity_ > 1) (json_ ? std::cerr : std::cout) << line << std::endl;
}

bool Reporter::live() const { return !json_ && verbosity_ > 0 && ::isatty(STDOUT_FILENO); }

void Reporter::live_line(const std::string &line) const {
    if (!live()) return;
    // A line wider than the terminal would wrap, and \r would then rewrite only its last part.
    winsize size{};
    const std::size_t width = ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 ? size.ws_col - 1 : 79;
    std::cout << "\r\033[K" << line.substr(0, width) << std::flush;
    live_shown_ = true;
}

void Reporter::end_live_line() const { clear_live_line(); }

void Reporter::clear_live_line() const {
    if (!live_shown_) return;
    std::cout << "\r\033[K" << std::flush;
    live_shown_ = false;
}

namespace {
std::string minutes_seconds(double seconds) {
    const long total = static_cast<long>(seconds + 0.5);
    return total >= 60 ? std::to_string(total / 60) + "m" + std::to_string(total % 60) + "s" : std::to_string(total) + "s";
}
}  // namespace

std::string elapsed_and_eta(double elapsed_seconds, double done_fraction) {
    std::string eta = "ETA ?";
    if (done_fraction > 0 && done_fraction < 1)
        eta = "ETA " + minutes_seconds(elapsed_seconds / done_fraction * (1 - done_fraction));
    else if (done_fraction >= 1)
        eta = "done";
    return minutes_seconds(elapsed_seconds) + " elapsed, " + eta;
}

void Reporter::warn(const std::string &line) const { std::cerr << "warning: " << line << std::endl; }

void Reporter::emit_json(const toml::table &result) const {
    if (json_) std::cout << toml::json_formatter{result} << std::endl;
}

CommandLine::CommandLine(std::string command, std::string summary, std::vector<std::string> args)
    : command_(std::move(command)), args_(std::move(args)), options_("sage2tp " + command_, summary) {
    options_.add_options("Global")
        ("run", "the run directory to work on", cxxopts::value<std::string>(), "DIR")
        ("run-id", "name of the run under --root: letters, digits, '.', '_', '-', not starting with '.' or '-' "
                   "(default: $SAGE2TP_RUN_ID, or the older $SAGE2_TEMPORAL_RUN_ID; else the run the working directory "
                   "is in; else the latest run; else <experiment>-<UTC time> for prepare)",
         cxxopts::value<std::string>(), "ID")
        ("root", "where runs live (default: $SAGE2TP_ROOT, else the nearest sage2tp-runs directory in the working "
                 "directory or above it, as git finds its repository, else ./sage2tp-runs)",
         cxxopts::value<std::string>(), "DIR")
        ("json", "print one JSON object describing the result on stdout")
        ("q,quiet", "print only results and errors")
        ("v,verbose", "print more detail")
        ("h,help", "show this help");
}

cxxopts::OptionAdder CommandLine::add_options(const std::string &group) { return options_.add_options(group); }

std::string CommandLine::unknown_option_hint() const {
    std::vector<std::string> known;
    for (const std::string &group : options_.groups())
        for (const cxxopts::HelpOptionDetails &option : options_.group_help(group).options)
            for (const std::string &name : option.l) known.push_back(name);
    for (const std::string &word : args_) {
        if (word.rfind("--", 0) != 0 || word == "--") continue;
        const std::string name = word.substr(2, word.find('=') == std::string::npos ? std::string::npos : word.find('=') - 2);
        if (std::find(known.begin(), known.end(), name) != known.end()) continue;
        const std::string suggestion = closest_name(name, known);
        return suggestion.empty() ? "" : "; did you mean '--" + suggestion + "'?";
    }
    return "";
}

bool CommandLine::parse() {
    std::vector<const char *> argv{"sage2tp"};
    for (const auto &a : args_) argv.push_back(a.c_str());
    try {
        result_ = options_.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const cxxopts::exceptions::no_such_option &e) {
        fail(ExitCode::usage, std::string(e.what()) + unknown_option_hint() + " (see 'sage2tp " + command_ + " --help')");
    } catch (const cxxopts::exceptions::exception &e) {
        fail(ExitCode::usage, std::string(e.what()) + " (see 'sage2tp " + command_ + " --help')");
    }
    if (!result_.unmatched().empty())
        fail(ExitCode::usage, "unexpected argument '" + result_.unmatched().front() +
                                  "' (see 'sage2tp " + command_ + " --help')");
    if (result_.count("help")) {
        const std::string help = options_.help({"", "Global"});
        // Under --json, stdout carries one object, the help included.
        if (result_.count("json")) std::cout << toml::json_formatter{toml::table{{"command", command_}, {"help", help}}} << std::endl;
        else std::cout << help << std::endl;
        return false;
    }
    if (result_.count("run")) {
        selection_.run_dir = result_["run"].as<std::string>();
        if (selection_.run_dir->empty()) fail(ExitCode::usage, "--run '' is an empty path; give it a directory");
    }
    if (result_.count("run-id")) {
        selection_.run_id = result_["run-id"].as<std::string>();
        check_run_id(*selection_.run_id);
    }
    selection_.runs_root = result_.count("root") ? fs::path(result_["root"].as<std::string>()) : default_runs_root();
    if (selection_.runs_root.empty()) fail(ExitCode::usage, "--root '' is an empty path; give it a directory");
    int verbosity = 1;
    if (result_.count("quiet")) verbosity = 0;
    if (result_.count("verbose")) verbosity = 2;
    reporter_ = Reporter(result_.count("json") > 0, verbosity);
    return true;
}

}  // namespace s2tp
