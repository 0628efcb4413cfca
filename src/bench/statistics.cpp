#include "bench/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace omnibus::bench {

double percentile_of_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double rank = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Distribution summarize(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.count = values.size();
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  d.min = values.front();
  d.max = values.back();
  d.p50 = percentile_of_sorted(values, 50);
  d.p90 = percentile_of_sorted(values, 90);
  d.p99 = percentile_of_sorted(values, 99);
  return d;
}

}  // namespace omnibus::bench
