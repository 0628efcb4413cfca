#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace omnibus {
namespace {

// No truncation or penalties: samples from softmax(logits / temperature).
SamplingParams plain(float temperature, uint64_t seed) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

std::vector<float> random_logits(size_t n, uint64_t seed, float scale) {
  Xoshiro256 rng(seed);
  std::vector<float> logits(n);
  for (float& l : logits) l = static_cast<float>((rng.next_double() - 0.5) * scale);
  return logits;
}

int32_t sample_once(Sampler& s, std::vector<float> logits) { return s.sample(logits, {}, {}); }

TEST(SamplerTest, GreedyIsExactArgmaxWithTiesToLowestId) {
  Sampler s(plain(0.0f, 1), 7);
  EXPECT_EQ(sample_once(s, {0.1f, 2.0f, -1.0f, 2.0f, 1.99999f, 0.0f, 2.0f}), 1);
  EXPECT_EQ(sample_once(s, {-5.0f, -4.0f, -3.0f, -2.0f, -1.0f, -0.5f, -0.25f}), 6);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(sample_once(s, {nan, -1.0f, nan, 3.0f, 3.0f, nan, 0.0f}), 3);
  EXPECT_EQ(argmax_token({}), -1);
}

// The vector argmax against the obvious loop: ties, NaNs, infinities and
// lengths that leave a scalar tail.
TEST(SamplerTest, ArgmaxMatchesAPlainScanOnAwkwardInputs) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  SplitMix64 rng(5);
  for (int trial = 0; trial < 400; ++trial) {
    const size_t n = 1 + rng.next() % 70;
    std::vector<float> logits(n);
    for (float& l : logits) {
      const uint64_t kind = rng.next() % 10;
      l = kind == 0 ? nan : kind == 1 ? -INFINITY : kind == 2 ? 1.0f : static_cast<float>(rng.next() % 5) - 2.0f;
    }
    if (trial % 7 == 0) logits[rng.next() % n] = INFINITY;
    if (trial % 11 == 0) std::fill(logits.begin(), logits.end(), nan);
    int32_t expected = 0;
    for (size_t i = 1; i < n; ++i) {
      if (logits[i] > logits[expected] || (std::isnan(logits[expected]) && !std::isnan(logits[i])))
        expected = static_cast<int32_t>(i);
    }
    EXPECT_EQ(argmax_token(logits), expected) << "trial " << trial;
  }
}

TEST(SamplerTest, TopKOneEqualsGreedy) {
  SamplingParams p = plain(1.5f, 3);
  p.top_k = 1;
  Sampler top1(p, 4097);
  Sampler greedy(plain(0.0f, 3), 4097);
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const std::vector<float> logits = random_logits(4097, seed, 8.0f);
    EXPECT_EQ(sample_once(top1, logits), sample_once(greedy, logits)) << seed;
  }
}

TEST(SamplerTest, TinyTemperatureApproachesGreedy) {
  Sampler cold(plain(1e-3f, 11), 33);
  Sampler greedy(plain(0.0f, 11), 33);
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    std::vector<float> logits = random_logits(33, seed, 4.0f);
    EXPECT_EQ(sample_once(cold, logits), sample_once(greedy, logits)) << seed;
  }
}

std::vector<int32_t> draw_sequence(uint64_t seed, int count) {
  SamplingParams p;  // defaults: top-k, top-p, min-p all active
  p.seed = seed;
  p.temperature = 1.3f;
  Sampler s(p, 1031);
  std::vector<int32_t> out;
  for (int i = 0; i < count; ++i) out.push_back(sample_once(s, random_logits(1031, 1000 + i, 3.0f)));
  return out;
}

TEST(SamplerTest, SameSeedSameSequenceDifferentSeedDiffers) {
  const auto a = draw_sequence(12345, 100);
  EXPECT_EQ(a, draw_sequence(12345, 100));
  EXPECT_NE(a, draw_sequence(12346, 100));
}

std::vector<int> sample_counts(const std::vector<float>& logits, float temperature, uint64_t seed, int draws) {
  Sampler s(plain(temperature, seed), static_cast<int32_t>(logits.size()));
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < draws; ++i) ++counts[sample_once(s, logits)];
  return counts;
}

// Chi-square statistic of counts against softmax(logits / temperature).
double chi_square(const std::vector<int>& counts, const std::vector<float>& logits, float temperature) {
  double z = 0.0, draws = 0.0;
  for (float l : logits) z += std::exp(l / temperature);
  for (int c : counts) draws += c;
  double chi2 = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const double expected = draws * std::exp(logits[i] / temperature) / z;
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return chi2;
}

TEST(SamplerTest, FrequenciesMatchSoftmax) {
  const std::vector<float> logits = {1.0f, 0.2f, -0.5f, 1.7f, 0.0f, -1.2f, 0.9f};
  // 6 degrees of freedom: P(chi2 > 22.5) ~ 0.001. Deterministic given seeds.
  EXPECT_LT(chi_square(sample_counts(logits, 1.0f, 2024, 20000), logits, 1.0f), 22.5);
  EXPECT_LT(chi_square(sample_counts(logits, 0.6f, 77, 20000), logits, 0.6f), 22.5);
  // The statistic does catch a wrong distribution (temperature 0.8 vs 1).
  EXPECT_GT(chi_square(sample_counts(logits, 0.8f, 2024, 20000), logits, 1.0f), 100.0);
}

TEST(SamplerTest, TruncatedTokensAreNeverDrawn) {
  SamplingParams p = plain(1.0f, 8);
  p.top_k = 3;
  Sampler s(p, 7);
  const std::vector<float> logits = {1.0f, 0.2f, -0.5f, 1.7f, 0.0f, -1.2f, 0.9f};
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 3000; ++i) ++counts[sample_once(s, logits)];
  EXPECT_EQ(counts[1] + counts[2] + counts[4] + counts[5], 0);
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[3], 0);
  EXPECT_GT(counts[6], 0);
}

TEST(SamplerTest, LogitBiasMinus100BansToken) {
  SamplingParams p = plain(1.0f, 21);
  p.logit_bias[3] = -100.0f;
  Sampler s(p, 7);
  for (int i = 0; i < 2000; ++i) ASSERT_NE(sample_once(s, {1.0f, 0.2f, -0.5f, 5.0f, 0.0f, -1.2f, 0.9f}), 3);
  p.temperature = 0.0f;
  Sampler g(p, 7);
  EXPECT_EQ(sample_once(g, {1.0f, 0.2f, -0.5f, 5.0f, 0.0f, -1.2f, 0.9f}), 0);
}

TEST(SamplerTest, PenaltiesAreAppliedToTheReturnedLogits) {
  SamplingParams p = plain(0.0f, 1);
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 1.0f;
  p.logit_bias[0] = 0.5f;
  Sampler s(p, 5);
  std::vector<float> logits = {3.0f, 2.9f, 1.0f, -1.0f, 0.0f};
  const std::vector<int32_t> prompt = {0, 3};
  const std::vector<int32_t> generated = {1};
  EXPECT_EQ(s.sample(logits, prompt, generated), 0);
  EXPECT_FLOAT_EQ(logits[0], 1.75f);          // (3 + 0.5) / 2
  EXPECT_FLOAT_EQ(logits[1], 2.9f / 2 - 1.0f);  // repetition, then presence
  EXPECT_FLOAT_EQ(logits[3], -2.0f);
  EXPECT_FLOAT_EQ(logits[2], 1.0f);
}

TEST(SamplerTest, LogprobsAreFromRawDistributionSortedAndNormalized) {
  SamplingParams p = plain(0.3f, 4);  // temperature must not change logprobs
  p.top_k = 2;
  p.top_logprobs = 7;
  Sampler s(p, 7);
  const std::vector<float> logits = {1.0f, 0.2f, -0.5f, 1.7f, 0.0f, -1.2f, 0.9f};
  const int32_t token = sample_once(s, logits);
  const SampleLogprobs& lp = s.last_logprobs();
  ASSERT_EQ(lp.top.size(), 7u);
  double z = 0.0, total = 0.0;
  for (float l : logits) z += std::exp(l);
  for (size_t i = 0; i < lp.top.size(); ++i) {
    total += std::exp(lp.top[i].logprob);
    if (i > 0) {
      EXPECT_GE(lp.top[i - 1].logprob, lp.top[i].logprob);
    }
    EXPECT_NEAR(lp.top[i].logprob, logits[lp.top[i].token] - std::log(z), 1e-5);
  }
  EXPECT_NEAR(total, 1.0, 1e-5);
  EXPECT_EQ(lp.top[0].token, 3);
  EXPECT_EQ(lp.chosen.token, token);
  EXPECT_NEAR(lp.chosen.logprob, logits[token] - std::log(z), 1e-5);
}

TEST(SamplerTest, NoLogprobsUnlessAsked) {
  Sampler s(plain(1.0f, 4), 7);
  sample_once(s, {1.0f, 0.2f, -0.5f, 1.7f, 0.0f, -1.2f, 0.9f});
  EXPECT_EQ(s.last_logprobs().chosen.token, -1);
  EXPECT_TRUE(s.last_logprobs().top.empty());
}

TEST(SamplerTest, LargeVocabTopPOnlyAndDefaults) {
  constexpr int32_t kVocab = 262147;
  const std::vector<float> logits = random_logits(kVocab, 5, 20.0f);
  SamplingParams only_p = plain(1.0f, 9);
  only_p.top_p = 0.9f;
  Sampler a(only_p, kVocab);
  SamplingParams defaults;
  Sampler b(defaults, kVocab);
  for (int i = 0; i < 5; ++i) {
    const int32_t ta = sample_once(a, logits);
    const int32_t tb = sample_once(b, logits);
    ASSERT_GE(ta, 0);
    ASSERT_LT(ta, kVocab);
    ASSERT_GE(tb, 0);
    ASSERT_LT(tb, kVocab);
  }
}

TEST(SamplerTest, DegenerateLogitsDoNotCrash) {
  const float inf = std::numeric_limits<float>::infinity();
  Sampler s(plain(1.0f, 2), 4);
  EXPECT_EQ(sample_once(s, {-inf, -inf, -inf, -inf}), 0);
  for (int i = 0; i < 20; ++i) {
    const int32_t t = sample_once(s, {0.0f, inf, 1.0f, inf});
    EXPECT_TRUE(t == 1 || t == 3) << t;
  }
  EXPECT_EQ(sample_once(s, {-inf, -inf, 0.5f, -inf}), 2);
  std::vector<float> empty;
  EXPECT_EQ(s.sample(empty, {}, {}), -1);
}

TEST(SamplerTest, CreateValidates) {
  SamplingParams p;
  p.top_p = 0.0f;
  auto bad = Sampler::create(p, 7);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("top_p"), std::string::npos);
  EXPECT_TRUE(Sampler::create(SamplingParams{}, 7).is_ok());
}

}  // namespace
}  // namespace omnibus
