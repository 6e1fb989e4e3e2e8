#include "formats/sass_listing.h"

#include "support/errors.h"
#include "support/text_lines.h"
#include "support/text_scan.h"

#include <algorithm>
#include <cctype>

namespace s2tp {
namespace {

bool all_hex(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// "/*19c0*/   @!P0 BRA 0x6710 ;  /* 0x... */" -> address and the text up to ';'. The encoding lines
// ("/* 0x000e62... */") have a space and "0x" inside the comment, so they are no instruction.
bool split_instruction(std::string_view line, std::uint64_t &address, std::string_view &text) {
    line = trimmed(line);
    if (line.size() < 5 || line.substr(0, 2) != "/*") return false;
    const std::size_t close = line.find("*/", 2);
    if (close == std::string_view::npos || !all_hex(line.substr(2, close - 2))) return false;
    address = std::stoull(std::string(line.substr(2, close - 2)), nullptr, 16);
    text = line.substr(close + 2);
    const std::size_t semicolon = text.find(';');
    if (semicolon == std::string_view::npos) return false;
    text = trimmed(text.substr(0, semicolon));
    return !text.empty();
}

std::vector<std::string_view> words(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
        std::size_t j = i;
        while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
        if (j > i) out.push_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

struct PendingLabel {
    std::size_t function, instruction;
    std::string label;
    int line;
};

}  // namespace

std::string SassInstruction::base() const { return opcode.substr(0, opcode.find('.')); }

std::vector<SassFunction> parse_sass_listing(std::string_view text, const std::string &where) {
    std::vector<SassFunction> functions;
    std::map<std::string, std::uint64_t> label_address;  // per function
    std::vector<std::string> labels_waiting;             // defined, before their instruction
    std::vector<PendingLabel> pending;
    const auto resolve_pending = [&] {
        for (const PendingLabel &p : pending) {
            const auto found = label_address.find(p.label);
            if (found == label_address.end())
                fail(ExitCode::internal, where + ":" + std::to_string(p.line) + ": branch to the label " + p.label +
                                             ", which the function never defines");
            functions[p.function].instructions[p.instruction].branch_target = found->second;
        }
        pending.clear();
        label_address.clear();
        labels_waiting.clear();
    };
    int line_number = 0;
    bool in_function = false;
    for (std::string_view raw : split_lines(text)) {
        ++line_number;
        const std::string_view line = trimmed(raw);
        std::string name;
        if (line.rfind("Function : ", 0) == 0) name = std::string(trimmed(line.substr(11)));
        else if (line.rfind(".text.", 0) == 0 && line.back() == ':') name = std::string(line.substr(6, line.size() - 7));
        if (!name.empty()) {
            resolve_pending();
            functions.push_back(SassFunction{name, {}});
            in_function = true;
            continue;
        }
        // nvdisasm prints the ELF's other sections after the code, with addresses of their own.
        if (line.rfind(".section", 0) == 0) {
            resolve_pending();
            in_function = false;
            continue;
        }
        if (!in_function) continue;
        if (line.size() > 1 && line[0] == '.' && line.back() == ':' && line.find(' ') == std::string_view::npos) {
            labels_waiting.emplace_back(line.substr(0, line.size() - 1));
            continue;
        }
        std::uint64_t address = 0;
        std::string_view body;
        if (!split_instruction(raw, address, body)) continue;
        std::vector<std::string_view> tokens = words(body);
        std::size_t op = 0;
        if (!tokens.empty() && tokens[0].front() == '@') op = 1;  // guard predicate: @P0, @!UPT
        if (op >= tokens.size()) continue;
        SassInstruction instruction;
        instruction.address = address;
        instruction.opcode = std::string(tokens[op]);
        instruction.text = std::string(body);
        SassFunction &function = functions.back();
        for (const std::string &label : labels_waiting) label_address[label] = address;
        labels_waiting.clear();
        if (instruction.base() == "BRA" && op + 1 < tokens.size()) {
            // The target is the last operand: "BRA 0x19c0", "BRA.U !UP0, 0x2a0", "BRA `(.L_x_3)".
            std::string_view target = tokens.back();
            if (target.rfind("0x", 0) == 0 && all_hex(target.substr(2))) {
                instruction.branch_target = std::stoull(std::string(target.substr(2)), nullptr, 16);
            } else if (target.rfind("`(", 0) == 0 && target.back() == ')') {
                pending.push_back({functions.size() - 1, function.instructions.size(),
                                   std::string(target.substr(2, target.size() - 3)), line_number});
            }
        }
        function.instructions.push_back(std::move(instruction));
    }
    resolve_pending();
    return functions;
}

const std::vector<std::string> &sass_families() {
    static const std::vector<std::string> families = {"HMMA", "IMMA", "QMMA", "F2FP",   "HADD2", "FFMA",
                                                      "MUFU", "BAR",  "LDS",  "LDSM",   "STS",   "LDGSTS",
                                                      "LDL",  "STL",  "BRA"};
    return families;
}

SassHistogram opcode_histogram(const std::vector<SassInstruction> &instructions) {
    SassHistogram histogram;
    for (const std::string &family : sass_families()) histogram.families[family] = 0;
    for (const SassInstruction &instruction : instructions) {
        ++histogram.total;
        const auto found = histogram.families.find(instruction.base());
        if (found != histogram.families.end()) ++found->second;
    }
    return histogram;
}

std::optional<SassLoop> find_main_loop(const SassFunction &function) {
    const std::vector<SassInstruction> &code = function.instructions;
    std::optional<std::pair<std::size_t, std::size_t>> best;  // first and last index
    for (std::size_t i = 0; i < code.size(); ++i) {
        if (!code[i].branch_target || *code[i].branch_target >= code[i].address) continue;
        const std::uint64_t target = *code[i].branch_target;
        const auto first = std::lower_bound(code.begin(), code.begin() + static_cast<std::ptrdiff_t>(i), target,
                                            [](const SassInstruction &s, std::uint64_t a) { return s.address < a; });
        const std::size_t start = static_cast<std::size_t>(first - code.begin());
        if (!best || i - start > best->second - best->first) best = {start, i};
    }
    if (!best) return std::nullopt;
    SassLoop loop;
    loop.start = code[best->first].address;
    loop.end = code[best->second].address;
    loop.body.assign(code.begin() + static_cast<std::ptrdiff_t>(best->first),
                     code.begin() + static_cast<std::ptrdiff_t>(best->second) + 1);
    return loop;
}

}  // namespace s2tp
