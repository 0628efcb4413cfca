#include "backends/cpu/paged_kv_store.h"

#include <cstring>
#include <string>
#include <type_traits>

#include "kernels/attention.h"

namespace omnibus {

Result<PagedKvStore> PagedKvStore::create(const ModelConfig& config, int num_blocks, int block_size, KvCacheType type,
                                          int window_blocks) {
  if (num_blocks <= 0 || block_size <= 0) return Status::invalid_argument("KV store needs at least one block and slot");
  if (window_blocks < 0) return Status::invalid_argument("negative window block count");
  const int window_layers = config.window_layer_count();
  if (window_blocks > 0 && window_layers == 0)
    return Status::invalid_argument("a window block group for a model without sliding-window layers");
  if ((type == KvCacheType::kQ8_0 || type == KvCacheType::kQ4_0) && config.head_dim % kKvQ8Group != 0)
    return Status::invalid_argument(std::string("--kv-type ") + kv_cache_type_name(type) +
                                    " needs a head size that is a multiple of " + std::to_string(kKvQ8Group) +
                                    "; this model's is " + std::to_string(config.head_dim) + " (use --kv-type f16)");
  if (type == KvCacheType::kQ4_0 && config.head_dim > kMaxHeadDim)
    return Status::invalid_argument("--kv-type q4_0 supports head sizes up to " + std::to_string(kMaxHeadDim) +
                                    "; this model's is " + std::to_string(config.head_dim) + " (use --kv-type f16)");
  // Checked per block first so a huge block count cannot overflow the product.
  const uint64_t layer_block_bytes =
      static_cast<uint64_t>(kv_bytes_per_token(config, type) / config.n_layer) * static_cast<uint64_t>(block_size);
  constexpr uint64_t kMaxBytes = 64ull << 30;
  const uint64_t full_layers = static_cast<uint64_t>(config.n_layer - (window_blocks > 0 ? window_layers : 0));
  const uint64_t group_layers = window_blocks > 0 ? static_cast<uint64_t>(window_layers) : 0;
  if (layer_block_bytes == 0 || static_cast<uint64_t>(num_blocks) > kMaxBytes / (layer_block_bytes * config.n_layer) ||
      static_cast<uint64_t>(window_blocks) > kMaxBytes / (layer_block_bytes * config.n_layer) ||
      full_layers * num_blocks + group_layers * window_blocks > kMaxBytes / layer_block_bytes)
    return Status::resource_exhausted("KV store of " + std::to_string(num_blocks) + " blocks of " +
                                      std::to_string(block_size) + " positions exceeds " +
                                      std::to_string(kMaxBytes >> 30) + " GiB; lower the context");
  PagedKvStore kv;
  kv.window_blocks_ = window_blocks;
  kv.layer_in_window_.resize(static_cast<size_t>(config.n_layer));
  kv.layer_first_block_.resize(static_cast<size_t>(config.n_layer));
  int64_t head_blocks = 0;  // one (layer, KV head, block) region each
  for (int layer = 0; layer < config.n_layer; ++layer) {
    kv.layer_in_window_[layer] = config.layer_has_window(layer);
    kv.layer_first_block_[layer] = head_blocks;
    const int blocks = kv.layer_in_window_[layer] && window_blocks > 0 ? window_blocks : num_blocks;
    head_blocks += static_cast<int64_t>(config.n_head_kv) * blocks;
  }
  // K (or V) elements: one per layer, KV dimension and position held.
  const uint64_t elements =
      static_cast<uint64_t>(head_blocks) * static_cast<uint64_t>(block_size) * static_cast<uint64_t>(config.head_dim);
  kv.type_ = type;
  kv.n_head_kv_ = config.n_head_kv;
  kv.n_layer_ = config.n_layer;
  kv.groups_ = config.head_dim / kKvQ8Group;
  kv.num_blocks_ = num_blocks;
  kv.block_size_ = block_size;
  kv.head_dim_ = config.head_dim;
  // Transposed K is read in whole vectors of positions, up to
  // kTransposedKeyOverread elements past a block's last one.
  //
  // Buffers of 256 KiB or more (a model's store at any real context; the
  // tests' tiny ones stay as they are) on transparent huge pages:
  // attention streams every layer's K and V (and scales) each decode step,
  // and on 4 KiB pages each KV head's blocks of one layer cross a page
  // every few blocks (a TLB walk, and the hardware prefetcher stops at the
  // page's end). Decode after 1,927 tokens went +10% (f16 cache, 9 of 10
  // alternating pairs) and +3-5% (q4_0) on the Zen 4 VM
  // (docs/findings/kv-store-on-huge-pages.md).
  auto sized = [](auto& buffer, uint64_t count) {
    using Element = std::remove_reference_t<decltype(buffer[0])>;
    buffer.resize(count, count * sizeof(Element) >= (uint64_t{256} << 10));
  };
  if (type == KvCacheType::kQ8_0) {
    // K's scales are read like its codes: whole vectors of positions.
    sized(kv.key_codes_, elements + kTransposedKeyOverread);
    sized(kv.value_codes_, elements);
    sized(kv.key_scales_, elements / kKvQ8Group + kTransposedKeyOverread);
    sized(kv.value_scales_, elements / kKvQ8Group);
  } else if (type == KvCacheType::kQ4_0) {
    // Two codes a byte; K read in whole vectors of positions (four bytes
    // each), like the other types' transposed K.
    sized(kv.key_codes_, elements / 2 + 4 * kTransposedKeyOverread);
    sized(kv.value_codes_, elements / 2);
    sized(kv.key_scales_, elements / kKvQ8Group + kTransposedKeyOverread);
    sized(kv.value_scales_, elements / kKvQ8Group);
  } else {
    sized(kv.keys_, elements + kTransposedKeyOverread);
    sized(kv.values_, elements);
  }
  // Every page faulted in here, at load, rather than by the prompts that
  // first reach it (as llama.cpp clears its cache when it creates a
  // context). With huge pages a short prompt touches the start of every
  // (layer, KV head) region and so most of the store anyway; a first touch
  // costs 0.1-3 ms a MiB on these VMs (3 when the host has not backed the
  // page yet), which was 2-99 ms of a 512-token prefill's TTFT (the
  // kv_store op); and a machine without the memory fails at start, not
  // in the middle of a request. Costs: the whole store is resident from
  // the start (`chat -c 32768`, f16: 755 MB; `run` sizes its store to the
  // prompt and -n) and creating it takes the zeroing (~70 ms for the
  // server's default 512 MiB once the host has backed the pages).
  kv.keys_.zero_fill();
  kv.values_.zero_fill();
  kv.key_codes_.zero_fill();
  kv.value_codes_.zero_fill();
  kv.key_scales_.zero_fill();
  kv.value_scales_.zero_fill();
  return kv;
}

template <class Fn>
void PagedKvStore::for_each_block_region(int block, int window_block, Fn&& fn) const {
  // Element counts of one (layer, KV head, block) region.
  const int64_t elements = static_cast<int64_t>(block_size_) * head_dim_;
  const int64_t scales = static_cast<int64_t>(block_size_) * groups_;
  for (int layer = 0; layer < n_layer(); ++layer) {
    const int b = in_window_group(layer) ? window_block : block;
    for (int64_t h = 0; h < n_head_kv_; ++h) {
      const bool none = b == kNoKvBlock;
      const int64_t at = none ? 0 : block_start(layer, b) + h * head_stride(layer);
      const int64_t scale_at = none ? 0 : scale_block_start(layer, b) + h * scale_head_stride(layer);
      auto region = [&](const auto* base, int64_t element_at, int64_t bytes) {
        fn(none ? nullptr : reinterpret_cast<const uint8_t*>(base + element_at), bytes);
      };
      if (type_ == KvCacheType::kQ8_0 || type_ == KvCacheType::kQ4_0) {
        // q4_0 packs two codes a byte: the same regions at half the bytes.
        const int64_t shift = type_ == KvCacheType::kQ4_0 ? 1 : 0;
        region(reinterpret_cast<const uint8_t*>(key_codes_.data()), at >> shift, elements >> shift);
        region(reinterpret_cast<const uint8_t*>(value_codes_.data()), at >> shift, elements >> shift);
        region(key_scales_.data(), scale_at, scales * 2);
        region(value_scales_.data(), scale_at, scales * 2);
      } else {
        region(keys_.data(), at, elements * 2);
        region(values_.data(), at, elements * 2);
      }
    }
  }
}

int64_t PagedKvStore::block_transfer_bytes() const {
  int64_t total = 0;
  for_each_block_region(0, 0, [&](const uint8_t*, int64_t bytes) { total += bytes; });
  return total;
}

Status PagedKvStore::copy_block_out(int block, int window_block, uint8_t* out) const {
  if (window_blocks_ == 0) window_block = block;
  for_each_block_region(block, window_block, [&](const uint8_t* p, int64_t bytes) {
    if (p == nullptr)
      std::memset(out, 0, static_cast<size_t>(bytes));
    else
      std::memcpy(out, p, static_cast<size_t>(bytes));
    out += bytes;
  });
  return Status::ok();  // host memory: a copy cannot fail
}

Status PagedKvStore::copy_block_in(int block, int window_block, const uint8_t* in) {
  if (window_blocks_ == 0) window_block = block;
  // The regions are this store's own buffers: writing through them is
  // writing to *this.
  for_each_block_region(block, window_block, [&](const uint8_t* p, int64_t bytes) {
    if (p != nullptr) std::memcpy(const_cast<uint8_t*>(p), in, static_cast<size_t>(bytes));
    in += bytes;
  });
  return Status::ok();
}

}  // namespace omnibus
