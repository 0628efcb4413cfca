// When each request (or conversation) is sent: the load shape.
//   Poisson at `rate` requests/s: exponential gaps, mean 1/rate.
//   Bursty: gamma-distributed gaps with shape `burstiness` and the same mean
//   (vLLM's definition: burstiness 1 is Poisson, < 1 burstier, > 1 steadier).
//   rate = infinity: everything at time 0 (a flood).
// Closed-loop concurrency has no schedule; the runner handles it.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace omnibus::bench {

struct ArrivalShape {
  double rate = 0;        // requests/s; infinity: all at once
  double burstiness = 1;  // gamma shape, > 0
};

Status validate(const ArrivalShape& shape);

// Send times (seconds from the start, ascending, first at 0) of `count`
// requests. Same seed, same schedule.
std::vector<double> arrival_times(const ArrivalShape& shape, int64_t count, uint64_t seed);

// Send times of every request that starts before `duration_s`.
std::vector<double> arrival_times_within(const ArrivalShape& shape, double duration_s, uint64_t seed);

}  // namespace omnibus::bench
