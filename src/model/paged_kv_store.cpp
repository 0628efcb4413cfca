#include "model/paged_kv_store.h"

#include <string>

#include "kernels/attention.h"

namespace omnibus {

Result<PagedKvStore> PagedKvStore::create(const ModelConfig& config, int num_blocks, int block_size,
                                          KvCacheType type) {
  if (num_blocks <= 0 || block_size <= 0) return Status::invalid_argument("KV store needs at least one block and slot");
  if ((type == KvCacheType::kQ8_0 || type == KvCacheType::kQ4_0) && config.head_dim % kKvQ8Group != 0)
    return Status::invalid_argument(std::string("--kv-type ") + kv_cache_type_name(type) +
                                    " needs a head size that is a multiple of " +
                                    std::to_string(kKvQ8Group) + "; this model's is " +
                                    std::to_string(config.head_dim) + " (use --kv-type f16)");
  if (type == KvCacheType::kQ4_0 && config.head_dim > kMaxHeadDim)
    return Status::invalid_argument("--kv-type q4_0 supports head sizes up to " + std::to_string(kMaxHeadDim) +
                                    "; this model's is " + std::to_string(config.head_dim) + " (use --kv-type f16)");
  // Checked per block first so a huge block count cannot overflow the product.
  const uint64_t block_bytes = static_cast<uint64_t>(bytes_per_token(config, type)) * static_cast<uint64_t>(block_size);
  constexpr uint64_t kMaxBytes = 64ull << 30;
  if (block_bytes == 0 || static_cast<uint64_t>(num_blocks) > kMaxBytes / block_bytes)
    return Status::resource_exhausted("KV store of " + std::to_string(num_blocks) + " blocks of " +
                                      std::to_string(block_size) + " positions exceeds " +
                                      std::to_string(kMaxBytes >> 30) + " GiB; lower the context");
  // K (or V) elements: one per layer, KV dimension and position.
  const uint64_t elements = static_cast<uint64_t>(config.n_layer) * static_cast<uint64_t>(config.kv_dim()) *
                            static_cast<uint64_t>(block_size) * static_cast<uint64_t>(num_blocks);
  PagedKvStore kv;
  kv.type_ = type;
  kv.n_head_kv_ = config.n_head_kv;
  kv.groups_ = config.head_dim / kKvQ8Group;
  kv.num_blocks_ = num_blocks;
  kv.block_size_ = block_size;
  kv.head_dim_ = config.head_dim;
  // Transposed K is read in whole vectors of positions, up to
  // kTransposedKeyOverread elements past a block's last one.
  if (type == KvCacheType::kQ8_0) {
    // K's scales are read like its codes: whole vectors of positions.
    kv.key_codes_.resize(elements + kTransposedKeyOverread);
    kv.value_codes_.resize(elements);
    kv.key_scales_.resize(elements / kKvQ8Group + kTransposedKeyOverread);
    kv.value_scales_.resize(elements / kKvQ8Group);
  } else if (type == KvCacheType::kQ4_0) {
    // Two codes a byte; K read in whole vectors of positions (four bytes
    // each), like the other types' transposed K.
    kv.key_codes_.resize(elements / 2 + 4 * kTransposedKeyOverread);
    kv.value_codes_.resize(elements / 2);
    kv.key_scales_.resize(elements / kKvQ8Group + kTransposedKeyOverread);
    kv.value_scales_.resize(elements / kKvQ8Group);
  } else {
    kv.keys_.resize(elements + kTransposedKeyOverread);
    kv.values_.resize(elements);
  }
  return kv;
}

}  // namespace omnibus
