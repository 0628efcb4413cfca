#include "sampling/truncation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "sampling/rng.h"

namespace omnibus {
namespace {

std::vector<Candidate> make_candidates(const std::vector<float>& logits) {
  std::vector<Candidate> c;
  for (size_t i = 0; i < logits.size(); ++i) c.push_back({static_cast<int32_t>(i), logits[i], 0.0f});
  return c;
}

std::vector<float> random_logits(size_t n, uint64_t seed, float scale) {
  Xoshiro256 rng(seed);
  std::vector<float> logits(n);
  for (float& l : logits) l = static_cast<float>((rng.next_double() - 0.5) * scale);
  return logits;
}

std::vector<int32_t> tokens_of(std::span<const Candidate> c) {
  std::vector<int32_t> t;
  for (const Candidate& x : c) t.push_back(x.token);
  return t;
}

TEST(TruncationTest, GatherSkipsImpossibleTokens) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> logits = {0.5f, nan, -INFINITY, INFINITY, -7.0f};
  std::vector<Candidate> out(logits.size());
  ASSERT_EQ(gather_candidates(logits, out), 3u);
  EXPECT_EQ(tokens_of(std::span(out).first(3)), (std::vector<int32_t>{0, 3, 4}));
}

TEST(TruncationTest, TopKKeepsBestSortedWithTiesToLowerId) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 1.5f, 0.0f, 1.5f};
  std::vector<Candidate> out(logits.size());
  ASSERT_EQ(select_top_k(logits, 3, out), 3u);
  EXPECT_EQ(tokens_of(std::span(out).first(3)), (std::vector<int32_t>{1, 3, 4}));
  ASSERT_EQ(select_top_k(logits, 1, out), 1u);
  EXPECT_EQ(out[0].token, 1);
  const std::vector<float> few = {-INFINITY, 1.0f, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_EQ(select_top_k(few, 2, out), 1u);
}

TEST(TruncationTest, TopKMatchesFullSortOnRandomDataWithTies) {
  for (size_t k : {1u, 7u, 40u, 1000u}) {
    std::vector<float> logits = random_logits(4097, k, 10.0f);
    for (size_t i = 0; i < logits.size(); i += 5) logits[i] = std::round(logits[i]);  // many ties
    std::vector<Candidate> out(k);
    ASSERT_EQ(select_top_k(logits, k, out), k);
    auto all = make_candidates(logits);
    std::sort(all.begin(), all.end(), candidate_before);
    EXPECT_EQ(tokens_of(out), tokens_of(std::span(all).first(k))) << "k " << k;
  }
}

TEST(TruncationTest, TemperatureGivesScaledSoftmaxNumerators) {
  auto c = make_candidates({1.0f, 3.0f, -2.0f});
  const double total = apply_temperature(c, 0.5f);
  EXPECT_FLOAT_EQ(c[1].prob, 1.0f);
  EXPECT_NEAR(c[0].prob, std::exp(-4.0), 1e-7);
  EXPECT_NEAR(c[2].prob, std::exp(-10.0), 1e-9);
  EXPECT_NEAR(total, 1.0 + std::exp(-4.0) + std::exp(-10.0), 1e-6);
  // A vanishing temperature leaves only the best, with no inf or NaN.
  apply_temperature(c, 1e-30f);
  EXPECT_EQ(c[1].prob, 1.0f);
  EXPECT_EQ(c[0].prob, 0.0f);
  // +inf logits share all the mass.
  auto inf = make_candidates({INFINITY, 3.0f, INFINITY});
  EXPECT_EQ(apply_temperature(inf, 1.0f), 2.0);
  EXPECT_EQ(inf[1].prob, 0.0f);
  EXPECT_EQ(inf[2].prob, 1.0f);
}

TEST(TruncationTest, MinPDropsBelowFractionOfMaxKeepingOrder) {
  auto c = make_candidates({0.0f, 1.0f, 2.0f, 3.0f, 4.0f});
  apply_temperature(c, 1.0f);
  // prob ratios to max: e^-4, e^-3, e^-2, e^-1, 1; threshold 0.1 keeps e^-2 and up.
  const size_t kept = keep_min_p(c, 0.1f);
  EXPECT_EQ(tokens_of(std::span(c).first(kept)), (std::vector<int32_t>{2, 3, 4}));
}

TEST(TruncationTest, TopPKeepsMinimalPrefixReachingP) {
  // Probabilities 0.5, 0.25, 0.125, 0.125 (in scrambled order).
  auto make = [] {
    std::vector<Candidate> c = {{0, 0, 0.125f}, {1, 0, 0.5f}, {2, 0, 0.125f}, {3, 0, 0.25f}};
    for (Candidate& x : c) x.logit = std::log(x.prob);
    return c;
  };
  auto c = make();
  EXPECT_EQ(keep_top_p(c, 0.5f, 1.0), 1u);  // 0.5 reaches 0.5 exactly
  EXPECT_EQ(c[0].token, 1);
  c = make();
  EXPECT_EQ(keep_top_p(c, 0.6f, 1.0), 2u);
  EXPECT_EQ(tokens_of(std::span(c).first(2)), (std::vector<int32_t>{1, 3}));
  c = make();
  EXPECT_EQ(keep_top_p(c, 0.8f, 1.0), 3u);
  EXPECT_EQ(c[2].token, 0);  // tie 0/2 at 0.125: lower id first
  c = make();
  EXPECT_EQ(keep_top_p(c, 1.0f, 1.0), 4u);
}

// Reference: full sort, then the minimal prefix.
size_t reference_top_p(std::vector<Candidate> c, float p, double total) {
  std::sort(c.begin(), c.end(), candidate_before);
  double cum = 0.0;
  for (size_t i = 0; i < c.size(); ++i) {
    cum += c[i].prob;
    if (cum >= p * total) return i + 1;
  }
  return c.size();
}

TEST(TruncationTest, TopPMatchesFullSortOnPeakedAndFlatVocabularies) {
  for (float scale : {40.0f, 4.0f, 0.5f}) {  // peaked: first pass suffices; flatter: more passes
    for (float p : {0.1f, 0.9f, 0.999f}) {
      auto c = make_candidates(random_logits(20011, 99, scale));
      const double total = apply_temperature(c, 1.0f);
      const size_t expected = reference_top_p(c, p, total);
      const size_t kept = keep_top_p(c, p, total);
      ASSERT_EQ(kept, expected) << "scale " << scale << " p " << p;
      auto sorted = c;
      std::sort(sorted.begin(), sorted.end(), candidate_before);
      EXPECT_EQ(tokens_of(std::span(c).first(kept)), tokens_of(std::span(sorted).first(kept)));
    }
  }
}

// The Sampler runs min-p before top-p; this checks that equals top-p then
// min-p (with min-p seeing top-p's survivors) on random data.
TEST(TruncationTest, MinPBeforeTopPEqualsSpecifiedOrder) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    auto logits = random_logits(257, seed, 12.0f);
    const float top_p = 0.3f + 0.03f * static_cast<float>(seed);
    const float min_p = 0.01f * static_cast<float>(seed);
    auto spec = make_candidates(logits);
    const double total = apply_temperature(spec, 0.7f);
    size_t n = keep_top_p(spec, top_p, total);
    n = keep_min_p(std::span(spec).first(n), min_p);
    auto fast = make_candidates(logits);
    apply_temperature(fast, 0.7f);
    size_t m = keep_min_p(fast, min_p);
    m = keep_top_p(std::span(fast).first(m), top_p, total);
    EXPECT_EQ(tokens_of(std::span(fast).first(m)), tokens_of(std::span(spec).first(n))) << "seed " << seed;
  }
}

TEST(TruncationTest, DrawWalksCumulativeMass) {
  const std::vector<Candidate> c = {{5, 0, 1.0f}, {9, 0, 0.0f}, {2, 0, 3.0f}};
  EXPECT_EQ(draw_candidate(c, 0.0), 5);
  EXPECT_EQ(draw_candidate(c, 0.2499), 5);
  EXPECT_EQ(draw_candidate(c, 0.25), 2);  // zero-mass 9 is never chosen
  EXPECT_EQ(draw_candidate(c, 0.9999999), 2);
  EXPECT_EQ(draw_candidate({}, 0.5), -1);
}

}  // namespace
}  // namespace omnibus
