// StepPlan: what the runner does in one engine step, decided by the
// Scheduler from metadata alone. Plain data, copied freely.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/block_pool.h"  // BlockId
#include "kv/kv_manager.h"  // SeqId
#include "sched/sequence.h"

namespace omnibus {

// A run of consecutive tokens of one sequence. Token tokens[i] sits at
// position start_pos + i; its K/V go to block_table[(start_pos+i) / block_size]
// at slot (start_pos+i) % block_size, and attention reads positions
// 0..start_pos+i from the same table.
struct ScheduledChunk {
  SeqId seq = 0;
  std::int64_t start_pos = 0;
  std::vector<std::int32_t> tokens;
  // True only when the chunk ends at the sequence's last known token, so the
  // last row's logits are sampled; earlier prefill chunks need no logits.
  bool needs_logits = false;
  // The last num_draft tokens are guesses (speculative decoding) run after
  // the newest known token; each of their rows needs logits too.
  std::int64_t num_draft = 0;
  std::vector<BlockId> block_table;  // a copy, valid for this step
  // The window layers' blocks (KvManager::window_block_table), a copy;
  // empty without a window group.
  std::vector<BlockId> window_block_table;

  // Rows of this chunk whose logits are sampled: the last 1 + num_draft.
  std::int64_t logits_rows() const { return needs_logits ? 1 + num_draft : 0; }
  // One known token (plus its guesses) sampled after: a decode step's chunk,
  // or a prompt whose last chunk is one token.
  bool samples_one_known_token() const {
    return needs_logits && static_cast<std::int64_t>(tokens.size()) - num_draft == 1;
  }
};

struct FinishedSeq {
  SeqId seq = 0;
  FinishReason reason = FinishReason::kNone;
  std::int64_t num_generated = 0;
};

struct StepPlan {
  // At most one chunk per sequence; decodes first, then prefill chunks.
  std::vector<ScheduledChunk> chunks;
  // Sequences that lost their K/V this step (they will recompute later).
  std::vector<SeqId> preempted;
  // Sequences that ended since the previous plan (stopped, hit max_tokens,
  // aborted, rejected); their blocks are already free.
  std::vector<FinishedSeq> finished;

  std::int64_t num_tokens() const {
    std::int64_t n = 0;
    for (const ScheduledChunk& c : chunks) n += static_cast<std::int64_t>(c.tokens.size());
    return n;
  }
  bool empty() const { return chunks.empty(); }
};

}  // namespace omnibus
