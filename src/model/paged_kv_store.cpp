#include "model/paged_kv_store.h"

#include <string>

#include "kernels/attention.h"

namespace omnibus {

namespace {
// KV buffers from this size go on transparent huge pages.
constexpr size_t kKvHugePageMinBytes = size_t{4} << 20;
}  // namespace

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
  // Caches of several MiB on transparent huge pages (AlignedBuffer):
  // attention streams them every step.
  const auto grow = [](auto& buffer, size_t count) {
    buffer.resize(count, count * sizeof(buffer[0]) >= kKvHugePageMinBytes);
  };
  if (type == KvCacheType::kQ8_0) {
    // K's scales are read like its codes: whole vectors of positions.
    grow(kv.key_codes_, elements + kTransposedKeyOverread);
    grow(kv.value_codes_, elements);
    grow(kv.key_scales_, elements / kKvQ8Group + kTransposedKeyOverread);
    grow(kv.value_scales_, elements / kKvQ8Group);
  } else if (type == KvCacheType::kQ4_0) {
    // Two codes a byte; K read in whole vectors of positions (four bytes
    // each), like the other types' transposed K.
    grow(kv.key_codes_, elements / 2 + 4 * kTransposedKeyOverread);
    grow(kv.value_codes_, elements / 2);
    grow(kv.key_scales_, elements / kKvQ8Group + kTransposedKeyOverread);
    grow(kv.value_scales_, elements / kKvQ8Group);
  } else {
    grow(kv.keys_, elements + kTransposedKeyOverread);
    grow(kv.values_, elements);
  }
  return kv;
}

}  // namespace omnibus
