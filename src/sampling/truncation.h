// The steps that shape the candidate set before a draw: top-k, temperature,
// min-p, top-p, and the draw itself. Each works on a caller-owned span of
// Candidates (sized once by the Sampler) and never allocates.
//
// Probabilities here are UNNORMALIZED: after apply_temperature the best
// candidate has prob 1 and the rest exp((logit - max) / T). Nothing needs
// them normalized: thresholds are given the total mass, and the draw scales
// its uniform by the mass that is left.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace omnibus {

struct Candidate {
  int32_t token;
  float logit;
  float prob;
};

// Rank order: higher logit first, ties broken by lower token id, so that
// every cut is deterministic. Candidates never hold NaN logits.
inline bool candidate_before(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
}

// Copies every token with a finite or +inf logit (NaN and -inf have no
// chance) into `out`, in id order; returns how many. out.size() >= logits.size().
size_t gather_candidates(std::span<const float> logits, std::span<Candidate> out);

// Like gather_candidates, but keeps only the k best, sorted best first, in
// one pass with a size-k heap: O(vocab) cheap rejections instead of building
// and partitioning a whole-vocabulary array. out.size() >= k.
size_t select_top_k(std::span<const float> logits, size_t k, std::span<Candidate> out);

// Sets each prob to exp((logit - max_logit) / temperature); returns their sum.
// Subtracting the max first keeps tiny temperatures finite (others go to 0).
// If some logits are +inf, they share all the mass (the limit), others get 0.
double apply_temperature(std::span<Candidate> candidates, float temperature);

// Keeps, in their current order, candidates with prob >= min_p * max prob;
// returns how many. The best candidate always stays.
size_t keep_min_p(std::span<Candidate> candidates, float min_p);

// Sorts best first (only as far as needed, in growing passes) and returns
// the length of the shortest prefix whose mass reaches top_p * total_mass, or
// the whole size if it never does. total_mass may exceed the span's own mass: the Sampler runs
// min-p first and passes the mass from before it, which gives exactly the
// result of top-p followed by min-p (both keep a prefix of the rank order and
// min-p is scale-free), while sorting far fewer candidates.
size_t keep_top_p(std::span<Candidate> candidates, float top_p, double total_mass);

// Picks a candidate with probability prob / sum(probs), walking in span order;
// `uniform` is in [0, 1). Returns -1 only for an empty span or zero mass.
int32_t draw_candidate(std::span<const Candidate> candidates, double uniform);

}  // namespace omnibus
