// The one way a GPU stage deals its work over the GPUs it was given (--devices): sanitize's batches,
// parity's comparisons and time's per-GPU processes are its clients. Without a GPU of its own: the
// work is the client's function, so tests fake the GPUs.
//
//  * The items (indices into the client's list) are dealt round-robin in order over the GPUs; each GPU
//    has `workers_per_gpu` threads, each taking the next item of its GPU's queue. A worker whose queue
//    is empty waits while others run: a running item may add more (sanitize's singles), or lose a GPU
//    whose queue then moves.
//  * A GPU is lost when its work (or its worker's start) throws an Error whose text names a device
//    error (device_error_in). The item it was lost on is the client's to report (it ran, and failed);
//    the GPU's queued items move round-robin to the GPUs still running, unless they are pinned to it (a
//    measurement of that GPU) or none is left: then they are reported not run. Never passed.
//  * Any other exception stops the pool: no item starts after it, and run() rethrows it.
//
// Usage:
//   GpuWorkPool pool({0, 1}, checks.size(), ItemPlacement::movable);
//   const GpuPoolReport report = pool.run([&](std::size_t item, int gpu) { check(checks[item], gpu); });
//   for (const GpuWorkPool::NotRun &n : report.not_run) ...;  // report checks[n.item] as not run
#pragma once

#include "model/device_sharding.h"

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace s2tp {

// The one naming of a file that one GPU's work writes: STEM-gpuN, then the rest ("-repeat-2.log").
std::string name_on_gpu(const std::string &stem, int gpu, const std::string &rest = "");

// What lost a GPU: the device error (cudaErrorDevicesUnavailable) and the whole message naming it.
struct GpuLoss {
    std::string device_error;
    std::string message;
};

// One GPU's share of the work, as the pool ran it.
struct GpuShare {
    int device = 0;
    std::size_t dealt = 0;  // the items begun on it, and those reported not run when it was lost
    std::size_t ran = 0;    // the items whose work returned
    std::optional<GpuLoss> lost;
};

struct GpuPoolReport {
    struct NotRun {
        std::size_t item;
        int gpu;  // the lost GPU whose queue held it
    };
    std::vector<GpuShare> gpus;  // in the order given
    std::vector<NotRun> not_run;
    const GpuShare &share(int device) const;
};

class GpuWorkPool {
public:
    // One item on `gpu`, on a worker thread of that GPU.
    using Work = std::function<void(std::size_t item, int gpu)>;
    // Called once on each worker thread before its first item (a GPU's context, its loaded modules);
    // returns that worker's work.
    using StartWorker = std::function<Work(int gpu)>;

    GpuWorkPool(const std::vector<int> &gpus, std::size_t items, ItemPlacement placement,
                std::size_t workers_per_gpu = 1);

    GpuPoolReport run(const Work &work);
    GpuPoolReport run_per_worker(const StartWorker &start);
    // From a running item: one more item for `gpu`, moved on as the queues are when `gpu` is lost.
    void add(int gpu, std::size_t item);

private:
    std::vector<int> gpus_;
    std::size_t workers_per_gpu_;
    GpuQueues queues_;
    GpuPoolReport report_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::size_t running_ = 0;
    std::exception_ptr failure_;

    void work_on(int gpu, const StartWorker &start);
    // Under the lock: what an exception from `gpu`'s work means, a lost GPU or the pool's failure.
    void end_with(int gpu, const std::exception_ptr &thrown);
    GpuShare &share(int device);
};

}  // namespace s2tp
