// Workloads: one attention problem with its inputs and pinned outputs (a [workload] table, in a
// manifest or a file of its own under data/workloads/), and workload sets: the shapes one model (or one
// family of models) runs, each a workload with an optional weight, in data/workloads/sets/NAME.toml
// (sage2tp-experiment(5) WORKLOAD SETS). time measures every shape of a set and combines them; parity
// checks each shape's tails; a set may also serve parity alone.
//
// A set file:
//   [set]
//   name = "wan21-14b"                 # the file's stem
//   description = "..."
//   [[workload]]
//   name = "t2v-480p"                  # [a-z0-9][a-z0-9._-]{0,63}, once per set
//   source = "Wan-AI/Wan2.1-T2V-14B config.json: ..."   # where the shape comes from (required)
//   weight = 1.0                       # optional, >= 0, not all 0: its share of the model's attention time
//   file = "../wan21-14b-block24.toml" # either a workload file, or the [workload] keys inline
//
// Usage:
//   s2tp::WorkloadSet set = s2tp::load_workload_set(s2tp::workload_set_file("wan21-14b", manifest_dir));
//   for (const s2tp::SetWorkload &w : set.workloads) ... w.workload.problem, w.weight ...
#pragma once

#include "formats/toml_schema.h"
#include "model/attention_problem.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace s2tp {

// What an output pin belongs to: the kernel whose output bytes it records, and the build target. Kernels
// of different numerics give different bytes on one workload (upstream's sm90 kernel is not its sm89
// kernel), so a pin names its kernel as the adapter does (KernelAbi::pinned_kernel, gpu/kernel_abi.h):
// the `abi` of the launcher, whose name also says how its inputs are quantized.
struct PinKey {
    std::string kernel;  // "sageattention-sm90-accum-f32-fuse-v-scale"
    std::string arch;    // "sm_90a"
    std::string text() const { return kernel + " on " + arch; }
};

// The kernel a bare `ARCH = "sha"` entry of [expected_sha256] pins: upstream's sm89 kernel as its default
// launcher instantiates it, whose bytes sage2tp's embedded kernels reproduce. Pins written before pins
// named their kernel are all of it, and it is written in that form still.
inline constexpr const char *bare_pin_kernel = "sageattention-sm89";

struct OutputPin {
    PinKey key;
    std::string sha256;
};

struct WorkloadSpec {
    std::string name;
    AttentionProblem problem;               // sm_scale defaults to head_dim^-0.5, LSE off
    std::uint64_t seed = 0;                   // generator seed (when no tensor files)
    std::optional<std::string> q_file, k_file, v_file;  // captured tensors (.npy / .safetensors)
    std::vector<OutputPin> expected_sha256;  // pinned output SHA-256s, per kernel and arch
};

// Reads an attention problem's keys (batch, heads_q, heads_kv, len_q, len_kv, head_dim, layout, causal,
// dtype, sm_scale) from a workload, set entry or [[parity.shape]] table; Error(usage) naming the table's
// position for a problem the kernels do not support.
AttentionProblem read_attention_problem(TableReader &reader, bool with_lse);
// The same keys as a TOML table (what experiment_to_toml writes).
toml::table attention_problem_table(const AttentionProblem &problem);

// The workload keys of a [workload] table (name, the problem's keys, seed, [tensors], [expected_sha256])
// read from `reader`, relative tensor paths against base_dir. The caller calls reader.finish().
WorkloadSpec read_workload(TableReader &reader, const std::filesystem::path &base_dir);
toml::table workload_table(const WorkloadSpec &workload);

// Reads a workload file (the [workload] table of its own TOML file).
WorkloadSpec load_workload(const std::filesystem::path &file);

// The entries of an [expected_sha256] table: `ARCH = "sha"` pins bare_pin_kernel's output, and a table
// `[expected_sha256.KERNEL]` of `ARCH = "sha"` entries pins KERNEL's. Each SHA-256 as sha256_hex writes
// it: 64 lower-case hex digits, since any other spelling could never match an output. Error(usage)
// naming file:line and `table_name` otherwise.
std::vector<OutputPin> read_expected_sha256(const toml::table &table, const std::string &file,
                                            const std::string &table_name);
// The same table back: bare_pin_kernel's pins as bare entries, every other kernel's as its own table.
toml::table expected_sha256_table(const std::vector<OutputPin> &pins);
// Sets the pin of `pin.key`, replacing one of the same key.
void set_pin(std::vector<OutputPin> &pins, const OutputPin &pin);

// The output SHA-256 pinned for `key` in [workload.expected_sha256], if any.
std::optional<std::string> expected_output_sha256(const WorkloadSpec &workload, const PinKey &key);

struct SetWorkload {
    WorkloadSpec workload;
    std::string source;  // the public config the shape is taken from
    std::optional<double> weight;
};

struct WorkloadSet {
    std::string name;
    std::string description;
    std::vector<SetWorkload> workloads;  // in the file's order; at least one, names distinct

    // Each workload's weight for the combined mean: its own, or 1 when the set gives none.
    std::vector<double> weights() const;
    bool weighted() const;  // any workload gives a weight
    const SetWorkload *find(const std::string &name) const;
};

// At most this many shapes: time measures each with the whole arm rotation.
inline constexpr std::size_t max_set_workloads = 16;

// The set in a table holding [set] and [[workload]] (a set file's top level, or the [workload_set] table
// of a resolved experiment.toml), `file` naming it in messages, relative paths against base_dir.
// Error(usage) naming file, line and key for a missing or malformed workload, a duplicate name, heads
// not divisible by KV heads, a negative weight or weights that are all 0, and any unknown key.
WorkloadSet read_workload_set(const toml::table &table, const std::string &file, const std::filesystem::path &base_dir);
WorkloadSet load_workload_set(const std::filesystem::path &file);
// The set with every workload inline (no file keys): what a resolved experiment.toml holds, so that the
// run keeps its shapes when the set file changes; read_workload_set reads it back to the same set.
toml::table workload_set_table(const WorkloadSet &set);

// Where the set `name_or_path` is: a plain name ("wan21-14b") is the shipped
// data/workloads/sets/NAME.toml; anything with a '/' or ending in .toml a file, relative against
// base_dir. Error(usage) naming the shipped sets when a name has no file.
std::filesystem::path workload_set_file(const std::string &name_or_path, const std::filesystem::path &base_dir);
// The names of the shipped sets, sorted.
std::vector<std::string> shipped_workload_sets();

}  // namespace s2tp
