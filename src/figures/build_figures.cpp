#include "figures/build_figures.h"

#include "figures/figure_fields.h"
#include "support/number_format.h"
#include "figures/sass_figures.h"

#include <iomanip>
#include <sstream>

namespace s2tp {

using namespace figure_fields;

std::optional<std::int64_t> EntryResources::spill_bytes() const {
    if (!spill_store_bytes || !spill_load_bytes) return std::nullopt;
    return *spill_store_bytes + *spill_load_bytes;
}

toml::table EntryResources::to_toml() const {
    toml::table t;
    put(t, "entry", entry);
    put(t, "registers", registers);
    put(t, "barriers", barriers);
    put(t, "stack_frame_bytes", stack_frame_bytes);
    put(t, "spill_store_bytes", spill_store_bytes);
    put(t, "spill_load_bytes", spill_load_bytes);
    put(t, "static_smem_bytes", static_smem_bytes);
    put(t, "dynamic_smem_bytes", dynamic_smem_bytes);
    put(t, "smem_per_block", smem_per_block);
    put(t, "threads_per_block", threads_per_block);
    put(t, "blocks_per_sm", blocks_per_sm);
    put(t, "resident_warps", resident_warps);
    put(t, "warps_per_scheduler", warps_per_scheduler);
    put(t, "limited_by", limited_by);
    return t;
}

EntryResources EntryResources::from_toml(const toml::table &t) {
    EntryResources e;
    e.entry = string_of(t, "entry");
    e.registers = integer(t, "registers");
    e.barriers = integer(t, "barriers");
    e.stack_frame_bytes = integer(t, "stack_frame_bytes");
    e.spill_store_bytes = integer(t, "spill_store_bytes");
    e.spill_load_bytes = integer(t, "spill_load_bytes");
    e.static_smem_bytes = integer(t, "static_smem_bytes");
    e.dynamic_smem_bytes = integer(t, "dynamic_smem_bytes");
    e.smem_per_block = integer(t, "smem_per_block");
    e.threads_per_block = integer(t, "threads_per_block");
    e.blocks_per_sm = integer(t, "blocks_per_sm");
    e.resident_warps = integer(t, "resident_warps");
    e.warps_per_scheduler = real(t, "warps_per_scheduler");
    e.limited_by = string_of(t, "limited_by");
    return e;
}

bool EntryResources::operator==(const EntryResources &o) const {
    return entry == o.entry && registers == o.registers && barriers == o.barriers &&
           stack_frame_bytes == o.stack_frame_bytes && spill_store_bytes == o.spill_store_bytes &&
           spill_load_bytes == o.spill_load_bytes && static_smem_bytes == o.static_smem_bytes &&
           dynamic_smem_bytes == o.dynamic_smem_bytes && smem_per_block == o.smem_per_block &&
           threads_per_block == o.threads_per_block && blocks_per_sm == o.blocks_per_sm &&
           resident_warps == o.resident_warps && warps_per_scheduler == o.warps_per_scheduler &&
           limited_by == o.limited_by;
}

namespace {

template <typename T>
using EntryFigure = std::optional<T> (*)(const EntryResources &);

// Over every baseline entry, the pair whose candidate-minus-baseline is worst: largest when growth is
// bad, smallest when a fall is bad. Unset when any entry lacks the figure on either side.
template <typename T>
std::optional<WorstEntry<T>> worst_entry(const EntryTable &baseline, const EntryTable &candidate,
                                         EntryFigure<T> figure, bool growth_is_bad) {
    std::optional<WorstEntry<T>> worst;
    for (const auto &[name, base_entry] : baseline) {
        const auto found = candidate.find(name);
        if (found == candidate.end()) return std::nullopt;
        const std::optional<T> base = figure(base_entry), cand = figure(found->second);
        if (!base || !cand) return std::nullopt;
        const T change = *cand - *base;
        const bool worse = !worst || (growth_is_bad ? change > worst->candidate - worst->baseline
                                                    : change < worst->candidate - worst->baseline);
        if (worse) worst = WorstEntry<T>{name, *base, *cand};
    }
    return worst;
}

std::optional<std::int64_t> smem_of(const EntryResources &e) { return e.smem_per_block; }
std::optional<std::int64_t> spills_of(const EntryResources &e) { return e.spill_bytes(); }
std::optional<std::int64_t> registers_of(const EntryResources &e) { return e.registers; }
std::optional<double> warps_of(const EntryResources &e) { return e.warps_per_scheduler; }

toml::table entry_table(const EntryTable &entries) {
    toml::table t;
    for (const auto &[name, e] : entries) t.insert(name, e.to_toml());
    return t;
}

EntryTable entries_from(const toml::table &t) {
    EntryTable entries;
    each_named(t, "kernels", [&](const std::string &name, const toml::table &e) {
        entries.emplace(name, EntryResources::from_toml(e));
    });
    return entries;
}

std::string candidate_table(const std::string &name, const EntryTable &baseline, const EntryTable &candidate) {
    std::ostringstream out;
    out << std::left << std::setw(30) << ("ENTRY (baseline -> " + name + ")") << std::setw(12) << "REGISTERS"
        << std::setw(18) << "SPILL ST/LD B" << std::setw(15) << "SMEM/BLOCK" << std::setw(11) << "BLOCKS/SM"
        << "WARPS/SCHEDULER\n";
    const auto number = [](const std::optional<std::int64_t> &v) { return std::to_string(v.value_or(0)); };
    for (const auto &[entry, base] : baseline) {
        const auto found = candidate.find(entry);
        if (found == candidate.end()) continue;
        const EntryResources &cand = found->second;
        const double b_wps = base.warps_per_scheduler.value_or(0.0), c_wps = cand.warps_per_scheduler.value_or(0.0);
        const std::string wps = fixed(b_wps, 1) + "->" + fixed(c_wps, 1) + (c_wps < b_wps ? "  FELL" : "");
        const auto spills = [&](const EntryResources &e) {
            return number(e.spill_store_bytes) + "/" + number(e.spill_load_bytes);
        };
        out << std::setw(30) << entry << std::setw(12) << (number(base.registers) + "->" + number(cand.registers))
            << std::setw(18) << (spills(base) + "->" + spills(cand)) << std::setw(15)
            << (number(base.smem_per_block) + "->" + number(cand.smem_per_block)) << std::setw(11)
            << (number(base.blocks_per_sm) + "->" + number(cand.blocks_per_sm)) << wps << "\n";
    }
    return out.str();
}

}  // namespace

ResourceAggregates aggregate_resources(const EntryTable &baseline, const EntryTable &candidate) {
    ResourceAggregates a;
    for (const auto &[name, base] : baseline) {
        const auto found = candidate.find(name);
        if (found == candidate.end()) continue;
        ++a.entries;
        a.baseline_max_smem = std::max(a.baseline_max_smem, base.smem_per_block.value_or(0));
        a.candidate_max_smem = std::max(a.candidate_max_smem, found->second.smem_per_block.value_or(0));
        if (base.warps_per_scheduler && found->second.warps_per_scheduler &&
            *found->second.warps_per_scheduler < *base.warps_per_scheduler)
            a.any_warps_fell = true;
    }
    if (baseline.empty()) return a;
    a.smem = worst_entry<std::int64_t>(baseline, candidate, smem_of, true);
    a.spills = worst_entry<std::int64_t>(baseline, candidate, spills_of, true);
    a.warps = worst_entry<double>(baseline, candidate, warps_of, false);
    if (auto registers = worst_entry<std::int64_t>(baseline, candidate, registers_of, true))
        a.max_register_growth = registers->candidate - registers->baseline;
    if (a.spills) {
        std::int64_t most = -1;
        for (const auto &[name, base] : baseline)
            if (*base.spill_bytes() > most) {
                most = *base.spill_bytes();
                a.baseline_max_spill_entry = name;
            }
        a.baseline_max_spill_bytes = most;
    }
    return a;
}

ResourceAggregates BuildFigures::aggregates(const std::string &candidate) const {
    const auto found = candidates.find(candidate);
    if (found == candidates.end()) return ResourceAggregates{};
    return aggregate_resources(baseline, found->second.kernels);
}

toml::table BuildFigures::to_toml() const {
    toml::table t;
    put(t, "arch", arch);
    put(t, "nvcc_version", nvcc_version);
    put(t, "jobs", jobs);
    t.insert("flags", string_array(flags));
    if (torch_headers)
        t.insert("torch_headers", toml::table{{"found_by", torch_headers->found_by},
                                              {"include_dirs", string_array(torch_headers->include_dirs)}});
    if (!baseline.empty()) t.insert("baseline", toml::table{{"kernels", entry_table(baseline)}});
    if (!candidates.empty()) {
        toml::table named;
        for (const auto &[name, c] : candidates) {
            toml::table one{{"kernels", entry_table(c.kernels)}};
            put(one, "summary", c.summary);
            named.insert(name, std::move(one));
        }
        t.insert("candidates", std::move(named));
    }
    put(t, "summary", summary);
    if (sass) t.insert("sass", *sass);
    return t;
}

BuildFigures BuildFigures::from_toml(const toml::table &t) {
    BuildFigures f;
    f.arch = string_of(t, "arch");
    f.nvcc_version = string_of(t, "nvcc_version");
    f.jobs = integer(t, "jobs");
    f.flags = strings(t, "flags");
    if (const toml::table *torch = t["torch_headers"].as_table())
        f.torch_headers = TorchHeadersFigure{string_of(*torch, "found_by"), strings(*torch, "include_dirs")};
    if (const toml::table *base = t["baseline"].as_table()) f.baseline = entries_from(*base);
    each_named(t, "candidates", [&](const std::string &name, const toml::table &c) {
        f.candidates.emplace(name, CandidateBuild{entries_from(c), string_of(c, "summary")});
    });
    f.summary = string_of(t, "summary");
    if (const toml::table *sass = t["sass"].as_table()) f.sass = *sass;
    return f;
}

bool BuildFigures::operator==(const BuildFigures &o) const {
    return arch == o.arch && nvcc_version == o.nvcc_version && jobs == o.jobs && flags == o.flags &&
           torch_headers == o.torch_headers && baseline == o.baseline && candidates == o.candidates &&
           summary == o.summary && sass.has_value() == o.sass.has_value() && (!sass || *sass == *o.sass);
}

std::string BuildFigures::text() const {
    if (baseline.empty()) return "";  // a failed compile: its reasons say why
    std::string out = "  " + arch + ", " + nvcc_version;
    for (const auto &[name, c] : candidates) out += "\n" + candidate_table(name, baseline, c.kernels);
    if (sass) out += "\n" + SassComparison::from_toml(*sass).table_text();
    return out;
}

}  // namespace s2tp
