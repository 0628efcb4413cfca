// Keys and values of every layer in fixed-size blocks (PagedAttention
// layout), stored as IEEE f16 (as llama.cpp's default cache): half the
// memory and half the bytes attention reads per position, for a relative
// rounding of at most 2^-11 per element. A sequence owns a list of block ids, its block table;
// position p lives in block block_table[p / block_size] at offset
// p % block_size. Blocks need not be contiguous or in order, so kv/'s
// KvManager can hand them out and share them between sequences.
// Layout [layer][block][offset][kv_dim], K and V in separate buffers: a
// block's rows of one layer are contiguous, so attention reads each block as
// one strided run. Sized once at construction: nothing grows at run time.
// Not thread-safe; owned by the engine thread.
#pragma once

#include <cstdint>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "model/model_config.h"

namespace omnibus {

class PagedKvStore {
 public:
  static Result<PagedKvStore> create(const ModelConfig& config, int num_blocks, int block_size);

  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  int64_t row_stride() const { return kv_dim_; }

  // One position's row of kv_dim f16 values (raw bits).
  uint16_t* key_row(int layer, int block, int offset) { return keys_.data() + index(layer, block, offset); }
  uint16_t* value_row(int layer, int block, int offset) { return values_.data() + index(layer, block, offset); }
  uint64_t bytes() const { return 2 * keys_.size() * sizeof(uint16_t); }
  // Bytes of K and V that one cached token takes, over all layers.
  static int64_t bytes_per_token(const ModelConfig& config) {
    return 2 * static_cast<int64_t>(config.n_layer) * config.kv_dim() * static_cast<int64_t>(sizeof(uint16_t));
  }

 private:
  PagedKvStore() = default;
  int64_t index(int layer, int block, int offset) const {
    return ((static_cast<int64_t>(layer) * num_blocks_ + block) * block_size_ + offset) * kv_dim_;
  }
  int num_blocks_ = 0;
  int block_size_ = 0;
  int64_t kv_dim_ = 0;
  AlignedBuffer<uint16_t> keys_;
  AlignedBuffer<uint16_t> values_;
};

}  // namespace omnibus
