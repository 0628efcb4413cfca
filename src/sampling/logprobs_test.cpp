#include "sampling/logprobs.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace omnibus {
namespace {

std::vector<float> wavy_logits(size_t n) {
  std::vector<float> logits(n);
  for (size_t i = 0; i < n; ++i) logits[i] = 3.0f * std::sin(0.7f * static_cast<float>(i) + 0.3f);
  return logits;
}

TEST(LogprobsTest, LogSumExpMatchesDirectSumAndNormalizes) {
  const std::vector<float> logits = wavy_logits(4097);
  double direct = 0.0;
  for (float l : logits) direct += std::exp(static_cast<double>(l));
  const float lse = log_sum_exp(logits);
  EXPECT_NEAR(lse, std::log(direct), 1e-4);
  double total = 0.0;
  for (float l : logits) total += std::exp(static_cast<double>(l - lse));
  EXPECT_NEAR(total, 1.0, 1e-4);
}

TEST(LogprobsTest, LogSumExpIsStableForHugeLogitsAndSkipsNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> logits = {1000.0f, 1000.0f, nan, -INFINITY};
  EXPECT_NEAR(log_sum_exp(logits), 1000.0f + std::log(2.0f), 1e-3);
  const std::vector<float> impossible = {-INFINITY, nan};
  EXPECT_EQ(log_sum_exp(impossible), -INFINITY);
  EXPECT_EQ(log_sum_exp({}), -INFINITY);
}

TEST(LogprobsTest, TopIsSortedDescendingWithTiesToLowerId) {
  std::vector<float> logits = wavy_logits(33);
  logits[20] = 9.0f;
  logits[4] = 9.0f;  // tie with 20: 4 first
  logits[7] = std::numeric_limits<float>::quiet_NaN();
  const float lse = log_sum_exp(logits);
  std::vector<TokenLogprob> top;
  top.reserve(7);
  top_logprobs(logits, lse, 7, top);
  ASSERT_EQ(top.size(), 7u);
  EXPECT_EQ(top[0].token, 4);
  EXPECT_EQ(top[1].token, 20);
  for (size_t i = 1; i < top.size(); ++i) EXPECT_GE(top[i - 1].logprob, top[i].logprob);
  // Every token not listed ranks below the last one listed.
  for (int32_t t = 0; t < 33; ++t) {
    bool listed = false;
    for (const TokenLogprob& e : top) listed |= e.token == t;
    if (listed) {
      EXPECT_NE(t, 7);
    } else if (t != 7) {
      EXPECT_LE(logits[t] - lse, top.back().logprob) << t;
    }
  }
  EXPECT_FLOAT_EQ(top[0].logprob, 9.0f - lse);
}

TEST(LogprobsTest, TopCountLargerThanVocabReturnsAll) {
  const std::vector<float> logits = {0.5f, -0.25f, 1.0f};
  std::vector<TokenLogprob> top;
  top_logprobs(logits, log_sum_exp(logits), 20, top);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].token, 2);
  EXPECT_EQ(top[1].token, 0);
  EXPECT_EQ(top[2].token, 1);
  double total = 0.0;
  for (const TokenLogprob& e : top) total += std::exp(e.logprob);
  EXPECT_NEAR(total, 1.0, 1e-6);
  top_logprobs(logits, 0.0f, 0, top);
  EXPECT_TRUE(top.empty());
}

}  // namespace
}  // namespace omnibus
