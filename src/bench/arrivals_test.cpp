#include "bench/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace omnibus::bench {
namespace {

struct Moments {
  double mean = 0, variance = 0;
};

Moments gap_moments(const std::vector<double>& t) {
  Moments m;
  const double n = static_cast<double>(t.size() - 1);
  for (size_t i = 1; i < t.size(); ++i) m.mean += (t[i] - t[i - 1]) / n;
  for (size_t i = 1; i < t.size(); ++i) m.variance += std::pow(t[i] - t[i - 1] - m.mean, 2) / n;
  return m;
}

TEST(Arrivals, PoissonGapsHaveMeanAndVarianceOfTheRate) {
  std::vector<double> t = arrival_times({4.0, 1.0}, 40000, 7);
  ASSERT_EQ(t.size(), 40000u);
  EXPECT_EQ(t[0], 0.0);
  Moments m = gap_moments(t);
  EXPECT_NEAR(m.mean, 0.25, 0.01);
  EXPECT_NEAR(m.variance, 0.0625, 0.004);  // exponential: variance = mean^2
}

TEST(Arrivals, BurstinessKeepsTheMeanAndScalesTheVariance) {
  // Gamma with shape k and mean 1/rate: variance = 1 / (k rate^2).
  for (double k : {0.25, 4.0}) {
    Moments m = gap_moments(arrival_times({2.0, k}, 40000, 3));
    EXPECT_NEAR(m.mean, 0.5, 0.03) << k;
    EXPECT_NEAR(m.variance, 0.25 / k, 0.25 / k * 0.1) << k;
  }
}

TEST(Arrivals, SameSeedSameScheduleAndAscending) {
  EXPECT_EQ(arrival_times({3, 0.5}, 100, 11), arrival_times({3, 0.5}, 100, 11));
  EXPECT_NE(arrival_times({3, 0.5}, 100, 11), arrival_times({3, 0.5}, 100, 12));
  std::vector<double> t = arrival_times({3, 0.5}, 100, 11);
  for (size_t i = 1; i < t.size(); ++i) EXPECT_GE(t[i], t[i - 1]);
}

TEST(Arrivals, FloodSendsEverythingAtZero) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(arrival_times({inf, 1}, 5, 1), std::vector<double>(5, 0.0));
  EXPECT_TRUE(validate(ArrivalShape{inf, 1}).is_ok());
}

TEST(Arrivals, WithinADuration) {
  std::vector<double> t = arrival_times_within({10, 1}, 100, 5);
  EXPECT_NEAR(static_cast<double>(t.size()), 1000, 100);
  EXPECT_LT(t.back(), 100);
}

TEST(Arrivals, ValidateRefusesNonsense) {
  EXPECT_FALSE(validate(ArrivalShape{0, 1}).is_ok());
  EXPECT_FALSE(validate(ArrivalShape{-1, 1}).is_ok());
  EXPECT_FALSE(validate(ArrivalShape{1, 0}).is_ok());
  EXPECT_FALSE(validate(ArrivalShape{1, std::nan("")}).is_ok());
}

}  // namespace
}  // namespace omnibus::bench
