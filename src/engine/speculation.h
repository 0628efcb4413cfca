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

}  // namespace omnibus
