// The keys of the experiment manifest's own tables (sage2tp-experiment(5)), each defined once, here: the
// table, the key, what it holds, its range, its default and what it means. The table drives the manifest's
// reader (ranges, the did-you-mean of an unknown key), the resolved copy prepare writes, the command-line
// settings that share a key's range (SettingRange) and the manual's test, which checks that
// sage2tp-experiment(5) documents every key of the table and no other. The [workload] keys are the
// workload format's, shared with workload files, and stay with its reader (model/workload_set.h).
//
// Usage: manifest_key::time_budget_seconds.key is "budget_seconds";
//   r.number_or(manifest_key::time_budget_seconds, e.budget_seconds) reads it within its range.
#pragma once

#include "formats/toml_schema.h"

#include <string>
#include <vector>

namespace s2tp {

// X(NAME, TABLE, KEY, KIND, LOW, HIGH, DEFAULT, DOC): the key KEY of the table TABLE, named
// manifest_key::NAME_KEY in code.
#define S2TP_MANIFEST_KEYS(X)                                                                                            \
    X(experiment, "experiment", name, string, 0, 0, "", "the experiment's name: not empty, no '/'")                     \
    X(experiment, "experiment", description, string, 0, 0, "\"\"", "free text")                                       \
    X(source, "source", kind, string, 0, 0, "", "\"embedded\" (sage2tp's kernels/) or \"git\" (a local repository)")     \
    X(source, "source", repository, string, 0, 0, "", "git: the local repository, or prepare --repository")             \
    X(source, "source", commit, string, 0, 0, "", "git: the pinned commit, branch or tag, or prepare --commit")         \
    X(source, "source", kernel_sources, strings, 0, 0, "", "the files compiled per variant and compared")              \
    X(source, "source", support_sources, strings, 0, 0, "[]", "files compiled per variant, not compared")              \
    X(source, "source", include_dirs, strings, 0, 0, "[]", "include directories, relative to the tree")                \
    X(source, "source", needs_torch_headers, boolean, 0, 0, "false", "the host code includes <torch/extension.h>")     \
    X(source, "source", abi, string, 0, 0, "\"sage2tp\"", "the kernel ABI adapter of the kernels")                     \
    X(candidate, "candidate", name, string, 0, 0, "\"candidate\"", "the candidate's name; required in [[candidate]]") \
    X(candidate, "candidate", parity_mode, string, 0, 0, "", "\"exact\" or \"tolerance\"; else [parity] mode")       \
    X(candidate, "candidate", patch, string, 0, 0, "", "the patch applied to the candidate's tree")                   \
    X(candidate, "candidate", abi, string, 0, 0, "", "the candidate's kernel ABI adapter; else the baseline's")        \
    X(candidate, "candidate", source, table, 0, 0, "", "[candidate.source]: [source] keys on top of [source]")         \
    X(build, "build", arch, string, 0, 0, "\"sm_121a\"", "the target arch, or \"auto\"")                                \
    X(build, "build", nvcc_flags, strings, 0, 0, "[\"-O3\", \"--use_fast_math\"]", "the flags of every nvcc compile") \
    X(build, "build", extra_flags, strings, 0, 0, "[]", "flags added after nvcc_flags")                               \
    X(sanitize, "sanitize", tools, strings, 0, 0, "[\"memcheck\", \"racecheck\", \"synccheck\", \"initcheck\"]",      \
      "the compute-sanitizer tools run")                                                                                 \
    X(parity, "parity", default_shapes, boolean, 0, 0, "true", "whether parity checks its built-in shapes")             \
    X(parity, "parity", seeds, integers, 0, 0, "[1, 2, 3]", "the input seeds of every shape")                         \
    X(parity, "parity", reference_max_rel_l2, number, 0, 1, "0.05", "the baseline's bound against the CPU reference")  \
    X(parity, "parity", shape, tables, 0, 0, "", "[[parity.shape]]: extra shapes")                                     \
    X(parity, "parity", accuracy_shape, tables, 0, 0, "", "[[parity.accuracy_shape]]: shapes checked for accuracy only") \
    X(parity, "parity", mode, string, 0, 0, "\"exact\"", "\"exact\" or \"tolerance\"")                                  \
    X(parity, "parity", min_cosine, number, 0, 1, "", "the least cosine similarity to the reference")                  \
    X(parity, "parity", max_rel_l1, number, 0, 1, "", "the largest relative L1 error")                                \
    X(parity, "parity", max_rmse, number, 0, 1e6, "", "the largest RMSE")                                             \
    X(parity, "parity", max_abs_error, number, 0, 1e6, "", "the largest absolute error")                              \
    X(parity, "parity", baseline_factor, number, 1, 1000, "1.1", "a candidate's errors at most this times the baseline's") \
    X(parity, "parity", reference_rows, integer, 1, 1 << 20, "256", "query rows per (batch, head) of the GPU reference") \
    X(time, "time", target_half_width, number, 1e-5, 0.5, "0.005", "the ratio interval's half-width that ends timing") \
    X(time, "time", budget_seconds, number, 1, 86400, "60.0", "the most seconds timing takes")                          \
    X(time, "time", min_rounds, integer, 3, 1000000, "20", "the fewest rounds")                                        \
    X(time, "time", repeats, integer, 1, 100, "1", "measurements, each in a fresh process")                            \
    X(time, "time", warmup_launches, integer, 0, 1000, "3", "untimed launches before timing")                          \
    X(time, "time", bootstrap_seed, integer, 0, 0x1p63, "20261129", "the seed of the bootstrap resampling")            \
    X(time, "time", bootstrap_resamples, integer, 100, 1000000, "10000", "bootstrap resamples per interval")          \
    X(time, "time", throttle_fraction, number, 0, 1, "0.75", "the clock fraction below which a GPU throttled")         \
    X(time, "time", ncu_metrics, strings, 0, 0, "", "the raw Nsight Compute metrics time --ncu compares")              \
    X(time, "time", ncu_seq_len, integer, 0, 1 << 24, "0", "the profiled sequence length; 0: the workload's")          \
    X(gate, "gate", max_candidate_p50_ms, number, 0, 1e9, "", "the bound on the candidate's p50; unset: 220")          \
    X(gate, "gate", max_spill_growth_bytes, integer, 0, 1 << 30, "0", "the most spill bytes a candidate may add")     \
    X(gate, "gate", max_ratio_upper, number, 0.01, 100, "1.0", "the ratio interval's upper bound, or \"off\"")         \
    X(gate, "gate", max_geomean_ratio_upper, number, 0.01, 100, "", "over a set: the geometric-mean ratio's bound")    \
    X(gate, "gate", max_worst_ratio_upper, number, 0.01, 100, "", "over a set: every shape's ratio bound")            \
    X(gate, "gate", require_sanitizer, boolean, 0, 0, "false", "whether a skipped sanitizer stage blocks")             \
    X(gate, "gate", waiver, tables, 0, 0, "", "[[gate.waiver]]: conditions that do not block")                         \
    X(gate_waiver, "gate.waiver", condition, string, 0, 0, "", "the gate condition waived")                            \
    X(gate_waiver, "gate.waiver", reason, string, 0, 0, "", "why, shown beside it")

namespace manifest_key {
#define S2TP_MANIFEST_KEY_CONSTANT(NAME, TABLE, KEY, KIND, LOW, HIGH, DEFAULT, DOC) \
    inline constexpr SchemaKey NAME##_##KEY{TABLE, #KEY, SchemaKind::KIND, LOW, HIGH, DEFAULT, DOC};
S2TP_MANIFEST_KEYS(S2TP_MANIFEST_KEY_CONSTANT)
#undef S2TP_MANIFEST_KEY_CONSTANT
}  // namespace manifest_key

// Every key of the manifest's own tables, in the manual's order.
const std::vector<SchemaKey> &manifest_keys();
// The keys of one table ("candidate", "gate.waiver"): what a reader of that table expects.
std::vector<std::string> manifest_keys_of(const std::string &table);

}  // namespace s2tp
