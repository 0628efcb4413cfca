#include "sampling/logprobs.h"

#include <cmath>
#include <limits>

namespace omnibus {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Sort order for top lists: larger logit first, then lower id.
bool ranks_before(float a_logit, int32_t a_token, float b_logit, int32_t b_token) {
  return a_logit > b_logit || (a_logit == b_logit && a_token < b_token);
}

}  // namespace

float log_sum_exp(std::span<const float> logits) {
  float max_logit = kNegInf;
  for (float l : logits) {
    if (l > max_logit) max_logit = l;  // NaN never compares greater
  }
  if (max_logit == kNegInf) return kNegInf;
  if (std::isinf(max_logit)) return max_logit;  // +inf dominates
  double sum = 0.0;
  for (float l : logits) {
    if (l > kNegInf) sum += std::exp(l - max_logit);  // float exp, double sum
  }
  return max_logit + static_cast<float>(std::log(sum));
}

void top_logprobs(std::span<const float> logits, float lse, int32_t count, std::vector<TokenLogprob>& out) {
  out.clear();
  if (count <= 0) return;
  // `out` holds logits while scanning, kept sorted; converted at the end.
  // Tokens come in increasing id, so an equal logit never displaces.
  const size_t want = static_cast<size_t>(count);
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = logits[i];
    if (std::isnan(l)) continue;
    if (out.size() == want && !(l > out.back().logprob)) continue;
    if (out.size() < want) out.push_back({});
    size_t pos = out.size() - 1;
    const int32_t token = static_cast<int32_t>(i);
    while (pos > 0 && ranks_before(l, token, out[pos - 1].logprob, out[pos - 1].token)) {
      out[pos] = out[pos - 1];
      --pos;
    }
    out[pos] = {token, l};
  }
  for (TokenLogprob& entry : out) entry.logprob -= lse;
}

}  // namespace omnibus
