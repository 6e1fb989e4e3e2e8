// The figures of the time checkpoint (05-time.toml) as one typed struct: what the time stage writes,
// what the gate, status, report and compare read, and what the human printer shows. Every figure is a
// std::optional (or an empty list): a key that a checkpoint lacks stays unset and is never read as 0,
// so a renamed or missing figure shows as "not recorded" instead of passing as a number.
//
// The layout in TOML (sage2tp-checkpoint(5) documents every key):
//   workload, shape, device, device_name, arch, summary, stopped_by ...   scalars
//   [sha256]                    the baseline's digest, the pin, whether the outputs held
//   [baseline] [baseline_control]  timing summaries over the kept rounds
//   [aa]                        the A/A control's interval (control/baseline)
//   [candidates.NAME]           one table per candidate, keyed by its name: digest, timing, ratio, ncu
//   candidate_order             the candidates' names in the manifest's order (TOML tables are unordered)
//   [sm_clock_mhz] [ncu]
//
// Usage:
//   TimeFigures f = TimeFigures::from_toml(checkpoint.figures);
//   if (const CandidateTimeFigures *c = f.candidate("candidate"); c && c->ratio) use(c->ratio->median);
//   checkpoint.figures = f.to_toml();
//   reporter.say(time_figures_text(f, plot_path));
#pragma once

#include "figures/figure_fields.h"
#include "figures/gpu_figures.h"
#include "figures/ncu_metrics.h"
#include "figures/parity_figures.h"
#include "model/ab_timing.h"
#include "support/statistics.h"

#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

using figure_fields::Field;

// One arm's times over the kept rounds, in milliseconds, and its throughput at the median.
struct ArmTimeFigures {
    std::optional<double> p10, p50, p90, mean, stdev;
    std::optional<std::int64_t> n;
    std::optional<double> tops_p50;  // tera-operations per second at p50
    // What the arm ran under (model/ab_timing.h ArmConditions): its median SM clock, and where NVML read
    // them, its median power and temperature and the shares of its launches held back by the power limit,
    // by heat and by sync boost.
    std::optional<double> sm_clock_median_mhz, power_median_w, temperature_median_c;
    std::optional<double> power_limited_share, thermal_limited_share, sync_boost_share;
    // For an arm whose host function launched it: that launch, as it was made ("grid 256x40x1, block
    // 32x4x1, 32768 B dynamic smem, 168 registers, 3 blocks/SM"), the kernel it launched (mangled), its
    // dynamic shared memory, and the resident warps per SM scheduler the driver's occupancy calculator
    // gives for it.
    std::optional<std::string> launch, launch_kernel;
    std::optional<std::int64_t> launch_dynamic_smem_bytes;
    std::optional<double> launch_warps_per_scheduler;

    static ArmTimeFigures of(const Summary &summary, double tops_p50, const ArmConditions &conditions);
    static const std::vector<Field<ArmTimeFigures>> &fields();
    toml::table to_toml() const;
    static ArmTimeFigures from_toml(const toml::table &table);
};

// A ratio over the baseline (a candidate's, or the A/A control's) with its bootstrap interval, and,
// for a run of several repeats (time --repeat), each repeat's median ratio, the spread between them
// and the typical interval within one.
struct RatioFigures {
    std::optional<double> median, ci_low, ci_high;
    std::optional<double> half_width;  // (ci_high - ci_low) / 2 / median
    std::optional<std::int64_t> resamples, seed;
    std::optional<double> confidence;
    std::vector<double> repeat_medians;               // one per repeat; empty for a single process
    std::optional<double> between_repeat_spread;      // stdev of repeat_medians / median
    std::optional<double> within_repeat_half_width;   // median of the repeats' own relative half-widths
    // A single process's candidate interval: the between-process standard deviation (over the median)
    // it was widened by (model/timing_calibration.h); unset when none was added.
    std::optional<double> between_process_sd;

    static RatioFigures of(const RatioInterval &interval);
    // The interval, when median, ci_low and ci_high are all recorded.
    std::optional<RatioInterval> interval() const;
    static const std::vector<Field<RatioFigures>> &fields();
    toml::table to_toml() const;
    static RatioFigures from_toml(const toml::table &table);
};

struct CandidateTimeFigures {
    std::string name;                             // the manifest's [[candidate]] name
    std::optional<std::string> sha256;            // the candidate's output O
    std::optional<bool> matches_baseline;         // sha256 == the baseline's
    std::optional<ArmTimeFigures> timing;
    std::optional<RatioFigures> ratio;            // candidate/baseline
    std::optional<NcuComparison> ncu;             // with --ncu, when both profiles were read back
    // Tolerance mode: the timed output's accuracy against the float64 reference and against the
    // baseline's output, and its conditions (replacing matches_baseline as the criterion).
    std::string parity_mode;
    std::optional<AccuracyFigure> accuracy, vs_baseline;
    std::optional<bool> accuracy_passed;
    std::string accuracy_conditions;

    static const std::vector<Field<CandidateTimeFigures>> &fields();
    toml::table to_toml() const;
    static CandidateTimeFigures from_toml(const std::string &name, const toml::table &table);
};

// One candidate's figures on one GPU alone (GpuTimeResult).
struct GpuCandidateTiming {
    std::string name;  // the manifest's [[candidate]] name
    std::optional<ArmTimeFigures> timing;
    std::optional<RatioFigures> ratio;  // candidate/baseline, within this GPU's processes only

    static const std::vector<Field<GpuCandidateTiming>> &fields();
};

// One GPU's own result when the GPUs of one time stage are of several models (figures.gpu_results):
// who the GPU is, and its baseline, A/A control and candidates over its own processes (its repeats the
// bootstrap's groups). Each is a verdict of its own: no ratio and no interval is formed across GPUs.
struct GpuTimeResult {
    std::optional<std::int64_t> index;  // within CUDA_VISIBLE_DEVICES
    std::string name, uuid, pci_bus_id;
    std::optional<ArmTimeFigures> baseline;
    std::optional<RatioFigures> aa;  // control/baseline on this GPU
    std::vector<GpuCandidateTiming> candidates;  // in the manifest's order
    std::string lost;  // the device error that lost it; "" while it was not

    const GpuCandidateTiming *candidate(const std::string &name) const;
    // "GPU 1 NVIDIA H100 80GB HBM3": how the stage's reasons and the gate's conditions name it.
    std::string label() const;
    static const std::vector<Field<GpuTimeResult>> &fields();
};

// One arm's re-checked timed rounds (model/ab_timing.h, RecheckPlan), summed over the processes: the
// rounds after which its outputs were checked against what the round's input set must give, and how
// many of those checks failed.
struct ArmRecheckFigures {
    std::optional<std::int64_t> rounds, failed;

    static const std::vector<Field<ArmRecheckFigures>> &fields();
};

// One ncu profile (time --ncu) of one variant.
struct NcuRunFigures {
    std::optional<std::int64_t> exit_code;
    std::optional<std::string> log, report;  // run-relative paths
    std::optional<double> seconds;

    static const std::vector<Field<NcuRunFigures>> &fields();
};

struct NcuFigures {
    std::optional<bool> requested, found;
    std::optional<double> seconds;                // both profiles' wall time
    std::optional<std::int64_t> seq_len;          // when [time] ncu_seq_len chose a shorter shape
    std::map<std::string, NcuRunFigures> runs;    // by variant name ("baseline", each candidate's)

    static const std::vector<Field<NcuFigures>> &fields();
    toml::table to_toml() const;
    static NcuFigures from_toml(const toml::table &table);
};

struct TimeFigures {
    std::optional<std::string> workload, shape, device, device_name, arch;
    // --devices with several GPUs: each GPU and its processes (one per repeat); on one model the ratios'
    // repeat_medians are the processes', repeat by repeat, the GPUs in order within each.
    std::vector<GpuFigures> gpus;
    // GPUs of several models: one result per GPU, and no combined baseline, candidate timing or ratio.
    std::vector<GpuTimeResult> gpu_results;

    // Output digests: the baseline's, the pin it was checked against (absent when none is), whether
    // every output passed its checks before timing and held during it, and the pin --pin replaced; the
    // kernel the pin belongs to (model/workload_set.h PinKey), and whether this stage recorded the pin
    // because nothing pinned that kernel on the arch yet.
    std::optional<std::string> baseline_sha256, expected_sha256, replaced_pin, pinned_kernel;
    std::optional<bool> recorded_pin;
    std::optional<bool> outputs_match;
    // When the run checks accuracy: the baseline's timed output against the float64 reference.
    std::optional<AccuracyFigure> baseline_accuracy;
    std::optional<bool> baseline_accuracy_passed;
    std::string baseline_accuracy_conditions;

    std::optional<ArmTimeFigures> baseline, baseline_control;
    std::optional<RatioFigures> aa;                // control/baseline
    std::vector<CandidateTimeFigures> candidates;  // in the manifest's order

    std::optional<std::int64_t> rounds, throttled_rounds;  // summed over the repeats
    // The input sets the rounds rotated among, and each arm's re-checks by arm name (baseline,
    // baseline_control, each candidate's): absent from a checkpoint of a sage2tp that did not re-check.
    std::optional<std::int64_t> input_sets;
    std::map<std::string, ArmRecheckFigures> recheck;
    std::optional<std::string> stopped_by;         // "half_width" | "budget" (the last repeat's with several)
    std::optional<bool> l2_flushed;
    std::optional<std::int64_t> footprint_bytes;
    // The most of L2 the GPU lets a context set aside for persisting accesses; the stage sets the
    // carve-out to 0 before timing, so that no line set aside survives the flush.
    std::optional<std::int64_t> persisting_l2_max_bytes;
    // Where the candidate intervals' between-process component comes from (data/timing_calibration.toml):
    // the GPU model it was measured on, how and when; unset when none was added.
    std::optional<std::string> between_process_basis;
    std::optional<std::int64_t> order_seed, warmup_launches, min_rounds, repeats;
    std::optional<double> target_half_width, budget_seconds, measure_seconds;
    std::optional<double> sm_clock_min_mhz, sm_clock_median_mhz, sm_clock_max_mhz;
    // The GPU's dense INT8/FP8 tensor peak at the median SM clock (data/arch_limits.toml), in TOPS:
    // what the gate's tensor-peak condition judges each arm's tops_p50 by; absent when the arch's
    // row does not say.
    std::optional<double> tensor_peak_tops;
    std::optional<NcuFigures> ncu;
    std::optional<std::string> summary;

    const CandidateTimeFigures *candidate(const std::string &name) const;
    CandidateTimeFigures &candidate_or_add(const std::string &name);

    static const std::vector<Field<TimeFigures>> &fields();
    toml::table to_toml() const;
    static TimeFigures from_toml(const toml::table &figures);
};

// The human summary of a time checkpoint: the arms' table, each candidate's ratio (with repeats, the
// between-repeat spread beside the within-repeat half-width), the A/A control, rounds and clocks, the
// speed in words and the plot, and the ncu comparisons. `plot` is the run-relative SVG path or "".
// A ratio and its interval, the one spelling of every printer: "1.3441 (95% CI 1.3427 .. 1.3451)", the
// level from the figure's confidence, missing_figure for an end it does not record; with_half_width
// adds ", half-width 0.089%" inside the parentheses.
std::string interval_text(const RatioFigures &ratio, bool with_half_width);

// The re-checks of the timed rounds in one line, as time and report print them: "outputs poisoned before
// every timed launch, rounds on 3 input sets; re-checked after up to 9 rounds: baseline 9,
// baseline_control 9, candidate 9 (1 failed)", or that a checkpoint records none.
std::string recheck_text(const TimeFigures &figures);

std::string time_figures_text(const TimeFigures &figures, const std::string &plot);

// What each arm ran under, in one line: "SM clock (median) baseline 1770 MHz at 699 W, temporal-pair
// 1962 MHz at 640 W; held back by the power limit in 98% and 12% of their launches"; "" when no arm
// records a clock. `only_if_different`: "" unless the arms' median clocks differ by more than 1%, when
// their absolute times depend on what ran beside them (the stage's summary says so then).
std::string arm_conditions_text(const TimeFigures &figures, bool only_if_different);

// The per-GPU verdict rows of GPUs of several models, one per GPU and candidate ("GPU 1 NVIDIA H100 ...
// (GPU-...): candidate/baseline 0.9312 (95% CI ...), n = 120, A/A 1.0002"), or the error that lost it;
// empty when the stage's GPUs combined. time, status, report and compare print them.
std::vector<std::string> gpu_result_lines(const TimeFigures &figures);

}  // namespace s2tp
