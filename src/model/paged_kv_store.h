// Keys and values of every layer in fixed-size blocks (PagedAttention
// layout), stored as IEEE f16 (as llama.cpp's default cache): half the
// memory and half the bytes attention reads per position, for a relative
// rounding of at most 2^-11 per element. A sequence owns a list of block
// ids, its block table; position p lives in block block_table[p /
// block_size] at offset p % block_size. Blocks need not be contiguous or in
// order, so kv/'s KvManager can hand them out and share them between
// sequences.
// Layout [layer][block][kv_head][offset][head_dim], K and V in separate
// buffers: a block's positions of one KV head are contiguous (head_dim
// apart) and its heads follow one another, so attention reads each head of
// a block as one sequential run and a whole block in order. (Rows of all
// heads side by side, [offset][kv_head][head_dim], made each head's read a
// strided one: at 2,048 positions, with K and V coming from DRAM, the
// attention microbenchmark took 445-477 us per layer against 373-392 us in
// this layout, docs/profiling.md.) Sized once at construction: nothing grows at
// run time. Not thread-safe; owned by the engine thread.
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
  // Elements from a position's vector of one KV head to the next position's.
  int64_t position_stride() const { return head_dim_; }
  // Elements from KV head h's vector to head h + 1's, same position.
  int64_t head_stride() const { return static_cast<int64_t>(block_size_) * head_dim_; }

  // KV head 0's head_dim f16 values (raw bits) of one position; head h's
  // are head_stride() further.
  uint16_t* key_at(int layer, int block, int offset) { return keys_.data() + index(layer, block, offset); }
  uint16_t* value_at(int layer, int block, int offset) { return values_.data() + index(layer, block, offset); }
  uint64_t bytes() const { return 2 * keys_.size() * sizeof(uint16_t); }
  // Bytes of K and V that one cached token takes, over all layers.
  static int64_t bytes_per_token(const ModelConfig& config) {
    return 2 * static_cast<int64_t>(config.n_layer) * config.kv_dim() * static_cast<int64_t>(sizeof(uint16_t));
  }

 private:
  PagedKvStore() = default;
  int64_t index(int layer, int block, int offset) const {
    return (static_cast<int64_t>(layer) * num_blocks_ + block) * block_size_ * kv_dim_ +
           static_cast<int64_t>(offset) * head_dim_;
  }
  int num_blocks_ = 0;
  int block_size_ = 0;
  int64_t kv_dim_ = 0;
  int64_t head_dim_ = 0;
  AlignedBuffer<uint16_t> keys_;
  AlignedBuffer<uint16_t> values_;
};

}  // namespace omnibus
