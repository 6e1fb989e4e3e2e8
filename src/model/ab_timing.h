// The time stage's measurement: the baseline and every candidate timed in one process on identical
// inputs, interleaved round by round, with an A/A control, per-sample SM clocks, throttled-round
// rejection and a stop rule on the width of the candidates' bootstrap intervals.
//
// One round launches every arm once, each timed alone between CUDA events: arm 0 is the baseline
// ("A"), arm 1 the baseline again ("A'", the control), arms 2.. the candidates in the manifest's order
// (2 to 8 arms). The per-round ratios are arm/A for each candidate (what the experiment asks) and A'/A
// (the A/A control: it goes through exactly the same path, so its interval must contain 1 on a machine
// quiet enough to trust the others). A and A' are two labels of one kernel placed independently by the
// order generator, so any effect of a launch's position within a round lands on both sides of A'/A
// equally often and cannot pass for a real difference.
//
// The loop (measure_interleaved) drives a LaunchTimer; GpuLaunchTimer (gpu/launch_timer.h) is the real
// one, and the unit tests drive it with synthetic timers, so nothing here needs a GPU.
//
// Usage:
//   s2tp::GpuLaunchTimer timer(arm_kernels, arm_launches, clock_probe, flusher_or_null);
//   s2tp::TimingSettings settings;   // from the manifest's [time] table and the command line
//   s2tp::TimingRun run = s2tp::measure_interleaved(timer, settings);
//   s2tp::TimingStats stats = s2tp::timing_stats({run}, settings.bootstrap);
#pragma once

#include "model/attention_problem.h"
#include "support/statistics.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// An arm of a round, as an index into per-arm arrays: the baseline, the A/A control, then the candidates.
using Arm = std::size_t;
inline constexpr Arm baseline_arm = 0;
inline constexpr Arm control_arm = 1;
inline constexpr Arm first_candidate_arm = 2;
inline constexpr std::size_t min_arms = 2;  // the baseline and its control: an A/A run
inline constexpr std::size_t max_arms = 8;  // six candidates; a round of eight block-24 launches is ~0.5 s
// Throws Error(usage) naming the count when it is outside [min_arms, max_arms].
void check_arm_count(std::size_t arms);
// "baseline", "baseline_control", then the candidates' names: the arms' keys in reports/time.json.
std::vector<std::string> arm_names(const std::vector<std::string> &candidate_names);

using RoundOrder = std::vector<Arm>;  // arms by position within the round

// The order of the arms in every round, from a seed. Rounds come in blocks of 2N (N arms): N cyclic
// rotations of a permutation drawn from the seed, then N rotations of its reverse. Within a block each
// arm takes each position exactly twice, so every arm gets every position equally often; the arm that
// goes first changes every round (also across blocks, by redrawing the permutation); and for 3 arms the
// block holds all six orders once. The same seed gives the same sequence on every machine (integer
// draws from SplitMix64 only).
class RoundOrderGenerator {
public:
    RoundOrderGenerator(std::uint64_t seed, std::size_t arms);
    RoundOrder next();
    std::size_t block_size() const { return 2 * arms_; }

private:
    void plan_block();

    std::size_t arms_;
    SplitMix64 random_;
    std::vector<RoundOrder> block_;
    std::size_t position_ = 0;
};

// The reasons NVML gives for an SM clock below the maximum (nvmlClocksEventReason*, NVML API reference),
// as bits of PowerReading::clock_reasons.
namespace clock_event_reason {
inline constexpr std::uint64_t gpu_idle = 0x1;
inline constexpr std::uint64_t applications_clocks = 0x2;
inline constexpr std::uint64_t sw_power_cap = 0x4;
inline constexpr std::uint64_t hw_slowdown = 0x8;
inline constexpr std::uint64_t sync_boost = 0x10;
inline constexpr std::uint64_t sw_thermal = 0x20;
inline constexpr std::uint64_t hw_thermal = 0x40;
inline constexpr std::uint64_t hw_power_brake = 0x80;
inline constexpr std::uint64_t display_clocks = 0x100;
// The groups the time stage counts: held back by power, or by heat.
inline constexpr std::uint64_t power = sw_power_cap | hw_power_brake;
inline constexpr std::uint64_t thermal = sw_thermal | hw_thermal | hw_slowdown;
}  // namespace clock_event_reason

// "power cap, thermal slowdown" for the bits set; "none" for none.
std::string clock_event_reason_names(std::uint64_t reasons);

// NVML's reading right after a timed launch (gpu/nvml_probe.h): why the clock is what it is (a bit set of
// clock-event reasons), the power draw and the temperature; each absent where NVML gives none.
struct PowerReading {
    std::optional<std::uint64_t> clock_reasons;
    std::optional<double> power_w, temperature_c;
};

// One timed launch: the event time, the SM clock read right after it, and NVML's reading.
struct LaunchSample {
    double time_ms = 0;
    double sm_clock_mhz = 0;
    PowerReading power = {};
};

struct InterleavedRound {
    RoundOrder order;
    std::vector<LaunchSample> samples;  // indexed by arm, not by position
    bool throttled = false;
    std::size_t input_set = 0;  // the input set every launch of the round read (RecheckPlan)
    bool rechecked = false;     // every arm's outputs were checked after the round
    const LaunchSample &operator[](Arm arm) const { return samples.at(arm); }
};

// A round is throttled when any of its samples ran below threshold_fraction * reference_clock_mhz (or
// its clock is NaN, which cannot show it was not). Throttled rounds are dropped whole: keeping the
// other launches of the round would pair them with samples from a different thermal state and bias the
// ratios. A threshold of 0 turns the check off.
bool round_throttled(const InterleavedRound &round, double reference_clock_mhz, double threshold_fraction);

// An arm whose outputs after a re-checked round did not hold what its round's input set must give.
struct RecheckFailure {
    std::size_t round = 0;      // index into TimingRun::rounds
    std::size_t input_set = 0;
    Arm arm = 0;
    std::string what;           // "left 12 output elements unwritten (still the NaN poison)", ...
};

// What measure_interleaved drives. warm_up and timed each launch one arm's kernel on the input set
// chosen last by use_input_set; timed poisons the arm's outputs first (NaN, as before the first
// launches), and records CUDA events around the launch only (the poison and an L2 flush, when the timer
// does one, come before the start event). recheck checks every arm's outputs, as the last round left
// them, against what the current input set must give: one failure per arm that does not hold
// (RecheckFailure::round is the caller's to fill in).
class LaunchTimer {
public:
    virtual ~LaunchTimer() = default;
    virtual std::size_t arms() const = 0;
    virtual std::size_t input_sets() const = 0;  // at least 1
    virtual void use_input_set(std::size_t set) = 0;
    virtual void warm_up(Arm arm) = 0;
    virtual LaunchSample timed(Arm arm) = 0;
    virtual std::vector<RecheckFailure> recheck() = 0;
};

// The input sets the time stage rotates its rounds among: set 0 is the workload's own (what the pins
// hold), the others are generated from seeds derived from the workload's (input_set_seed). Three, so
// that a round never reads the previous round's set and cannot tell from it which set comes next.
inline constexpr std::size_t timed_input_sets = 3;
// The seed input set `set` is generated from: the workload's own for set 0.
std::uint64_t input_set_seed(std::uint64_t workload_seed, std::size_t set);

// Which input set each round reads and which rounds are re-checked, from a seed: a kernel that stops
// computing once it is timed (a launch counter on the device, half the work past the warm-up) leaves
// its outputs poisoned, and one that keeps the output of the input it saw last finds a different input
// set in every round. Each round's set is drawn among the sets other than the previous round's (with
// one set, set 0); a round is re-checked with probability `fraction`, and the last round always
// (measure_interleaved checks it after the stop). Every round is poisoned alike, so a kernel cannot
// tell a re-checked round from another, and the re-checks cost no timed time.
class RecheckPlan {
public:
    RecheckPlan(std::uint64_t seed, std::size_t input_sets, double fraction);
    struct Round {
        std::size_t input_set = 0;
        bool rechecked = false;
    };
    Round next();

private:
    SplitMix64 random_;
    std::size_t input_sets_;
    double fraction_;
    std::size_t previous_ = 0;
    bool first_ = true;
};

// Whether the kernels' working set could stay in L2 from one launch to the next, which would let a
// launch profit from its predecessor's data: then L2 is flushed before every timed launch. At twice
// the L2 size or more, each launch has streamed enough other data through L2 to evict what the next
// one reads (NVIDIA's CUTLASS measurement guideline rotates buffers once the footprint is >= 2 x L2:
// media/docs/cpp/gemm_performance_measurement_methodology_guidelines.md).
bool needs_l2_flush(std::size_t footprint_bytes, std::int64_t l2_bytes);

// Tera-operations per second of an attention problem done in `milliseconds`: 4 * B * Hq * Nq * Nkv * D
// operations (two matrix products of 2 * Nq * Nkv * D each per head), halved for a causal mask.
double attention_tops(const AttentionProblem &problem, double milliseconds);

struct TimingSettings {
    std::size_t warmup_launches = 3;     // untimed launches of each arm, before round 1
    std::size_t min_rounds = 20;         // unthrottled rounds before the half-width may stop sampling
    double target_half_width = 0.005;    // relative half-width of the widest candidate interval that stops
    double budget_seconds = 60;          // stop at this much wall time (warm-up included), whatever else
    double reference_clock_mhz = 0;      // the device's default SM clock
    double throttle_fraction = 0.75;
    std::uint64_t order_seed = 0;  // also seeds the RecheckPlan (a constant apart from the order's)
    double recheck_fraction = 0.25;  // of the rounds whose outputs are checked, besides the last
    BootstrapOptions bootstrap;
};

enum class StopReason { half_width, budget, recheck_failed };
// "half_width" | "budget" | "recheck_failed" (figures.stopped_by)
const char *stop_reason_name(StopReason reason);
StopReason stop_reason_of(const std::string &name);  // the inverse; "budget" for anything else

// When the stop rule is next evaluated. A check bootstraps every kept ratio, so its cost grows with
// the rounds; checking again only after the kept rounds have grown by a tenth (and at least 5) keeps
// the checks' total cost a small fraction of the sampling while overshooting the rule by at most ~10%.
std::size_t next_stop_check(std::size_t kept_rounds);

// The ratios of one arm over the baseline for the kept (unthrottled) rounds, in order.
std::vector<double> kept_ratios(const std::vector<InterleavedRound> &rounds, Arm numerator);
std::vector<double> kept_times(const std::vector<InterleavedRound> &rounds, Arm arm);

// The arms whose interval the stop rule waits for: every candidate, or the control in an A/A run.
std::vector<Arm> stop_rule_arms(std::size_t arms);

struct TimingRun {
    std::vector<InterleavedRound> rounds;  // every timed round in order, throttled ones included
    std::size_t kept_rounds = 0;
    std::size_t throttled_rounds = 0;
    std::size_t stop_checks = 0;     // how often the stop rule was evaluated
    StopReason stopped_by = StopReason::budget;
    double seconds = 0;              // wall time of warm-up and rounds
    std::size_t input_sets = 1;      // the timer's
    std::vector<RecheckFailure> recheck_failures;  // sampling stops at the first round that has any

    std::size_t rechecked_rounds() const;
};

// Called after every evaluation of the stop rule with the rounds so far and the widest interval of
// the arms it waits for.
using TimingProgress = std::function<void(const TimingRun &run, const RatioInterval &widest)>;

// Warm-up (warmup_launches of every arm in turn, each pass on the next input set), then rounds until
// the widest candidate interval's relative half-width is below the target with at least min_rounds
// kept rounds, or until the budget is spent, whichever comes first. The stop rule is evaluated only at
// the end of an order block (RoundOrderGenerator::block_size rounds), so a run that stops on precision
// has every arm in every position equally often. Each round reads the input set the RecheckPlan
// (order_seed, recheck_fraction) draws, and the outputs of its re-checked rounds and of the last round
// are checked (timer.recheck); a round with a failure ends the sampling (StopReason::recheck_failed). `seconds_since_start` is the wall clock (tests pass a
// synthetic one); the default starts at the call.
TimingRun measure_interleaved(LaunchTimer &timer, const TimingSettings &settings,
                              const std::function<double()> &seconds_since_start = {},
                              const TimingProgress &progress = {});

// One arm's ratio over the baseline across the repeats of a measurement.
struct RepeatedRatio {
    RatioInterval interval;              // with several repeats, the two-level bootstrap's
    std::vector<double> repeat_medians;  // each repeat's own median ratio; one entry for a single run
    std::optional<double> between_repeat_spread;     // stdev of repeat_medians / pooled median (2+ repeats)
    std::optional<double> within_repeat_half_width;  // median of the repeats' own relative half-widths
};

// What one arm ran under, over its kept rounds of every repeat: the median SM clock and, where NVML read
// them, the median power draw and temperature and the share of its launches that NVML said were held
// back by the power limit, by heat, or by sync boost.
struct ArmConditions {
    std::optional<double> clock_median_mhz;
    std::optional<double> power_median_w, temperature_median_c;
    std::optional<double> power_limited_share, thermal_limited_share, sync_boost_share;
};

// Whether the arms' median SM clocks (unset where none was read) differ by more than `fraction` of the
// lowest: then their absolute times depend on what ran beside them, and the time stage says so.
bool arms_at_different_clocks(const std::vector<std::optional<double>> &clock_medians_mhz, double fraction);

struct TimingStats {
    std::vector<Summary> arms;          // indexed by arm; kept rounds of every repeat pooled
    std::vector<ArmConditions> conditions;  // indexed by arm, over the same rounds
    std::vector<RepeatedRatio> ratios;  // indexed by arm; arm 0 (the baseline over itself) is left empty
    double clock_min_mhz = 0, clock_median_mhz = 0, clock_max_mhz = 0;  // every sample, throttled included
    const Summary &operator[](Arm arm) const { return arms.at(arm); }
    const RatioInterval &vs_baseline(Arm arm) const { return ratios.at(arm).interval; }
    const RatioInterval &control_vs_baseline() const { return vs_baseline(control_arm); }
};

// Over the repeats of one measurement (each a separate process with `time --repeat`, or one run): one
// repeat gives the plain bootstrap of its rounds; several give the two-level bootstrap
// (two_level_bootstrap_median_interval), which counts the between-process variation as well. Every
// repeat needs at least 2 kept rounds and the same arm count (throws Error(internal) otherwise: the
// caller checks min_rounds first).
TimingStats timing_stats(const std::vector<TimingRun> &repeats, const BootstrapOptions &bootstrap);

// A candidate/baseline time ratio in words: "the candidate is 34.6% slower (1.346x the baseline's
// time)", "... 12.0% faster (0.880x ...)", or "... as fast as the baseline (1.000x ...)" when the
// percentage rounds to 0.0; `who` names the candidate.
std::string speed_in_words(double candidate_over_baseline, const std::string &who = "the candidate");

// CUDA events time with a resolution of about 0.5 us (CUDA Runtime API, cudaEventElapsedTime).
inline constexpr double kEventResolutionMs = 0.0005;

// How far from 1 the A/A control may lie before the machine counts as too noisy to time on: a tenth of
// the precision the stage aims for. Two launches of one kernel differ systematically by less than
// that (0.01 % was seen on an H200 with 4 arms) without anything being wrong, and no verdict rests on
// a difference that small. Never finer than one event tick of the baseline's median time, which two
// launches of a kernel of a few microseconds cannot be told apart by (a 16 us kernel: 3.1 %; an H200
// gave an A/A of 0.9938 there).
double aa_tolerance(double target_half_width, double baseline_p50_ms);

// Why the A/A control says the machine is too noisy to time on: its interval lies wholly outside
// 1 +- tolerance. Nothing when it reaches into that band.
std::optional<std::string> too_noisy_reason(const RatioInterval &control_vs_baseline, double tolerance);

}  // namespace s2tp
