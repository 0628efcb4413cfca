// Summaries of a sample (latencies, gaps): mean and percentiles, the way the
// standard serving benchmarks report them.
#pragma once

#include <cstddef>
#include <vector>

namespace omnibus::bench {

struct Distribution {
  size_t count = 0;  // 0: every other field is 0
  double mean = 0;
  double min = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double max = 0;
};

// Percentile `q` in [0, 100] of `sorted` (ascending, non-empty), linearly
// interpolated between closest ranks: numpy's default ("linear"), which
// vLLM's benchmark, aiperf and guidellm also use, so figures compare.
double percentile_of_sorted(const std::vector<double>& sorted, double q);

Distribution summarize(std::vector<double> values);

}  // namespace omnibus::bench
