// The time stage's measurement: baseline and candidate timed in one process on identical inputs,
// interleaved round by round, with an A/A control, per-sample SM clocks, throttled-round rejection and
// a stop rule on the width of the ratio's bootstrap interval.
//
// One round launches three things, each timed alone between CUDA events: the baseline ("A"), the
// baseline again ("A'", the control) and the candidate ("B"). The per-round ratios are B/A (what the
// experiment asks) and A'/A (the A/A control: it goes through exactly the same path, so its interval
// must contain 1 on a machine quiet enough to trust B/A). A and A' are two labels of one kernel placed
// independently by the order generator, so any effect of a launch's position within a round lands on
// both sides of A'/A equally often and cannot pass for a real difference.
//
// The loop (measure_interleaved) drives a LaunchTimer; GpuLaunchTimer (gpu/launch_timer.h) is the real
// one, and the unit tests drive it with synthetic timers, so nothing here needs a GPU.
//
// Usage:
//   s2tp::GpuLaunchTimer timer(problem, baseline_kernel, candidate_kernel, params, clock_probe, flusher_or_null);
//   s2tp::TimingSettings settings;   // from the manifest's [time] table and the command line
//   s2tp::TimingRun run = s2tp::measure_interleaved(timer, settings);
//   s2tp::TimingStats stats = s2tp::timing_stats(run, settings.bootstrap);
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

// The three launches of a round. The values index per-launch arrays.
enum class Launch : std::size_t { baseline = 0, baseline_control = 1, candidate = 2 };
inline constexpr std::size_t launches_per_round = 3;
inline constexpr std::array<Launch, launches_per_round> all_launches = {Launch::baseline, Launch::baseline_control,
                                                                       Launch::candidate};
// "baseline", "baseline_control", "candidate": the keys of reports/time.json.
const char *launch_name(Launch launch);

using RoundOrder = std::array<Launch, launches_per_round>;

// The launch order of every round, from a seed. Rounds come in blocks of six that hold each of the six
// orders of the three launches exactly once, so every launch runs first, second and third equally
// often; the launch that goes first changes every round (also across blocks), so no launch repeatedly
// follows itself; which orders come when within a block is drawn from the seed. The same seed gives
// the same sequence on every machine (integer draws from SplitMix64 only).
class RoundOrderGenerator {
public:
    explicit RoundOrderGenerator(std::uint64_t seed) : random_(seed) {}
    RoundOrder next();

private:
    void plan_block();

    SplitMix64 random_;
    std::vector<RoundOrder> block_;
    std::size_t position_ = 0;
};

// One timed launch: the event time and the SM clock read right after it.
struct LaunchSample {
    double time_ms = 0;
    double sm_clock_mhz = 0;
};

struct InterleavedRound {
    RoundOrder order{};
    std::array<LaunchSample, launches_per_round> samples{};  // indexed by Launch, not by position
    bool throttled = false;
    const LaunchSample &operator[](Launch launch) const { return samples[static_cast<std::size_t>(launch)]; }
};

// A round is throttled when any of its samples ran below threshold_fraction * reference_clock_mhz (or
// its clock is NaN, which cannot show it was not). Throttled rounds are dropped whole: keeping the
// other launches of the round would pair them with samples from a different thermal state and bias the
// ratios. A threshold of 0 turns the check off.
bool round_throttled(const InterleavedRound &round, double reference_clock_mhz, double threshold_fraction);

// What measure_interleaved drives. warm_up and timed each launch one kernel; timed records CUDA events
// around the launch only (an L2 flush, when the timer does one, comes before the start event).
class LaunchTimer {
public:
    virtual ~LaunchTimer() = default;
    virtual void warm_up(Launch launch) = 0;
    virtual LaunchSample timed(Launch launch) = 0;
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
    std::size_t warmup_launches = 3;     // untimed launches of each of the three, before round 1
    std::size_t min_rounds = 20;         // unthrottled rounds before the half-width may stop sampling
    double target_half_width = 0.005;    // relative half-width of the B/A interval that stops sampling
    double budget_seconds = 60;          // stop at this much wall time (warm-up included), whatever else
    double reference_clock_mhz = 0;      // the device's default SM clock
    double throttle_fraction = 0.75;
    std::uint64_t order_seed = 0;
    BootstrapOptions bootstrap;
};

enum class StopReason { half_width, budget };
const char *stop_reason_name(StopReason reason);  // "half_width" | "budget" (figures.stopped_by)

// When the stop rule is next evaluated. A check bootstraps every kept ratio, so its cost grows with
// the rounds; checking again only after the kept rounds have grown by a tenth (and at least 5) keeps
// the checks' total cost a small fraction of the sampling while overshooting the rule by at most ~10%.
std::size_t next_stop_check(std::size_t kept_rounds);

// The ratios of one numerator launch over the baseline for the kept (unthrottled) rounds, in order.
std::vector<double> kept_ratios(const std::vector<InterleavedRound> &rounds, Launch numerator);
std::vector<double> kept_times(const std::vector<InterleavedRound> &rounds, Launch launch);

struct TimingRun {
    std::vector<InterleavedRound> rounds;  // every timed round in order, throttled ones included
    std::size_t kept_rounds = 0;
    std::size_t throttled_rounds = 0;
    std::size_t stop_checks = 0;     // how often the stop rule was evaluated
    StopReason stopped_by = StopReason::budget;
    double seconds = 0;              // wall time of warm-up and rounds
};

// Called after every evaluation of the stop rule with the rounds so far and the B/A interval.
using TimingProgress = std::function<void(const TimingRun &run, const RatioInterval &candidate_vs_baseline)>;

// Warm-up (warmup_launches of each of the three launches in turn), then rounds until the B/A
// interval's relative half-width is below the target with at least min_rounds kept rounds, or until
// the budget is spent, whichever comes first. `seconds_since_start` is the wall clock (tests pass a
// synthetic one); the default starts at the call.
TimingRun measure_interleaved(LaunchTimer &timer, const TimingSettings &settings,
                              const std::function<double()> &seconds_since_start = {},
                              const TimingProgress &progress = {});

struct TimingStats {
    std::array<Summary, launches_per_round> launches;  // indexed by Launch; kept rounds only
    RatioInterval candidate_vs_baseline;               // B/A
    RatioInterval control_vs_baseline;                 // A'/A, the A/A control
    double clock_min_mhz = 0, clock_median_mhz = 0, clock_max_mhz = 0;  // every sample, throttled included
    const Summary &operator[](Launch launch) const { return launches[static_cast<std::size_t>(launch)]; }
};

// Needs at least 2 kept rounds (throws Error(internal) otherwise: the caller checks min_rounds first).
TimingStats timing_stats(const TimingRun &run, const BootstrapOptions &bootstrap);

// Why the A/A control says the machine is too noisy to time on, or nothing when its interval contains 1.
// The candidate/baseline time ratio in words: "the candidate is 34.6% slower (1.346x the baseline's
// time)", "... 12.0% faster (0.880x ...)", or "... as fast as the baseline (1.000x ...)" when the
// percentage rounds to 0.0.
std::string speed_in_words(double candidate_over_baseline);

std::optional<std::string> too_noisy_reason(const RatioInterval &control_vs_baseline);

}  // namespace s2tp
