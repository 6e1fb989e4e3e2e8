#include "formats/ptxas_report.h"

#include "support/errors.h"
#include "support/text_lines.h"
#include "support/text_scan.h"

#include <array>
#include <limits>
#include <set>

namespace s2tp {
namespace {

// The log is read with a hand-written tokenizer: each line is scanned a bounded number of times, with
// no recursion, whatever its length (libstdc++'s std::regex recurses per character and overflowed
// the stack on a 100 KB line). Text quoted back in a message is cut to this many bytes.
constexpr std::size_t kQuotedBytes = 200;

std::string cut_for_message(std::string_view text) {
    if (text.size() <= kQuotedBytes) return std::string(text);
    return std::string(text.substr(0, kQuotedBytes)) + "... (" + std::to_string(text.size()) + " bytes)";
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }
bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool consume_back(std::string_view &text, std::string_view suffix) {
    if (!ends_with(text, suffix)) return false;
    text.remove_suffix(suffix.size());
    return true;
}

// A run of decimal digits taken from the front (or the back) of `text`; empty when there is none.
std::string_view consume_digits(std::string_view &text) {
    std::size_t n = 0;
    while (n < text.size() && is_digit(text[n])) ++n;
    std::string_view digits = text.substr(0, n);
    text.remove_prefix(n);
    return digits;
}
std::string_view consume_digits_back(std::string_view &text) {
    std::size_t n = 0;
    while (n < text.size() && is_digit(text[text.size() - 1 - n])) ++n;
    std::string_view digits = text.substr(text.size() - n);
    text.remove_suffix(n);
    return digits;
}

// A number as it appears in the log: the digits, for range checking at the point of use.
using Digits = std::string_view;

struct PendingWarnings {
    std::optional<std::int64_t> local_memory_bytes;
    std::optional<SpillWarning> spill;
};

struct OpenEntry {
    KernelResources record;
    bool has_stack = false;
    bool has_used = false;
};

class ReportParser {
public:
    explicit ReportParser(const std::string &source) : source_(source) {}

    void line(std::string_view text, int number) {
        number_ = number;
        if (std::optional<std::string_view> body = ptxas_message(text)) {
            message(*body);
        } else if (std::optional<std::array<Digits, 3>> numbers = stack_line(text)) {
            stack(*numbers);
        }
    }

    PtxasReport finish() {
        close_entry();
        return std::move(report_);
    }

private:
    enum class StackOwner { none, entry, other_function };

    // "ptxas info    : <body>" anywhere in the line: MSBuild's "1>  ", pip's indentation or a make
    // prefix may precede it. The severity is followed by optional whitespace, ':' and one optional space.
    static std::optional<std::string_view> ptxas_message(std::string_view line) {
        for (std::size_t at = line.find("ptxas "); at != std::string_view::npos; at = line.find("ptxas ", at + 1)) {
            std::string_view rest = line.substr(at + 6);
            if (!(consume(rest, "info") || consume(rest, "warning") || consume(rest, "error") || consume(rest, "fatal")))
                continue;
            while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
            if (!consume(rest, ":")) continue;
            consume(rest, " ");
            return rest;
        }
        return std::nullopt;
    }

    // "N bytes stack frame, N bytes spill stores, N bytes spill loads" anywhere in the line.
    static std::optional<std::array<Digits, 3>> stack_line(std::string_view line) {
        constexpr std::string_view frame = " bytes stack frame, ";
        for (std::size_t at = line.find(frame); at != std::string_view::npos; at = line.find(frame, at + 1)) {
            std::string_view before = line.substr(0, at);
            const Digits frame_bytes = consume_digits_back(before);
            std::string_view rest = line.substr(at + frame.size());
            const Digits stores = consume_digits(rest);
            if (frame_bytes.empty() || stores.empty() || !consume(rest, " bytes spill stores, ")) continue;
            const Digits loads = consume_digits(rest);
            if (loads.empty() || !consume(rest, " bytes spill loads")) continue;
            return std::array<Digits, 3>{frame_bytes, stores, loads};
        }
        return std::nullopt;
    }

    void message(std::string_view text) {
        std::string_view rest = text;
        if (consume(rest, "Compiling entry function '")) {
            // The name may itself hold "' for '": the arch is after the last one.
            const std::size_t split = rest.rfind("' for 'sm_");
            if (split != std::string_view::npos && split > 0 && ends_with(rest, "'")) {
                const std::string_view arch = rest.substr(split + 7, rest.size() - 1 - (split + 7));
                bool word = arch.size() > 3;
                for (char c : arch) word = word && is_word(c);
                if (word) open_entry(rest.substr(0, split), arch);
            }
        } else if (consume(rest, "Function properties for ")) {
            bool name = !rest.empty();
            for (char c : rest) name = name && !is_space(c);
            if (name) {
                const bool for_open_entry = open_ && open_->record.name == rest && !open_->has_stack;
                stack_owner_ = for_open_entry ? StackOwner::entry : StackOwner::other_function;
            }
        } else if (starts_with(text, "Used ")) {
            used(text);
        } else if (consume(rest, "Local memory used for function '")) {
            // ... '<name>', size of stack frame: N bytes
            if (consume_back(rest, " bytes")) {
                const Digits bytes = consume_digits_back(rest);
                if (!bytes.empty() && consume_back(rest, "', size of stack frame: ") && !rest.empty())
                    warnings_for(rest).local_memory_bytes = to_int64(bytes);
            }
        } else if (consume(rest, "Registers are spilled to local memory in function '")) {
            // ... '<name>', N bytes spill stores, N bytes spill loads
            if (consume_back(rest, " bytes spill loads")) {
                const Digits loads = consume_digits_back(rest);
                if (!loads.empty() && consume_back(rest, " bytes spill stores, ")) {
                    const Digits stores = consume_digits_back(rest);
                    if (!stores.empty() && consume_back(rest, "', ") && !rest.empty())
                        warnings_for(rest).spill = SpillWarning{to_int64(stores), to_int64(loads)};
                }
            }
        }
    }

    // CUDA 13 prints a run's warnings before its first entry line, so they wait for the entry; a
    // toolkit that prints them inside the entry's block hands them to the open entry directly.
    PendingWarnings &warnings_for(std::string_view function) {
        if (open_ && open_->record.name == function && !open_->has_used) return open_warnings_;
        return pending_[std::string(function)];
    }

    void open_entry(std::string_view name, std::string_view arch) {
        close_entry();
        open_ = OpenEntry{};
        open_->record.name = std::string(name);
        open_->record.arch = std::string(arch);
        open_->record.line = number_;
        auto pending = pending_.find(open_->record.name);
        if (pending != pending_.end()) {
            open_warnings_ = pending->second;
            pending_.erase(pending);
        } else {
            open_warnings_ = PendingWarnings{};
        }
        stack_owner_ = StackOwner::none;
    }

    void close_entry() {
        if (!open_) return;
        KernelResources &r = open_->record;
        const std::string what =
            "entry '" + cut_for_message(r.name) + "' for '" + cut_for_message(r.arch) + "' (line " +
            std::to_string(r.line) + ")";
        if (!open_->has_stack) fail_here("the " + what + " has no 'N bytes stack frame, ...' line");
        if (!open_->has_used) fail_here("the " + what + " has no 'Used N registers, ...' line");
        r.local_memory_warning_bytes = open_warnings_.local_memory_bytes;
        r.spill_warning = open_warnings_.spill;
        KernelKey key{r.name, r.arch};
        auto existing = report_.find(key);
        if (existing != report_.end())
            fail_here("the " + what + " repeats the entry at line " + std::to_string(existing->second.line));
        report_.emplace(std::move(key), std::move(r));
        open_.reset();
    }

    void stack(const std::array<Digits, 3> &numbers) {
        switch (stack_owner_) {
            case StackOwner::none:
                fail_here("stack frame line without a preceding 'Function properties for' line");
            case StackOwner::other_function:
                break;  // a non-entry (device) function: its frame is part of the calling entries' stacks
            case StackOwner::entry:
                open_->record.stack_frame_bytes = to_int64(numbers[0]);
                open_->record.spill_store_bytes = to_int64(numbers[1]);
                open_->record.spill_load_bytes = to_int64(numbers[2]);
                open_->has_stack = true;
                break;
        }
        stack_owner_ = StackOwner::none;
    }

    // "Used N registers[, used N barriers][, N bytes cumulative stack size][, N bytes smem]
    //  [, N bytes cmem[B]]...[, N textures][, N samplers][, N surfaces]", items in any order.
    void used(std::string_view text) {
        if (!open_) fail_here("'Used' line outside a 'Compiling entry function' block");
        if (open_->has_used) fail_here("second 'Used' line for entry '" + cut_for_message(open_->record.name) + "'");

        KernelResources &r = open_->record;
        // A set: a line of 100,000 cmem items is checked in n log n, not n squared.
        std::set<std::string> seen;
        auto once = [&](std::string_view item, const std::string &kind) {
            if (!seen.insert(kind).second)
                fail_here("'" + cut_for_message(item) + "' repeats an item of the 'Used' line");
        };
        std::size_t start = 0;
        bool first = true;
        while (start <= text.size()) {
            std::size_t end = text.find(", ", start);
            if (end == std::string_view::npos) end = text.size();
            const std::string_view item = text.substr(start, end - start);
            std::string_view rest = item;
            if (first) {
                Digits registers;
                if (consume(rest, "Used ")) registers = consume_digits(rest);
                if (registers.empty() || !(rest == " registers" || rest == " register"))
                    fail_here("'Used' line does not start with 'Used N registers': '" + cut_for_message(text) + "'");
                r.registers = to_int(registers);
            } else if (consume(rest, "used ")) {
                const Digits count = consume_digits(rest);
                if (count.empty() || !(rest == " barriers" || rest == " barrier")) unknown_item(item);
                once(item, "barriers");
                r.barriers = to_int(count);
            } else {
                const Digits count = consume_digits(rest);
                if (count.empty()) unknown_item(item);
                if (rest == " bytes cumulative stack size") {
                    once(item, "cumulative stack");
                    r.cumulative_stack_bytes = to_int64(count);
                } else if (rest == " bytes smem") {
                    once(item, "smem");
                    r.static_smem_bytes = to_int64(count);
                } else if (consume(rest, " bytes cmem[")) {
                    const Digits bank = consume_digits(rest);
                    if (bank.empty() || rest != "]") unknown_item(item);
                    once(item, "cmem[" + std::string(bank) + "]");
                    r.cmem_bytes[to_int(bank)] = to_int64(count);
                } else if (rest == " texture" || rest == " textures") {
                    once(item, "texture");
                    r.textures = to_int(count);
                } else if (rest == " sampler" || rest == " samplers") {
                    once(item, "sampler");
                    r.samplers = to_int(count);
                } else if (rest == " surface" || rest == " surfaces") {
                    once(item, "surface");
                    r.surfaces = to_int(count);
                } else {
                    unknown_item(item);
                }
            }
            first = false;
            start = end + 2;
        }
        open_->has_used = true;
    }

    [[noreturn]] void unknown_item(std::string_view item) const {
        fail_here("unknown item '" + cut_for_message(item) + "' in 'Used' line");
    }

    // Checked conversion: a count that does not fit its field is a malformed report, not a wrap-around.
    template <typename T>
    T to_number(Digits digits) const {
        T value = 0;
        for (char c : digits) {
            const int digit = c - '0';
            if (value > (std::numeric_limits<T>::max() - digit) / 10)
                fail_here("the number " + cut_for_message(digits) + " is out of range (at most " +
                          std::to_string(std::numeric_limits<T>::max()) + ")");
            value = static_cast<T>(value * 10 + digit);
        }
        return value;
    }
    int to_int(Digits digits) const { return to_number<int>(digits); }
    std::int64_t to_int64(Digits digits) const { return to_number<std::int64_t>(digits); }

    [[noreturn]] void fail_here(const std::string &what) const {
        fail(ExitCode::usage, source_ + ":" + std::to_string(number_) + ": ptxas report: " + what);
    }

    const std::string &source_;
    int number_ = 0;
    std::optional<OpenEntry> open_;
    PendingWarnings open_warnings_;
    std::map<std::string, PendingWarnings> pending_;
    StackOwner stack_owner_ = StackOwner::none;
    PtxasReport report_;
};

// "error" or "fatal" as a whole word, in any case (a word being a run of letters, digits and '_').
bool reports_error(std::string_view line) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    for (std::size_t at = 0; at < line.size(); ++at) {
        if (at > 0 && is_word(line[at - 1])) continue;
        for (std::string_view word : {std::string_view("error"), std::string_view("fatal")}) {
            if (line.size() - at < word.size()) continue;
            bool same = true;
            for (std::size_t k = 0; same && k < word.size(); ++k) same = lower(line[at + k]) == word[k];
            if (same && (at + word.size() == line.size() || !is_word(line[at + word.size()]))) return true;
        }
    }
    return false;
}

}  // namespace

PtxasReport parse_ptxas_report(std::string_view log, const std::string &source) {
    ReportParser parser(source);
    int number = 0;
    for (std::string_view line : split_lines(log)) parser.line(line, ++number);
    return parser.finish();
}

std::vector<std::string> first_error_lines(std::string_view output, std::size_t max_lines) {
    std::vector<std::string> lines;
    for (std::string_view line : split_lines(output)) {
        if (lines.size() >= max_lines) break;
        if (!reports_error(line)) continue;
        const std::size_t last = line.find_last_not_of(" \t");
        lines.emplace_back(line.substr(0, last + 1));
    }
    return lines;
}

}  // namespace s2tp
