// Sampler: picks each next token for one sequence.
//
// Pipeline, in this order:
//   1. logit bias                (logits[id] += bias)
//   2. penalties                 (repetition over the last n of prompt+generated;
//                                 presence/frequency over generated only)
//   3. logprobs, if requested    (log-softmax of the logits as they are now)
//   4. greedy (temperature <= 0): exact argmax, ties to the lowest id. Done.
//   5. top-k → temperature → softmax → top-p → min-p → draw with the seeded RNG
//      (min-p is computed before top-p for speed; see truncation.h for why the
//      result is the same).
// Note llama.cpp applies temperature after top-p/min-p; we follow the
// OpenAI/HF/vLLM order, where top-p and min-p see the tempered distribution.
//
// Determinism: the same seed, params and logits give the same token stream.
// The RNG is self-contained (rng.h); every cut breaks ties by token id. A
// non-greedy step consumes exactly one RNG draw (none if every logit is -inf
// or NaN); a greedy step consumes none.
//
// Not thread-safe; one per sequence, used by the engine thread. Scratch is
// sized once in the constructor, so sample() does not allocate.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "base/status.h"
#include "sampling/logit_processors.h"
#include "sampling/logprobs.h"
#include "sampling/rng.h"
#include "sampling/sampling_params.h"
#include "sampling/truncation.h"

namespace omnibus {

class Sampler {
 public:
  // Validates params against the vocabulary first.
  static Result<Sampler> create(const SamplingParams& params, int32_t vocab_size);

  // params should have passed validate(vocab_size); out-of-range bias ids are
  // ignored rather than trusted.
  Sampler(const SamplingParams& params, int32_t vocab_size);

  // Returns the next token. `logits` must hold vocab_size floats (extra ones
  // are ignored); they are used as scratch and on return hold the biased and
  // penalized logits. prompt_tokens / generated_tokens are only read during
  // the call. Returns -1 only if `logits` is empty.
  int32_t sample(std::span<float> logits, std::span<const int32_t> prompt_tokens,
                 std::span<const int32_t> generated_tokens);

  // The logprobs of the last sample() call, valid until the next call; empty
  // (chosen.token == -1) when the params did not ask for logprobs.
  const SampleLogprobs& last_logprobs() const { return logprobs_; }

  const SamplingParams& params() const { return params_; }
  int32_t vocab_size() const { return vocab_size_; }

 private:
  int32_t sample_stochastic(std::span<const float> logits);
  void record_logprobs(std::span<const float> logits, int32_t chosen);

  SamplingParams params_;
  int32_t vocab_size_;
  std::vector<std::pair<int32_t, float>> bias_;  // from params_, flat for the hot path
  PenaltyProcessor penalties_;
  Xoshiro256 rng_;
  std::vector<Candidate> candidates_;  // vocab_size entries
  SampleLogprobs logprobs_;
};

// Exact argmax; ties go to the lowest id; NaN never wins. -1 for an empty span.
int32_t argmax_token(std::span<const float> logits);

}  // namespace omnibus
