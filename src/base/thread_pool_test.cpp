#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace omnibus {
namespace {

TEST(ThreadPoolTest, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 33, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      for (int rep = 0; rep < 50; ++rep) {
        pool.parallel_for(n, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
        });
      }
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 50) << "n=" << n << " i=" << i;
    }
  }
}

TEST(ThreadPoolTest, RunGivesEachThreadItsIndex) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> seen(3);
  pool.run([&](int index, int count) {
    EXPECT_EQ(count, 3);
    seen[index].fetch_add(1);
  });
  for (auto& s : seen) EXPECT_EQ(s.load(), 1);
}

TEST(ThreadPoolTest, WaitCountingIsOffByDefaultAndCountsWhenOn) {
  ThreadPool pool(2);
  // Worker 1 is slow, so thread 0 must wait for it.
  auto job = [](int index, int) {
    if (index == 1) std::this_thread::sleep_for(std::chrono::milliseconds(3));
  };
  pool.run(job);
  EXPECT_EQ(pool.wait_ns(), 0u);
  pool.set_wait_counting(true);
  pool.run(job);
  EXPECT_GE(pool.wait_ns(), 1'000'000u);  // at least 1 ms of the 3 ms sleep
  pool.set_wait_counting(false);
  const uint64_t before = pool.wait_ns();
  pool.run(job);
  EXPECT_EQ(pool.wait_ns(), before);
}

// With counting on, the workers' time inside jobs is summed; off, nothing.
TEST(ThreadPoolTest, WorkersBusyTimeIsCountedWhenOn) {
  ThreadPool pool(3);
  auto job = [](int index, int) {
    if (index > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  pool.run(job);
  EXPECT_EQ(pool.workers_busy_ns(), 0u);
  pool.set_wait_counting(true);
  pool.run(job);
  EXPECT_GE(pool.workers_busy_ns(), 4'000'000u);  // two workers, 2 ms each
  pool.set_wait_counting(false);
  const uint64_t before = pool.workers_busy_ns();
  pool.run(job);
  EXPECT_EQ(pool.workers_busy_ns(), before);
}

// sync() is a barrier: in every round each thread writes its own slot, and
// after the crossing every thread sees every slot of that round. Rounds run
// back to back (no job boundary between them), over many jobs.
TEST(ThreadPoolTest, SyncMakesEveryThreadsWritesVisibleToAll) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    constexpr int kRounds = 2000;
    std::vector<std::atomic<int>> slot(threads);
    std::atomic<int> errors{0};
    for (int job = 0; job < 5; ++job) {
      pool.run([&](int t, int count) {
        for (int round = 1; round <= kRounds; ++round) {
          const int value = job * kRounds + round;
          slot[t].store(value, std::memory_order_relaxed);
          pool.sync(t);
          for (int u = 0; u < count; ++u)
            if (slot[u].load(std::memory_order_relaxed) != value) errors.fetch_add(1);
          pool.sync(t);  // nobody writes the next round before all have read this one
        }
      });
    }
    EXPECT_EQ(errors.load(), 0) << threads << " threads";
  }
}

// With counting on, thread 0's waits at sync() count as thread wait and a
// worker's waits are taken out of its busy time.
TEST(ThreadPoolTest, SyncWaitsAreCountedAsWaitNotBusy) {
  ThreadPool pool(2);
  pool.set_wait_counting(true);
  using Clock = std::chrono::steady_clock;
  auto sleep_ns = [](int ms) {
    const auto start = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
  };
  uint64_t worker_slept = 0, main_slept = 0;
  pool.run([&](int t, int) {
    if (t == 1) worker_slept = sleep_ns(3);
    pool.sync(t);  // thread 0 waits for the worker's sleep here
    if (t == 0) main_slept = sleep_ns(30);
    pool.sync(t);  // the worker waits for thread 0's sleep here
  });
  EXPECT_GE(pool.wait_ns(), worker_slept / 2);
  EXPECT_GE(pool.workers_busy_ns(), worker_slept);
  // Counted as busy, the worker's wait would add about main_slept.
  EXPECT_LT(pool.workers_busy_ns(), worker_slept + main_slept / 2);
}

}  // namespace
}  // namespace omnibus
