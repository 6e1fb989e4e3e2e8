// Reads SASS listings as `cuobjdump -sass` and `nvdisasm` print them: the functions, and in each its
// instructions with address, opcode and, for a branch, its target. cuobjdump names a function with
// "Function : NAME" and branches to hexadecimal addresses ("@!P0 BRA 0x19c0"); nvdisasm opens a
// function with ".text.NAME:" and branches to labels ("BRA `(.L_x_12)"), which are resolved to the
// address of the instruction that follows the label.
//
// Usage:
//   for (const s2tp::SassFunction &f : s2tp::parse_sass_listing(text, "baseline.sass")) {
//       s2tp::SassHistogram all = s2tp::opcode_histogram(f.instructions);
//       if (auto loop = s2tp::find_main_loop(f)) ...
//   }
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s2tp {

struct SassInstruction {
    std::uint64_t address = 0;
    std::string opcode;                          // with modifiers: "HMMA.16816.F32.BF16"
    std::string base() const;                    // before the first '.': "HMMA"
    std::optional<std::uint64_t> branch_target;  // BRA only
    std::string text;                            // guard, opcode and operands as listed: "@!P0 BRA 0x19c0"
};

struct SassFunction {
    std::string name;
    std::vector<SassInstruction> instructions;  // in address order
};

// Error(internal) naming `where` and the line for a branch to a label that is never defined.
std::vector<SassFunction> parse_sass_listing(std::string_view text, const std::string &where);

// The opcode families an A/B of attention kernels is read by, in display order: the MMA kinds,
// conversions and packed adds (F2FP, HADD2), FFMA, MUFU, barriers, shared-memory loads and stores,
// asynchronous copies (LDGSTS), local memory (LDL/STL, spills) and branches.
const std::vector<std::string> &sass_families();

struct SassHistogram {
    std::map<std::string, std::int64_t> families;  // every name of sass_families(), 0 when absent
    std::int64_t total = 0;                        // all instructions, NOPs included
};
SassHistogram opcode_histogram(const std::vector<SassInstruction> &instructions);

struct SassLoop {
    std::uint64_t start = 0, end = 0;  // addresses of the first instruction and of the closing BRA
    std::vector<SassInstruction> body;  // start..end, both included
};

// The main loop of a kernel: the backward branch (a BRA to an address before its own) that spans the
// most instructions. In an attention kernel that is the loop over the K/V blocks: the prologue before
// it loads Q and the first tiles, the epilogue after it normalises and stores, and any loop inside it
// spans less. The one-instruction `BRA` to itself that pads a function after EXIT is no loop.
// Nothing when the function has no backward branch.
std::optional<SassLoop> find_main_loop(const SassFunction &function);

}  // namespace s2tp
