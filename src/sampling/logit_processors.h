// The logit processors that run before any truncation: logit bias, then
// penalties. Both edit the logits in place. Token ids outside the logits
// (a caller's bug, or a token from another vocabulary) are skipped, never
// written.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sampling/sampling_params.h"

namespace omnibus {

// logits[id] += bias for each (id, bias).
void apply_logit_bias(std::span<float> logits, std::span<const std::pair<int32_t, float>> bias);

// Repetition, presence and frequency penalties (see sampling_params.h for the
// exact formulas and which tokens each one counts). Holds per-vocabulary
// scratch sized once in the constructor, so apply() never allocates and costs
// O(tokens looked at), not O(vocabulary).
//
// Not thread-safe; one per sequence (or per thread).
class PenaltyProcessor {
 public:
  PenaltyProcessor(const SamplingParams& params, int32_t vocab_size);

  // True when no penalty would change anything.
  bool is_noop() const;

  void apply(std::span<float> logits, std::span<const int32_t> prompt_tokens,
             std::span<const int32_t> generated_tokens);

 private:
  void apply_repetition(std::span<float> logits, std::span<const int32_t> tokens);
  void apply_presence_frequency(std::span<float> logits, std::span<const int32_t> generated);

  float repetition_penalty_;
  int32_t penalty_last_n_;
  float presence_penalty_;
  float frequency_penalty_;
  // Zero between calls; apply() sets and then clears only what it touched.
  std::vector<int32_t> counts_;
};

}  // namespace omnibus
