// The manual against the binary: every command's page renders with `mandoc -T lint` without a warning,
// names every option `sage2tp help CMD` lists, and its SYNOPSIS names no option the command lacks;
// sage2tp(1) lists exactly the commands the binary has. Skips where mandoc is not installed.
#include "cli_fixture.h"

#include "build_config.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using namespace s2tp;

namespace {

const fs::path man_dir = fs::path(S2TP_SOURCE_ROOT) / "man";
const std::set<std::string> global_options{"run", "run-id", "root", "json", "quiet", "verbose", "help"};

// The commands in `sage2tp help`'s list ("  name      summary" lines after "commands:").
std::vector<std::string> listed_commands(const std::string &usage) {
    std::vector<std::string> names;
    std::istringstream lines(usage.substr(usage.find("commands:")));
    std::string line;
    std::getline(lines, line);
    while (std::getline(lines, line) && line.rfind("  ", 0) == 0) names.push_back(line.substr(2, line.find(' ', 2) - 2));
    return names;
}

// The long options a help text lists, each as the first word of its line, less the global ones.
std::set<std::string> help_options(const std::string &help) {
    std::set<std::string> options;
    static const std::regex option_line(R"(^\s+(?:-\w, )?--([a-z][a-z0-9-]*))");
    std::istringstream lines(help);
    std::string line;
    std::smatch m;
    while (std::getline(lines, line))
        if (std::regex_search(line, m, option_line) && !global_options.count(m[1])) options.insert(m[1]);
    return options;
}

// The long options `Fl -name` names in the page's mdoc source, in SYNOPSIS alone or anywhere.
std::set<std::string> page_options(const std::string &page, bool synopsis_only) {
    std::string text = page;
    if (synopsis_only) {
        const std::size_t begin = text.find(".Sh SYNOPSIS");
        text = text.substr(begin, text.find(".Sh ", begin + 1) - begin);
    }
    std::set<std::string> options;
    static const std::regex flag(R"(\bFl -([a-z][a-z0-9-]*))");
    for (std::sregex_iterator it(text.begin(), text.end(), flag), end; it != end; ++it)
        if (!global_options.count((*it)[1])) options.insert((*it)[1]);
    return options;
}

// The words after `sage2tp CMD` in the page's SYNOPSIS lines (".Nm sage2tp slurm collect").
std::vector<std::string> synopsis_subcommands(const std::string &page, const std::string &command) {
    std::vector<std::string> words;
    const std::size_t begin = page.find(".Sh SYNOPSIS");
    const std::string synopsis = page.substr(begin, page.find(".Sh ", begin + 1) - begin);
    const std::regex line("\\.Nm sage2tp " + command + " ([a-z][a-z-]*)");
    for (std::sregex_iterator it(synopsis.begin(), synopsis.end(), line), end; it != end; ++it) words.push_back((*it)[1]);
    return words;
}

class ManPages : public CliTest {};

}  // namespace

TEST_F(ManPages, EveryPageLintsAndMatchesHelp) {
    if (!find_program("mandoc")) GTEST_SKIP() << "mandoc is not installed";
    for (const auto &entry : fs::directory_iterator(man_dir)) {
        if (entry.path().extension() == ".build") continue;
        const ProcessResult lint = run_process({"mandoc", "-T", "lint", "-W", "warning", entry.path().string()});
        EXPECT_EQ(lint.exit_code, 0) << entry.path().filename() << ":\n" << lint.out << lint.err;
    }

    const ProcessResult usage = sage2tp({"help"});
    ASSERT_EQ(usage.exit_code, 0) << usage.err;
    const std::vector<std::string> commands = listed_commands(usage.out);
    ASSERT_GE(commands.size(), 10u) << usage.out;
    const std::string main_page = slurp(man_dir / "sage2tp.1");
    for (const std::string &command : commands) {
        EXPECT_NE(main_page.find(".It Cm " + command), std::string::npos) << "sage2tp(1) does not list " << command;
        if (command == "help") continue;
        const ProcessResult help = sage2tp({"help", command});
        ASSERT_EQ(help.exit_code, 0) << command << ": " << help.err;
        EXPECT_NE(help.out.find("see sage2tp-" + command + "(1)"), std::string::npos) << help.out;
        const std::string page = slurp(man_dir / ("sage2tp-" + command + ".1"));
        ASSERT_FALSE(page.empty()) << "no page man/sage2tp-" << command << ".1";
        std::set<std::string> options = help_options(help.out);
        // A command with words of its own (`sage2tp slurm collect`) has their options as well.
        for (const std::string &word : synopsis_subcommands(page, command)) {
            const ProcessResult sub = sage2tp({command, word, "--help"});
            ASSERT_EQ(sub.exit_code, 0) << command << " " << word << ": " << sub.err;
            options.merge(help_options(sub.out));
        }
        for (const std::string &option : page_options(page, true))
            EXPECT_TRUE(options.count(option)) << "sage2tp-" << command << "(1) SYNOPSIS names --" << option
                                               << ", which 'sage2tp help " << command << "' does not list";
        const std::set<std::string> documented = page_options(page, false);
        for (const std::string &option : options)
            EXPECT_TRUE(documented.count(option)) << "'sage2tp help " << command << "' lists --" << option
                                                  << ", which sage2tp-" << command << "(1) does not describe";
    }
}

// Issue 36 item 8: quotes render as written. An enclosure macro (Qq, Dq, Ql) runs to the end of its line,
// so `Pq Qq exact No or Qq tolerance` rendered as ("exact or "tolerance"") in experiment(5).
TEST_F(ManPages, QuotesRenderWithoutNesting) {
    if (!find_program("mandoc")) GTEST_SKIP() << "mandoc is not installed";
    const std::regex nested("\"[^\"]* or \"[^\"]*,|\"\"\"");
    for (const auto &entry : fs::directory_iterator(man_dir)) {
        if (entry.path().extension() == ".build") continue;
        const ProcessResult page = run_process({"mandoc", "-T", "ascii", entry.path().string()});
        ASSERT_EQ(page.exit_code, 0) << entry.path().filename();
        std::istringstream lines(page.out);
        for (std::string line; std::getline(lines, line);) {
            std::string plain;  // without the overstrike mandoc's ascii output uses for bold
            for (std::size_t i = 0; i < line.size(); ++i)
                if (i + 1 < line.size() && line[i + 1] == '\b') ++i;
                else plain += line[i];
            EXPECT_FALSE(std::regex_search(plain, nested)) << entry.path().filename() << ": " << plain;
        }
    }
}

TEST_F(ManPages, HelpHelpAndMistypedNames) {
    ProcessResult r = sage2tp({"help", "help"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("usage: sage2tp help [CMD]"), std::string::npos) << r.out;
    r = sage2tp({"help", "bulid"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("did you mean 'build'?"), std::string::npos) << r.err;
    r = sage2tp({"bulid"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("did you mean 'build'?"), std::string::npos) << r.err;
    r = sage2tp({"prepare", "--manfiest", "x.toml"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("did you mean '--manifest'?"), std::string::npos) << r.err;
}
