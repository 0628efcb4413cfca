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

}  // namespace
}  // namespace omnibus
