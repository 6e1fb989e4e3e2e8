#include "model/device_sharding.h"

#include "support/errors.h"

#include <algorithm>

namespace s2tp {

DeviceList DeviceList::one(int index) { return DeviceList{false, {index}}; }

std::string DeviceList::text() const {
    if (all) return "all";
    std::string text;
    for (const int index : indices) text += (text.empty() ? "" : ",") + std::to_string(index);
    return text;
}

DeviceList parse_device_list(const std::string &spec) {
    if (spec == "all") return DeviceList{true, {}};
    DeviceList list;
    std::size_t start = 0;
    while (start <= spec.size()) {
        const std::size_t comma = std::min(spec.find(',', start), spec.size());
        const std::string word = spec.substr(start, comma - start);
        if (word.empty() || word.size() > 4 || word.find_first_not_of("0123456789") != std::string::npos)
            fail(ExitCode::usage, "--devices '" + spec + "': '" + word + "' is not a GPU index (give 0,1,... or all)");
        const int index = std::stoi(word);
        if (std::find(list.indices.begin(), list.indices.end(), index) != list.indices.end())
            fail(ExitCode::usage, "--devices '" + spec + "' names GPU " + word + " twice");
        list.indices.push_back(index);
        start = comma + 1;
    }
    return list;
}

std::vector<int> visible_devices(const DeviceList &list, int visible) {
    if (list.all) {
        if (visible < 1) fail(ExitCode::missing_tool, "--devices all: no GPU is visible here");
        std::vector<int> all(static_cast<std::size_t>(visible));
        for (int i = 0; i < visible; ++i) all[static_cast<std::size_t>(i)] = i;
        return all;
    }
    for (const int index : list.indices)
        if (index < 0 || index >= visible)
            fail(ExitCode::missing_tool, "GPU " + std::to_string(index) + " is not visible here (" +
                                             std::to_string(visible) + " visible" +
                                             (visible > 0 ? ": 0.." + std::to_string(visible - 1) : "") + ")");
    return list.indices;
}

std::vector<int> assign_checks(std::size_t checks, const std::vector<int> &devices) {
    if (devices.empty()) fail(ExitCode::internal, "assign_checks: no GPU to assign checks to");
    std::vector<int> gpu_of_check(checks);
    for (std::size_t i = 0; i < checks; ++i) gpu_of_check[i] = devices[i % devices.size()];
    return gpu_of_check;
}

std::optional<std::string> device_error_in(const std::string &output) {
    // The runtime's names and the driver's, as describe() in gpu_runtime.cpp writes them.
    static const char *const kDeviceErrors[] = {
        "cudaErrorNoDevice",          "cudaErrorInvalidDevice",      "cudaErrorDevicesUnavailable",
        "cudaErrorDeviceUnavailable", "cudaErrorECCUncorrectable",   "cudaErrorSystemNotReady",
        "CUDA_ERROR_NO_DEVICE",       "CUDA_ERROR_INVALID_DEVICE",   "CUDA_ERROR_DEVICE_UNAVAILABLE",
        "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_SYSTEM_NOT_READY",
    };
    std::optional<std::string> first;
    std::size_t first_at = std::string::npos;
    for (const char *name : kDeviceErrors) {
        const std::size_t at = output.find(name);
        if (at < first_at) first_at = at, first = name;
    }
    return first;
}

GpuQueues::GpuQueues(std::size_t items, const std::vector<int> &devices, ItemPlacement placement)
    : devices_(devices), queues_(devices.size()), lost_(devices.size(), false), placement_(placement) {
    const std::vector<int> gpu_of_item = assign_checks(items, devices);
    for (std::size_t item = 0; item < items; ++item) queues_[slot(gpu_of_item[item])].push_back(item);
}

std::size_t GpuQueues::slot(int device) const {
    const auto found = std::find(devices_.begin(), devices_.end(), device);
    if (found == devices_.end()) fail(ExitCode::internal, "GpuQueues: GPU " + std::to_string(device) + " has no queue");
    return static_cast<std::size_t>(found - devices_.begin());
}

std::optional<std::size_t> GpuQueues::take(int device) {
    std::deque<std::size_t> &queue = queues_[slot(device)];
    if (queue.empty()) return std::nullopt;
    const std::size_t item = queue.front();
    queue.pop_front();
    return item;
}

bool GpuQueues::add(int device, std::size_t item) {
    std::size_t to = slot(device);
    if (lost_[to]) {
        if (placement_ == ItemPlacement::pinned) return false;
        if (std::all_of(lost_.begin(), lost_.end(), [](bool l) { return l; })) return false;
        while (lost_[next_ % devices_.size()]) ++next_;
        to = next_++ % devices_.size();
    }
    queues_[to].push_back(item);
    return true;
}

bool GpuQueues::has_work(int device) const { return !queues_[slot(device)].empty(); }

bool GpuQueues::empty() const {
    return std::all_of(queues_.begin(), queues_.end(), [](const std::deque<std::size_t> &q) { return q.empty(); });
}

bool GpuQueues::lost(int device) const { return lost_[slot(device)]; }

std::vector<std::size_t> GpuQueues::lose(int device) {
    const std::size_t from = slot(device);
    lost_[from] = true;
    std::deque<std::size_t> orphans = std::move(queues_[from]);
    queues_[from].clear();
    if (placement_ == ItemPlacement::pinned || std::all_of(lost_.begin(), lost_.end(), [](bool l) { return l; }))
        return {orphans.begin(), orphans.end()};
    for (const std::size_t item : orphans) add(device, item);
    return {};
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

bool several_gpu_models(const std::vector<std::string> &models) {
    return std::any_of(models.begin(), models.end(), [&](const std::string &m) { return m != models.front(); });
}

GpuTimings combine_gpu_timings(const std::vector<GpuTimingRun> &gpus, const BootstrapOptions &bootstrap) {
    GpuTimings timings;
    std::vector<TimingRun> finished;
    std::vector<std::string> models;
    std::size_t gpus_finished = 0;
    for (const GpuTimingRun &g : gpus) {
        models.push_back(g.name);
        if (!g.lost.empty()) timings.lost.push_back(g.device);
        if (g.runs.empty()) continue;
        timings.per_gpu.emplace_back(g.device, timing_stats(g.runs, bootstrap));
        finished.insert(finished.end(), g.runs.begin(), g.runs.end());
        ++gpus_finished;
    }
    if (gpus_finished >= 2 && !several_gpu_models(models)) timings.combined = timing_stats(finished, bootstrap);
    return timings;
}

}  // namespace s2tp
