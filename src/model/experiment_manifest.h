// The experiment manifest (TOML; sage2tp-experiment(5)): where the kernel sources come from, the
// candidate patch, the target arch, parity shapes, the real workload and the gate thresholds.
// prepare resolves it once into <run>/experiment.toml; every later stage reads that copy.
#pragma once

#include "model/accuracy.h"
#include "model/attention_problem.h"
#include "model/gate_rules.h"
#include "model/manifest_keys.h"
#include "model/workload_set.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {


// Where one variant's kernels come from: [source] for the baseline, and for the candidate [source]
// with the keys of [candidate.source] on top (sage2tp-experiment(5)).
struct SourceSpec {
    std::string kind = "embedded";            // embedded | git
    std::string repository;                   // git: local path of the repository (absolute)
    std::string commit;                       // git: the pinned commit (an id, branch or tag)
    std::vector<std::string> kernel_sources;  // compiled per variant and compared (the A/B)
    std::vector<std::string> support_sources; // compiled per variant, not compared (quantizers)
    std::vector<std::string> include_dirs;
    bool needs_torch_headers = false;         // host code includes <torch/extension.h>: sage2tp's torch subset

    // The same tree before any patch: the same embedded kernels, or the same repository and commit.
    bool same_checkout(const SourceSpec &other) const {
        return kind == other.kind && repository == other.repository && commit == other.commit;
    }
};

// What prepare's command line puts in place of the manifest's values, so that a shipped manifest
// works on a user's own checkout without editing it.
struct SourceOverrides {
    std::optional<std::string> repository;        // every git source's repository
    std::optional<std::string> commit;            // [source] commit (the candidate inherits it)
    std::optional<std::string> candidate_commit;  // the commit of a manifest's only candidate
    std::map<std::string, std::string> candidate_commits;  // candidate name -> its commit (NAME=REV)
    // The patch of a manifest's only candidate in place of its own (prepare --patch FILE, an absolute
    // path), or "" for none (--no-patch).
    std::optional<std::string> candidate_patch;
    // The manifest's only candidate is the baseline repository's working tree, its diff against the
    // baseline commit taken anew by each prepare (prepare --candidate-worktree); unset otherwise.
    std::optional<bool> candidate_worktree;
    // The experiment's name and description in place of the manifest's [experiment] ones (prepare --name,
    // --description), so that a run of another change than the manifest's is labelled as that change.
    std::optional<std::string> experiment_name, experiment_description;
};
// Adds one --candidate-commit value: NAME=REV (NAME a candidate name) sets that candidate's commit,
// anything else is the REV of a one-candidate manifest. Error(usage) for a name or plain REV given twice.
void add_candidate_commit_override(SourceOverrides &overrides, const std::string &value);
// The metrics `time --ncu` compares unless [time] ncu_metrics names others: duration and SM cycles,
// occupancy, pipe and issue utilisation, the main warp-stall reasons, shared-memory bank conflicts,
// DRAM and L2 throughput and the L2 hit rate.
const std::vector<std::string> &default_ncu_metrics();

// One candidate: a name, its sources ([source] with its own source keys on top), its kernel ABI and
// the patch applied to its tree. A manifest's single [candidate] table is the candidate "candidate"
// unless it has a name; each [[candidate]] table names its own ([a-z][a-z0-9-]{0,31}, neither
// "baseline" nor "support", each once).
struct CandidateSpec {
    std::string name = "candidate";
    SourceSpec source;
    std::string abi = "sage2tp";  // the candidate's abi, else the baseline's
    std::string patch;            // absolute after resolution; empty when the candidate has none
    std::optional<ParityMode> parity_mode;  // the candidate's parity_mode, else [parity] mode
};

// time interleaves the baseline, the A/A control and every candidate in each round: more arms make
// each round longer and the rotation of positions slower to even out.
inline constexpr std::size_t max_candidates = 6;

struct Experiment {
    std::string name;
    std::string description;

    SourceSpec baseline_source;               // [source]
    std::string baseline_abi = "sage2tp";     // the kernel ABI adapter of the baseline's kernels ([source] abi)
    std::vector<CandidateSpec> candidates;    // in manifest order; never empty once loaded

    // `variant` is "baseline" or a candidate's name; Error(usage) for any other name.
    const SourceSpec &source(const std::string &variant) const;
    const std::string &abi(const std::string &variant) const;
    const CandidateSpec &candidate(const std::string &name) const;
    // "baseline" followed by every candidate's name: the variants build, sanitize and parity go through.
    std::vector<std::string> variant_names() const;
    // The quantization kernels feed both variants: the baseline's support_sources when it lists any,
    // else sage2tp's embedded quantize.cu, built in its own "support" tree.
    bool needs_support_tree() const { return baseline_source.support_sources.empty(); }

    // [build]
    std::string arch = "sm_121a";
    std::vector<std::string> nvcc_flags = {"-O3", "--use_fast_math"};
    std::vector<std::string> extra_flags;

    // [sanitize]
    std::vector<std::string> sanitizer_tools = {"memcheck", "racecheck", "synccheck", "initcheck"};

    // [parity]
    bool parity_default_shapes = true;
    std::vector<AttentionProblem> parity_shapes;  // extra shapes (or the only ones when default is off)
    std::vector<std::int64_t> parity_seeds = {1, 2, 3};
    double reference_max_rel_l2 = 0.05;
    ParityMode parity_mode = ParityMode::exact;      // every candidate's unless it names its own
    AccuracyLimits accuracy_limits;                  // min_cosine, max_rel_l1, max_rmse, max_abs_error, baseline_factor
    std::int64_t reference_rows = default_reference_rows;  // query rows per (batch, head) of the float64 GPU reference
    // [[parity.accuracy_shape]]: checked against the GPU reference only (too long for the CPU one), never
    // timed; the long-sequence guard.
    std::vector<AttentionProblem> accuracy_shapes;

    ParityMode parity_mode_of(const std::string &candidate) const;
    // Whether parity computes the accuracy figures: a tolerance candidate, accuracy shapes or limits.
    bool checks_accuracy() const;

    // [workload]: one workload, or (set = NAME) a workload set. With a set, `workload` is its first
    // workload, for what runs on one shape (phases, time --ncu, sanitize's timing-free checks).
    WorkloadSpec workload;
    std::optional<WorkloadSet> workload_set;
    // The workloads time measures and parity checks the tails of: the set's, or the one workload.
    std::vector<SetWorkload> timed_workloads() const;

    // [time]
    double target_half_width = 0.005;
    double budget_seconds = 60.0;
    std::int64_t min_rounds = 20;  // below about 20 rounds a bootstrap interval means little
    std::int64_t repeats = 1;      // time --repeat: measurements, each in a fresh process
    std::int64_t warmup_launches = 3;
    std::uint64_t bootstrap_seed = 20261129;
    std::int64_t bootstrap_resamples = 10000;
    double throttle_fraction = 0.75;
    // time --ncu: the raw Nsight Compute metrics profiled and compared (exact `ncu --page raw` names)
    // and the sequence length of the profiled shape (0: the workload's own; else len_q = len_kv = N of
    // the same generated workload, so that a long workload profiles in bounded time).
    std::vector<std::string> ncu_metrics = default_ncu_metrics();
    std::int64_t ncu_seq_len = 0;

    // [gate]
    // The bound on the candidate's p50 when the manifest names none: the original experiment's, measured
    // on the DGX Spark (GB10, sm_121a). It means nothing on another GPU, so a failure against it says
    // where it comes from, and over a workload set it judges no shape.
    static constexpr double default_max_candidate_p50_ms = 220.0;
    // The relative-speed bound when the manifest names none: a change is worth shipping only when the
    // whole interval of its candidate/baseline ratio lies below 1, i.e. when it is faster. Only an
    // explicit `max_ratio_upper = "off"` turns the condition off.
    static constexpr double default_max_ratio_upper = 1.0;

    std::optional<double> max_candidate_p50_ms;  // as the manifest sets it; unset, the default applies
    std::int64_t max_spill_growth_bytes = 0;
    // Relative speed gate: ratio CI entirely below this; nullopt when the manifest says "off".
    std::optional<double> max_ratio_upper = default_max_ratio_upper;
    // Over a workload set: the geometric-mean ratio's interval, and every shape's, entirely below these.
    std::optional<double> max_geomean_ratio_upper, max_worst_ratio_upper;
    bool require_sanitizer = false;
    // [[gate.waiver]]: gate conditions that do not block, each with why (model/gate_rules.h).
    std::vector<GateWaiver> gate_waivers;
};

// Reads and validates a manifest. Relative paths inside it (patch, workload file, tensor files,
// git repository) resolve against the manifest's own directory. Errors name file:line:column.
// `overrides` replace manifest values (prepare's --repository, --commit, --candidate-commit).
Experiment load_experiment(const std::filesystem::path &manifest, const SourceOverrides &overrides = {});

// The manifest a --manifest word names: the file at that path when there is one, else the shipped
// manifest of that name (data/experiments/NAME.toml, NAME with or without ".toml"). Error(usage) saying
// that no such file exists and listing the shipped manifests otherwise.
std::filesystem::path find_manifest(const std::string &word);
// The names of the shipped manifests (data/experiments/*.toml without ".toml"), sorted. Error(usage) as
// data_root() when the shipped data is not found.
std::vector<std::string> shipped_manifest_names();

// The characters a compiler flag may hold: letters, digits and - _ = . , / + : @ %. nvcc runs its host
// compiler and its own steps through sh -c, with the flags inside double quotes, where $ ` " \ still
// run commands; a flag is refused before it gets there. Error(usage): `where` ("file:line:column:
// [build] nvcc_flags") names the flag.
void check_compiler_flag(const std::string &flag, const std::string &where);

// The settings that `sage2tp time` and `sage2tp gate` can also take on their command lines: the flag and
// the manifest key whose range it shares, so a flag and the key can never disagree on what is in range.
struct SettingRange {
    const SchemaKey &setting;  // the manifest key, e.g. [time] budget_seconds; an integer key takes whole numbers
    const char *flag;          // the command's option, e.g. "budget"
};
inline constexpr SettingRange time_target_half_width_range{manifest_key::time_target_half_width, "target-half-width"};
inline constexpr SettingRange time_budget_seconds_range{manifest_key::time_budget_seconds, "budget"};
inline constexpr SettingRange time_min_rounds_range{manifest_key::time_min_rounds, "min-rounds"};
inline constexpr SettingRange time_repeats_range{manifest_key::time_repeats, "repeat"};
inline constexpr SettingRange gate_max_candidate_p50_ms_range{manifest_key::gate_max_candidate_p50_ms, "max-p50-ms"};
inline constexpr SettingRange gate_max_spill_growth_bytes_range{manifest_key::gate_max_spill_growth_bytes,
                                                                "max-spill-growth-bytes"};
inline constexpr SettingRange gate_max_ratio_upper_range{manifest_key::gate_max_ratio_upper, "max-ratio"};
inline constexpr SettingRange gate_max_geomean_ratio_upper_range{manifest_key::gate_max_geomean_ratio_upper,
                                                                 "max-geomean-ratio"};
inline constexpr SettingRange gate_max_worst_ratio_upper_range{manifest_key::gate_max_worst_ratio_upper,
                                                               "max-worst-ratio"};

// A command-line value for `range`: Error(usage) naming the flag, its range and the manifest key when it
// is outside the range (or not whole, for a count); else the value.
double checked_setting(const SettingRange &range, double value);

// The embedded quantization source that the "support" tree is built from, and its include directory.
inline const char *embedded_quantize_source() { return "kernels/quantize.cu"; }
inline const char *embedded_include_dir() { return "kernels"; }

// A run's own pins live in <run>/pins.toml ([expected_sha256], as read_expected_sha256 reads it), written
// by `time --pin` and by a baseline's first passing time stage when nothing pinned its kernel, not in
// experiment.toml: that file is prepare's, recorded by digest, and no later stage changes it.
// apply_run_pins overlays the pins file (when it exists) on the manifest's pins.
void apply_run_pins(WorkloadSpec &workload, const std::filesystem::path &pins);
// Records `sha` as the expected output for `key` in the pins file, rewritten atomically; returns the
// pin it replaces (the run's or the manifest's), if that differed.
std::optional<std::string> pin_expected_output_sha256(const std::filesystem::path &pins, const WorkloadSpec &workload,
                                                      const PinKey &key, const std::string &sha);

// Serialises a resolved experiment as TOML (what prepare writes to <run>/experiment.toml); loading
// that file again gives the same Experiment.
std::string experiment_to_toml(const Experiment &experiment);

}  // namespace s2tp
