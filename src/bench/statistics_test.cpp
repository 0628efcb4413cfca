#include "bench/statistics.h"

#include <gtest/gtest.h>

namespace omnibus::bench {
namespace {

TEST(Statistics, PercentilesInterpolateLikeNumpy) {
  // numpy.percentile([1,2,3,4,5,6,7,8,9,10], [50, 90, 99]) = 5.5, 9.1, 9.91
  Distribution d = summarize({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_EQ(d.count, 10u);
  EXPECT_DOUBLE_EQ(d.mean, 5.5);
  EXPECT_DOUBLE_EQ(d.p50, 5.5);
  EXPECT_NEAR(d.p90, 9.1, 1e-12);
  EXPECT_NEAR(d.p99, 9.91, 1e-12);
  EXPECT_DOUBLE_EQ(d.min, 1);
  EXPECT_DOUBLE_EQ(d.max, 10);
}

TEST(Statistics, EmptyAndSingle) {
  EXPECT_EQ(summarize({}).count, 0u);
  Distribution one = summarize({0.25});
  EXPECT_DOUBLE_EQ(one.p50, 0.25);
  EXPECT_DOUBLE_EQ(one.p99, 0.25);
  EXPECT_DOUBLE_EQ(percentile_of_sorted({}, 50), 0);
}

}  // namespace
}  // namespace omnibus::bench
