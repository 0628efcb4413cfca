#include "engine/speculation.h"

#include <algorithm>
#include <string>

namespace omnibus {

Status validate_speculation_options(const SpeculationOptions& options) {
  if (!options.enabled()) return Status::ok();
  if (options.max_draft < 1 || options.max_draft > kMaxDraftTokens)
    return Status::invalid_argument("--draft-max must be in 1.." + std::to_string(kMaxDraftTokens) + ", got " +
                                    std::to_string(options.max_draft));
  if (options.source == DraftSource::kCustom && !options.custom)
    return Status::invalid_argument("a custom draft source needs a function");
  if (options.source == DraftSource::kNgram) return validate_ngram_draft_options(options.ngram);
  return Status::ok();
}

int propose_draft(const SpeculationOptions& options, std::span<const int32_t> history, int max_tokens, int32_t vocab,
                  std::vector<int32_t>& draft) {
  draft.clear();
  max_tokens = std::min(max_tokens, options.max_draft);
  if (max_tokens <= 0) return 0;
  if (options.source == DraftSource::kNgram) propose_ngram_draft(history, options.ngram, max_tokens, draft);
  if (options.source == DraftSource::kCustom && options.custom) options.custom(history, max_tokens, draft);
  if (static_cast<int>(draft.size()) > max_tokens) draft.resize(max_tokens);
  draft.erase(std::find_if(draft.begin(), draft.end(), [&](int32_t t) { return t < 0 || t >= vocab; }), draft.end());
  return static_cast<int>(draft.size());
}

int guesses_to_run(const SpeculationOptions& options, int available, const AcceptanceEstimate& acceptance,
                   const StepCostModel& cost) {
  if (!options.adaptive) return available;
  return choose_guesses(available, acceptance.rate(), options.row_share >= 0 ? options.row_share : cost.row_share());
}

GuessOutcome guess_outcome(std::span<const int32_t> guesses, int ran, int accepted, int32_t next) {
  if (accepted < ran) return {accepted + 1, accepted};
  if (static_cast<size_t>(ran) < guesses.size()) return {ran + 1, ran + (guesses[ran] == next ? 1 : 0)};
  return {ran, ran};
}

}  // namespace omnibus
