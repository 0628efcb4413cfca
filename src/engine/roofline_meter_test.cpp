#include "engine/roofline_meter.h"

#include <gtest/gtest.h>

namespace omnibus {
namespace {

TokenCost simple_cost() {
  TokenCost c;
  c.weight_bytes = 1000;
  c.kv_bytes_per_position = 10;
  c.matmul_flops = 200;
  c.attention_flops_per_position = 4;
  return c;
}

TEST(RooflineMeter, WeightsOncePerStepPlusEachRowsHistory) {
  RooflineMeter meter(simple_cost(), /*bandwidth=*/2000, /*peak=*/1000);
  EXPECT_EQ(meter.reading().bytes_per_second, 0);
  // 3 rows attending 50 positions in all, in 0.5 s:
  // bytes = 1000 + 10 * 50 = 1500; flops = 200 * 3 + 4 * 50 = 800.
  meter.on_step(3, 50, 0.5);
  RooflineReading r = meter.reading();
  EXPECT_DOUBLE_EQ(r.bytes_per_second, 3000);
  EXPECT_DOUBLE_EQ(r.flops_per_second, 1600);
  EXPECT_DOUBLE_EQ(r.bandwidth_utilization, 1.5);
  EXPECT_DOUBLE_EQ(r.flops_utilization, 1.6);
}

TEST(RooflineMeter, KeepsOnlyTheLastWindowOfSteps) {
  RooflineMeter meter(simple_cost(), 0, 0);
  meter.on_step(1, 0, 100.0);  // a slow step that falls out of the window
  for (int i = 0; i < RooflineMeter::kWindow; ++i) meter.on_step(1, 0, 0.001);
  RooflineReading r = meter.reading();
  EXPECT_NEAR(r.bytes_per_second, 1000 / 0.001, 1e-3);
  EXPECT_EQ(r.bandwidth_utilization, 0);  // ceilings unknown
  EXPECT_EQ(r.flops_utilization, 0);
}

// Sliding-window layers (Gemma 3: five in six) read at most their window:
// 6 layers, 5 with a window of 512, at 2,048 positions attend
// (1 x 2048 + 5 x 512) / 6 = 768 positions per layer on average.
TEST(RooflineMeter, WindowLayersAttendToAtMostTheirWindow) {
  TokenCost c = simple_cost();
  c.n_layer = 6;
  c.window_layers = 5;
  c.window = 512;
  EXPECT_DOUBLE_EQ(c.attended_positions(100), 100);
  EXPECT_DOUBLE_EQ(c.attended_positions(2048), 768);
  EXPECT_DOUBLE_EQ(c.decode_bytes(2048), 1000 + 10 * 768);
  EXPECT_DOUBLE_EQ(simple_cost().attended_positions(2048), 2048);  // no windows
}

}  // namespace
}  // namespace omnibus
