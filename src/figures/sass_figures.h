// `build --sass`'s figures: each kernel entry's SASS counted by opcode family, over the whole entry and
// over its main K/V loop (formats/sass_listing.h says how the loop is found), baseline against
// candidate. Typed, so that the build checkpoint and reports/sass.toml hold exactly what the table shows.
#pragma once

#include "formats/sass_listing.h"

#include <toml++/toml.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct SassVariantFigures {
    SassHistogram all;
    std::optional<SassHistogram> loop;  // nothing when no backward branch was found
    std::uint64_t loop_start = 0, loop_end = 0;
};

struct SassEntryComparison {
    std::string entry;
    SassVariantFigures baseline, candidate;
    // How far the two listings differ: 0 when every instruction (its SassInstruction::text) is the same in
    // the same order; else the instructions of either side that the other lacks, counted as multisets
    // (as many as differ in place when only the order changed). Nothing in a record made before it was kept.
    std::optional<std::int64_t> differing_lines;
};

struct SassComparison {
    std::string tool;  // the disassembler and its version line
    std::vector<SassEntryComparison> entries;

    toml::table to_toml() const;
    static SassComparison from_toml(const toml::table &table);
    // Whether the SASS differs ("SASS identical in all 4 entries", "SASS differs in 2 of 4 entries"), then
    // per entry its lines that differ and FAMILY | baseline -> candidate (delta) for the whole entry and
    // for the main loop.
    std::string table_text() const;
};

// An entry's key for pairing baseline and candidate functions: the kernel ABI's short name
// ("hd128_bf16_nomask"), so entries pair across ABIs; nothing for a function that is no entry.
using SassEntryKey = std::function<std::optional<std::string>(const std::string &function_name)>;
// The entries whose keys appear in both listings, each under its key. A null key function keys a
// function by its own name.
SassComparison compare_sass(const std::vector<SassFunction> &baseline, const std::vector<SassFunction> &candidate,
                            const SassEntryKey &baseline_key, const SassEntryKey &candidate_key);

}  // namespace s2tp
