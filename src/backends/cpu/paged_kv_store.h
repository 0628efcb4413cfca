// Keys and values of every layer in fixed-size blocks (PagedAttention
// layout), stored as IEEE f16 (as llama.cpp's default cache): half the
// memory and half the bytes attention reads per position, for a relative
// rounding of at most 2^-11 per element. A sequence owns a list of block
// ids, its block table; position p lives in block block_table[p /
// block_size] at offset p % block_size. Blocks need not be contiguous or in
// order, so kv/'s KvManager can hand them out and share them between
// sequences.
// Layout, K and V in separate buffers: V as [layer][kv_head][block][offset]
// [head_dim], K transposed as [layer][kv_head][block][head_dim][offset]. A
// block's data of one KV head is contiguous, and one KV head's blocks follow
// one another, so attention, which reads a KV head's blocks in turn, reads
// one sequential run when a sequence's blocks are consecutive (as they are
// when a sequence fills fresh blocks); transposed K puts eight positions of
// one dimension in a vector, which is how the AVX2 kernel computes scores
// (kernels/attention.h, AttentionShape::k_dim_stride). Measured with K and V
// from DRAM (`--gtest_filter=*DecodeRowColdCache*`, one decode row at 2,048
// positions, f16): rows of all heads side by side ([block][offset][kv_head]
// [head_dim], each head's read strided) 445-477 us per layer; each block's
// heads one after another ([block][kv_head]..., 2 KB runs 6 KB apart)
// 347-354 us; this layout 302-307 us (docs/profiling.md). Sized once at
// construction: nothing grows at run time. Not thread-safe; owned by the
// engine thread.
//
// Window group (docs/design/sliding-window-kv.md): created with
// window_blocks > 0 for a model with sliding-window layers, the window
// layers' K/V live in blocks of their own, window_blocks() of them, with
// their own ids: a row reads a window layer's positions through its
// sequence's window block table (BatchRow::window_block_table), which
// holds only the blocks the window can still see. The layout is the same
// per layer, with the layer's own block count: a window layer's head
// stride is window_blocks() blocks, a full layer's num_blocks().
//
// KvCacheType::kQ8_0 (--kv-type q8_0) stores int8 codes in the same layout
// as the f16 elements, plus one f16 scale per 32 values of a head's vector
// (kernels/kv_quant.h): K's and V's scales as [layer][kv_head][block]
// [group][offset] (eight positions' scales in one vector). 34 bytes per 32
// values instead of 64.
//
// KvCacheType::kQ4_0 (--kv-type q4_0) keeps the q8_0 scales' layout and
// packs two 4-bit codes a byte (kernels/kv_quant.h): a block's K of one KV
// head as head_dim / 8 octet rows of four bytes per position, its V as
// head_dim / 2 bytes per position; the same regions as the f16 layout at
// half an element's bytes. 18 bytes per 32 values.
#pragma once

#include <cstdint>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "kernels/attention.h"
#include "model/kv_cache.h"
#include "model/model_config.h"

namespace omnibus {

class PagedKvStore final : public KvCache {
 public:
  // window_blocks: 0, every layer in num_blocks blocks; > 0 (a model with
  // window layers only), the window layers in a group of that many.
  static Result<PagedKvStore> create(const ModelConfig& config, int num_blocks, int block_size,
                                     KvCacheType type = KvCacheType::kF16, int window_blocks = 0);

  KvCacheType type() const override { return type_; }
  int num_blocks() const override { return num_blocks_; }
  int window_blocks() const override { return window_blocks_; }
  // Whether `layer` keeps its K/V in the window group.
  bool in_window_group(int layer) const { return window_blocks_ > 0 && layer_in_window_[layer]; }
  // The blocks `layer`'s block ids index.
  int num_blocks(int layer) const { return in_window_group(layer) ? window_blocks_ : num_blocks_; }
  int n_layer() const { return n_layer_; }
  int64_t n_head_kv() const { return n_head_kv_; }
  int64_t head_dim() const { return head_dim_; }
  int block_size() const override { return block_size_; }
  // V: elements from a position's vector of one KV head to the next
  // position's.
  int64_t position_stride() const { return head_dim_; }
  // K: elements from dimension d of a position to dimension d + 1 (the next
  // position's dimension d is the next element).
  int64_t key_dim_stride() const { return block_size_; }
  // K and V: elements from KV head h's data to head h + 1's, same position
  // and layer.
  int64_t head_stride(int layer) const { return static_cast<int64_t>(num_blocks(layer)) * block_size_ * head_dim_; }

  // q8_0 scales: elements from KV head h's scales to head h + 1's.
  int64_t scale_head_stride(int layer) const { return static_cast<int64_t>(num_blocks(layer)) * block_size_ * groups_; }

  // f16 cache. KV head 0, dimension 0 of one position's key (f16 bits);
  // dimension d of head h is h * head_stride(layer) + d * key_dim_stride()
  // further.
  uint16_t* key_at(int layer, int block, int offset) { return keys_.data() + block_start(layer, block) + offset; }
  // KV head 0's head_dim values of one position's value; head h's are
  // head_stride(layer) further.
  uint16_t* value_at(int layer, int block, int offset) {
    return values_.data() + block_start(layer, block) + static_cast<int64_t>(offset) * head_dim_;
  }
  // q8_0 cache: the codes at the places key_at and value_at describe, and
  // the scales of KV head 0's group 0 (group g is g * key_dim_stride()
  // further, head h h * scale_head_stride(layer); K and V alike).
  int8_t* key_codes_at(int layer, int block, int offset) {
    return key_codes_.data() + block_start(layer, block) + offset;
  }
  int8_t* value_codes_at(int layer, int block, int offset) {
    return value_codes_.data() + block_start(layer, block) + static_cast<int64_t>(offset) * head_dim_;
  }
  uint16_t* key_scales_at(int layer, int block, int offset) {
    return key_scales_.data() + scale_block_start(layer, block) + offset;
  }
  uint16_t* value_scales_at(int layer, int block, int offset) {
    return value_scales_.data() + scale_block_start(layer, block) + offset;
  }
  // q4_0 cache: KV head 0's packed K bytes of a position (octet 0; octet o
  // is o * key_octet_stride() further, head h h * head_stride(layer) / 2)
  // and its packed V bytes (head h h * head_stride(layer) / 2 further).
  // Scales as
  // q8_0's.
  uint8_t* key_q4_at(int layer, int block, int offset) {
    return reinterpret_cast<uint8_t*>(key_codes_.data()) + block_start(layer, block) / 2 + int64_t{4} * offset;
  }
  uint8_t* value_q4_at(int layer, int block, int offset) {
    return reinterpret_cast<uint8_t*>(value_codes_.data()) + (block_start(layer, block) + offset * head_dim_) / 2;
  }
  int64_t key_octet_stride() const { return int64_t{4} * block_size_; }

  uint64_t bytes() const override {
    return (keys_.size() + values_.size() + key_scales_.size() + value_scales_.size()) * sizeof(uint16_t) +
           key_codes_.size() + value_codes_.size();
  }
  // One block's K/V of every layer and KV head as plain bytes, for handing
  // a prompt's cache to another instance (engine/kv_transfer.h): the
  // regions of every buffer the type uses, layer by layer, head by head,
  // in the store's own layout. A store of the same model, type and block
  // size reads the bytes back bit for bit. `block` must be in range; so
  // must `window_block` in a store with a window group, or be kNoKvBlock:
  // the window layers' bytes are then zeros out and skipped in.
  int64_t block_transfer_bytes() const override;
  Status copy_block_out(int block, int window_block, uint8_t* out) const override;
  Status copy_block_in(int block, int window_block, const uint8_t* in) override;

 private:
  PagedKvStore() = default;
  // KV head 0's data of (layer, block); head h's is h * head_stride(layer)
  // further.
  int64_t block_start(int layer, int block) const {
    return (layer_first_block_[layer] + block) * block_size_ * head_dim_;
  }
  int64_t scale_block_start(int layer, int block) const {
    return (layer_first_block_[layer] + block) * block_size_ * groups_;
  }
  // Calls fn(pointer, bytes) for each region of a transfer block in
  // transfer order: `block` of the full layers, `window_block` of the
  // window group's (kNoKvBlock: fn gets a null pointer).
  template <class Fn>
  void for_each_block_region(int block, int window_block, Fn&& fn) const;
  KvCacheType type_ = KvCacheType::kF16;
  int num_blocks_ = 0;
  int window_blocks_ = 0;
  int block_size_ = 0;
  // Per layer: whether it is a window layer, and the (layer, KV head 0,
  // block 0) region's index in units of one head's block: each layer's
  // heads and blocks follow the previous layer's.
  std::vector<bool> layer_in_window_;
  std::vector<int64_t> layer_first_block_;
  int n_layer_ = 0;
  int64_t head_dim_ = 0;
  int64_t n_head_kv_ = 0;
  int64_t groups_ = 0;  // q8_0 / q4_0 scales per head vector
  // One pair of buffers per type is used; the other stays empty.
  AlignedBuffer<uint16_t> keys_;
  AlignedBuffer<uint16_t> values_;
  AlignedBuffer<int8_t> key_codes_;
  AlignedBuffer<int8_t> value_codes_;
  AlignedBuffer<uint16_t> key_scales_;
  AlignedBuffer<uint16_t> value_scales_;
};

}  // namespace omnibus
