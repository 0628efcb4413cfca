// RooflineMeter: how close the last engine steps came to the machine's
// limits. Each step reads the weights once plus every row's K/V history and
// does each row's FLOPs (model/model_cost.h); over a window of the last
// steps' busy time that gives achieved bytes/s and FLOP/s, and, divided by
// the measured ceilings, model bandwidth utilisation (MBU) and model FLOP
// utilisation (MFU). Not thread-safe: the engine thread records, and copies
// the readings into its gauges.
#pragma once

#include <array>
#include <cstdint>

#include "model/model_cost.h"

namespace omnibus {

struct RooflineReading {
  double bytes_per_second = 0;
  double flops_per_second = 0;
  double bandwidth_utilization = 0;  // 0 when the machine's bandwidth is unknown
  double flops_utilization = 0;      // 0 when the machine's peak is unknown
};

class RooflineMeter {
 public:
  // Ceilings <= 0 are unknown (utilisations then read 0).
  RooflineMeter(const TokenCost& cost, double memory_bandwidth, double peak_flops)
      : cost_(cost), bandwidth_(memory_bandwidth), peak_(peak_flops) {}

  // A step of `rows` tokens that attended to `attended_positions` cached
  // positions in all (sum over rows of position + 1) and took `seconds`.
  void on_step(int64_t rows, double attended_positions, double seconds);
  // What a row at `context` cached positions attends to (fewer than
  // `context` in a model with sliding-window layers): sum these for on_step.
  double attended_positions(int64_t context) const { return cost_.attended_positions(context); }
  RooflineReading reading() const;

  static constexpr int kWindow = 16;  // steps

 private:
  struct Step {
    double bytes = 0, flops = 0, seconds = 0;
  };
  TokenCost cost_;
  double bandwidth_, peak_;
  std::array<Step, kWindow> steps_{};
  int next_ = 0;
};

}  // namespace omnibus
