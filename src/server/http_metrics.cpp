#include "server/http_metrics.h"

#include <utility>
#include <vector>

namespace omnibus::server {

HttpMetrics::HttpMetrics() : duration_(latency_buckets_seconds()) {}

void HttpMetrics::add_in_flight(int delta) {
  MutexLock lock(mu_);
  in_flight_ += delta;
}

void HttpMetrics::response_sent(int status, double seconds) {
  MutexLock lock(mu_);
  ++responses_by_status_[status];
  duration_.observe(seconds);
}

void HttpMetrics::client_disconnected() {
  MutexLock lock(mu_);
  ++disconnects_;
}

std::string HttpMetrics::text() const {
  MutexLock lock(mu_);
  PrometheusWriter w;
  std::vector<std::pair<std::string, double>> by_status;
  for (const auto& [status, count] : responses_by_status_) {
    by_status.emplace_back(std::to_string(status), static_cast<double>(count));
  }
  w.labelled_counter("omnibus_http_responses_total", "HTTP responses by status code.", "code", by_status);
  w.histogram("omnibus_http_request_duration_seconds", "HTTP request arrival to response complete.", duration_);
  w.gauge("omnibus_http_requests_in_flight", "HTTP requests being handled.", static_cast<double>(in_flight_));
  w.counter("omnibus_http_client_disconnects_total", "Streams ended because the client went away.",
            static_cast<double>(disconnects_));
  return w.text();
}

}  // namespace omnibus::server
