// What the HTTP layer counts itself, for /metrics next to the engine's
// numbers: responses by status code, client disconnects mid-stream,
// requests in flight and the time from arrival to the last byte handed to
// the socket. Thread-safe: every method may be called from any HTTP thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/mutex.h"
#include "engine/prometheus.h"

namespace omnibus::server {

class HttpMetrics {
 public:
  HttpMetrics();

  // A handler began (+1) or ended (-1).
  void add_in_flight(int delta);
  // `status` is the HTTP status sent; `seconds` arrival → response complete.
  void response_sent(int status, double seconds);
  void client_disconnected();

  // Prometheus text (version 0.0.4), metric names omnibus_http_*.
  std::string text() const;

 private:
  mutable Mutex mu_;
  std::map<int, uint64_t> responses_by_status_ GUARDED_BY(mu_);
  Histogram duration_ GUARDED_BY(mu_);
  int64_t in_flight_ GUARDED_BY(mu_) = 0;
  uint64_t disconnects_ GUARDED_BY(mu_) = 0;
};

}  // namespace omnibus::server
