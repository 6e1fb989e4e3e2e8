// The sanitize stage's matrix as functions of typed inputs: which checks run (every variant x every
// tool x every sanitizer shape, the baseline first), how they are grouped into sanitizer processes,
// and how the reports fold into the figures and the stage's reasons. A check that did not pass
// (errors, no summary, a timeout, a failing target) is a failed check, never a pass.
//
// Batching. Each compute-sanitizer process pays the tool's start-up (seconds), which dwarfs the
// launches it watches, so one process per (variant, tool) runs all the shapes: `sage2tp exec
// --sanitize-shape 0,1,...` launches each in turn with inputs and outputs of its own, waits for each
// launch, and frees its buffers before the next. Such a batch finds what one process per shape finds,
// tool by tool:
//   memcheck   checks every access of every launch against the allocations live at that moment;
//              those of earlier shapes are freed, so the live set is one shape's, as alone. Leak
//              checking at exit is off (no --leak-check). A fault leaves the context in a sticky
//              error, so exec stops at the faulting shape and the later shapes are not checked: the
//              batch fails, and is split (below), so every shape is still checked on its own.
//   racecheck  and synccheck track shared memory and barriers within one launch's blocks; nothing
//              carries from one launch to the next.
//   initcheck  tracks the initialization of each allocation from its cudaMalloc, which exec makes
//              afresh per shape (no caching allocator), so memory written by an earlier shape is new,
//              uninitialized memory to the next.
// Soundness rests on the split: a batch passes each of its shapes only when it passed as a whole
// (summary found, 0 errors, exit 0, in time). Any other batch is re-run shape by shape, one process
// per shape as without batching, so each failure is attributed to its shape with its own log; the
// batch's log is kept, and a finding of the batch that no shape reproduces alone still fails the stage
// (only a batch that merely ran out of time, with no record, is settled by its shapes alone).
//
// Usage:
//   auto batches = plan_sanitize_batches({"baseline", "candidate"}, tools, shape_descriptions);
//   ... run each; a passed batch: batch_outcomes(batch, report, log); a failed one:
//       split_sanitize_batch(batch), run each single, keep a SanitizeSplit ...
//   SanitizeFold fold = fold_sanitize_checks(outcomes, plan_shape_count, tool_names, candidates, splits);
#pragma once

#include "formats/sanitizer_report.h"
#include "figures/sanitize_figures.h"

#include <cstddef>
#include <string>
#include <vector>

namespace s2tp {

struct SanitizeCheckPlan {
    std::string variant;
    SanitizerTool tool = SanitizerTool::memcheck;
    std::size_t shape_index = 0;  // into sanitizer_shapes(): `sage2tp exec --sanitize-shape`
    std::string shape;            // its description
    std::string log_name;         // "<variant>-<tool>-shape<index>.log"
};

std::vector<SanitizeCheckPlan> plan_sanitize_checks(const std::vector<std::string> &variants,
                                                    const std::vector<SanitizerTool> &tools,
                                                    const std::vector<std::string> &shapes);

// One sanitizer process: `variant` under `tool` over `checks`, launched in their order.
struct SanitizeBatchPlan {
    std::string variant;
    SanitizerTool tool = SanitizerTool::memcheck;
    std::vector<SanitizeCheckPlan> checks;
    std::string log_name;  // "<variant>-<tool>-batch.log"; a single shape's: the check's own log name

    std::vector<int> shape_indices() const;  // for ExecRequest::sanitize_shapes
    std::string describe() const;            // "baseline memcheck on 10 shapes", "... on b=1 hq=2 ..."
};

// One batch per variant and tool, in the order of plan_sanitize_checks.
std::vector<SanitizeBatchPlan> plan_sanitize_batches(const std::vector<std::string> &variants,
                                                     const std::vector<SanitizerTool> &tools,
                                                     const std::vector<std::string> &shapes);

// A failed batch's re-plan: one batch per shape, each with its check's own log name.
std::vector<SanitizeBatchPlan> split_sanitize_batch(const SanitizeBatchPlan &batch);

struct SanitizeOutcome {
    SanitizeCheckPlan check;
    SanitizerReport report;
    std::string log;  // run-relative path of its log
    int gpu = 0;      // the GPU that settled it
    bool ran = true;  // false: not run, its GPU lost and none left to take it (report says so, not passed)
};

// The log of `log_name` ("<variant>-<tool>-batch.log") run on GPU `gpu`: "<variant>-<tool>-batch-gpu1.log",
// so that a batch moved off a lost GPU keeps both logs and every log names the GPU that wrote it
// (name_on_gpu, the GPU pool's naming).
std::string log_name_on_gpu(const std::string &log_name, int gpu);

// The report of a batch that settles its checks (one that passed, or a single shape's) as each
// check's outcome, every one pointing at the batch's log.
std::vector<SanitizeOutcome> batch_outcomes(const SanitizeBatchPlan &batch, const SanitizerReport &report,
                                            const std::string &log, int gpu = 0);

// The checks of `batch` that no GPU is left to run: each failed, "not run: GPU <gpu> lost (<error>)",
// pointing at `log`, the log in which the GPU's loss was found.
std::vector<SanitizeOutcome> not_run_outcomes(const SanitizeBatchPlan &batch, int gpu, const std::string &error,
                                              const std::string &log);

// A batch that did not pass and was re-run shape by shape: what it found itself.
struct SanitizeSplit {
    SanitizeBatchPlan batch;
    SanitizerReport report;
    std::string log;         // run-relative path of the batch's own log, kept
    bool timed_out = false;  // the batch ran past --timeout
};

struct SanitizeFold {
    SanitizeFigures figures;  // without device and seed, which the stage adds
    std::vector<std::string> reasons;
    bool passed = false;
};

// Failed checks quoted one by one in the reasons; the figures list all of them.
constexpr std::size_t kSanitizeReasonsShown = 12;

// `candidates` are the candidate variants' names (every other variant of `outcomes` is the baseline's).
// `splits` are the batches re-run shape by shape, whose single-shape outcomes are in `outcomes`: each
// is named in the reasons when its finding is not attributed to any of its shapes (none failed alone),
// failing the stage and adding its errors to its variant's; the summary counts them. `gpus` are the
// GPUs of --devices (who each is, and the error that lost it): the fold counts each one's checks
// from `outcomes` into figures.gpus, and a GPU lost or short of its checks fails the stage
// (judge_sharded_checks), its reason first; the other GPUs' results are kept.
SanitizeFold fold_sanitize_checks(const std::vector<SanitizeOutcome> &outcomes, std::size_t shapes,
                                  const std::vector<std::string> &tools, const std::vector<std::string> &candidates,
                                  const std::vector<SanitizeSplit> &splits = {}, std::vector<GpuFigures> gpus = {});

}  // namespace s2tp
