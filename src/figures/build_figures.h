// The build checkpoint's figures as a struct (sage2tp-checkpoint(5), "Figures of build"): the
// resources of the baseline's entry points once, and per candidate (keyed by its name) its own
// entries. The worst-entry aggregates the resource gates judge (shared memory, spills, warps per
// scheduler) are defined here, once, over those entries; they are derived, not stored.
//
// Usage:
//   BuildFigures figures = BuildFigures::from_toml(checkpoint.figures);
//   ResourceAggregates worst = figures.aggregates("candidate");
//   reporter.say(figures.text());
#pragma once

#include "figures/figure_fields.h"

#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// The figures layout of the build, sanitize and parity checkpoints (the baseline's part once, each
// candidate's under [figures.candidates.NAME]); part of those stages' fingerprints.
inline constexpr const char *kFiguresLayout = "per-candidate-1";

// One entry point of one variant: ptxas's resources and the modelled occupancy. Every number is
// optional so that a checkpoint lacking one reads back unset (the gate then reports NOT CHECKED).
struct EntryResources {
    std::string entry;  // the full (demangled) name
    std::optional<std::int64_t> registers, barriers, stack_frame_bytes, spill_store_bytes, spill_load_bytes,
        static_smem_bytes, dynamic_smem_bytes, smem_per_block, threads_per_block, blocks_per_sm, resident_warps;
    std::optional<double> warps_per_scheduler;
    std::string limited_by;

    // Spill stores plus loads; unset unless both are recorded.
    std::optional<std::int64_t> spill_bytes() const;

    static const std::vector<figure_fields::Field<EntryResources>> &fields();
    toml::table to_toml() const;
    static EntryResources from_toml(const toml::table &table);
    bool operator==(const EntryResources &other) const;
};

// Entries keyed by the kernel ABI adapter's short name ("hd128_bf16_nomask").
using EntryTable = std::map<std::string, EntryResources>;

// The entry whose candidate fares worst against its own baseline, for one figure.
template <typename T>
struct WorstEntry {
    std::string entry;  // short name
    T baseline{};
    T candidate{};
    bool operator==(const WorstEntry &other) const {
        return entry == other.entry && baseline == other.baseline && candidate == other.candidate;
    }
};

// The aggregates of one candidate against the baseline over every entry both have. A figure is unset
// when any entry lacks it on either side, or when the candidate lacks one of the baseline's entries.
struct ResourceAggregates {
    std::size_t entries = 0;
    std::optional<WorstEntry<std::int64_t>> smem;    // largest growth of smem_per_block
    std::optional<WorstEntry<std::int64_t>> spills;  // largest growth of spill stores + loads
    std::optional<WorstEntry<double>> warps;         // largest fall in warps_per_scheduler
    std::optional<std::int64_t> max_register_growth;
    // The most the baseline spills in any entry by itself, and where; set with `spills`.
    std::optional<std::int64_t> baseline_max_spill_bytes;
    std::string baseline_max_spill_entry;
    // The largest smem_per_block of each side, and whether warps per scheduler fell in any entry.
    std::int64_t baseline_max_smem = 0, candidate_max_smem = 0;
    bool any_warps_fell = false;
};

ResourceAggregates aggregate_resources(const EntryTable &baseline, const EntryTable &candidate);

struct CandidateBuild {
    EntryTable kernels;
    std::string summary;  // this candidate's line of the stage summary

    static const std::vector<figure_fields::Field<CandidateBuild>> &fields();
    bool operator==(const CandidateBuild &other) const { return kernels == other.kernels && summary == other.summary; }
};

struct BuildFigures {
    std::string arch, nvcc_version;
    std::optional<std::int64_t> jobs;
    std::vector<std::string> flags;
    EntryTable baseline;                              // [figures.baseline.kernels]
    std::map<std::string, CandidateBuild> candidates;  // [figures.candidates.<name>]
    std::string summary;
    std::optional<toml::table> sass;  // SassComparison::to_toml(), with --sass

    ResourceAggregates aggregates(const std::string &candidate) const;  // no entries for an unknown name

    static const std::vector<figure_fields::Field<BuildFigures>> &fields();
    toml::table to_toml() const;
    static BuildFigures from_toml(const toml::table &figures);
    bool operator==(const BuildFigures &other) const;

    // What `sage2tp build` prints: the arch and compiler, then one table per candidate
    // ("ENTRY (baseline -> NAME)"), then the SASS table when there is one.
    std::string text() const;
};

}  // namespace s2tp
