#include "model/device_sharding.h"

#include "support/errors.h"

#include <algorithm>

namespace s2tp {

std::vector<int> parse_device_list(const std::string &spec, int visible) {
    if (spec == "all") {
        if (visible < 1) fail(ExitCode::missing_tool, "--devices all: no GPU is visible here");
        std::vector<int> all(static_cast<std::size_t>(visible));
        for (int i = 0; i < visible; ++i) all[static_cast<std::size_t>(i)] = i;
        return all;
    }
    std::vector<int> devices;
    std::size_t start = 0;
    while (start <= spec.size()) {
        const std::size_t comma = std::min(spec.find(',', start), spec.size());
        const std::string word = spec.substr(start, comma - start);
        if (word.empty() || word.size() > 4 || word.find_first_not_of("0123456789") != std::string::npos)
            fail(ExitCode::usage, "--devices '" + spec + "': '" + word + "' is not a GPU index (give 0,1,... or all)");
        const int index = std::stoi(word);
        if (index >= visible)
            fail(ExitCode::usage, "--devices '" + spec + "': GPU " + word + " is not visible here (" +
                                      std::to_string(visible) + " visible: 0.." + std::to_string(visible - 1) + ")");
        if (std::find(devices.begin(), devices.end(), index) != devices.end())
            fail(ExitCode::usage, "--devices '" + spec + "' names GPU " + word + " twice");
        devices.push_back(index);
        start = comma + 1;
    }
    return devices;
}

std::vector<int> assign_checks(std::size_t checks, const std::vector<int> &devices) {
    if (devices.empty()) fail(ExitCode::internal, "assign_checks: no GPU to assign checks to");
    std::vector<int> gpu_of_check(checks);
    for (std::size_t i = 0; i < checks; ++i) gpu_of_check[i] = devices[i % devices.size()];
    return gpu_of_check;
}

ShardedVerdict judge_sharded_checks(const std::vector<GpuCheckOutcome> &gpus) {
    ShardedVerdict verdict;
    verdict.passed = !gpus.empty();
    for (const GpuCheckOutcome &g : gpus) {
        const std::string who = "GPU " + std::to_string(g.device) + (g.gpu.empty() ? "" : " " + g.gpu);
        if (g.lost) {
            verdict.passed = false;
            verdict.reasons.push_back(who + " was lost after " + std::to_string(g.passed + g.failed) + " of " +
                                      std::to_string(g.checks) + " checks: " + *g.lost);
        }
        if (g.failed > 0) {
            verdict.passed = false;
            verdict.reasons.push_back(who + ": " + std::to_string(g.failed) + " of " + std::to_string(g.checks) +
                                      " checks failed");
        }
        if (!g.lost && g.passed + g.failed < g.checks) {
            verdict.passed = false;
            verdict.reasons.push_back(who + " ran " + std::to_string(g.passed + g.failed) + " of its " +
                                      std::to_string(g.checks) + " checks");
        }
    }
    return verdict;
}

GpuTimings combine_gpu_timings(const std::vector<GpuTimingRun> &gpus, const BootstrapOptions &bootstrap) {
    GpuTimings timings;
    std::vector<TimingRun> finished;
    std::vector<std::string> models;
    for (const GpuTimingRun &g : gpus) {
        if (!g.run) {
            timings.lost.push_back(g.device);
            continue;
        }
        timings.per_gpu.emplace_back(g.device, timing_stats({*g.run}, bootstrap));
        finished.push_back(*g.run);
        models.push_back(g.name);
    }
    const bool one_model = std::all_of(models.begin(), models.end(), [&](const std::string &m) { return m == models.front(); });
    if (finished.size() >= 2 && one_model) timings.combined = timing_stats(finished, bootstrap);
    return timings;
}

}  // namespace s2tp
