#include "engine/ngram_draft.h"

#include <algorithm>
#include <string>

namespace omnibus {

namespace {

constexpr int kMaxNgramLimit = 16;

}  // namespace

Status validate_ngram_draft_options(const NgramDraftOptions& options) {
  if (options.min_ngram < 1 || options.min_ngram > kMaxNgramLimit)
    return Status::invalid_argument("--ngram-min must be in 1.." + std::to_string(kMaxNgramLimit) + ", got " +
                                    std::to_string(options.min_ngram));
  if (options.max_ngram < options.min_ngram || options.max_ngram > kMaxNgramLimit)
    return Status::invalid_argument("--ngram-max must be in --ngram-min.." + std::to_string(kMaxNgramLimit) +
                                    ", got " + std::to_string(options.max_ngram));
  return Status::ok();
}

int propose_ngram_draft(std::span<const int32_t> history, const NgramDraftOptions& options, int max_tokens,
                        std::vector<int32_t>& draft) {
  const auto size = static_cast<int64_t>(history.size());
  if (max_tokens <= 0) return 0;
  for (int n = std::min<int64_t>(options.max_ngram, size - 1); n >= options.min_ngram; --n) {
    const int32_t* suffix = history.data() + size - n;
    // The newest occurrence first: it is the likeliest to continue the same
    // way. An occurrence must end before the history does, so that at least
    // one token follows it.
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (history[start] != suffix[0] || !std::equal(suffix + 1, suffix + n, history.data() + start + 1)) continue;
      // Copy what followed; past the history's end the copy reads its own
      // output, so a period shorter than the draft repeats (a loop the
      // model is in proposes the loop, not one token of it).
      const int64_t from = start + n;
      const size_t first = draft.size();
      for (int i = 0; i < max_tokens; ++i) {
        const int64_t at = from + i;
        draft.push_back(at < size ? history[at] : draft[first + (at - size)]);
      }
      return max_tokens;
    }
  }
  return 0;
}

}  // namespace omnibus
