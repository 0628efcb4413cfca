#include "engine/kv_pool_plan.h"

#include <algorithm>
#include <string>

#include "model/kv_cache.h"

namespace omnibus {

Result<KvPoolPlan> plan_kv_pools(const ModelConfig& config, const KvPoolRequest& request) {
  const int64_t bs = request.block_size;
  if (bs < 1) return Status::invalid_argument("the KV block size must be at least 1");
  const int64_t layer_block_bytes = kv_bytes_per_token(config, request.type) / config.n_layer * bs;
  KvPoolPlan plan;
  plan.block_bytes = layer_block_bytes * config.n_layer;
  const int window_layers = config.window_layer_count();
  if (request.window_group && window_layers > 0 && window_layers < config.n_layer) {
    const int64_t per_sequence = (config.sliding_window + bs - 1) / bs + 2;
    const int64_t step = (request.max_batched_tokens + bs - 1) / bs;
    int64_t blocks = std::max<int64_t>(1, request.max_seqs) * per_sequence + step;
    if (request.context_tokens <= 0) {
      const int64_t affordable = request.budget_bytes / 2 / (layer_block_bytes * window_layers);
      blocks = std::min(blocks, affordable) >= per_sequence + step ? std::min(blocks, affordable) : 0;
    }
    if (blocks > 0) {
      plan.window_blocks = blocks;
      plan.window_block_bytes = layer_block_bytes * window_layers;
      plan.block_bytes = layer_block_bytes * (config.n_layer - window_layers);
    }
  }
  if (request.context_tokens > 0) {
    plan.num_blocks = (request.context_tokens + bs - 1) / bs;
  } else {
    plan.num_blocks = (request.budget_bytes - plan.window_blocks * plan.window_block_bytes) / plan.block_bytes;
    if (plan.num_blocks < 1)
      return Status::invalid_argument("a KV cache of " + std::to_string(request.budget_bytes) +
                                      " bytes holds no KV block (one block is " + std::to_string(plan.block_bytes) +
                                      " bytes); raise --kv-cache-mib");
  }
  if (plan.num_blocks > (int64_t{1} << 30) || plan.window_blocks > (int64_t{1} << 30))
    return Status::invalid_argument("--kv-cache-mib is too large");
  return plan;
}

}  // namespace omnibus
