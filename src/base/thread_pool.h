// A persistent pool of worker threads for data-parallel loops. The calling
// thread takes part as worker 0, so a pool of N threads starts N-1 workers.
// Workers spin briefly between jobs (decode issues hundreds of small jobs per
// token; a sleep/wake per job would cost more than the job) and then sleep.
//
// Thread-safety: run() may be called from several threads (a backend lends
// one pool to all its runners); the calls take turns, one job at a time.
// The work function is called concurrently on all threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace omnibus {

class ThreadPool {
 public:
  // fn(thread_index, thread_count); each thread must pick its share itself.
  using Job = std::function<void(int, int)>;

  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return thread_count_; }

  // Runs fn on every thread and returns when all have finished.
  void run(const Job& fn);

  // Inside a job: returns once every thread of the job has called sync()
  // as many times as this thread has (a barrier). Every thread of a job
  // must make the same number of calls. Writes before a thread's call are
  // visible to every thread after its own. One cache line per thread, so a
  // crossing costs one line transfer each way (two threads); with wait
  // counting on, thread 0's wait adds to wait_ns() and a worker's is not
  // counted as busy.
  void sync(int thread);

  // Splits [0, n) into contiguous ranges, one per thread: fn(begin, end).
  // The split depends only on n and the thread count, never on timing.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

  // Number of jobs run so far (for tests that count synchronisation).
  uint64_t jobs_run() const { return generation_.load(std::memory_order_relaxed); }

  // Profiling: when on, run() adds the time the calling thread spends waiting
  // for the other workers to finish (load imbalance plus hand-off latency)
  // to wait_ns(). Off by default; off costs one branch per run().
  // The workers (1 .. N-1) then also add the time they spend running jobs
  // to workers_busy_ns(): the rest of their time they spin or sleep.
  void set_wait_counting(bool on) { count_wait_.store(on, std::memory_order_relaxed); }
  uint64_t wait_ns() const { return wait_ns_; }
  // The workers' time inside jobs, summed over workers (counted while wait
  // counting is on; read on run()'s calling thread between jobs).
  uint64_t workers_busy_ns() const;
  // The running total behind wait_ns(), for Profiler::set_wait_counter.
  const uint64_t* wait_ns_counter() const { return &wait_ns_; }

 private:
  void worker_loop(int index);

  int thread_count_;
  std::vector<std::thread> workers_;
  const Job* job_ = nullptr;
  std::atomic<bool> count_wait_{false};  // read by the workers too (their busy time)
  uint64_t wait_ns_ = 0;  // only run()'s caller touches it
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::mutex caller_mutex_;  // run()'s callers take turns
  // Per worker, on its own cache line: nanoseconds inside jobs.
  struct alignas(64) WorkerBusy {
    std::atomic<uint64_t> ns{0};
  };
  std::unique_ptr<WorkerBusy[]> busy_;
  // Per thread, on its own cache line: how many sync() calls it has made.
  struct alignas(64) SyncCount {
    std::atomic<uint64_t> calls{0};
  };
  std::unique_ptr<SyncCount[]> sync_;
  void wait_for_sync(int thread, uint64_t round) const;
};

}  // namespace omnibus
