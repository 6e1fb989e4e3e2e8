#include "tools/gpu_session/gpu_work_pool.h"

#include "support/errors.h"

#include <algorithm>
#include <thread>

namespace s2tp {

std::string name_on_gpu(const std::string &stem, int gpu, const std::string &rest) {
    return stem + "-gpu" + std::to_string(gpu) + rest;
}

const GpuShare &GpuPoolReport::share(int device) const {
    const auto found = std::find_if(gpus.begin(), gpus.end(), [device](const GpuShare &s) { return s.device == device; });
    if (found == gpus.end()) fail(ExitCode::internal, "GPU " + std::to_string(device) + " has no share of the work");
    return *found;
}

GpuWorkPool::GpuWorkPool(const std::vector<int> &gpus, std::size_t items, ItemPlacement placement,
                         std::size_t workers_per_gpu)
    : gpus_(gpus), workers_per_gpu_(std::max<std::size_t>(1, workers_per_gpu)), queues_(items, gpus, placement) {
    for (const int gpu : gpus) report_.gpus.push_back(GpuShare{gpu, 0, 0, std::nullopt});
}

GpuShare &GpuWorkPool::share(int device) {
    return const_cast<GpuShare &>(static_cast<const GpuPoolReport &>(report_).share(device));
}

GpuPoolReport GpuWorkPool::run(const Work &work) {
    return run_per_worker([&work](int) { return work; });
}

GpuPoolReport GpuWorkPool::run_per_worker(const StartWorker &start) {
    std::vector<std::thread> workers;
    for (const int gpu : gpus_)
        for (std::size_t i = 0; i < workers_per_gpu_; ++i) workers.emplace_back([this, gpu, &start] { work_on(gpu, start); });
    for (std::thread &worker : workers) worker.join();
    if (failure_) std::rethrow_exception(failure_);
    return report_;
}

void GpuWorkPool::add(int gpu, std::size_t item) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!queues_.add(gpu, item)) {
        report_.not_run.push_back({item, gpu});
        ++share(gpu).dealt;
    }
    changed_.notify_all();
}

void GpuWorkPool::work_on(int gpu, const StartWorker &start) {
    Work work;
    try {
        work = start(gpu);
    } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        end_with(gpu, std::current_exception());
        changed_.notify_all();
        return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        changed_.wait(lock, [&] {
            return failure_ || queues_.lost(gpu) || queues_.has_work(gpu) || (running_ == 0 && queues_.empty());
        });
        if (failure_ || queues_.lost(gpu) || !queues_.has_work(gpu)) return;
        const std::size_t item = *queues_.take(gpu);
        ++running_;
        ++share(gpu).dealt;
        lock.unlock();
        std::exception_ptr thrown;
        try {
            work(item, gpu);
        } catch (...) {
            thrown = std::current_exception();
        }
        lock.lock();
        --running_;
        if (thrown) end_with(gpu, thrown);
        else ++share(gpu).ran;
        changed_.notify_all();
    }
}

void GpuWorkPool::end_with(int gpu, const std::exception_ptr &thrown) {
    try {
        std::rethrow_exception(thrown);
    } catch (const Error &e) {
        if (const std::optional<std::string> device_error = device_error_in(e.what())) {
            GpuShare &lost = share(gpu);
            if (lost.lost) return;  // another worker of the GPU saw the loss first
            lost.lost = GpuLoss{*device_error, e.what()};
            for (const std::size_t item : queues_.lose(gpu)) {
                report_.not_run.push_back({item, gpu});
                ++lost.dealt;
            }
            return;
        }
        if (!failure_) failure_ = thrown;
    } catch (...) {
        if (!failure_) failure_ = thrown;
    }
}

}  // namespace s2tp
