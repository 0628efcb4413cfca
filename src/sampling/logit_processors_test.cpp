#include "sampling/logit_processors.h"

#include <vector>

#include <gtest/gtest.h>

namespace omnibus {
namespace {

constexpr int32_t kVocab = 11;

// Distinct, mixed-sign logits: token i has logit base[i].
std::vector<float> base_logits() {
  return {2.0f, -1.5f, 0.75f, 3.25f, -0.5f, 1.0f, -2.0f, 0.0f, 4.5f, -3.0f, 0.25f};
}

SamplingParams no_penalties() {
  SamplingParams p;
  p.repetition_penalty = 1.0f;
  p.presence_penalty = 0.0f;
  p.frequency_penalty = 0.0f;
  return p;
}

TEST(LogitBiasTest, AddsBiasAndSkipsOutOfRangeIds) {
  std::vector<float> logits = base_logits();
  const std::vector<std::pair<int32_t, float>> bias = {{1, 2.5f}, {8, -100.0f}, {-1, 9.0f}, {kVocab, 9.0f}};
  apply_logit_bias(logits, bias);
  const std::vector<float> base = base_logits();
  for (int32_t i = 0; i < kVocab; ++i) {
    const float expected = i == 1 ? base[i] + 2.5f : i == 8 ? base[i] - 100.0f : base[i];
    EXPECT_FLOAT_EQ(logits[i], expected) << "token " << i;
  }
}

TEST(PenaltyTest, RepetitionDividesPositiveMultipliesNegativeOncePerToken) {
  SamplingParams p = no_penalties();
  p.repetition_penalty = 1.5f;
  p.penalty_last_n = 64;
  PenaltyProcessor proc(p, kVocab);
  ASSERT_FALSE(proc.is_noop());
  std::vector<float> logits = base_logits();
  const std::vector<int32_t> prompt = {3, 3, 1, 7};     // 3 twice: still penalized once
  const std::vector<int32_t> generated = {1, 8};        // 1 also in prompt: once
  proc.apply(logits, prompt, generated);
  const std::vector<float> base = base_logits();
  for (int32_t i = 0; i < kVocab; ++i) {
    float expected = base[i];
    if (i == 3 || i == 8) expected = base[i] / 1.5f;
    if (i == 1) expected = base[i] * 1.5f;
    if (i == 7) expected = 0.0f;  // zero is multiplied: stays zero
    EXPECT_FLOAT_EQ(logits[i], expected) << "token " << i;
  }
}

TEST(PenaltyTest, RepetitionWindowIsLastNOfPromptThenGenerated) {
  SamplingParams p = no_penalties();
  p.repetition_penalty = 2.0f;
  p.penalty_last_n = 3;
  PenaltyProcessor proc(p, kVocab);
  std::vector<float> logits = base_logits();
  // prompt ++ generated = 0 2 5 | 4 8; the last 3 are 5, 4, 8.
  proc.apply(logits, std::vector<int32_t>{0, 2, 5}, std::vector<int32_t>{4, 8});
  const std::vector<float> base = base_logits();
  for (int32_t i = 0; i < kVocab; ++i) {
    float expected = base[i];
    if (i == 5 || i == 8) expected = base[i] / 2.0f;
    if (i == 4) expected = base[i] * 2.0f;
    EXPECT_FLOAT_EQ(logits[i], expected) << "token " << i;
  }
}

TEST(PenaltyTest, RepetitionWindowAllAndOff) {
  SamplingParams p = no_penalties();
  p.repetition_penalty = 2.0f;
  p.penalty_last_n = -1;
  PenaltyProcessor all(p, kVocab);
  std::vector<float> logits = base_logits();
  all.apply(logits, std::vector<int32_t>{0, 2, 5}, std::vector<int32_t>{4});
  EXPECT_FLOAT_EQ(logits[0], 1.0f);
  EXPECT_FLOAT_EQ(logits[2], 0.375f);
  p.penalty_last_n = 0;
  PenaltyProcessor off(p, kVocab);
  EXPECT_TRUE(off.is_noop());
}

TEST(PenaltyTest, PresenceAndFrequencyCountGeneratedTokensOnly) {
  SamplingParams p = no_penalties();
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  PenaltyProcessor proc(p, kVocab);
  std::vector<float> logits = base_logits();
  const std::vector<int32_t> prompt = {0, 0, 9};          // never counted
  const std::vector<int32_t> generated = {2, 6, 2, 2, 9};  // 2 x3, 6 x1, 9 x1
  proc.apply(logits, prompt, generated);
  const std::vector<float> base = base_logits();
  for (int32_t i = 0; i < kVocab; ++i) {
    float expected = base[i];
    if (i == 2) expected = base[i] - (0.5f + 3 * 0.25f);
    if (i == 6 || i == 9) expected = base[i] - (0.5f + 0.25f);
    EXPECT_FLOAT_EQ(logits[i], expected) << "token " << i;
  }
}

TEST(PenaltyTest, ScratchIsCleanBetweenCallsAndBadIdsAreSkipped) {
  SamplingParams p = no_penalties();
  p.repetition_penalty = 1.25f;
  p.frequency_penalty = 1.0f;
  PenaltyProcessor proc(p, kVocab);
  const std::vector<int32_t> generated = {5, 5, -4, kVocab, 1 << 30};
  std::vector<float> first = base_logits();
  proc.apply(first, {}, generated);
  std::vector<float> second = base_logits();
  proc.apply(second, {}, generated);
  EXPECT_EQ(first, second);
  EXPECT_FLOAT_EQ(first[5], 1.0f / 1.25f - 2.0f);
}

}  // namespace
}  // namespace omnibus
