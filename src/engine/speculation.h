// Speculative decoding's options and its one entry point for guesses, shared
// by the command line's Generator and the server's ServingEngine.
//
// A decode step runs the newest token plus a few guessed tokens after it as
// extra rows of the same forward call, then samples row after row while the
// guesses match what was sampled. Every token is still sampled from the
// target model's own logits at its position, by the same sampler in the same
// order, and batch invariance makes a guessed row's logits bit-identical to
// a one-token step's: the output (greedy or seeded) is exactly plain
// decoding's, in fewer, wider steps. A wrong guess costs its row's compute;
// in a memory-bound decode step the weights are read once for all rows.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/status.h"
#include "engine/draft_policy.h"
#include "engine/ngram_draft.h"

namespace omnibus {

// Where guesses come from. kNone: one token per step. kNgram: prompt lookup
// (engine/ngram_draft.h). kCustom: a caller's function (tests; a draft model
// plugs in the same way).
enum class DraftSource { kNone, kNgram, kCustom };

// Appends up to max_tokens guesses of the tokens after `history` to `draft`.
using DraftFunction =
    std::function<void(std::span<const int32_t> history, int max_tokens, std::vector<int32_t>& draft)>;

struct SpeculationOptions {
  DraftSource source = DraftSource::kNone;
  int max_draft = 8;        // guesses per step at most (1..kMaxDraftTokens)
  NgramDraftOptions ngram;  // source kNgram
  DraftFunction custom;     // source kCustom
  // Run only as many guesses as pay at the measured acceptance and row cost
  // (engine/draft_policy.h); false: every guess, always (--draft-all).
  bool adaptive = true;
  // A guess row's cost as a share of a one-row step, for the adaptive
  // choice: < 0 measured as generation goes (StepCostModel); else fixed.
  double row_share = -1;

  bool enabled() const { return source != DraftSource::kNone; }
};

inline constexpr int kMaxDraftTokens = 64;

// The ranges above; errors name the command-line option (--draft-max, ...).
Status validate_speculation_options(const SpeculationOptions& options);

// Replaces `draft` with up to min(max_tokens, options.max_draft) guesses of
// what follows `history`, cut before the first id outside [0, vocab) (a
// custom source is not trusted). Returns how many.
int propose_draft(const SpeculationOptions& options, std::span<const int32_t> history, int max_tokens, int32_t vocab,
                  std::vector<int32_t>& draft);

// How many of `available` guesses a step runs: all of them, or, adaptive,
// choose_guesses at the sequence's acceptance and the engine's row cost.
int guesses_to_run(const SpeculationOptions& options, int available, const AcceptanceEstimate& acceptance,
                   const StepCostModel& cost);

// What a step's samples tell about its guesses, for AcceptanceEstimate:
// `ran` of them ran as rows and the first `accepted` were confirmed; `next`
// is the token sampled after the last confirmed one. A guess that did not
// run is still tested against `next` when every one that ran was right.
struct GuessOutcome {
  int tested = 0;
  int matched = 0;
};
GuessOutcome guess_outcome(std::span<const int32_t> guesses, int ran, int accepted, int32_t next);

}  // namespace omnibus
