#include "bench/arrivals.h"

#include <fmt/format.h>

#include <cmath>
#include <random>

namespace omnibus::bench {
namespace {

// Yields the gaps: the first request goes at 0, then gamma-distributed gaps.
class GapSource {
 public:
  GapSource(const ArrivalShape& shape, uint64_t seed)
      : flood_(std::isinf(shape.rate)),
        rng_(seed),
        gamma_(shape.burstiness, flood_ ? 0.0 : 1.0 / (shape.rate * shape.burstiness)) {}
  double next() { return flood_ ? 0.0 : gamma_(rng_); }

 private:
  bool flood_;
  std::mt19937_64 rng_;
  std::gamma_distribution<double> gamma_;
};

}  // namespace

Status validate(const ArrivalShape& shape) {
  if (!(shape.rate > 0)) return Status::invalid_argument(fmt::format("request rate must be > 0 (got {})", shape.rate));
  if (!(shape.burstiness > 0) || std::isinf(shape.burstiness)) {
    return Status::invalid_argument(fmt::format("burstiness must be a positive number (got {})", shape.burstiness));
  }
  return Status::ok();
}

std::vector<double> arrival_times(const ArrivalShape& shape, int64_t count, uint64_t seed) {
  std::vector<double> times;
  if (count <= 0) return times;
  GapSource gaps(shape, seed);
  times.reserve(static_cast<size_t>(count));
  double t = 0;
  times.push_back(t);
  while (static_cast<int64_t>(times.size()) < count) {
    t += gaps.next();
    times.push_back(t);
  }
  return times;
}

std::vector<double> arrival_times_within(const ArrivalShape& shape, double duration_s, uint64_t seed) {
  std::vector<double> times;
  if (std::isinf(shape.rate)) return times;  // a flood has no duration; callers give a count
  GapSource gaps(shape, seed);
  for (double t = 0; t < duration_s; t += gaps.next()) times.push_back(t);
  return times;
}

}  // namespace omnibus::bench
