// SequenceState: one request's token stream as the scheduler sees it. Plain
// data; the scheduler owns every live one and the engine reads them.
//
// The "known" tokens are prompt followed by generated. K/V exist for the first
// num_computed_tokens of them; the rest still have to run through the model.
// After each sampling step exactly one known token (the newest sample) lacks
// K/V, which is what a decode step computes. A preempted sequence loses all
// its K/V (num_computed_tokens = 0) but keeps its generated tokens, so it
// recomputes prompt + generated before sampling again.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_manager.h"  // SeqId

namespace omnibus {

enum class SeqStatus {
  kWaiting,    // queued, never admitted
  kRunning,    // admitted: holds KV blocks, scheduled each step it can be
  kPreempted,  // lost its blocks under memory pressure; queued to recompute
  kFinished,   // done for any reason; see FinishReason
};

enum class FinishReason {
  kNone,      // not finished
  kStop,      // the engine saw an end-of-sequence token or a stop rule
  kLength,    // generated max_tokens
  kAborted,   // cancelled (client hung up, timeout)
  kRejected,  // could never run (should have been caught at add())
};

const char* finish_reason_name(FinishReason reason);

struct SequenceState {
  SeqId id = 0;
  std::vector<std::int32_t> prompt;
  std::vector<std::int32_t> generated;
  std::int64_t max_tokens = 1;  // most tokens to generate, >= 1
  std::uint64_t cache_salt = 0;  // prefix-cache namespace (kv/block_hash.h)
  SeqStatus status = SeqStatus::kWaiting;
  std::int64_t num_computed_tokens = 0;  // known tokens whose K/V exist
  double arrival_time = 0;               // seconds, on the engine's clock
  std::int64_t admit_order = -1;         // grows with each (re)admission; -1 never
  FinishReason finish_reason = FinishReason::kNone;
  // Speculative decoding: guesses of the tokens after the newest known one,
  // set by the engine (Scheduler::set_draft) before a step. The next
  // schedule() puts as many as fit the budget and the free blocks left over
  // in the sequence's decode chunk, then clears them.
  std::vector<std::int32_t> draft;

  std::int64_t num_known_tokens() const {
    return static_cast<std::int64_t>(prompt.size() + generated.size());
  }
  // Known token i: from the prompt, then from what was generated.
  std::int32_t known_token(std::int64_t i) const {
    const auto p = static_cast<std::int64_t>(prompt.size());
    return i < p ? prompt[i] : generated[i - p];
  }
  std::vector<std::int32_t> known_tokens() const {
    std::vector<std::int32_t> all(prompt);
    all.insert(all.end(), generated.begin(), generated.end());
    return all;
  }
  std::int64_t num_uncomputed_tokens() const { return num_known_tokens() - num_computed_tokens; }
  // Decoding: only the newest sample lacks K/V. A fresh or recomputing
  // sequence is prefilling until it reaches that point.
  bool is_decoding() const { return !generated.empty() && num_uncomputed_tokens() == 1; }
};

}  // namespace omnibus
