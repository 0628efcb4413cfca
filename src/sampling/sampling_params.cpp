#include "sampling/sampling_params.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

namespace omnibus {
namespace {

Status check_finite(const char* name, float v) {
  if (!std::isfinite(v)) return Status::invalid_argument(fmt::format("{} must be a finite number, got {}", name, v));
  return Status::ok();
}

// Inclusive range [lo, hi].
Status check_range(const char* name, float v, float lo, float hi) {
  OMNIBUS_RETURN_IF_ERROR(check_finite(name, v));
  if (v < lo || v > hi) return Status::invalid_argument(fmt::format("{} must be in [{}, {}], got {}", name, lo, hi, v));
  return Status::ok();
}

Status validate_logit_bias(const std::map<int32_t, float>& bias, int32_t vocab_size) {
  for (const auto& [token, value] : bias) {
    if (token < 0 || token >= vocab_size) {
      return Status::invalid_argument(
          fmt::format("logit_bias: token id {} is outside the vocabulary [0, {})", token, vocab_size));
    }
    const float limit = SamplingParams::kMaxLogitBias;
    Status s = check_range("logit_bias value", value, -limit, limit);
    if (!s.is_ok()) return s.with_context(fmt::format("logit_bias[{}]", token));
  }
  return Status::ok();
}

}  // namespace

Status SamplingParams::validate(int32_t vocab_size) const {
  if (vocab_size <= 0) return Status::invalid_argument(fmt::format("vocabulary size must be positive, got {}", vocab_size));
  OMNIBUS_RETURN_IF_ERROR(check_finite("temperature", temperature));
  if (temperature < 0.0f) {
    return Status::invalid_argument(fmt::format("temperature must be >= 0 (0 = greedy), got {}", temperature));
  }
  if (top_k < 0) return Status::invalid_argument(fmt::format("top_k must be >= 0 (0 = off), got {}", top_k));
  OMNIBUS_RETURN_IF_ERROR(check_finite("top_p", top_p));
  if (top_p <= 0.0f || top_p > 1.0f) {
    return Status::invalid_argument(fmt::format("top_p must be in (0, 1] (1 = off), got {}", top_p));
  }
  OMNIBUS_RETURN_IF_ERROR(check_range("min_p", min_p, 0.0f, 1.0f));
  OMNIBUS_RETURN_IF_ERROR(check_finite("repetition_penalty", repetition_penalty));
  if (repetition_penalty <= 0.0f) {
    return Status::invalid_argument(
        fmt::format("repetition_penalty must be > 0 (1 = off), got {}", repetition_penalty));
  }
  if (penalty_last_n < -1) {
    return Status::invalid_argument(
        fmt::format("penalty_last_n must be >= -1 (-1 = all tokens, 0 = off), got {}", penalty_last_n));
  }
  OMNIBUS_RETURN_IF_ERROR(
      check_range("presence_penalty", presence_penalty, -kMaxPresenceFrequency, kMaxPresenceFrequency));
  OMNIBUS_RETURN_IF_ERROR(
      check_range("frequency_penalty", frequency_penalty, -kMaxPresenceFrequency, kMaxPresenceFrequency));
  OMNIBUS_RETURN_IF_ERROR(validate_logit_bias(logit_bias, vocab_size));
  if (top_logprobs < 0 || top_logprobs > kMaxTopLogprobs) {
    return Status::invalid_argument(
        fmt::format("top_logprobs must be in [0, {}], got {}", kMaxTopLogprobs, top_logprobs));
  }
  return Status::ok();
}

}  // namespace omnibus
