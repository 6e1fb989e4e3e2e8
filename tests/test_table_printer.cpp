// The one table printer (support/table_printer.h): text padding and alignment, markdown escaping, CSV
// quoting, JSON rows keyed by column, and the interval spelling every table shares.
#include "support/number_format.h"
#include "support/table_printer.h"

#include <gtest/gtest.h>

using namespace s2tp;

namespace s2tp::unit_table_printer {

namespace {

TextTable sample() {
    return TextTable{{{"run"}, {"ratio", Align::right}, {"note", Align::left, true}},
                     {{"tp-1", "0.9890", "a|b"}, {"tp-long", "1.25", ""}}};
}

}  // namespace

TEST(TablePrinter, TextPadsEachColumnToItsWidestCellAndLeavesTheLastLeftColumnUnpadded) {
    EXPECT_EQ(table_text(sample()),
              "run       ratio  note\n"
              "tp-1     0.9890  a|b\n"
              "tp-long    1.25  \n");
    EXPECT_EQ(table_text(sample(), TextLayout{"  ", 1, true}),
              "  RUN      RATIO NOTE\n"
              "  tp-1    0.9890 a|b\n"
              "  tp-long   1.25 \n");
}

TEST(TablePrinter, MarkdownEscapesBarsAndCsvQuotesWhatNeedsIt) {
    EXPECT_EQ(table_markdown(sample()),
              "| run | ratio | note |\n|---|---|---|\n| tp-1 | 0.9890 | a\\|b |\n| tp-long | 1.25 |  |\n");
    const TextTable quoted{{{"a"}, {"b"}}, {{"x,y", "say \"hi\""}}};
    EXPECT_EQ(table_csv(quoted), "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n");
}

TEST(TablePrinter, JsonKeysEachCellByItsColumnAndLeavesOutEmptyOptionalCells) {
    const toml::array rows = table_json(sample());
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ((*rows[0].as_table())["note"].value_or(std::string()), "a|b");
    EXPECT_FALSE(rows[1].as_table()->contains("note"));
    EXPECT_EQ((*rows[1].as_table())["ratio"].value_or(std::string()), "1.25");
}

TEST(TablePrinter, OneIntervalSpellingWithTheLevelTheFigureRecords) {
    EXPECT_EQ(interval_text(1.3441, 1.3427, 1.3451, 0.9), "1.3441 (90% CI 1.3427 .. 1.3451)");
    EXPECT_EQ(interval_text(1.0, std::nullopt, 1.01, std::nullopt), "1.0000 (CI - .. 1.0100)");
    EXPECT_EQ(interval_text(1.0, 0.99, 1.01, 0.95, ", half-width 1.000%"), "1.0000 (95% CI 0.9900 .. 1.0100, half-width 1.000%)");
}

}  // namespace s2tp::unit_table_printer
