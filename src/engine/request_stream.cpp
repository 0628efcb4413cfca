#include "engine/request_stream.h"

#include <utility>

namespace omnibus {

void RequestStream::push(StreamEvent event) {
  {
    MutexLock lock(mu_);
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

bool RequestStream::wait(std::vector<StreamEvent>& out, std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&]() REQUIRES(mu_) { return !events_.empty(); })) return false;
  while (!events_.empty()) {
    out.push_back(std::move(events_.front()));
    events_.pop_front();
  }
  return true;
}

}  // namespace omnibus
