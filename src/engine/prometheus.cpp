#include "engine/prometheus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace omnibus {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  if (std::isnan(value)) return;
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[bucket];
  ++count_;
  sum_ += value;
}

std::vector<double> latency_buckets_seconds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3, 0.5,
          0.75,  1.0,    1.5,   2.0,  3.0,  5.0,  7.5,  10.0, 15.0, 20.0, 30.0, 60.0};
}

namespace {
// Prometheus floats: shortest round-trip form; integers without a fraction.
std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  return fmt::format("{}", v);
}
}  // namespace

void PrometheusWriter::header(const std::string& name, const std::string& help, const char* type) {
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void PrometheusWriter::counter(const std::string& name, const std::string& help, double value) {
  header(name, help, "counter");
  out_ += fmt::format("{} {}\n", name, number(value));
}

void PrometheusWriter::labelled_counter(const std::string& name, const std::string& help, const std::string& label,
                                        const std::vector<std::pair<std::string, double>>& values) {
  header(name, help, "counter");
  for (const auto& [value_label, v] : values) out_ += fmt::format("{}{{{}=\"{}\"}} {}\n", name, label, value_label, number(v));
}

void PrometheusWriter::gauge(const std::string& name, const std::string& help, double value) {
  header(name, help, "gauge");
  out_ += fmt::format("{} {}\n", name, number(value));
}

void PrometheusWriter::histogram(const std::string& name, const std::string& help, const Histogram& h) {
  header(name, help, "histogram");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.upper_bounds().size(); ++i) {
    cumulative += h.bucket_counts()[i];
    out_ += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, number(h.upper_bounds()[i]), cumulative);
  }
  out_ += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, h.count());
  out_ += fmt::format("{}_sum {}\n{}_count {}\n", name, number(h.sum()), name, h.count());
}

}  // namespace omnibus
