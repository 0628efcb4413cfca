#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/cpu_relax.h"

namespace omnibus {
namespace {
// How long an idle worker spins before it sleeps. Long enough to cover the gap
// between two matmuls of a decode step, short enough not to burn a core
// while the server is idle.
constexpr auto kSpinTime = std::chrono::microseconds(2000);
// Pauses a waiting thread spins before it starts yielding its core (about
// 50-150 us, far above the usual wait for a job's end or a barrier, under
// 5 us).
constexpr int kSpinsBeforeYield = 1024;

// Spins until done(), then yields between checks: with more threads than
// cores the thread being waited for may need this core to get there at all
// (pure spinning made `-t 3` decode on two cores 30x slower).
inline void pause_or_yield(int spins) {
  if (spins < kSpinsBeforeYield) {
    cpu_relax();
  } else {
    std::this_thread::yield();
  }
}

template <class Done>
void spin_until(Done&& done) {
  for (int spins = 0; !done(); ++spins) pause_or_yield(spins);
}
}  // namespace

ThreadPool::ThreadPool(int threads)
    : thread_count_(std::max(1, threads)),
      busy_(std::make_unique<WorkerBusy[]>(thread_count_)),
      sync_(std::make_unique<SyncCount[]>(thread_count_)) {
  for (int i = 1; i < thread_count_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(const Job& fn) {
  if (thread_count_ == 1) {
    fn(0, 1);
    return;
  }
  // Uncontended (one engine thread) it costs an atomic exchange per job.
  std::lock_guard<std::mutex> turn(caller_mutex_);
  job_ = &fn;
  pending_.store(thread_count_ - 1, std::memory_order_relaxed);
  {
    // Publishing under the mutex pairs with sleeping workers' wait predicate.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  if (sleepers_.load(std::memory_order_acquire) > 0) wake_.notify_all();
  fn(0, thread_count_);
  auto all_done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (count_wait_.load(std::memory_order_relaxed)) {
    const auto wait_start = std::chrono::steady_clock::now();
    spin_until(all_done);
    wait_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - wait_start).count();
  } else {
    spin_until(all_done);
  }
  job_ = nullptr;
}

uint64_t ThreadPool::workers_busy_ns() const {
  uint64_t total = 0;
  for (int i = 1; i < thread_count_; ++i) total += busy_[i].ns.load(std::memory_order_relaxed);
  return total;
}

void ThreadPool::sync(int thread) {
  if (thread_count_ == 1) return;
  // Counts only grow, so a fast thread that has already arrived at the next
  // round (count + 2) also satisfies a slow thread's wait for this one.
  const uint64_t round = sync_[thread].calls.load(std::memory_order_relaxed) + 1;
  sync_[thread].calls.store(round, std::memory_order_release);
  if (!count_wait_.load(std::memory_order_relaxed)) return wait_for_sync(thread, round);
  const auto start = std::chrono::steady_clock::now();
  wait_for_sync(thread, round);
  const uint64_t ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  if (thread == 0) {
    wait_ns_ += ns;
  } else {
    // Taken back from the busy time worker_loop adds when the job ends
    // (unsigned arithmetic: the sum is right once both are in).
    busy_[thread].ns.fetch_sub(ns, std::memory_order_relaxed);
  }
}

void ThreadPool::wait_for_sync(int thread, uint64_t round) const {
  for (int other = 0; other < thread_count_; ++other) {
    if (other == thread) continue;
    spin_until([&] { return sync_[other].calls.load(std::memory_order_acquire) >= round; });
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  run([&](int index, int count) {
    const int64_t begin = n * index / count;
    const int64_t end = n * (index + 1) / count;
    if (begin < end) fn(begin, end);
  });
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    auto spin_start = std::chrono::steady_clock::now();
    uint64_t gen;
    int spins = 0;
    while ((gen = generation_.load(std::memory_order_acquire)) == seen && !stop_.load()) {
      pause_or_yield(spins);  // as spin_until, and then sleep (below)
      if (++spins % 1024 == 0 && std::chrono::steady_clock::now() - spin_start > kSpinTime) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return generation_.load() != seen || stop_.load(); });
        sleepers_.fetch_sub(1);
        spin_start = std::chrono::steady_clock::now();
      }
    }
    if (stop_.load()) return;
    seen = gen;
    if (count_wait_.load(std::memory_order_relaxed)) {
      const auto start = std::chrono::steady_clock::now();
      (*job_)(index, thread_count_);
      busy_[index].ns.fetch_add(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count(),
          std::memory_order_relaxed);
    } else {
      (*job_)(index, thread_count_);
    }
    // Publishes the job's writes (and the busy time) to run()'s acquire.
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace omnibus
