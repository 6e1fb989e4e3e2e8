#include "model/ab_timing.h"

#include "model/workload_cost.h"

#include "support/errors.h"
#include "support/number_format.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

namespace s2tp {

void check_arm_count(std::size_t arms) {
    if (arms < min_arms || arms > max_arms)
        fail(ExitCode::usage, "time interleaves " + std::to_string(min_arms) + " to " + std::to_string(max_arms) +
                                  " arms (the baseline, its A/A control and up to " +
                                  std::to_string(max_arms - first_candidate_arm) + " candidates), not " +
                                  std::to_string(arms));
}

std::vector<std::string> arm_names(const std::vector<std::string> &candidate_names) {
    std::vector<std::string> names{"baseline", "baseline_control"};
    names.insert(names.end(), candidate_names.begin(), candidate_names.end());
    return names;
}

// ---- Round order ----

RoundOrderGenerator::RoundOrderGenerator(std::uint64_t seed, std::size_t arms) : arms_(arms), random_(seed) {
    check_arm_count(arms);
}

RoundOrder RoundOrderGenerator::next() {
    if (position_ == block_.size()) plan_block();
    return block_[position_++];
}

void RoundOrderGenerator::plan_block() {
    // Rotation k of p puts p[k] first, so the first arm runs through p; the reverse's rotations start
    // at offset 1 so that the block's halves do not meet on one first arm. The permutation is redrawn
    // until its first arm differs from the previous block's last first arm.
    const bool follows_a_block = !block_.empty();
    const Arm previous_first = follows_a_block ? block_.back()[0] : 0;
    RoundOrder p(arms_);
    for (Arm arm = 0; arm < arms_; ++arm) p[arm] = arm;
    do {
        for (std::size_t i = p.size() - 1; i > 0; --i)  // Fisher-Yates with unbiased integer draws
            std::swap(p[i], p[random_.below(i + 1)]);
    } while (follows_a_block && p[0] == previous_first);
    const RoundOrder reversed(p.rbegin(), p.rend());

    const auto rotation = [this](const RoundOrder &order, std::size_t k) {
        RoundOrder rotated(arms_);
        for (std::size_t position = 0; position < arms_; ++position) rotated[position] = order[(k + position) % arms_];
        return rotated;
    };
    block_.clear();
    for (std::size_t k = 0; k < arms_; ++k) block_.push_back(rotation(p, k));
    for (std::size_t k = 0; k < arms_; ++k) block_.push_back(rotation(reversed, (k + 1) % arms_));
    position_ = 0;
}

// ---- Samples and rounds ----

bool round_throttled(const InterleavedRound &round, double reference_clock_mhz, double threshold_fraction) {
    if (!(reference_clock_mhz > 0.0) || !std::isfinite(reference_clock_mhz))
        fail(ExitCode::internal, "throttle check: the reference SM clock " + std::to_string(reference_clock_mhz) +
                                     " MHz must be positive and finite");
    if (!(threshold_fraction >= 0.0 && threshold_fraction <= 1.0))
        fail(ExitCode::internal, "throttle check: threshold " + std::to_string(threshold_fraction) +
                                     " is outside [0, 1]");
    if (threshold_fraction == 0.0) return false;
    const double minimum = threshold_fraction * reference_clock_mhz;
    // Written as !(clock >= minimum) so that a NaN clock counts as throttled.
    return std::any_of(round.samples.begin(), round.samples.end(),
                       [&](const LaunchSample &s) { return !(s.sm_clock_mhz >= minimum); });
}

bool needs_l2_flush(std::size_t footprint_bytes, std::int64_t l2_bytes) {
    if (l2_bytes <= 0) fail(ExitCode::internal, "L2 flush decision: the device reports an L2 of " +
                                                    std::to_string(l2_bytes) + " bytes");
    return footprint_bytes < 2 * static_cast<std::size_t>(l2_bytes);
}

double attention_tops(const AttentionProblem &problem, double milliseconds) {
    if (!(milliseconds > 0.0) || !std::isfinite(milliseconds))
        fail(ExitCode::internal, "throughput of " + problem.describe() + ": time " + std::to_string(milliseconds) +
                                     " ms must be positive and finite");
    const double operations = attention_operations(problem);
    return operations / (milliseconds * 1e-3) / 1e12;
}

const char *stop_reason_name(StopReason reason) {
    switch (reason) {
    case StopReason::half_width: return "half_width";
    case StopReason::recheck_failed: return "recheck_failed";
    case StopReason::budget: break;
    }
    return "budget";
}

StopReason stop_reason_of(const std::string &name) {
    for (StopReason reason : {StopReason::half_width, StopReason::recheck_failed})
        if (name == stop_reason_name(reason)) return reason;
    return StopReason::budget;
}

// ---- Re-checked rounds ----

namespace {
// Keeps the plan's draws apart from the order generator's, which starts from the same seed.
constexpr std::uint64_t kRecheckSeedOffset = 0x5245434845434B53ULL;  // "RECHECKS"
constexpr std::uint64_t kFractionSteps = 1u << 20;
}  // namespace

std::uint64_t input_set_seed(std::uint64_t workload_seed, std::size_t set) {
    if (set == 0) return workload_seed;
    SplitMix64 derived(workload_seed ^ (kRecheckSeedOffset + set));
    return derived.next();
}

RecheckPlan::RecheckPlan(std::uint64_t seed, std::size_t input_sets, double fraction)
    : random_(seed ^ kRecheckSeedOffset), input_sets_(input_sets), fraction_(fraction) {
    if (input_sets < 1 || !(fraction >= 0.0 && fraction <= 1.0))
        fail(ExitCode::internal, "re-check plan: " + std::to_string(input_sets) + " input sets and a fraction of " +
                                     std::to_string(fraction) + " (at least 1 set, a fraction in [0, 1])");
}

RecheckPlan::Round RecheckPlan::next() {
    Round round;
    if (input_sets_ > 1) {
        // Among the sets other than the previous round's: the draw skips over it.
        round.input_set = first_ ? random_.below(input_sets_) : random_.below(input_sets_ - 1);
        if (!first_ && round.input_set >= previous_) ++round.input_set;
    }
    previous_ = round.input_set;
    first_ = false;
    round.rechecked = static_cast<double>(random_.below(kFractionSteps)) < fraction_ * static_cast<double>(kFractionSteps);
    return round;
}

std::size_t TimingRun::rechecked_rounds() const {
    return static_cast<std::size_t>(
        std::count_if(rounds.begin(), rounds.end(), [](const InterleavedRound &r) { return r.rechecked; }));
}

std::size_t next_stop_check(std::size_t kept_rounds) { return kept_rounds + std::max<std::size_t>(5, kept_rounds / 10); }

std::vector<double> kept_times(const std::vector<InterleavedRound> &rounds, Arm arm) {
    std::vector<double> times;
    for (const InterleavedRound &round : rounds)
        if (!round.throttled) times.push_back(round[arm].time_ms);
    return times;
}

std::vector<double> kept_ratios(const std::vector<InterleavedRound> &rounds, Arm numerator) {
    return paired_ratios(kept_times(rounds, numerator), kept_times(rounds, baseline_arm));
}

std::vector<Arm> stop_rule_arms(std::size_t arms) {
    check_arm_count(arms);
    if (arms == min_arms) return {control_arm};
    std::vector<Arm> candidates;
    for (Arm arm = first_candidate_arm; arm < arms; ++arm) candidates.push_back(arm);
    return candidates;
}

// ---- The loop ----

namespace {

void check_settings(const TimingSettings &s) {
    const bool valid = s.min_rounds >= 2 && s.target_half_width > 0.0 && s.budget_seconds > 0.0 &&
                       s.reference_clock_mhz > 0.0 && std::isfinite(s.reference_clock_mhz) &&
                       s.throttle_fraction >= 0.0 && s.throttle_fraction <= 1.0;
    if (!valid)
        fail(ExitCode::internal, "timing settings out of range: min_rounds " + std::to_string(s.min_rounds) +
                                     ", target half-width " + std::to_string(s.target_half_width) + ", budget " +
                                     std::to_string(s.budget_seconds) + " s, reference clock " +
                                     std::to_string(s.reference_clock_mhz) + " MHz, throttle fraction " +
                                     std::to_string(s.throttle_fraction));
}

}  // namespace

TimingRun measure_interleaved(LaunchTimer &timer, const TimingSettings &settings,
                              const std::function<double()> &seconds_since_start, const TimingProgress &progress) {
    check_settings(settings);
    const auto started = std::chrono::steady_clock::now();
    const std::function<double()> elapsed = seconds_since_start ? seconds_since_start : [started] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };

    const std::size_t arms = timer.arms();
    const std::vector<Arm> waited_for = stop_rule_arms(arms);
    TimingRun run;
    run.input_sets = timer.input_sets();
    for (std::size_t i = 0; i < settings.warmup_launches; ++i) {
        timer.use_input_set(i % run.input_sets);
        for (Arm arm = 0; arm < arms; ++arm) timer.warm_up(arm);
    }

    RoundOrderGenerator orders(settings.order_seed, arms);
    RecheckPlan plan(settings.order_seed, run.input_sets, settings.recheck_fraction);
    const StoppingRule rule{settings.target_half_width, settings.min_rounds};
    // The checks of the round just timed, in the run; false when one failed.
    const auto recheck = [&] {
        InterleavedRound &round = run.rounds.back();
        round.rechecked = true;
        for (RecheckFailure &failure : timer.recheck()) {
            failure.round = run.rounds.size() - 1;
            failure.input_set = round.input_set;
            run.recheck_failures.push_back(std::move(failure));
        }
        return run.recheck_failures.empty();
    };
    std::size_t check_at = settings.min_rounds;
    for (;;) {
        InterleavedRound round;
        round.order = orders.next();
        const RecheckPlan::Round planned = plan.next();
        round.input_set = planned.input_set;
        timer.use_input_set(round.input_set);
        round.samples.resize(arms);
        for (Arm arm : round.order) round.samples[arm] = timer.timed(arm);
        round.throttled = round_throttled(round, settings.reference_clock_mhz, settings.throttle_fraction);
        run.rounds.push_back(round);
        if (round.throttled) ++run.throttled_rounds;
        else ++run.kept_rounds;
        if (planned.rechecked && !recheck()) {
            run.stopped_by = StopReason::recheck_failed;
            break;
        }

        // Checked only at the end of an order block, where every arm has run in every position equally
        // often: a stop inside a block would leave a position effect (the launch after the slowest
        // arm, say) unbalanced between the baseline and its A/A control.
        const bool block_complete = run.rounds.size() % orders.block_size() == 0;
        if (!round.throttled && block_complete && run.kept_rounds >= check_at) {
            ++run.stop_checks;
            check_at = next_stop_check(run.kept_rounds);
            // The stop rule waits for the widest interval: every candidate must be precise enough.
            RatioInterval widest;
            for (Arm arm : waited_for) {
                const RatioInterval interval = bootstrap_median_interval(kept_ratios(run.rounds, arm), settings.bootstrap);
                if (arm == waited_for.front() || interval.half_width_rel > widest.half_width_rel) widest = interval;
            }
            const bool precise = interval_precise_enough(widest, rule);
            if (precise) run.stopped_by = StopReason::half_width;
            if (progress) {
                run.seconds = elapsed();
                progress(run, widest);
            }
            if (precise) break;
        }
        if (elapsed() >= settings.budget_seconds) {
            run.stopped_by = StopReason::budget;
            break;
        }
    }
    // The last round's outputs are always checked: a kernel that stops computing after some launches
    // is caught however few rounds the plan drew.
    if (!run.rounds.back().rechecked && !recheck()) run.stopped_by = StopReason::recheck_failed;
    run.seconds = elapsed();
    return run;
}

std::string clock_event_reason_names(std::uint64_t reasons) {
    namespace r = clock_event_reason;
    static const std::vector<std::pair<std::uint64_t, const char *>> names{
        {r::gpu_idle, "idle"},           {r::applications_clocks, "applications clocks"},
        {r::sw_power_cap, "power cap"},  {r::hw_slowdown, "hardware slowdown"},
        {r::sync_boost, "sync boost"},   {r::sw_thermal, "thermal slowdown"},
        {r::hw_thermal, "hardware thermal slowdown"}, {r::hw_power_brake, "power brake"},
        {r::display_clocks, "display clocks"}};
    std::string text;
    for (const auto &[bit, name] : names)
        if (reasons & bit) text += (text.empty() ? "" : ", ") + std::string(name);
    return text.empty() ? "none" : text;
}

namespace {

// The arm's conditions over the kept rounds of every repeat.
ArmConditions arm_conditions(const std::vector<TimingRun> &repeats, Arm arm) {
    std::vector<double> clocks, watts, celsius;
    std::size_t read = 0, power_limited = 0, thermal_limited = 0, sync_boost = 0;
    for (const TimingRun &run : repeats)
        for (const InterleavedRound &round : run.rounds) {
            if (round.throttled) continue;
            const LaunchSample &sample = round[arm];
            if (!std::isnan(sample.sm_clock_mhz)) clocks.push_back(sample.sm_clock_mhz);
            if (sample.power.power_w) watts.push_back(*sample.power.power_w);
            if (sample.power.temperature_c) celsius.push_back(*sample.power.temperature_c);
            if (!sample.power.clock_reasons) continue;
            ++read;
            const std::uint64_t reasons = *sample.power.clock_reasons;
            power_limited += (reasons & clock_event_reason::power) != 0;
            thermal_limited += (reasons & clock_event_reason::thermal) != 0;
            sync_boost += (reasons & clock_event_reason::sync_boost) != 0;
        }
    ArmConditions c;
    if (!clocks.empty()) c.clock_median_mhz = median(clocks);
    if (!watts.empty()) c.power_median_w = median(watts);
    if (!celsius.empty()) c.temperature_median_c = median(celsius);
    if (read > 0) {
        const double n = static_cast<double>(read);
        c.power_limited_share = static_cast<double>(power_limited) / n;
        c.thermal_limited_share = static_cast<double>(thermal_limited) / n;
        c.sync_boost_share = static_cast<double>(sync_boost) / n;
    }
    return c;
}

}  // namespace

bool arms_at_different_clocks(const std::vector<std::optional<double>> &clock_medians_mhz, double fraction) {
    std::vector<double> medians;
    for (const std::optional<double> &clock : clock_medians_mhz)
        if (clock) medians.push_back(*clock);
    if (medians.size() < 2) return false;
    const auto [low, high] = std::minmax_element(medians.begin(), medians.end());
    return *high > *low * (1 + fraction);
}

TimingStats timing_stats(const std::vector<TimingRun> &repeats, const BootstrapOptions &bootstrap) {
    if (repeats.empty()) fail(ExitCode::internal, "timing statistics of no measurement");
    const std::size_t arms = repeats.front().rounds.empty() ? 0 : repeats.front().rounds.front().samples.size();
    for (const TimingRun &run : repeats)
        for (const InterleavedRound &round : run.rounds)
            if (round.samples.size() != arms)
                fail(ExitCode::internal, "timing statistics: a round of " + std::to_string(round.samples.size()) +
                                             " arms among rounds of " + std::to_string(arms));
    check_arm_count(arms);
    TimingStats stats;
    stats.arms.resize(arms);
    stats.ratios.resize(arms);
    for (Arm arm = 0; arm < arms; ++arm) {
        std::vector<double> pooled;
        for (const TimingRun &run : repeats) {
            const std::vector<double> times = kept_times(run.rounds, arm);
            pooled.insert(pooled.end(), times.begin(), times.end());
        }
        stats.arms[arm] = summarize(pooled);
        stats.conditions.push_back(arm_conditions(repeats, arm));
    }
    for (Arm arm = control_arm; arm < arms; ++arm) {
        RepeatedRatio &ratio = stats.ratios[arm];
        std::vector<std::vector<double>> groups;
        std::vector<double> within;
        for (const TimingRun &run : repeats) {
            groups.push_back(kept_ratios(run.rounds, arm));
            const RatioInterval own = bootstrap_median_interval(groups.back(), bootstrap);
            ratio.repeat_medians.push_back(own.median);
            within.push_back(own.half_width_rel);
        }
        ratio.interval = two_level_bootstrap_median_interval(groups, bootstrap);
        if (repeats.size() >= 2) {
            ratio.between_repeat_spread = sample_stdev(ratio.repeat_medians) / ratio.interval.median;
            ratio.within_repeat_half_width = median(within);
        }
    }
    std::vector<double> clocks;
    for (const TimingRun &run : repeats)
        for (const InterleavedRound &round : run.rounds)
            for (const LaunchSample &sample : round.samples) clocks.push_back(sample.sm_clock_mhz);
    clocks.erase(std::remove_if(clocks.begin(), clocks.end(), [](double c) { return std::isnan(c); }), clocks.end());
    if (!clocks.empty()) {
        stats.clock_min_mhz = *std::min_element(clocks.begin(), clocks.end());
        stats.clock_max_mhz = *std::max_element(clocks.begin(), clocks.end());
        stats.clock_median_mhz = median(clocks);
    }
    return stats;
}

double aa_tolerance(double target_half_width, double baseline_p50_ms) {
    const double tick = baseline_p50_ms > 0 ? kEventResolutionMs / baseline_p50_ms : 0.0;
    return std::max(target_half_width / 10, tick);
}

std::optional<std::string> too_noisy_reason(const RatioInterval &aa, double tolerance) {
    if (aa.reaches(1.0, tolerance)) return std::nullopt;
    return "the A/A control (the baseline timed against itself) gives a ratio of " + fixed(aa.median, 4) + " with a " +
           fixed(aa.confidence * 100, 0) + "% interval of " + fixed(aa.lo, 4) + " .. " + fixed(aa.hi, 4) +
           ", which lies wholly outside 1 +- " + fixed(tolerance * 100, 3) + "%: the machine is too noisy to time on (" +
           std::to_string(aa.n) + " rounds); free the GPU of other work and run 'sage2tp time --force'";
}

}  // namespace s2tp

namespace s2tp {

std::string speed_in_words(double ratio, const std::string &who) {
    const double change = (ratio - 1.0) * 100.0;
    const std::string percent = fixed(std::fabs(change), 1) + "%";
    const std::string share = " (" + fixed(ratio, 3) + "x the baseline's time)";
    if (percent == "0.0%") return who + " is as fast as the baseline" + share;
    return who + " is " + percent + (change > 0 ? " slower" : " faster") + share;
}

}  // namespace s2tp
