#include "sampling/sampling_params.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace omnibus {
namespace {

constexpr int32_t kVocab = 33;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Expects validate() to fail with invalid_argument naming `field`.
void expect_rejected(const SamplingParams& p, const std::string& field) {
  Status s = p.validate(kVocab);
  ASSERT_FALSE(s.is_ok()) << "expected rejection of " << field;
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
}

TEST(SamplingParamsTest, DefaultsAreLlamaCppCliDefaultsAndValid) {
  SamplingParams p;
  EXPECT_FLOAT_EQ(p.temperature, 0.8f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.top_p, 0.95f);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.0f);
  EXPECT_EQ(p.penalty_last_n, 64);
  EXPECT_FALSE(p.is_greedy());
  EXPECT_FALSE(p.wants_logprobs());
  EXPECT_TRUE(p.validate(kVocab).is_ok());
}

TEST(SamplingParamsTest, BoundaryValuesAreAccepted) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 1.0f;
  p.presence_penalty = -2.0f;
  p.frequency_penalty = 2.0f;
  p.penalty_last_n = -1;
  p.top_logprobs = 20;
  p.logit_bias = {{0, -100.0f}, {kVocab - 1, 100.0f}};
  EXPECT_TRUE(p.validate(kVocab).is_ok()) << p.validate(kVocab).to_string();
  EXPECT_TRUE(p.is_greedy());
  EXPECT_TRUE(p.wants_logprobs());
}

TEST(SamplingParamsTest, RejectsOutOfRangeScalars) {
  auto with = [](auto edit) {
    SamplingParams p;
    edit(p);
    return p;
  };
  expect_rejected(with([](SamplingParams& p) { p.temperature = -0.1f; }), "temperature");
  expect_rejected(with([](SamplingParams& p) { p.temperature = kInf; }), "temperature");
  expect_rejected(with([](SamplingParams& p) { p.top_k = -1; }), "top_k");
  expect_rejected(with([](SamplingParams& p) { p.top_p = 0.0f; }), "top_p");
  expect_rejected(with([](SamplingParams& p) { p.top_p = 1.01f; }), "top_p");
  expect_rejected(with([](SamplingParams& p) { p.min_p = -0.01f; }), "min_p");
  expect_rejected(with([](SamplingParams& p) { p.min_p = 1.5f; }), "min_p");
  expect_rejected(with([](SamplingParams& p) { p.repetition_penalty = 0.0f; }), "repetition_penalty");
  expect_rejected(with([](SamplingParams& p) { p.repetition_penalty = -1.1f; }), "repetition_penalty");
  expect_rejected(with([](SamplingParams& p) { p.penalty_last_n = -2; }), "penalty_last_n");
  expect_rejected(with([](SamplingParams& p) { p.presence_penalty = 2.5f; }), "presence_penalty");
  expect_rejected(with([](SamplingParams& p) { p.frequency_penalty = -2.01f; }), "frequency_penalty");
  expect_rejected(with([](SamplingParams& p) { p.top_logprobs = 21; }), "top_logprobs");
  expect_rejected(with([](SamplingParams& p) { p.top_logprobs = -1; }), "top_logprobs");
}

TEST(SamplingParamsTest, RejectsNaNEverywhere) {
  float SamplingParams::*fields[] = {&SamplingParams::temperature,        &SamplingParams::top_p,
                                     &SamplingParams::min_p,              &SamplingParams::repetition_penalty,
                                     &SamplingParams::presence_penalty,   &SamplingParams::frequency_penalty};
  const char* names[] = {"temperature", "top_p", "min_p", "repetition_penalty", "presence_penalty",
                         "frequency_penalty"};
  for (size_t i = 0; i < std::size(fields); ++i) {
    SamplingParams p;
    p.*fields[i] = kNaN;
    expect_rejected(p, names[i]);
  }
  SamplingParams p;
  p.logit_bias[3] = kNaN;
  expect_rejected(p, "logit_bias");
}

TEST(SamplingParamsTest, RejectsLogitBiasOutsideVocabOrRange) {
  SamplingParams p;
  p.logit_bias[kVocab] = 1.0f;
  expect_rejected(p, "logit_bias");
  EXPECT_NE(p.validate(kVocab).message().find("33"), std::string::npos);
  p.logit_bias = {{-1, 1.0f}};
  expect_rejected(p, "logit_bias");
  p.logit_bias = {{5, 100.5f}};
  expect_rejected(p, "logit_bias");
}

TEST(SamplingParamsTest, RejectsNonPositiveVocab) {
  SamplingParams p;
  EXPECT_FALSE(p.validate(0).is_ok());
}

}  // namespace
}  // namespace omnibus
