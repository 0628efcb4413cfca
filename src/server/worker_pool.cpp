#include "server/worker_pool.h"

#include <utility>

namespace omnibus::server {

WorkerPool::WorkerPool(size_t threads) {
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() {
  {
    MutexLock lock(mu_);
    closing_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::post(std::function<void()> task) {
  {
    MutexLock lock(mu_);
    tasks_.push_back(std::move(task));
  }
  ready_.notify_one();
}

size_t WorkerPool::queued() const {
  MutexLock lock(mu_);
  return tasks_.size();
}

void WorkerPool::work() {
  while (true) {
    std::function<void()> task;
    {
      MutexLock lock(mu_);
      ready_.wait(lock, [this]() REQUIRES(mu_) { return closing_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // closing, nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace omnibus::server
