// The one request that the sanitize stage (under compute-sanitizer) and time --ncu (under ncu) hand a
// `sage2tp exec` process: launches of one variant, on one or several sanitizer shapes in turn (one
// launch each, synchronized before the next), or one launch on the run's workload or on the workload
// of a file (time --workload FILE --ncu).
// to_argv writes the command line and from_args, in subcommands/exec.cpp, reads it back, so the two
// sides cannot drift apart (sage2tp(1) and sage2tp-sanitize(1) show the words).
//
// Usage:
//   ExecRequest request{run.root(), "baseline", {2, 5}, std::nullopt, 1, std::nullopt, device_index};  // shapes 2 and 5, seed 1
//   std::vector<std::string> target = request.to_argv(current_executable());
#pragma once

#include "pipeline/cli.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct ExecRequest {
    std::filesystem::path run;
    std::string variant;                 // "baseline" or a candidate's name
    // Indices into sanitizer_shapes(), launched in this order; empty: the run's workload.
    std::vector<int> sanitize_shapes;
    std::optional<std::filesystem::path> workload_file;  // with the workload: this file's instead of the run's
    std::optional<std::uint64_t> seed;   // unset: 1 for a sanitizer shape, the workload's own
    std::optional<std::int64_t> seq_len; // with the workload: len_q = len_kv = this
    int device_index = 0;

    // `executable` exec --run RUN --variant V (--sanitize-shape I[,J...] | --workload [--workload-file FILE]) [--seed N]
    //   [--seq-len N] --device D
    std::vector<std::string> to_argv(const std::filesystem::path &executable) const;
    // Adds the options to_argv writes to `exec`'s command line.
    static void add_options(CommandLine &command_line);
    // From exec's parsed command line; Error(usage) without --variant, without exactly one of
    // --sanitize-shape and --workload, with --workload-file but not --workload, or with a shape list
    // that is empty, repeats an index, or holds anything but indices of sanitizer_shapes() (naming the
    // word and the valid range). `run` is the run the global options select.
    static ExecRequest from_args(const CommandLine &command_line, const std::filesystem::path &run);
};

}  // namespace s2tp
