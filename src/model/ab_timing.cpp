#include "model/ab_timing.h"

#include "support/errors.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace s2tp {

const char *launch_name(Launch launch) {
    switch (launch) {
        case Launch::baseline: return "baseline";
        case Launch::baseline_control: return "baseline_control";
        case Launch::candidate: return "candidate";
    }
    return "?";
}

// ---- Round order ----

RoundOrder RoundOrderGenerator::next() {
    if (position_ == block_.size()) plan_block();
    return block_[position_++];
}

void RoundOrderGenerator::plan_block() {
    // The launches that go first cycle through a drawn permutation twice (p0 p1 p2 p0 p1 p2), so the
    // first launch changes every round. The permutation is redrawn until p0 differs from the previous
    // block's last first launch. Each first launch is followed by its other two in both orders, one per
    // half of the block, the half drawn per launch: the block holds all six orders once.
    const std::optional<Launch> previous_first =
        block_.empty() ? std::nullopt : std::optional<Launch>(block_.back()[0]);
    RoundOrder firsts = all_launches;
    do {
        for (std::size_t i = firsts.size() - 1; i > 0; --i)  // Fisher-Yates with unbiased integer draws
            std::swap(firsts[i], firsts[random_.below(i + 1)]);
    } while (previous_first && firsts[0] == *previous_first);

    std::array<RoundOrder, launches_per_round> early{}, late{};
    for (std::size_t i = 0; i < firsts.size(); ++i) {
        std::array<Launch, 2> rest{};
        std::size_t filled = 0;
        for (Launch other : all_launches)
            if (other != firsts[i]) rest[filled++] = other;
        if (random_.below(2) == 1) std::swap(rest[0], rest[1]);
        early[i] = {firsts[i], rest[0], rest[1]};
        late[i] = {firsts[i], rest[1], rest[0]};
    }
    block_.assign(early.begin(), early.end());
    block_.insert(block_.end(), late.begin(), late.end());
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
    const AttentionShape &s = problem.shape;
    double operations = 4.0 * static_cast<double>(s.batch) * static_cast<double>(s.heads_q) *
                        static_cast<double>(s.len_q) * static_cast<double>(s.len_kv) * static_cast<double>(s.head_dim);
    // The causal mask is top-left aligned with len_q == len_kv (AttentionProblem::validate), so the
    // unmasked half of the score matrix is the work; what a kernel spends on masked tiles is overhead.
    if (problem.causal) operations /= 2.0;
    return operations / (milliseconds * 1e-3) / 1e12;
}

const char *stop_reason_name(StopReason reason) {
    return reason == StopReason::half_width ? "half_width" : "budget";
}

std::size_t next_stop_check(std::size_t kept_rounds) { return kept_rounds + std::max<std::size_t>(5, kept_rounds / 10); }

std::vector<double> kept_times(const std::vector<InterleavedRound> &rounds, Launch launch) {
    std::vector<double> times;
    for (const InterleavedRound &round : rounds)
        if (!round.throttled) times.push_back(round[launch].time_ms);
    return times;
}

std::vector<double> kept_ratios(const std::vector<InterleavedRound> &rounds, Launch numerator) {
    return paired_ratios(kept_times(rounds, numerator), kept_times(rounds, Launch::baseline));
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

    for (std::size_t i = 0; i < settings.warmup_launches; ++i)
        for (Launch launch : all_launches) timer.warm_up(launch);

    RoundOrderGenerator orders(settings.order_seed);
    const StoppingRule rule{settings.target_half_width, settings.min_rounds};
    TimingRun run;
    std::size_t check_at = settings.min_rounds;
    for (;;) {
        InterleavedRound round;
        round.order = orders.next();
        for (Launch launch : round.order) round.samples[static_cast<std::size_t>(launch)] = timer.timed(launch);
        round.throttled = round_throttled(round, settings.reference_clock_mhz, settings.throttle_fraction);
        run.rounds.push_back(round);
        if (round.throttled) ++run.throttled_rounds;
        else ++run.kept_rounds;

        if (!round.throttled && run.kept_rounds >= check_at) {
            ++run.stop_checks;
            check_at = next_stop_check(run.kept_rounds);
            const RatioInterval interval =
                bootstrap_median_interval(kept_ratios(run.rounds, Launch::candidate), settings.bootstrap);
            const bool precise = interval_precise_enough(interval, rule);
            if (precise) run.stopped_by = StopReason::half_width;
            if (progress) {
                run.seconds = elapsed();
                progress(run, interval);
            }
            if (precise) break;
        }
        if (elapsed() >= settings.budget_seconds) {
            run.stopped_by = StopReason::budget;
            break;
        }
    }
    run.seconds = elapsed();
    return run;
}

TimingStats timing_stats(const TimingRun &run, const BootstrapOptions &bootstrap) {
    TimingStats stats;
    for (Launch launch : all_launches)
        stats.launches[static_cast<std::size_t>(launch)] = summarize(kept_times(run.rounds, launch));
    stats.candidate_vs_baseline = bootstrap_median_interval(kept_ratios(run.rounds, Launch::candidate), bootstrap);
    stats.control_vs_baseline = bootstrap_median_interval(kept_ratios(run.rounds, Launch::baseline_control), bootstrap);
    std::vector<double> clocks;
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

std::optional<std::string> too_noisy_reason(const RatioInterval &aa) {
    if (aa.contains(1.0)) return std::nullopt;
    std::ostringstream text;
    text << std::fixed << std::setprecision(4) << "the A/A control (the baseline timed against itself) gives a ratio of "
         << aa.median << " with a " << std::setprecision(0) << aa.confidence * 100 << "% interval of "
         << std::setprecision(4) << aa.lo << " .. " << aa.hi
         << ", which does not contain 1: the machine is too noisy to time on (" << aa.n
         << " rounds); free the GPU of other work and run 'sage2tp time --force'";
    return text.str();
}

}  // namespace s2tp

namespace s2tp {

std::string speed_in_words(double ratio) {
    char times[32], percent[32];
    std::snprintf(times, sizeof times, "%.3fx", ratio);
    const double change = (ratio - 1.0) * 100.0;
    std::snprintf(percent, sizeof percent, "%.1f%%", std::fabs(change));
    const std::string share = std::string(" (") + times + " the baseline's time)";
    if (std::string(percent) == "0.0%") return "the candidate is as fast as the baseline" + share;
    return std::string("the candidate is ") + percent + (change > 0 ? " slower" : " faster") + share;
}

}  // namespace s2tp
