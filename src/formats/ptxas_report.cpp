#include "formats/ptxas_report.h"

#include "support/text_lines.h"

#include "support/errors.h"

#include <regex>

namespace s2tp {
namespace {

const std::regex &ptxas_message() {
    // Anything may precede "ptxas": MSBuild's "1>  ", pip's indentation, a make prefix.
    static const std::regex re(R"(ptxas (info|warning|error|fatal)\s*: ?(.*))");
    return re;
}

const std::regex &stack_line() {
    static const std::regex re(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
    return re;
}

std::int64_t to_int64(const std::ssub_match &m) { return std::stoll(m.str()); }
int to_int(const std::ssub_match &m) { return std::stoi(m.str()); }

struct PendingWarnings {
    std::optional<std::int64_t> local_memory_bytes;
    std::optional<SpillWarning> spill;
};

class ReportParser {
public:
    explicit ReportParser(const std::string &source) : source_(source) {}

    void line(const std::string &text, int number) {
        number_ = number;
        std::smatch m;
        if (std::regex_search(text, m, ptxas_message())) {
            message(m[2].str());
        } else if (std::regex_search(text, m, stack_line())) {
            stack(m);
        }
    }

    PtxasReport finish() {
        close_entry();
        return std::move(report_);
    }

private:
    enum class StackOwner { none, entry, other_function };

    struct OpenEntry {
        KernelResources record;
        bool has_stack = false;
        bool has_used = false;
    };

    void message(const std::string &text) {
        static const std::regex entry(R"(Compiling entry function '(.+)' for '(sm_\w+)')");
        static const std::regex properties(R"(Function properties for (\S+))");
        static const std::regex lmem(R"(Local memory used for function '(.+)', size of stack frame: (\d+) bytes)");
        static const std::regex spill(
            R"(Registers are spilled to local memory in function '(.+)', (\d+) bytes spill stores, (\d+) bytes spill loads)");
        std::smatch m;
        if (std::regex_match(text, m, entry)) {
            open_entry(m[1].str(), m[2].str());
        } else if (std::regex_match(text, m, properties)) {
            const bool for_open_entry = open_ && open_->record.name == m[1].str() && !open_->has_stack;
            stack_owner_ = for_open_entry ? StackOwner::entry : StackOwner::other_function;
        } else if (text.rfind("Used ", 0) == 0) {
            used(text);
        } else if (std::regex_match(text, m, lmem)) {
            warnings_for(m[1].str()).local_memory_bytes = to_int64(m[2]);
        } else if (std::regex_match(text, m, spill)) {
            warnings_for(m[1].str()).spill = SpillWarning{to_int64(m[2]), to_int64(m[3])};
        }
    }

    // CUDA 13 prints a run's warnings before its first entry line, so they wait for the entry; a
    // toolkit that prints them inside the entry's block hands them to the open entry directly.
    PendingWarnings &warnings_for(const std::string &function) {
        if (open_ && open_->record.name == function && !open_->has_used) return open_warnings_;
        return pending_[function];
    }

    void open_entry(const std::string &name, const std::string &arch) {
        close_entry();
        open_.emplace();
        open_->record.name = name;
        open_->record.arch = arch;
        open_->record.line = number_;
        auto pending = pending_.find(name);
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
        const std::string what = "entry '" + r.name + "' for '" + r.arch + "' (line " + std::to_string(r.line) + ")";
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

    void stack(const std::smatch &m) {
        switch (stack_owner_) {
            case StackOwner::none:
                fail_here("stack frame line without a preceding 'Function properties for' line");
            case StackOwner::other_function:
                break;  // a non-entry (device) function: its frame is part of the calling entries' stacks
            case StackOwner::entry:
                open_->record.stack_frame_bytes = to_int64(m[1]);
                open_->record.spill_store_bytes = to_int64(m[2]);
                open_->record.spill_load_bytes = to_int64(m[3]);
                open_->has_stack = true;
                break;
        }
        stack_owner_ = StackOwner::none;
    }

    void used(const std::string &text) {
        if (!open_) fail_here("'Used' line outside a 'Compiling entry function' block");
        if (open_->has_used) fail_here("second 'Used' line for entry '" + open_->record.name + "'");
        static const std::regex registers(R"(Used (\d+) registers?)");
        static const std::regex barriers(R"(used (\d+) barriers?)");
        static const std::regex cumulative_stack(R"((\d+) bytes cumulative stack size)");
        static const std::regex smem(R"((\d+) bytes smem)");
        static const std::regex cmem(R"((\d+) bytes cmem\[(\d+)\])");
        static const std::regex bindings(R"((\d+) (texture|sampler|surface)s?)");

        KernelResources &r = open_->record;
        std::vector<std::string> seen;
        auto once = [&](const std::string &item, const std::string &kind) {
            for (const auto &s : seen)
                if (s == kind) fail_here("'" + item + "' repeats an item of the 'Used' line");
            seen.push_back(kind);
        };
        std::size_t start = 0;
        bool first = true;
        while (start <= text.size()) {
            std::size_t end = text.find(", ", start);
            if (end == std::string::npos) end = text.size();
            const std::string item = text.substr(start, end - start);
            std::smatch m;
            if (first) {
                if (!std::regex_match(item, m, registers))
                    fail_here("'Used' line does not start with 'Used N registers': '" + text + "'");
                r.registers = to_int(m[1]);
            } else if (std::regex_match(item, m, barriers)) {
                once(item, "barriers");
                r.barriers = to_int(m[1]);
            } else if (std::regex_match(item, m, cumulative_stack)) {
                once(item, "cumulative stack");
                r.cumulative_stack_bytes = to_int64(m[1]);
            } else if (std::regex_match(item, m, smem)) {
                once(item, "smem");
                r.static_smem_bytes = to_int64(m[1]);
            } else if (std::regex_match(item, m, cmem)) {
                once(item, "cmem[" + m[2].str() + "]");
                r.cmem_bytes[to_int(m[2])] = to_int64(m[1]);
            } else if (std::regex_match(item, m, bindings)) {
                once(item, m[2].str());
                const std::string kind = m[2].str();
                (kind == "texture" ? r.textures : kind == "sampler" ? r.samplers : r.surfaces) = to_int(m[1]);
            } else {
                fail_here("unknown item '" + item + "' in 'Used' line");
            }
            first = false;
            start = end + 2;
        }
        open_->has_used = true;
    }

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

}  // namespace

PtxasReport parse_ptxas_report(std::string_view log, const std::string &source) {
    ReportParser parser(source);
    int number = 0;
    for (std::string_view line : split_lines(log)) parser.line(std::string(line), ++number);
    return parser.finish();
}

std::vector<std::string> first_error_lines(std::string_view output, std::size_t max_lines) {
    static const std::regex error_word(R"(\b(error|fatal)\b)", std::regex::icase);
    std::vector<std::string> lines;
    for (std::string_view view : split_lines(output)) {
        const std::string line(view);
        if (lines.size() >= max_lines) break;
        if (!std::regex_search(line, error_word)) continue;
        std::size_t last = line.find_last_not_of(" \t");
        lines.push_back(line.substr(0, last + 1));
    }
    return lines;
}

}  // namespace s2tp
