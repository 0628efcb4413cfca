#include "sampling/logit_processors.h"

#include <algorithm>

namespace omnibus {
namespace {

bool in_range(int32_t token, size_t size) { return token >= 0 && static_cast<size_t>(token) < size; }

}  // namespace

void apply_logit_bias(std::span<float> logits, std::span<const std::pair<int32_t, float>> bias) {
  for (const auto& [token, value] : bias) {
    if (in_range(token, logits.size())) logits[token] += value;
  }
}

PenaltyProcessor::PenaltyProcessor(const SamplingParams& params, int32_t vocab_size)
    : repetition_penalty_(params.repetition_penalty),
      penalty_last_n_(params.penalty_last_n),
      presence_penalty_(params.presence_penalty),
      frequency_penalty_(params.frequency_penalty),
      counts_(static_cast<size_t>(std::max(vocab_size, 0)), 0) {}

bool PenaltyProcessor::is_noop() const {
  const bool repetition_off = repetition_penalty_ == 1.0f || penalty_last_n_ == 0;
  return repetition_off && presence_penalty_ == 0.0f && frequency_penalty_ == 0.0f;
}

void PenaltyProcessor::apply(std::span<float> logits, std::span<const int32_t> prompt_tokens,
                             std::span<const int32_t> generated_tokens) {
  if (logits.size() > counts_.size()) logits = logits.first(counts_.size());
  if (repetition_penalty_ != 1.0f && penalty_last_n_ != 0) {
    // The window is the last n tokens of prompt ++ generated, taken without
    // concatenating: the tail of generated, then the tail of the prompt.
    const size_t window = penalty_last_n_ < 0 ? prompt_tokens.size() + generated_tokens.size()
                                              : static_cast<size_t>(penalty_last_n_);
    const size_t from_generated = std::min(window, generated_tokens.size());
    const size_t from_prompt = std::min(window - from_generated, prompt_tokens.size());
    // Both parts share counts_, so a token in both is penalized once.
    apply_repetition(logits, generated_tokens.last(from_generated));
    apply_repetition(logits, prompt_tokens.last(from_prompt));
    for (int32_t t : generated_tokens.last(from_generated)) {
      if (in_range(t, logits.size())) counts_[t] = 0;
    }
    for (int32_t t : prompt_tokens.last(from_prompt)) {
      if (in_range(t, logits.size())) counts_[t] = 0;
    }
  }
  if (presence_penalty_ != 0.0f || frequency_penalty_ != 0.0f) apply_presence_frequency(logits, generated_tokens);
}

// Marks each token in counts_ (the caller clears it) and penalizes it the
// first time it is seen.
void PenaltyProcessor::apply_repetition(std::span<float> logits, std::span<const int32_t> tokens) {
  for (int32_t t : tokens) {
    if (!in_range(t, logits.size()) || counts_[t] != 0) continue;
    counts_[t] = 1;
    float& logit = logits[t];
    logit = logit > 0.0f ? logit / repetition_penalty_ : logit * repetition_penalty_;
  }
}

void PenaltyProcessor::apply_presence_frequency(std::span<float> logits, std::span<const int32_t> generated) {
  for (int32_t t : generated) {
    if (in_range(t, logits.size())) ++counts_[t];
  }
  // Penalize at the first occurrence, then zero the count so later
  // occurrences of the same token are skipped and counts_ ends clean.
  for (int32_t t : generated) {
    if (!in_range(t, logits.size()) || counts_[t] == 0) continue;
    const int32_t count = counts_[t];
    logits[t] -= presence_penalty_ + frequency_penalty_ * static_cast<float>(count);
    counts_[t] = 0;
  }
}

}  // namespace omnibus
