#include "figures/sass_figures.h"
#include "support/table_printer.h"

#include <chrono>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace s2tp {
namespace {

toml::table histogram_table(const SassHistogram &h) {
    toml::table t{{"total", h.total}};
    for (const auto &[family, count] : h.families) t.insert(family, count);
    return t;
}

SassHistogram histogram_from(const toml::table &t) {
    SassHistogram h;
    for (const std::string &family : sass_families()) h.families[family] = t[family].value_or<std::int64_t>(0);
    h.total = t["total"].value_or<std::int64_t>(0);
    return h;
}

toml::table variant_table(const SassVariantFigures &v) {
    toml::table t{{"all", histogram_table(v.all)}};
    if (v.loop) {
        toml::table loop = histogram_table(*v.loop);
        loop.insert("start", static_cast<std::int64_t>(v.loop_start));
        loop.insert("end", static_cast<std::int64_t>(v.loop_end));
        t.insert("loop", loop);
    }
    return t;
}

SassVariantFigures variant_from(const toml::table &t) {
    SassVariantFigures v;
    if (const toml::table *all = t["all"].as_table()) v.all = histogram_from(*all);
    if (const toml::table *loop = t["loop"].as_table()) {
        v.loop = histogram_from(*loop);
        v.loop_start = static_cast<std::uint64_t>((*loop)["start"].value_or<std::int64_t>(0));
        v.loop_end = static_cast<std::uint64_t>((*loop)["end"].value_or<std::int64_t>(0));
    }
    return v;
}

SassVariantFigures figures_of(const SassFunction &function) {
    SassVariantFigures v;
    v.all = opcode_histogram(function.instructions);
    if (auto loop = find_main_loop(function)) {
        v.loop = opcode_histogram(loop->body);
        v.loop_start = loop->start;
        v.loop_end = loop->end;
    }
    return v;
}

std::int64_t differing_lines(const SassFunction &baseline, const SassFunction &candidate) {
    std::vector<std::string> a, b;
    for (const SassInstruction &i : baseline.instructions) a.push_back(i.text);
    for (const SassInstruction &i : candidate.instructions) b.push_back(i.text);
    if (a == b) return 0;
    std::map<std::string, std::int64_t> balance;  // + baseline's, - candidate's
    for (const std::string &line : a) ++balance[line];
    for (const std::string &line : b) --balance[line];
    std::int64_t unmatched = 0;
    for (const auto &[line, count] : balance) unmatched += count < 0 ? -count : count;
    if (unmatched > 0) return unmatched;
    std::int64_t moved = 0;  // the same instructions in another order
    for (std::size_t i = 0; i < a.size(); ++i) moved += a[i] != b[i];
    return moved;
}

std::string change(std::int64_t base, std::int64_t cand) {
    std::ostringstream s;
    s << base << " -> " << cand;
    if (cand != base) s << " (" << std::showpos << cand - base << ")";
    return s.str();
}

std::string hex(std::uint64_t address) {
    std::ostringstream s;
    s << "0x" << std::hex << address;
    return s.str();
}

}  // namespace

SassComparison compare_sass(const std::vector<SassFunction> &baseline, const std::vector<SassFunction> &candidate,
                            const SassEntryKey &baseline_key, const SassEntryKey &candidate_key) {
    auto key_of = [](const SassEntryKey &key, const std::string &name) {
        return key ? key(name) : std::optional<std::string>(name);
    };
    SassComparison comparison;
    for (const SassFunction &base : baseline) {
        const std::optional<std::string> base_key = key_of(baseline_key, base.name);
        if (!base_key) continue;
        for (const SassFunction &cand : candidate)
            if (key_of(candidate_key, cand.name) == base_key) {
                comparison.entries.push_back({*base_key, figures_of(base), figures_of(cand), differing_lines(base, cand)});
                break;
            }
    }
    return comparison;
}

toml::table SassComparison::to_toml() const {
    toml::table entries_table;
    for (const SassEntryComparison &e : entries) {
        toml::table entry{{"baseline", variant_table(e.baseline)}, {"candidate", variant_table(e.candidate)}};
        if (e.differing_lines) entry.insert("differing_lines", *e.differing_lines);
        entries_table.insert(e.entry, entry);
    }
    return toml::table{{"tool", tool}, {"entries", entries_table}};
}

SassComparison SassComparison::from_toml(const toml::table &table) {
    SassComparison comparison;
    comparison.tool = table["tool"].value_or(std::string());
    if (const toml::table *entries = table["entries"].as_table())
        for (const auto &[name, node] : *entries) {
            const toml::table *e = node.as_table();
            if (!e) continue;
            SassEntryComparison entry;
            entry.entry = std::string(name.str());
            if (const toml::table *b = (*e)["baseline"].as_table()) entry.baseline = variant_from(*b);
            if (const toml::table *c = (*e)["candidate"].as_table()) entry.candidate = variant_from(*c);
            entry.differing_lines = (*e)["differing_lines"].value<std::int64_t>();
            comparison.entries.push_back(entry);
        }
    return comparison;
}

std::string SassComparison::table_text() const {
    std::ostringstream out;
    std::size_t known = 0, differ = 0;
    for (const SassEntryComparison &e : entries) {
        known += e.differing_lines.has_value();
        differ += e.differing_lines.value_or(0) > 0;
    }
    if (known == entries.size() && !entries.empty()) {
        const std::string all = std::to_string(entries.size()) + (entries.size() == 1 ? " entry" : " entries");
        out << "  SASS " << (differ == 0 ? "identical in " + (entries.size() == 1 ? all : "all " + all)
                                         : "differs in " + std::to_string(differ) + " of " + all)
            << "\n";
    }
    out << "  SASS opcode families (" << tool << "), baseline -> candidate (delta):\n";
    for (const SassEntryComparison &e : entries) {
        const SassVariantFigures &b = e.baseline, &c = e.candidate;
        const bool loops = b.loop && c.loop;
        out << "  " << e.entry;
        if (e.differing_lines)
            out << (*e.differing_lines == 0 ? "; SASS identical" : "; SASS differs: " + std::to_string(*e.differing_lines) + " lines");
        if (loops)
            out << "; main loop " << hex(b.loop_start) << ".." << hex(b.loop_end) << " -> " << hex(c.loop_start)
                << ".." << hex(c.loop_end);
        else out << "; main loop not found in " << (b.loop ? "the candidate" : c.loop ? "the baseline" : "either");
        out << "\n";
        TextTable table{{{"FAMILY"}, {"ENTRY"}}, {}};
        if (loops) table.columns.push_back({"MAIN LOOP"});
        std::vector<std::string> families = sass_families();
        families.push_back("total");
        for (const std::string &family : families) {
            const auto count = [&](const SassHistogram &h) {
                return family == "total" ? h.total : h.families.at(family);
            };
            table.rows.push_back({family, change(count(b.all), count(c.all))});
            if (loops) table.rows.back().push_back(change(count(*b.loop), count(*c.loop)));
        }
        out << s2tp::table_text(table, TextLayout{"    "});
    }
    return out.str();
}

}  // namespace s2tp
