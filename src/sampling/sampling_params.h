// SamplingParams: how one request picks its next token. OpenAI-compatible
// names and ranges; defaults are llama.cpp's CLI defaults (temp 0.8, top_k 40,
// top_p 0.95, min_p 0.05, repeat_last_n 64) so that an omitted field behaves
// as it does there.
//
// Penalties, and which tokens they look at:
//  - repetition_penalty (llama.cpp): every distinct token among the last
//    `penalty_last_n` tokens of prompt + generated text has its logit divided
//    by the penalty if positive, multiplied if <= 0. 1 = off.
//  - presence_penalty / frequency_penalty (OpenAI): over GENERATED tokens only,
//    logit -= presence * (count > 0) + frequency * count. Prompt tokens do not
//    count, as in OpenAI's API (llama.cpp would use the same last-n window).
//
// Plain data: copy freely; not tied to any thread.
#pragma once

#include <cstdint>
#include <map>

#include "base/status.h"

namespace omnibus {

struct SamplingParams {
  static constexpr int kMaxTopLogprobs = 20;       // OpenAI's limit
  static constexpr float kMaxLogitBias = 100.0f;   // OpenAI: [-100, 100]
  static constexpr float kMaxPresenceFrequency = 2.0f;

  // <= 0 means greedy: the exact argmax of the biased/penalized logits.
  float temperature = 0.8f;
  int32_t top_k = 40;     // 0 = off
  float top_p = 0.95f;    // 1 = off; must be in (0, 1]
  float min_p = 0.05f;    // 0 = off; must be in [0, 1]

  float repetition_penalty = 1.0f;  // 1 = off; must be > 0
  int32_t penalty_last_n = 64;      // window for repetition_penalty; -1 = all tokens, 0 = off
  float presence_penalty = 0.0f;    // [-2, 2]
  float frequency_penalty = 0.0f;   // [-2, 2]

  // Added to the logit of a token id before anything else. -100 is, in
  // practice, a ban; +100 all but forces the token.
  std::map<int32_t, float> logit_bias;

  // Seeds the per-sequence RNG: the same seed, params and logits give the
  // same tokens. The sampling layer never invents a seed; a server that gets
  // none from the client picks one.
  uint64_t seed = 0;

  // Report the chosen token's logprob (and, if top_logprobs > 0, that many
  // alternatives). top_logprobs > 0 implies logprobs.
  bool logprobs = false;
  int32_t top_logprobs = 0;  // 0..20

  bool is_greedy() const { return temperature <= 0.0f; }
  bool wants_logprobs() const { return logprobs || top_logprobs > 0; }

  // OK, or an invalid_argument that names the field, its value and the
  // allowed range. Rejects NaN/inf everywhere.
  Status validate(int32_t vocab_size) const;
};

}  // namespace omnibus
