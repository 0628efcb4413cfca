// The KV cache as the engine sees it: num_blocks() blocks of block_size()
// positions of every layer's keys and values, addressed by block id only.
// Which bytes sit where is the backend's business (the CPU backend's
// PagedKvStore; a GPU backend's cache would live in device memory); the
// engine sizes the pool, hands block ids to a ModelRunner of the same
// backend, and moves whole blocks between instances in the KV transfer
// format (engine/kv_transfer.h).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/kv_quant.h"
#include "model/model_config.h"

namespace omnibus {

// A block table entry that names no block: a window layer's block behind
// the window, already freed.
inline constexpr int32_t kNoKvBlock = -1;

class KvCache {
 public:
  virtual ~KvCache() = default;

  virtual KvCacheType type() const = 0;
  virtual int num_blocks() const = 0;
  // Blocks of the window group (the sliding-window layers' K/V, with block
  // ids of their own: docs/design/sliding-window-kv.md); 0 when every
  // layer lives in the num_blocks() blocks.
  virtual int window_blocks() const { return 0; }
  virtual int block_size() const = 0;
  // Memory the cache holds (bytes).
  virtual uint64_t bytes() const = 0;

  // KV handover: one block of every layer and KV head in the transfer
  // format (the CPU store's layout, per layer and KV head: keys then
  // values, then the quantized caches' scales); a backend with another
  // layout converts. A copy that fails (a device cache's transfer error)
  // says so; `out` then holds nothing usable, and a block copied in is
  // unchanged or partly written (its sequence must not be committed).
  // `window_block`: in a cache with a window group, the window layers'
  // block for the same positions, or kNoKvBlock (they are behind every
  // window that still matters: zeros out, skipped in); ignored otherwise.
  virtual int64_t block_transfer_bytes() const = 0;
  virtual Status copy_block_out(int block, int window_block, uint8_t* out) const = 0;
  virtual Status copy_block_in(int block, int window_block, const uint8_t* in) = 0;

 protected:
  KvCache() = default;
  KvCache(const KvCache&) = default;
  KvCache& operator=(const KvCache&) = default;
  KvCache(KvCache&&) = default;
  KvCache& operator=(KvCache&&) = default;
};

// Bytes one position of every layer's keys and values takes in a cache of
// `type` for this model: a property of the format, the same in every
// backend (scales included for q8_0 and q4_0).
int64_t kv_bytes_per_token(const ModelConfig& config, KvCacheType type = KvCacheType::kF16);

}  // namespace omnibus
