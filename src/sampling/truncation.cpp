#include "sampling/truncation.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>

namespace omnibus {
namespace {

// top-p usually stops within the first few hundred ranks; ranking this many
// by nth_element + a small sort avoids sorting a 256k vocabulary per token.
constexpr size_t kTopPFirstPass = 1024;

}  // namespace

size_t gather_candidates(std::span<const float> logits, std::span<Candidate> out) {
  size_t n = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = logits[i];
    if (l > -INFINITY) out[n++] = {static_cast<int32_t>(i), l, 0.0f};  // false for NaN too
  }
  return n;
}

size_t select_top_k(std::span<const float> logits, size_t k, std::span<Candidate> out) {
  if (k == 0) return 0;
  // A heap ordered by candidate_before keeps the WORST kept candidate at
  // out[0], so most tokens are rejected by one comparison with it.
  const auto heap = out.begin();
  size_t n = 0;
  auto offer = [&](size_t i) {
    const float l = logits[i];
    if (!(l > -INFINITY)) return;
    const Candidate c{static_cast<int32_t>(i), l, 0.0f};
    if (n < k) {
      out[n++] = c;
      std::push_heap(heap, heap + static_cast<ptrdiff_t>(n), candidate_before);
    } else if (candidate_before(c, out[0])) {
      std::pop_heap(heap, heap + static_cast<ptrdiff_t>(k), candidate_before);
      out[k - 1] = c;
      std::push_heap(heap, heap + static_cast<ptrdiff_t>(k), candidate_before);
    }
  };
  // Once the heap is full, a later token ties the worst kept one only with a
  // higher id, which loses: it must be strictly greater. So a group of 8 with
  // none above the worst kept logit (NaN compares false) is skipped whole.
  const float* p = logits.data();
  size_t i = 0;
  for (; i + 8 <= logits.size(); i += 8) {
    if (n == k) {
#if defined(__SSE2__)
      const __m128 worst = _mm_set1_ps(out[0].logit);
      const int above = _mm_movemask_ps(_mm_cmpgt_ps(_mm_loadu_ps(p + i), worst)) |
                        _mm_movemask_ps(_mm_cmpgt_ps(_mm_loadu_ps(p + i + 4), worst));
#else  // the same test, one float at a time
      const float worst = out[0].logit;
      int above = 0;
      for (size_t j = i; j < i + 8; ++j) above |= p[j] > worst;
#endif
      if (above == 0) continue;
    }
    for (size_t j = i; j < i + 8; ++j) offer(j);
  }
  for (; i < logits.size(); ++i) offer(i);
  std::sort(heap, heap + static_cast<ptrdiff_t>(n), candidate_before);
  return n;
}

double apply_temperature(std::span<Candidate> candidates, float temperature) {
  float max_logit = -INFINITY;
  for (const Candidate& c : candidates) max_logit = std::max(max_logit, c.logit);
  double sum = 0.0;
  if (max_logit == INFINITY) {
    for (Candidate& c : candidates) {
      c.prob = c.logit == INFINITY ? 1.0f : 0.0f;
      sum += c.prob;
    }
    return sum;
  }
  for (Candidate& c : candidates) {
    c.prob = std::exp((c.logit - max_logit) / temperature);
    sum += c.prob;
  }
  return sum;
}

size_t keep_min_p(std::span<Candidate> candidates, float min_p) {
  if (min_p <= 0.0f || candidates.empty()) return candidates.size();
  float max_prob = 0.0f;
  for (const Candidate& c : candidates) max_prob = std::max(max_prob, c.prob);
  const float threshold = min_p * max_prob;
  size_t kept = 0;
  for (const Candidate& c : candidates) {
    if (c.prob >= threshold) candidates[kept++] = c;
  }
  return kept;
}

size_t keep_top_p(std::span<Candidate> candidates, float top_p, double total_mass) {
  const size_t n = candidates.size();
  if (top_p >= 1.0f || n == 0) return n;
  const double target = static_cast<double>(top_p) * total_mass;
  const auto at = [&](size_t i) { return candidates.begin() + static_cast<ptrdiff_t>(i); };
  double cumulative = 0.0;
  size_t sorted_end = 0;
  // Rank the next `pass` candidates (partition, then sort only those), walk
  // them, and widen the pass only if the mass is not reached yet.
  for (size_t pass = kTopPFirstPass; sorted_end < n; pass *= 8) {
    const size_t end = std::min(n, sorted_end + pass);
    if (end < n) std::nth_element(at(sorted_end), at(end), candidates.end(), candidate_before);
    std::sort(at(sorted_end), at(end), candidate_before);
    for (size_t i = sorted_end; i < end; ++i) {
      cumulative += candidates[i].prob;
      if (cumulative >= target) return i + 1;
    }
    sorted_end = end;
  }
  return n;
}

int32_t draw_candidate(std::span<const Candidate> candidates, double uniform) {
  double total = 0.0;
  for (const Candidate& c : candidates) total += c.prob;
  if (!(total > 0.0)) return -1;
  const double target = uniform * total;
  double cumulative = 0.0;
  int32_t last_possible = -1;
  for (const Candidate& c : candidates) {
    if (c.prob <= 0.0f) continue;
    cumulative += c.prob;
    last_possible = c.token;
    if (cumulative > target) return c.token;
  }
  return last_possible;  // rounding left target just past the final sum
}

}  // namespace omnibus
