// The GPU work pool with fake GPUs: how items are dealt, what becomes of a lost GPU's items (moved,
// or reported not run, never passed), a failure that stops the pool, and how a GPU's files are named.
#include "tools/gpu_session/gpu_work_pool.h"

#include "support/errors.h"

#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include <gtest/gtest.h>

using namespace s2tp;

namespace s2tp::unit_gpu_work_pool {

namespace {

// What a fake GPU's work saw: each item's GPU, in the order each GPU ran them.
struct Ran {
    std::mutex mutex;
    std::map<std::size_t, int> gpu_of;
    std::map<int, std::vector<std::size_t>> order;

    void note(std::size_t item, int gpu) {
        std::lock_guard<std::mutex> lock(mutex);
        gpu_of[item] = gpu;
        order[gpu].push_back(item);
    }
};

[[noreturn]] void lose_the_gpu(int gpu) {
    fail(ExitCode::missing_tool, "GPU " + std::to_string(gpu) + " failed: cudaErrorDevicesUnavailable");
}

// Six items on GPUs 0 and 1, GPU 1 lost on its first item.
GpuPoolReport lose_gpu_1_of_two(ItemPlacement placement, Ran &ran) {
    GpuWorkPool pool({0, 1}, 6, placement);
    return pool.run([&](std::size_t item, int gpu) {
        if (gpu == 1) lose_the_gpu(gpu);
        ran.note(item, gpu);
    });
}

}  // namespace

TEST(GpuWorkPool, DealsRoundRobinAndEachGpuRunsItsItemsInOrder) {
    Ran ran;
    GpuWorkPool pool({0, 2, 5}, 7, ItemPlacement::movable);
    const GpuPoolReport report = pool.run([&](std::size_t item, int gpu) { ran.note(item, gpu); });
    EXPECT_EQ(ran.order[0], (std::vector<std::size_t>{0, 3, 6}));
    EXPECT_EQ(ran.order[2], (std::vector<std::size_t>{1, 4}));
    EXPECT_EQ(ran.order[5], (std::vector<std::size_t>{2, 5}));
    EXPECT_TRUE(report.not_run.empty());
    EXPECT_EQ(report.share(0).dealt, 3u);
    EXPECT_EQ(report.share(0).ran, 3u);
    EXPECT_EQ(report.share(5).ran, 2u);
    for (const GpuShare &share : report.gpus) EXPECT_FALSE(share.lost);
}

TEST(GpuWorkPool, ALostGpusQueuedItemsMoveToTheGpusStillRunning) {
    Ran ran;
    const GpuPoolReport report = lose_gpu_1_of_two(ItemPlacement::movable, ran);
    // Item 1 lost GPU 1 (the client reports it); GPU 1's queue, items 3 and 5, ran on GPU 0.
    EXPECT_EQ(ran.order[0], (std::vector<std::size_t>{0, 2, 4, 3, 5}));
    EXPECT_EQ(ran.gpu_of.count(1), 0u);
    EXPECT_TRUE(report.not_run.empty());
    ASSERT_TRUE(report.share(1).lost);
    EXPECT_EQ(report.share(1).lost->device_error, "cudaErrorDevicesUnavailable");
    EXPECT_EQ(report.share(1).lost->message, "GPU 1 failed: cudaErrorDevicesUnavailable");
    EXPECT_EQ(report.share(1).dealt, 1u);
    EXPECT_EQ(report.share(1).ran, 0u);
    EXPECT_EQ(report.share(0).dealt, 5u);
    EXPECT_EQ(report.share(0).ran, 5u);
}

TEST(GpuWorkPool, ALostGpusPinnedItemsAreReportedNotRun) {
    Ran ran;
    const GpuPoolReport report = lose_gpu_1_of_two(ItemPlacement::pinned, ran);
    EXPECT_EQ(ran.order[0], (std::vector<std::size_t>{0, 2, 4}));
    ASSERT_EQ(report.not_run.size(), 2u);
    EXPECT_EQ(report.not_run[0].item, 3u);
    EXPECT_EQ(report.not_run[1].item, 5u);
    EXPECT_EQ(report.not_run[0].gpu, 1);
    EXPECT_EQ(report.share(1).dealt, 3u);  // the one it was lost on and the two not run
}

TEST(GpuWorkPool, WithEveryGpuLostTheQueuedItemsAreReportedNotRun) {
    GpuWorkPool pool({0, 1}, 5, ItemPlacement::movable);
    const GpuPoolReport report = pool.run([&](std::size_t, int gpu) { lose_the_gpu(gpu); });
    std::set<std::size_t> not_run;
    for (const GpuPoolReport::NotRun &n : report.not_run) not_run.insert(n.item);
    EXPECT_EQ(not_run, (std::set<std::size_t>{2, 3, 4}));  // items 0 and 1 each lost a GPU
    EXPECT_TRUE(report.share(0).lost);
    EXPECT_TRUE(report.share(1).lost);
    EXPECT_EQ(report.share(0).ran + report.share(1).ran, 0u);
}

TEST(GpuWorkPool, AGpuLostAsItsWorkerStartsHandsItsItemsOn) {
    Ran ran;
    GpuWorkPool pool({0, 1}, 4, ItemPlacement::movable);
    const GpuPoolReport report = pool.run_per_worker([&](int gpu) -> GpuWorkPool::Work {
        if (gpu == 1) lose_the_gpu(gpu);
        return [&](std::size_t item, int on) { ran.note(item, on); };
    });
    EXPECT_EQ(ran.order[0].size(), 4u);
    EXPECT_TRUE(report.share(1).lost);
    EXPECT_EQ(report.share(1).dealt, 0u);
}

TEST(GpuWorkPool, AFailureThatIsNotTheGpusStopsThePoolAndIsRethrown) {
    Ran ran;
    GpuWorkPool pool({0}, 4, ItemPlacement::movable);
    EXPECT_THROW(pool.run([&](std::size_t item, int gpu) {
        ran.note(item, gpu);
        if (item == 1) throw std::runtime_error("a bug");
    }),
                 std::runtime_error);
    EXPECT_EQ(ran.order[0], (std::vector<std::size_t>{0, 1}));
}

// A worker with an empty queue waits while others run: the item it waits for may add more.
TEST(GpuWorkPool, ItemsAddedByARunningItemRunOnItsGpu) {
    Ran ran;
    GpuWorkPool pool({0}, 1, ItemPlacement::movable, 3);
    const GpuPoolReport report = pool.run([&](std::size_t item, int gpu) {
        if (item == 0) pool.add(gpu, 1), pool.add(gpu, 2);
        ran.note(item, gpu);
    });
    EXPECT_EQ(ran.gpu_of, (std::map<std::size_t, int>{{0, 0}, {1, 0}, {2, 0}}));
    EXPECT_EQ(report.share(0).ran, 3u);
}

TEST(GpuWorkPool, AGpusFilesAreNamedStemGpuThenTheRest) {
    EXPECT_EQ(name_on_gpu("baseline-memcheck-batch", 1, ".log"), "baseline-memcheck-batch-gpu1.log");
    EXPECT_EQ(name_on_gpu("time", 0, "-repeat-3"), "time-gpu0-repeat-3");
    EXPECT_EQ(name_on_gpu("time", 2), "time-gpu2");
}

}  // namespace s2tp::unit_gpu_work_pool
