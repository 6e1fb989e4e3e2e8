#include "figures/build_figures.h"
#include "support/table_printer.h"

#include "figures/figure_fields.h"
#include "support/number_format.h"
#include "figures/sass_figures.h"

#include <sstream>

namespace s2tp {

using namespace figure_fields;

std::optional<std::int64_t> EntryResources::spill_bytes() const {
    if (!spill_store_bytes || !spill_load_bytes) return std::nullopt;
    return *spill_store_bytes + *spill_load_bytes;
}

const std::vector<Field<EntryResources>> &EntryResources::fields() {
    using E = EntryResources;
    static const std::vector<Field<E>> table{field("entry", &E::entry, "name"),
                                             field("registers", &E::registers, "per thread"),
                                             field("barriers", &E::barriers, "count"),
                                             field("stack_frame_bytes", &E::stack_frame_bytes, "bytes"),
                                             field("spill_store_bytes", &E::spill_store_bytes, "bytes"),
                                             field("spill_load_bytes", &E::spill_load_bytes, "bytes"),
                                             field("static_smem_bytes", &E::static_smem_bytes, "bytes"),
                                             field("dynamic_smem_bytes", &E::dynamic_smem_bytes, "bytes"),
                                             field("smem_per_block", &E::smem_per_block, "bytes"),
                                             field("threads_per_block", &E::threads_per_block, "threads"),
                                             field("blocks_per_sm", &E::blocks_per_sm, "blocks"),
                                             field("resident_warps", &E::resident_warps, "warps"),
                                             field("warps_per_scheduler", &E::warps_per_scheduler, "warps"),
                                             field("limited_by", &E::limited_by, "resources")};
    return table;
}

toml::table EntryResources::to_toml() const { return write_fields(fields(), *this); }

EntryResources EntryResources::from_toml(const toml::table &t) { return read_fields(fields(), t); }

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

std::string candidate_table(const std::string &name, const EntryTable &baseline, const EntryTable &candidate) {
    TextTable table{{{"ENTRY (baseline -> " + name + ")"}, {"REGISTERS"}, {"SPILL ST/LD B"}, {"SMEM/BLOCK"}, {"BLOCKS/SM"},
                     {"WARPS/SCHEDULER"}},
                    {}};
    // Unset for a host-call candidate's own kernel, whose launch shape only time sees.
    const auto number = [](const std::optional<std::int64_t> &v) { return v ? std::to_string(*v) : missing_figure; };
    for (const auto &[entry, base] : baseline) {
        const auto found = candidate.find(entry);
        if (found == candidate.end()) continue;
        const EntryResources &cand = found->second;
        const std::optional<double> &b_wps = base.warps_per_scheduler, &c_wps = cand.warps_per_scheduler;
        const std::string wps = fixed_or_missing(b_wps, 1) + "->" + fixed_or_missing(c_wps, 1) +
                                (b_wps && c_wps && *c_wps < *b_wps ? "  FELL" : "");
        const auto spills = [&](const EntryResources &e) {
            return number(e.spill_store_bytes) + "/" + number(e.spill_load_bytes);
        };
        table.rows.push_back({entry, number(base.registers) + "->" + number(cand.registers), spills(base) + "->" + spills(cand),
                              number(base.smem_per_block) + "->" + number(cand.smem_per_block),
                              number(base.blocks_per_sm) + "->" + number(cand.blocks_per_sm), wps});
    }
    return table_text(table);
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

const std::vector<Field<CandidateBuild>> &CandidateBuild::fields() {
    using C = CandidateBuild;
    static const std::vector<Field<C>> table{named_map("kernels", &C::kernels, "by entry", Presence::always),
                                             field("summary", &C::summary, "line")};
    return table;
}

const std::vector<Field<BuildFigures>> &BuildFigures::fields() {
    using B = BuildFigures;
    static const std::vector<Field<B>> table{field("arch", &B::arch, "arch"),
                                             field("nvcc_version", &B::nvcc_version, "version"),
                                             field("jobs", &B::jobs, "compiles"),
                                             field("flags", &B::flags, "nvcc flags", Presence::always),
                                             named_map("baseline.kernels", &B::baseline, "by entry"),
                                             named_map("candidates", &B::candidates, "by name"),
                                             field("summary", &B::summary, "line"),
                                             field("sass", &B::sass, "histogram")};
    return table;
}

toml::table BuildFigures::to_toml() const { return write_fields(fields(), *this); }

BuildFigures BuildFigures::from_toml(const toml::table &t) { return read_fields(fields(), t); }

bool BuildFigures::operator==(const BuildFigures &o) const {
    return arch == o.arch && nvcc_version == o.nvcc_version && jobs == o.jobs && flags == o.flags &&
           baseline == o.baseline && candidates == o.candidates &&
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
