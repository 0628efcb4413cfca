// WorkerPool: the HTTP server's handler threads. Tasks run in arrival
// order on a fixed number of threads that block (not spin) while idle; a
// streaming response holds its thread until it ends, so the thread count
// bounds concurrent handlers, not connections (those wait in the
// ConnectionLoop without a thread).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace omnibus::server {

class WorkerPool {
 public:
  explicit WorkerPool(size_t threads);
  // Runs every task still queued, then joins the threads.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void post(std::function<void()> task);
  // Tasks waiting for a thread.
  size_t queued() const;

 private:
  void work();

  mutable Mutex mu_;
  CondVar ready_;
  std::deque<std::function<void()>> tasks_ GUARDED_BY(mu_);
  bool closing_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace omnibus::server
