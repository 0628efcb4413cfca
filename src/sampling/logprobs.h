// Log-probabilities as reported to clients (OpenAI `logprobs`): the log-softmax
// of the logits after logit bias and penalties, but BEFORE temperature and
// top-k/top-p/min-p. That is the model's distribution as the request shaped
// it, independent of how adventurous the sampling was; a token cut by top-k
// still gets its true logprob.
//
// NaN logits are treated as impossible (-inf). A logprob can be -inf (e.g. a
// -inf logit); the JSON layer must map it to something JSON can carry.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace omnibus {

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
};

struct SampleLogprobs {
  TokenLogprob chosen;
  // The `top_logprobs` most likely tokens, most likely first; ties in lower
  // token id first.
  std::vector<TokenLogprob> top;
};

// log(sum(exp(logits))), computed stably (max subtracted, double sum).
// -inf when every logit is -inf or NaN, or the span is empty.
float log_sum_exp(std::span<const float> logits);

// Fills `out` with the `count` largest logits as logprobs (logit - lse).
// Does not allocate when out.capacity() >= count. O(vocab) with a cheap
// reject test per token.
void top_logprobs(std::span<const float> logits, float lse, int32_t count, std::vector<TokenLogprob>& out);

}  // namespace omnibus
