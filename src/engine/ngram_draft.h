// Prompt-lookup drafting for speculative decoding: guesses the next tokens of
// a sequence by finding its last few tokens earlier in the sequence (prompt
// or generated) and proposing what followed them there. It costs no model:
// a scan over the history, ~microseconds against a forward step of
// milliseconds. It pays when the output repeats its input (summaries,
// quoting, code edits, extraction) or itself; elsewhere it finds nothing
// and the step is a plain decode step.
//
// Plain functions over token spans; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace omnibus {

struct NgramDraftOptions {
  int min_ngram = 2;  // the shortest suffix that may match (>= 1)
  int max_ngram = 4;  // the longest suffix tried first (>= min_ngram)
};

// Each value in range; errors name the option (--ngram-min, --ngram-max on
// the command line).
Status validate_ngram_draft_options(const NgramDraftOptions& options);

// Appends to `draft` up to max_tokens tokens that followed the most recent
// earlier occurrence of history's last n tokens, trying n from max_ngram down
// to min_ngram; returns how many it appended (0: no occurrence, or
// max_tokens <= 0). Where the tokens after the occurrence run into the end
// of the history, the pattern is taken to repeat: "a b c a b c a b" proposes
// "c a b c ...". When an occurrence is found, all max_tokens are appended.
int propose_ngram_draft(std::span<const int32_t> history, const NgramDraftOptions& options, int max_tokens,
                        std::vector<int32_t>& draft);

}  // namespace omnibus
