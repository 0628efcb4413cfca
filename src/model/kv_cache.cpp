#include "model/kv_cache.h"

namespace omnibus {

Result<KvCache> KvCache::create(const ModelConfig& config, int slots, int64_t max_positions) {
  if (slots <= 0 || max_positions <= 0) return Status::invalid_argument("KV cache needs at least one slot and position");
  const uint64_t floats = static_cast<uint64_t>(slots) * config.n_layer * static_cast<uint64_t>(max_positions) *
                          static_cast<uint64_t>(config.kv_dim());
  constexpr uint64_t kMaxBytes = 64ull << 30;
  if (floats * 2 * sizeof(float) > kMaxBytes)
    return Status::resource_exhausted("KV cache of " + std::to_string(max_positions) + " positions would need " +
                                      std::to_string(floats * 2 * sizeof(float) >> 20) + " MiB; lower the context");
  KvCache kv;
  kv.slots_ = slots;
  kv.n_layer_ = config.n_layer;
  kv.max_positions_ = max_positions;
  kv.kv_dim_ = config.kv_dim();
  kv.keys_.resize(floats);
  kv.values_.resize(floats);
  return kv;
}

}  // namespace omnibus
