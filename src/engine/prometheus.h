// Minimal Prometheus text-format (version 0.0.4) primitives: a histogram with
// fixed buckets and a writer that renders counters, gauges and histograms
// with their HELP and TYPE lines. Plain data; the owner serialises access.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace omnibus {

class Histogram {
 public:
  // Upper bounds, ascending; a +Inf bucket is implied.
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  const std::vector<double>& upper_bounds() const { return bounds_; }
  // Non-cumulative count per bucket; the last entry is the +Inf bucket.
  const std::vector<uint64_t>& bucket_counts() const { return counts_; }
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  double sum_ = 0;
};

// Latency buckets in seconds, 1 ms to 60 s.
std::vector<double> latency_buckets_seconds();

class PrometheusWriter {
 public:
  void counter(const std::string& name, const std::string& help, double value);
  // A counter family with one label (e.g. outcome="completed").
  void labelled_counter(const std::string& name, const std::string& help, const std::string& label,
                        const std::vector<std::pair<std::string, double>>& values);
  void gauge(const std::string& name, const std::string& help, double value);
  void histogram(const std::string& name, const std::string& help, const Histogram& h);
  const std::string& text() const { return out_; }

 private:
  void header(const std::string& name, const std::string& help, const char* type);
  std::string out_;
};

}  // namespace omnibus
