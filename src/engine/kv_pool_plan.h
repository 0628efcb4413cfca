// How the serving engine splits its K/V memory into block pools: one pool
// of blocks holding every layer, or, for a model with sliding-window layers
// on a backend that reads them through a window group (Backend::window_kv),
// a pool for the full layers and a smaller one for the window layers,
// which hold only what each sequence's window still sees
// (docs/design/sliding-window-kv.md).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/kv_quant.h"
#include "model/model_config.h"

namespace omnibus {

struct KvPoolRequest {
  int64_t budget_bytes = 0;  // --kv-cache-mib; ignored when context_tokens > 0
  // > 0: size the full layers' pool for exactly this many tokens (one
  // sequence's context, the command line's use) instead of by the budget.
  int64_t context_tokens = 0;
  int32_t block_size = 16;
  KvCacheType type = KvCacheType::kF16;
  bool window_group = false;       // wanted, the model has window layers, and the backend reads them so
  int64_t max_seqs = 1;            // sequences running at once
  int64_t max_batched_tokens = 1;  // positions one step computes, all sequences together
};

struct KvPoolPlan {
  int64_t num_blocks = 0;     // the full layers' pool (every layer's without a window group)
  int64_t window_blocks = 0;  // the window layers' pool; 0: none
  int64_t block_bytes = 0;    // one block of the full-layer pool
  int64_t window_block_bytes = 0;
  int64_t bytes() const { return num_blocks * block_bytes + window_blocks * window_block_bytes; }
};

// The window pool gets every running sequence's window blocks (its window
// plus a partly filled block on each side) and one step's new positions;
// from a budget, at most half of it, and only if that still carries one
// sequence's largest step (else one pool). The full layers take the rest.
// Errors: no block fits the budget, or absurd sizes.
Result<KvPoolPlan> plan_kv_pools(const ModelConfig& config, const KvPoolRequest& request);

}  // namespace omnibus
