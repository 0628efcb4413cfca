// Keys and values of every layer for a fixed number of sequence slots, each
// up to `max_positions` long, in f32. Sized once at construction: nothing
// grows at run time. Layout [slot][layer][position][kv_dim], so attention
// reads one sequence's keys as contiguous rows.
// (The paged block pool of the server issue replaces the slot layout; the
// forward pass only uses key_row/value_row and row_stride.)
// Not thread-safe; owned by the engine thread.
#pragma once

#include <cstdint>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "model/model_config.h"

namespace omnibus {

class KvCache {
 public:
  static Result<KvCache> create(const ModelConfig& config, int slots, int64_t max_positions);

  int slots() const { return slots_; }
  int64_t max_positions() const { return max_positions_; }
  int64_t row_stride() const { return kv_dim_; }

  float* key_row(int slot, int layer, int64_t pos) { return keys_.data() + offset(slot, layer, pos); }
  float* value_row(int slot, int layer, int64_t pos) { return values_.data() + offset(slot, layer, pos); }
  uint64_t bytes() const { return 2 * keys_.size() * sizeof(float); }

 private:
  KvCache() = default;
  int64_t offset(int slot, int layer, int64_t pos) const {
    return ((static_cast<int64_t>(slot) * n_layer_ + layer) * max_positions_ + pos) * kv_dim_;
  }
  int slots_ = 0;
  int n_layer_ = 0;
  int64_t max_positions_ = 0;
  int64_t kv_dim_ = 0;
  AlignedBuffer<float> keys_;
  AlignedBuffer<float> values_;
};

}  // namespace omnibus
