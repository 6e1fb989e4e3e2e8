// The manual against the binary: every command's page renders with `mandoc -T lint` without a warning,
// names every option `sage2tp help CMD` lists, and its SYNOPSIS and OPTIONS name no option the command
// lacks; the defaults a help text states are in the page's description of the option; pages render
// without quoting damage; sage2tp(1) lists exactly the commands the binary has; and facts the pages and
// the help once stated twice, differently, are stated once. Skips where mandoc is not installed.
#include "cli_fixture.h"

#include "build_config.h"

#include <gtest/gtest.h>

#include <cctype>
#include <map>
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

// The page as `mandoc -T ascii` renders it, without the overstrike it uses for bold and underline.
std::string rendered(const fs::path &page) {
    const ProcessResult r = run_process({"mandoc", "-T", "ascii", page.string()});
    EXPECT_EQ(r.exit_code, 0) << page << ": " << r.err;
    std::string plain;
    for (std::size_t i = 0; i < r.out.size(); ++i)
        if (i + 1 < r.out.size() && r.out[i + 1] == '\b') ++i;
        else plain += r.out[i];
    return plain;
}

// The text with every run of white space one space: a sentence wrapped over lines reads as one.
std::string flattened(const std::string &text) {
    std::string flat;
    for (char c : text)
        if (!std::isspace(static_cast<unsigned char>(c))) flat += c;
        else if (!flat.empty() && flat.back() != ' ') flat += ' ';
    return flat;
}

// Each long option a help text lists, with its description's wrapped lines joined, less the global ones.
std::map<std::string, std::string> help_option_texts(const std::string &help) {
    std::map<std::string, std::string> texts;
    static const std::regex option_line(R"(^\s+(?:-\w, )?--([a-z][a-z0-9-]*)(.*)$)");
    std::istringstream lines(help);
    std::string line, current;
    std::smatch m;
    while (std::getline(lines, line)) {
        if (std::regex_search(line, m, option_line)) {
            current = global_options.count(m[1]) ? "" : std::string(m[1]);
            if (!current.empty()) texts[current] = m[2];
        } else if (!current.empty() && line.rfind("          ", 0) == 0) {
            texts[current] += " " + line;
        } else {
            current.clear();
        }
    }
    for (auto &[name, text] : texts) text = flattened(text);
    return texts;
}

// The mdoc source of each option's item in the page's OPTIONS list (an item naming several options,
// `.It Fl -budget Ar S , Fl -target-half-width Ar F`, is each one's), less the global ones.
std::map<std::string, std::string> page_option_items(const std::string &page) {
    std::map<std::string, std::string> items;
    const std::size_t begin = page.find(".Sh OPTIONS");
    if (begin == std::string::npos) return items;
    std::istringstream lines(page.substr(begin, page.find("\n.Sh ", begin + 1) - begin));
    static const std::regex flag(R"(\bFl -([a-z][a-z0-9-]*))");
    std::vector<std::string> current;
    int depth = 0;
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(".Bl", 0) == 0) ++depth;
        if (line.rfind(".El", 0) == 0 && --depth == 0) current.clear();
        if (depth == 1 && line.rfind(".It", 0) == 0) {
            current.clear();
            for (std::sregex_iterator it(line.begin(), line.end(), flag), end; it != end; ++it)
                if (!global_options.count((*it)[1])) current.push_back((*it)[1]);
        }
        for (const std::string &name : current) items[name] += line + "\n";
    }
    return items;
}

// The facts a help text's defaults state, which the page must state too: the numbers ("default: 1800"),
// the environment variables ($SAGE2TP_SANITIZE_JOBS) and the manifest keys (budget_seconds).
std::set<std::string> stated_defaults(const std::string &help_text) {
    std::set<std::string> facts;
    static const std::regex clause(R"(default:? ([^)]*))");
    static const std::regex fact(R"((?:^|[^\w.\[-])(\d+(?:\.\d+)?)(?![\w.])|\$([A-Z][A-Z0-9_]*)|\b([a-z]+_[a-z0-9_]+)\b)");
    for (std::sregex_iterator c(help_text.begin(), help_text.end(), clause), end; c != end; ++c) {
        const std::string text = (*c)[1];
        for (std::sregex_iterator f(text.begin(), text.end(), fact); f != end; ++f)
            for (int group = 1; group <= 3; ++group)
                if ((*f)[group].matched) facts.insert((*f)[group]);
    }
    return facts;
}

// Whether the page's text states `fact` as a word of its own.
bool states(const std::string &text, const std::string &fact) {
    const std::string escaped = std::regex_replace(fact, std::regex(R"([.$])"), R"(\$&)");
    return std::regex_search(text, std::regex(R"((^|[^\w.]))" + escaped + R"((?!\w))"));
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

// Issue 36 item 8: quotes and flags render as written. An enclosure macro (Qq, Dq, Ql) runs to the end of
// its line, so `Pq Qq exact No or Qq tolerance` rendered as ("exact or "tolerance"") in experiment(5);
// a closing delimiter given to one is moved outside it (`Dq would remove Ar path : ,` gave "...path":,);
// and every word after `Fl` is a flag, past a delimiter too, until a macro (`Pq or, with Fl n , listed`
// gave "(or, with -n, -listed)"); an unescaped ':' in a character list clings to the one before ("+:").
TEST_F(ManPages, QuotesAndFlagsRenderAsWritten) {
    if (!find_program("mandoc")) GTEST_SKIP() << "mandoc is not installed";
    const std::regex damaged(R"--("[^"]* or "[^"]*,|"""|"[:;][,.;]|\+: @)--");
    // In the source: `Fl X`, a delimiter, then a word that is no macro (a macro name is capitalised).
    const std::regex flag_run(R"(\bFl \S+ [,;:.] [a-z0-9%])");
    for (const auto &entry : fs::directory_iterator(man_dir)) {
        if (entry.path().extension() == ".build") continue;
        std::istringstream lines(rendered(entry.path()));
        for (std::string line; std::getline(lines, line);)
            EXPECT_FALSE(std::regex_search(line, damaged)) << entry.path().filename() << ": " << line;
        std::istringstream source(slurp(entry.path()));
        for (std::string line; std::getline(source, line);)
            EXPECT_FALSE(line.rfind(".", 0) == 0 && std::regex_search(line, flag_run))
                << entry.path().filename() << ": words after a delimiter render as flags: " << line;
    }
}

// Issue 36 item 8: `sage2tp help CMD` and CMD's page agree. Every option the page's OPTIONS describes is
// one the command has, and every number, environment variable and manifest key that an option's help
// states as its default is in the page's description of that option, or, where run(1) says it passes
// the option on, in the stage's (one statement per fact).
TEST_F(ManPages, HelpAndPagesAgreeOnOptionsAndDefaults) {
    if (!find_program("mandoc")) GTEST_SKIP() << "mandoc is not installed";
    const std::vector<std::string> commands = listed_commands(sage2tp({"help"}).out);
    std::map<std::string, std::map<std::string, std::string>> items;
    for (const std::string &command : commands)
        if (command != "help") items[command] = page_option_items(slurp(man_dir / ("sage2tp-" + command + ".1")));
    static const std::regex passed_to(R"(\.Cm ([a-z]+))");
    for (const std::string &command : commands) {
        if (command == "help") continue;
        const std::string page = slurp(man_dir / ("sage2tp-" + command + ".1"));
        std::map<std::string, std::string> help = help_option_texts(sage2tp({"help", command}).out);
        for (const std::string &word : synopsis_subcommands(page, command))
            help.merge(help_option_texts(sage2tp({command, word, "--help"}).out));
        for (const auto &[option, item] : items[command])
            EXPECT_TRUE(help.count(option)) << "sage2tp-" << command << "(1) OPTIONS describes --" << option
                                            << ", which 'sage2tp help " << command << "' does not list";
        for (const auto &[option, text] : help) {
            const auto item = items[command].find(option);
            std::vector<std::string> where;  // the items that may state the option's default
            if (item != items[command].end()) {
                where.push_back(item->second);
                if (item->second.find("Passed to") != std::string::npos)
                    for (std::sregex_iterator it(item->second.begin(), item->second.end(), passed_to), end; it != end; ++it)
                        if (items.count((*it)[1]) && items[(*it)[1]].count(option)) where.push_back(items[(*it)[1]][option]);
            }
            for (const std::string &fact : stated_defaults(text)) {
                bool stated = false;
                for (const std::string &source : where) stated = stated || states(source, fact);
                EXPECT_TRUE(stated) << "'sage2tp help " << command << "' gives --" << option << " the default " << fact
                                    << ", which sage2tp-" << command << "(1)'s description of --" << option
                                    << (where.size() > 1 ? " (or that of the stage it passes it to)" : "")
                                    << " does not state:\n  help: " << text;
            }
        }
    }
}

// Issue 36 item 8: one statement per fact. Each fact here was once stated differently in two places.
TEST_F(ManPages, OneStatementPerFact) {
    if (!find_program("mandoc")) GTEST_SKIP() << "mandoc is not installed";
    // time --pin writes the run's pins.toml, never its manifest.
    EXPECT_NE(flattened(sage2tp({"help", "time"}).out).find("in the run's pins.toml"), std::string::npos);
    for (const char *page : {"sage2tp-time.1", "sage2tp-prepare.1", "sage2tp-experiment.5"}) {
        const std::string text = flattened(rendered(man_dir / page));
        EXPECT_NE(text.find("pins.toml"), std::string::npos) << page;
        EXPECT_FALSE(std::regex_search(text, std::regex(R"(-pin[^.]*(records|writes|keeps)[^.]*(in|into) the run's manifest)")))
            << page << " says a pin goes into the run's manifest";
    }
    // report checks --format before it looks for a run.
    const ProcessResult report = sage2tp({"report", "--format", "bogus", "--run", "no-such-run"});
    EXPECT_EQ(report.exit_code, 2) << report.err;
    const std::string report_page = flattened(rendered(man_dir / "sage2tp-report.1"));
    EXPECT_NE(report_page.find("An unknown format is a usage error before any run is looked for"), std::string::npos);
    EXPECT_EQ(report_page.find("without a run the status is 4"), std::string::npos) << report_page;
    // parity is byte for byte, or within a tolerance: the help, the command list and the page say both.
    EXPECT_NE(flattened(sage2tp({"help", "parity"}).out).find("tolerance mode"), std::string::npos);
    EXPECT_NE(flattened(sage2tp({"help"}).out).find("byte for byte, or by accuracy (tolerance mode)"), std::string::npos);
    const std::string parity_page = flattened(rendered(man_dir / "sage2tp-parity.1"));
    EXPECT_NE(parity_page.find("byte for byte or within a tolerance"), std::string::npos) << parity_page.substr(0, 300);
    EXPECT_NE(parity_page.find("a candidate in tolerance mode"), std::string::npos);
    // sage2tp(1): run passes the stages' options on, each one that run has; and the experiment is the
    // manifest's, every shipped manifest listed, not the temporal-pair alone.
    const std::string main_source = slurp(man_dir / "sage2tp.1");
    const std::size_t passes = main_source.find(".Cm run\npasses the options of");
    ASSERT_NE(passes, std::string::npos);
    const std::string paragraph = main_source.substr(passes, main_source.find(".Pc", passes) - passes);
    const std::map<std::string, std::string> run_options = help_option_texts(sage2tp({"help", "run"}).out);
    std::size_t named = 0;
    static const std::regex flag(R"(\bFl -([a-z][a-z0-9-]*))");
    for (std::sregex_iterator it(paragraph.begin(), paragraph.end(), flag), end; it != end; ++it, ++named)
        EXPECT_TRUE(run_options.count((*it)[1])) << "sage2tp(1) says run passes --" << (*it)[1] << ", which run lacks";
    EXPECT_GE(named, 3u) << paragraph;
    const std::string main_page = flattened(rendered(man_dir / "sage2tp.1"));
    EXPECT_EQ(main_page.find("with a candidate made by applying a patch to the same sources (the TemporalPair"),
              std::string::npos);
    for (const auto &entry : fs::directory_iterator(fs::path(S2TP_SOURCE_ROOT) / "data/experiments"))
        EXPECT_NE(main_source.find("Pa share/sage2tp/data/experiments/" + entry.path().filename().string()),
                  std::string::npos)
            << "sage2tp(1) FILES does not list " << entry.path().filename();
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
