// The SASS parser, the opcode histogram and the main-loop rule on `cuobjdump -sass` listings recorded
// on the H200 host (CUDA 13.0, sm_90a; tests/data/sass/, one entry each of the baseline and the
// temporal-pair candidate). Expected counts were taken independently with grep -cE on the files, e.g.
//   grep -cE '^\s+/\*[0-9a-f]+\*/\s+(@!?U?P[T0-9]+\s+)?HMMA[ .]' baseline.hd128_bf16_nomask.sass   # 384
// and the loop bounds from the only backward BRA of each listing.
#include "build_config.h"
#include "scratch_directory.h"
#include "formats/sass_listing.h"
#include "tools/sass_histogram.h"
#include "support/errors.h"
#include "support/file_io.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_sass_listing {

namespace {

const fs::path source_root = S2TP_SOURCE_ROOT;

std::vector<SassFunction> recorded(const std::string &variant) {
    const fs::path file = source_root / "tests/data/sass" / (variant + ".hd128_bf16_nomask.sass");
    return parse_sass_listing(read_text_file(file), file.string());
}

using Counts = std::map<std::string, std::int64_t>;

TEST(SassListing, BaselineHistogram) {
    const auto functions = recorded("baseline");
    ASSERT_EQ(functions.size(), 1u);
    EXPECT_EQ(functions[0].name, "s2tp_attn_hd128_bf16_nomask");
    const SassHistogram h = opcode_histogram(functions[0].instructions);
    EXPECT_EQ(h.total, 5192);
    EXPECT_EQ(h.families, (Counts{{"HMMA", 384}, {"IMMA", 192}, {"QMMA", 0},  {"F2FP", 640},  {"HADD2", 768},
                                  {"FFMA", 600}, {"MUFU", 213}, {"BAR", 12},  {"LDS", 34},    {"LDSM", 120},
                                  {"STS", 64},   {"LDGSTS", 32}, {"LDL", 18}, {"STL", 22},    {"BRA", 20}}));
}

TEST(SassListing, CandidateHistogram) {
    const auto functions = recorded("candidate");
    ASSERT_EQ(functions.size(), 1u);
    const SassHistogram h = opcode_histogram(functions[0].instructions);
    EXPECT_EQ(h.total, 3656);
    EXPECT_EQ(h.families, (Counts{{"HMMA", 128}, {"IMMA", 64}, {"QMMA", 0},  {"F2FP", 320}, {"HADD2", 256},
                                  {"FFMA", 344}, {"MUFU", 213}, {"BAR", 3},  {"LDS", 34},   {"LDSM", 40},
                                  {"STS", 64},   {"LDGSTS", 28}, {"LDL", 0}, {"STL", 0},    {"BRA", 34}}));
}

TEST(SassListing, MainLoopOfBothListings) {
    const auto base = find_main_loop(recorded("baseline")[0]);
    ASSERT_TRUE(base);
    EXPECT_EQ(base->start, 0x19c0u);  // "/*66d0*/ @!P0 BRA 0x19c0"
    EXPECT_EQ(base->end, 0x66d0u);
    EXPECT_EQ(base->body.size(), 1234u);
    const SassHistogram b = opcode_histogram(base->body);
    EXPECT_EQ(b.families.at("HMMA"), 128);
    EXPECT_EQ(b.families.at("IMMA"), 64);
    EXPECT_EQ(b.families.at("MUFU"), 68);
    EXPECT_EQ(b.families.at("BAR"), 4);
    EXPECT_EQ(b.families.at("LDL"), 5);

    const auto cand = find_main_loop(recorded("candidate")[0]);
    ASSERT_TRUE(cand);
    EXPECT_EQ(cand->start, 0x15f0u);
    EXPECT_EQ(cand->end, 0xafd0u);
    EXPECT_EQ(cand->body.size(), 2463u);
    const SassHistogram c = opcode_histogram(cand->body);
    EXPECT_EQ(c.families.at("HMMA"), 128);
    EXPECT_EQ(c.families.at("MUFU"), 204);
    EXPECT_EQ(c.families.at("BAR"), 2);
    EXPECT_EQ(c.families.at("BRA"), 15);
}

// nvdisasm's form: ".text.NAME:" opens a function, branches go to labels. The outer loop (0x10..0x50)
// wins over the inner one (0x20..0x30); the BRA to itself after EXIT is no loop.
const char *nvdisasm_listing = R"(
	.text.k_outer:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;
.L_x_1:
        /*0020*/                   MUFU.EX2 R2, R2 ;
        /*0030*/              @!P1 BRA `(.L_x_1) ;
        /*0040*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0050*/              @!P0 BRA `(.L_x_0) ;
        /*0060*/                   EXIT ;
.L_x_2:
        /*0070*/                   BRA `(.L_x_2);
	.text.k_straight:
        /*0000*/                   EXIT ;
)";

TEST(SassListing, NvdisasmLabelsAndLoopRule) {
    const auto functions = parse_sass_listing(nvdisasm_listing, "inline");
    ASSERT_EQ(functions.size(), 2u);
    EXPECT_EQ(functions[0].name, "k_outer");
    ASSERT_EQ(functions[0].instructions.size(), 8u);
    EXPECT_EQ(functions[0].instructions[3].branch_target, 0x20u);
    EXPECT_EQ(functions[0].instructions[7].branch_target, 0x70u);
    const auto loop = find_main_loop(functions[0]);
    ASSERT_TRUE(loop);
    EXPECT_EQ(loop->start, 0x10u);
    EXPECT_EQ(loop->end, 0x50u);
    EXPECT_EQ(loop->body.size(), 5u);
    EXPECT_FALSE(find_main_loop(functions[1]));
    EXPECT_THROW(parse_sass_listing("Function : f\n  /*0000*/ BRA `(.L_x_9) ;\n", "inline"), Error);
}

// One cubin through both tools (tests/data/sass/README): the same instructions, the same branch
// targets, the same loop, whether the targets are addresses or labels. 304 instructions, 29 MUFU and
// 11 BRA as grep -cE counts them in either file; the widest backward branch is "/*09d0*/ @P1 BRA
// `(.L_x_4)" with .L_x_4 before /*0180*/.
TEST(SassListing, CuobjdumpAndNvdisasmAgree) {
    const fs::path dir = source_root / "tests/data/sass";
    const auto cuobjdump = parse_sass_listing(read_text_file(dir / "loopk.cuobjdump"), "loopk.cuobjdump");
    const auto nvdisasm = parse_sass_listing(read_text_file(dir / "loopk.nvdisasm"), "loopk.nvdisasm");
    ASSERT_EQ(cuobjdump.size(), 1u);
    ASSERT_EQ(nvdisasm.size(), 1u);
    EXPECT_EQ(cuobjdump[0].name, "loopk");
    EXPECT_EQ(nvdisasm[0].name, "loopk");
    ASSERT_EQ(cuobjdump[0].instructions.size(), 304u);
    ASSERT_EQ(nvdisasm[0].instructions.size(), 304u);
    for (std::size_t i = 0; i < 304; ++i) {
        EXPECT_EQ(cuobjdump[0].instructions[i].address, nvdisasm[0].instructions[i].address) << i;
        EXPECT_EQ(cuobjdump[0].instructions[i].opcode, nvdisasm[0].instructions[i].opcode) << i;
        EXPECT_EQ(cuobjdump[0].instructions[i].branch_target, nvdisasm[0].instructions[i].branch_target) << i;
    }
    const SassHistogram h = opcode_histogram(nvdisasm[0].instructions);
    EXPECT_EQ(h.families.at("MUFU"), 29);
    EXPECT_EQ(h.families.at("BRA"), 11);
    const auto loop = find_main_loop(nvdisasm[0]);
    ASSERT_TRUE(loop);
    EXPECT_EQ(loop->start, 0x180u);
    EXPECT_EQ(loop->end, 0x9d0u);
}

TEST(SassHistogram, EntriesPairByTheKernelAbisShortName) {
    // A build's listings pair through each variant's adapter, so entries of different ABIs (upstream's
    // mangled template names against sage2tp's) meet under one short name.
    const KernelAbi &abi = kernel_abi("sage2tp", "test");
    auto short_name = [&](const std::string &name) -> std::optional<std::string> {
        const std::optional<AbiEntry> entry = abi.describe_entry(name);
        return entry ? std::optional<std::string>(entry->short_name) : std::nullopt;
    };
    SassComparison c = compare_sass(recorded("baseline"), recorded("candidate"), short_name, short_name);
    ASSERT_EQ(c.entries.size(), 1u);
    EXPECT_EQ(c.entries[0].entry, "hd128_bf16_nomask");
}

TEST(SassHistogram, ComparisonFiguresRoundTrip) {
    SassComparison c = compare_sass(recorded("baseline"), recorded("candidate"), nullptr, nullptr);
    c.tool = "cuobjdump";
    ASSERT_EQ(c.entries.size(), 1u);
    EXPECT_EQ(c.entries[0].baseline.all.families.at("HMMA"), 384);
    EXPECT_EQ(c.entries[0].candidate.all.families.at("HMMA"), 128);
    const toml::table t = c.to_toml();
    EXPECT_EQ(t["entries"]["s2tp_attn_hd128_bf16_nomask"]["candidate"]["loop"]["MUFU"].value_or(0), 204);
    const SassComparison back = SassComparison::from_toml(t);
    EXPECT_EQ(back.table_text(), c.table_text());
    const std::string table = c.table_text();
    EXPECT_NE(table.find("HMMA    384 -> 128 (-256)"), std::string::npos) << table;
    EXPECT_NE(table.find("main loop 0x19c0..0x66d0 -> 0x15f0..0xafd0"), std::string::npos) << table;
    EXPECT_TRUE(compare_sass(recorded("baseline"), recorded("candidate"), nullptr,
                             [](const std::string &) { return std::optional<std::string>(); })
                    .entries.empty());
}

// Issue 36 item 9: build --sass says whether the two variants' SASS differs, and by how many lines.
TEST(SassHistogram, SaysWhetherTheSassDiffers) {
    const SassComparison same = compare_sass(recorded("baseline"), recorded("baseline"), nullptr, nullptr);
    ASSERT_EQ(same.entries.size(), 1u);
    EXPECT_EQ(same.entries[0].differing_lines, 0);
    EXPECT_NE(same.table_text().find("SASS identical in 1 entry\n"), std::string::npos) << same.table_text();
    EXPECT_NE(same.table_text().find("s2tp_attn_hd128_bf16_nomask; SASS identical;"), std::string::npos) << same.table_text();

    const SassComparison differ = compare_sass(recorded("baseline"), recorded("candidate"), nullptr, nullptr);
    ASSERT_EQ(differ.entries.size(), 1u);
    ASSERT_TRUE(differ.entries[0].differing_lines);
    const std::int64_t lines = *differ.entries[0].differing_lines;
    EXPECT_GT(lines, 0);
    const std::string table = differ.table_text();
    EXPECT_NE(table.find("SASS differs in 1 of 1 entry\n"), std::string::npos) << table;
    EXPECT_NE(table.find("; SASS differs: " + std::to_string(lines) + " lines;"), std::string::npos) << table;
    EXPECT_EQ(SassComparison::from_toml(differ.to_toml()).entries[0].differing_lines, lines);

    // One instruction changed is two lines (one gone, one new); the same instructions swapped, two in place.
    std::vector<SassFunction> edited = recorded("baseline");
    ASSERT_GE(edited[0].instructions.size(), 2u);
    edited[0].instructions[0].text += " // edited";
    EXPECT_EQ(compare_sass(recorded("baseline"), edited, nullptr, nullptr).entries[0].differing_lines, 2);
    std::vector<SassFunction> swapped = recorded("baseline");
    std::swap(swapped[0].instructions[0].text, swapped[0].instructions[1].text);
    EXPECT_EQ(compare_sass(recorded("baseline"), swapped, nullptr, nullptr).entries[0].differing_lines, 2);
}

// Without cuobjdump and nvdisasm, --sass warns and gives nothing; the build itself is not failed.
TEST(SassHistogram, MissingDisassemblerGivesNothing) {
    if (fs::exists("/usr/local/cuda/bin/cuobjdump") || fs::exists("/usr/local/cuda/bin/nvdisasm"))
        GTEST_SKIP() << "a disassembler is installed in /usr/local/cuda/bin";
    const ScratchDirectory scratch("sass-empty");
    const fs::path &empty = scratch.path();
    const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", empty.c_str(), 1);
    ::unsetenv("CUDA_HOME");
    ::unsetenv("CUDA_PATH");
    EXPECT_FALSE(find_disassembler());
    EXPECT_FALSE(sass_of_build({}, kernel_abi("sage2tp", "test"), kernel_abi("sage2tp", "test"), Reporter(false, 0)));
    ::setenv("PATH", old_path.c_str(), 1);
}

}  // namespace

}  // namespace s2tp::unit_sass_listing
