// The protocol of `time --repeat`: each repeat is measured in a fresh sage2tp process, the internal
// command `sage2tp time-repeat` (sage2tp-time(1), Repeats), which the parent starts after releasing its
// own CUDA context, waits for, and reads back from the measurement file the child writes.
//
// Usage (stages/time/workload.cpp; subcommands/time_repeat.cpp):
//   ArmMeasurement m = measure_in_child(inputs, index, reporter);                     // the parent
//   run_repeat_child(RepeatChildRequest::from_args(cl, run), reporter);               // the child
#pragma once

#include "pipeline/cli.h"
#include "stages/time/inputs.h"
#include "stages/time/measurement.h"

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// The internal command each repeat runs in: left out of `sage2tp help`, started only by a parent.
extern const char *const repeat_child_command;

// The one request a `time --repeat` parent hands each child process, as the words of a
// `sage2tp time-repeat` command line: to_argv writes them, from_args reads them back. Every value in it
// is one the parent derived from settings that were checked where they were typed (a budget share of
// 0.6 s, from 60 s in 100 repeats, is below --budget's user range), so the child checks none against a
// range.
struct RepeatChildRequest {
    std::filesystem::path run;
    std::filesystem::path measurement_file;  // where the child writes its ArmMeasurement
    std::optional<std::filesystem::path> workload_file;
    double budget_seconds = 0;
    std::size_t min_rounds = 0;
    double target_half_width = 0;
    std::uint64_t order_seed = 0;
    int device_index = 0;
    bool pin = false;

    // The request for process `index` (0-based) of the stage's inputs (its settings: process_settings).
    static RepeatChildRequest of_repeat(const TimeStageInputs &inputs, std::size_t index,
                                        const std::filesystem::path &measurement_file);
    // `executable` time-repeat --run RUN --measurement FILE --budget B --min-rounds M --target-half-width F
    //   --order-seed S --device D [--workload FILE] [--pin]
    std::vector<std::string> to_argv(const std::filesystem::path &executable) const;
    // Adds the options to_argv writes to the command line of time-repeat.
    static void add_options(CommandLine &command_line);
    // From time-repeat's parsed command line; Error(usage) without one of the options the parent always
    // gives, or with a measurement file that is not a new .toml file directly in the run's reports/ (the
    // measurement must never replace a file of the user's). `run` is the run the global options select.
    static RepeatChildRequest from_args(const CommandLine &command_line, const std::filesystem::path &run);
    // The settings the child measures with: the overrides its parent resolved.
    TimeOverrides overrides() const;
};

// The child side: reads the run its parent holds (no lock, no checkpoint), runs measure_arms with the
// parent's settings and writes it to the request's measurement file atomically.
void run_repeat_child(const RepeatChildRequest &request, const Reporter &reporter);

// The parent side: starts process `index` as a fresh sage2tp process, after releasing this process's
// context on its GPU, and reads back what it measured; Error(missing_tool) when its GPU failed.
// `reporting`, when given, is held while it reports: processes on several GPUs run at once.
ArmMeasurement measure_in_child(const TimeStageInputs &inputs, std::size_t index, const Reporter &reporter,
                                std::mutex *reporting = nullptr);

}  // namespace s2tp
