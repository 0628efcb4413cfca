#include "model/kv_cache.h"

namespace omnibus {

int64_t kv_bytes_per_token(const ModelConfig& config, KvCacheType type) {
  const int64_t values = 2 * static_cast<int64_t>(config.n_layer) * config.kv_dim();
  // q8_0 and q4_0: one f16 scale per group of kKvQ8Group values.
  const int64_t scale_bytes = values / kKvQ8Group * static_cast<int64_t>(sizeof(uint16_t));
  if (type == KvCacheType::kQ8_0) return values + scale_bytes;
  if (type == KvCacheType::kQ4_0) return values / 2 + scale_bytes;
  return values * static_cast<int64_t>(sizeof(uint16_t));
}

}  // namespace omnibus
