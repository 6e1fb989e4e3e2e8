// The build's progress line (issue 26): what runs is shown whole within the columns an 80-column line
// leaves it, grouped by source file, then counted, never cut off after the first compile.
#include "tools/kernel_build.h"

#include <gtest/gtest.h>

using namespace s2tp;

namespace s2tp::unit_compile_progress {

TEST(RunningCompiles, GroupedBySourceFileWithTheLongestTime) {
    EXPECT_EQ(running_compiles_text({}, 46), "");
    EXPECT_EQ(running_compiles_text({{"attention_entry.cu", "baseline", 12}, {"attention_entry.cu", "candidate", 34}}, 47),
              "attention_entry.cu for baseline, candidate 34 s");
}

TEST(RunningCompiles, CountedWhenTheNamesDoNotFit) {
    const std::vector<RunningCompile> four{{"attention_entry.cu", "baseline", 31},
                                           {"attention_entry.cu", "candidate", 31},
                                           {"quantize.cu", "baseline", 30},
                                           {"quantize.cu", "candidate", 29}};
    EXPECT_EQ(running_compiles_text(four, 46), "attention_entry.cu x2, quantize.cu x2 31 s");
    // The build stage's line: its counts, then what runs in what is left of 79 columns.
    const std::string line = compile_progress_line("  [0/4] 31s elapsed, ETA ?: ", four);
    EXPECT_EQ(line, "  [0/4] 31s elapsed, ETA ?: attention_entry.cu x2, quantize.cu x2 31 s");
    EXPECT_EQ(compile_progress_line("  [3/4] 31s elapsed, ETA 10s: ", {four[0], four[1]}),
              "  [3/4] 31s elapsed, ETA 10s: attention_entry.cu for baseline, candidate 31 s");

    std::vector<RunningCompile> many;
    for (const char *file : {"attention_entry_hd64.cu", "attention_entry_hd128.cu", "quantize_per_block.cu",
                             "quantize_per_thread.cu", "reference_attention.cu"})
        for (const char *variant : {"baseline", "candidate"}) many.push_back({file, variant, 5});
    EXPECT_EQ(running_compiles_text(many, 46), "10 compiles of 5 files 5 s");
    for (const char *counts : {"  [12/16] 1m12s elapsed, ETA 40s: ", "  compiling 12/16 done, 1m12s elapsed, ETA 40s: "})
        for (const std::vector<RunningCompile> &set : {four, many})
            EXPECT_LE(compile_progress_line(counts, set).size(), 79u) << counts;
}

}  // namespace s2tp::unit_compile_progress
