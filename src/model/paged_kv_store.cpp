#include "model/paged_kv_store.h"

#include <string>

#include "kernels/attention.h"

namespace omnibus {

Result<PagedKvStore> PagedKvStore::create(const ModelConfig& config, int num_blocks, int block_size) {
  if (num_blocks <= 0 || block_size <= 0) return Status::invalid_argument("KV store needs at least one block and slot");
  // Checked per block first so a huge block count cannot overflow the product.
  const uint64_t block_bytes = static_cast<uint64_t>(bytes_per_token(config)) * static_cast<uint64_t>(block_size);
  constexpr uint64_t kMaxBytes = 64ull << 30;
  if (block_bytes == 0 || static_cast<uint64_t>(num_blocks) > kMaxBytes / block_bytes)
    return Status::resource_exhausted("KV store of " + std::to_string(num_blocks) + " blocks of " +
                                      std::to_string(block_size) + " positions exceeds " +
                                      std::to_string(kMaxBytes >> 30) + " GiB; lower the context");
  const uint64_t elements = block_bytes / (2 * sizeof(uint16_t)) * static_cast<uint64_t>(num_blocks);
  PagedKvStore kv;
  kv.num_blocks_ = num_blocks;
  kv.block_size_ = block_size;
  kv.kv_dim_ = config.kv_dim();
  kv.head_dim_ = config.head_dim;
  // Transposed K is read in whole vectors of positions, up to
  // kTransposedKeyOverread elements past a block's last one.
  kv.keys_.resize(elements + kTransposedKeyOverread);
  kv.values_.resize(elements);
  return kv;
}

}  // namespace omnibus
