#include "sampling/sampler.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>

namespace omnibus {

int32_t argmax_token(std::span<const float> logits) {
  if (logits.empty()) return -1;
  // Two passes, both cheap next to a full vocabulary of scalar compares with
  // a branch each: the largest value (maxps skips NaN in its first operand,
  // so NaNs never win), then its first position. Ties go to the lowest id.
  // The maximum is exact, so any CPU finds the same value (at most the sign
  // of a zero differs, which == ignores) and the same token.
  const float* p = logits.data();
  const size_t n = logits.size();
  size_t i = 0;
#if defined(__SSE2__)
  __m128 m0 = _mm_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm_max_ps(_mm_loadu_ps(p + i), m0);
    m1 = _mm_max_ps(_mm_loadu_ps(p + i + 4), m1);
    m2 = _mm_max_ps(_mm_loadu_ps(p + i + 8), m2);
    m3 = _mm_max_ps(_mm_loadu_ps(p + i + 12), m3);
  }
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, _mm_max_ps(_mm_max_ps(m0, m1), _mm_max_ps(m2, m3)));
  float best = std::max({lanes[0], lanes[1], lanes[2], lanes[3]});
#else
  float best = -INFINITY;
#endif
  for (; i < n; ++i)
    if (p[i] > best) best = p[i];  // false for NaN: NaNs never win here either
  for (size_t j = 0; j < n; ++j)
    if (p[j] == best) return static_cast<int32_t>(j);
  return 0;  // every logit NaN
}

Result<Sampler> Sampler::create(const SamplingParams& params, int32_t vocab_size) {
  OMNIBUS_RETURN_IF_ERROR(params.validate(vocab_size));
  return Sampler(params, vocab_size);
}

Sampler::Sampler(const SamplingParams& params, int32_t vocab_size)
    : params_(params),
      vocab_size_(std::max(vocab_size, 0)),
      penalties_(params, vocab_size_),
      rng_(params.seed),
      candidates_(static_cast<size_t>(vocab_size_)) {
  for (const auto& [token, bias] : params.logit_bias) {
    if (token >= 0 && token < vocab_size_ && std::isfinite(bias)) bias_.emplace_back(token, bias);
  }
  logprobs_.top.reserve(static_cast<size_t>(std::clamp(params.top_logprobs, 0, SamplingParams::kMaxTopLogprobs)));
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> prompt_tokens,
                        std::span<const int32_t> generated_tokens) {
  if (logits.size() > static_cast<size_t>(vocab_size_)) logits = logits.first(static_cast<size_t>(vocab_size_));
  apply_logit_bias(logits, bias_);
  if (!penalties_.is_noop()) penalties_.apply(logits, prompt_tokens, generated_tokens);

  const int32_t token = params_.is_greedy() ? argmax_token(logits) : sample_stochastic(logits);
  record_logprobs(logits, token);
  return token;
}

int32_t Sampler::sample_stochastic(std::span<const float> logits) {
  const bool use_top_k = params_.top_k > 0 && static_cast<size_t>(params_.top_k) < logits.size();
  const size_t n = use_top_k ? select_top_k(logits, static_cast<size_t>(params_.top_k), candidates_)
                             : gather_candidates(logits, candidates_);
  if (n == 0) return argmax_token(logits);  // every logit -inf or NaN
  std::span<Candidate> kept(candidates_.data(), n);
  const double total_mass = apply_temperature(kept, params_.temperature);
  kept = kept.first(keep_min_p(kept, params_.min_p));
  kept = kept.first(keep_top_p(kept, params_.top_p, total_mass));
  const int32_t token = draw_candidate(kept, rng_.next_double());
  return token >= 0 ? token : kept.front().token;
}

void Sampler::record_logprobs(std::span<const float> logits, int32_t chosen) {
  logprobs_.chosen = {};
  logprobs_.top.clear();
  if (!params_.wants_logprobs() || chosen < 0) return;
  const float lse = log_sum_exp(logits);
  logprobs_.chosen = {chosen, logits[static_cast<size_t>(chosen)] - lse};
  top_logprobs(logits, lse, params_.top_logprobs, logprobs_.top);
}

}  // namespace omnibus
