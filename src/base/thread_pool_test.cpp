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

}  // namespace
}  // namespace omnibus
