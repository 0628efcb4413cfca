// PagedKvStore's block copy for the KV handover: a block's bytes copied out
// of one store and into another of the same shape read back through every
// accessor the attention kernels use, for every cache type, and the copy
// touches no other block.
#include "backends/cpu/paged_kv_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace omnibus {
namespace {

ModelConfig config() {
  ModelConfig c;
  c.n_layer = 2;
  c.n_embd = 128;
  c.n_head = 4;
  c.n_head_kv = 2;
  c.head_dim = 32;
  return c;
}

// Bytes a (layer, KV head) region holds of one position, per cache type:
// what the accessors below read.
void expect_same_position(PagedKvStore& a, PagedKvStore& b, int layer, int block_a, int block_b, int offset) {
  const int64_t hd = a.head_dim();
  for (int64_t h = 0; h < a.n_head_kv(); ++h) {
    switch (a.type()) {
      case KvCacheType::kF16:
      case KvCacheType::kBF16:
        for (int64_t d = 0; d < hd; ++d)
          EXPECT_EQ(a.key_at(layer, block_a, offset)[h * a.head_stride(layer) + d * a.key_dim_stride()],
                    b.key_at(layer, block_b, offset)[h * b.head_stride(layer) + d * b.key_dim_stride()]);
        EXPECT_EQ(0, std::memcmp(a.value_at(layer, block_a, offset) + h * a.head_stride(layer),
                                 b.value_at(layer, block_b, offset) + h * b.head_stride(layer), hd * 2));
        break;
      case KvCacheType::kQ8_0:
        for (int64_t d = 0; d < hd; ++d)
          EXPECT_EQ(a.key_codes_at(layer, block_a, offset)[h * a.head_stride(layer) + d * a.key_dim_stride()],
                    b.key_codes_at(layer, block_b, offset)[h * b.head_stride(layer) + d * b.key_dim_stride()]);
        EXPECT_EQ(0, std::memcmp(a.value_codes_at(layer, block_a, offset) + h * a.head_stride(layer),
                                 b.value_codes_at(layer, block_b, offset) + h * b.head_stride(layer), hd));
        break;
      case KvCacheType::kQ4_0:
        for (int64_t o = 0; o < hd / 8; ++o)
          EXPECT_EQ(
              0, std::memcmp(
                     a.key_q4_at(layer, block_a, offset) + h * a.head_stride(layer) / 2 + o * a.key_octet_stride(),
                     b.key_q4_at(layer, block_b, offset) + h * b.head_stride(layer) / 2 + o * b.key_octet_stride(), 4));
        EXPECT_EQ(0, std::memcmp(a.value_q4_at(layer, block_a, offset) + h * a.head_stride(layer) / 2,
                                 b.value_q4_at(layer, block_b, offset) + h * b.head_stride(layer) / 2, hd / 2));
        break;
    }
    if (a.type() == KvCacheType::kQ8_0 || a.type() == KvCacheType::kQ4_0) {
      for (int64_t g = 0; g < hd / kKvQ8Group; ++g) {
        const int64_t at_a = h * a.scale_head_stride(layer) + g * a.key_dim_stride();
        const int64_t at_b = h * b.scale_head_stride(layer) + g * b.key_dim_stride();
        EXPECT_EQ(a.key_scales_at(layer, block_a, offset)[at_a], b.key_scales_at(layer, block_b, offset)[at_b]);
        EXPECT_EQ(a.value_scales_at(layer, block_a, offset)[at_a], b.value_scales_at(layer, block_b, offset)[at_b]);
      }
    }
  }
}

TEST(PagedKvStoreTransfer, BlockBytesRoundTripThroughEveryAccessor) {
  constexpr int kBlocks = 5, kBlockSize = 4;
  for (KvCacheType type : {KvCacheType::kF16, KvCacheType::kBF16, KvCacheType::kQ8_0, KvCacheType::kQ4_0}) {
    SCOPED_TRACE(kv_cache_type_name(type));
    Result<PagedKvStore> from = PagedKvStore::create(config(), kBlocks, kBlockSize, type);
    Result<PagedKvStore> to = PagedKvStore::create(config(), kBlocks, kBlockSize, type);
    ASSERT_TRUE(from.is_ok() && to.is_ok());
    // A block's bytes are those of its positions over all layers.
    const int64_t bytes = from->block_transfer_bytes();
    EXPECT_EQ(bytes, kv_bytes_per_token(config(), type) * kBlockSize);
    // Fill every block of `from` with a pattern (through the copy-in, which
    // writes exactly the block's regions), then hand block 3 to block 1.
    std::vector<uint8_t> pattern(static_cast<size_t>(bytes));
    for (int b = 0; b < kBlocks; ++b) {
      for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 31 + b * 7 + 1);
      ASSERT_TRUE(from->copy_block_in(b, kNoKvBlock, pattern.data()).is_ok());
    }
    std::vector<uint8_t> out(static_cast<size_t>(bytes));
    ASSERT_TRUE(from->copy_block_out(3, kNoKvBlock, out.data()).is_ok());
    ASSERT_TRUE(to->copy_block_in(1, kNoKvBlock, out.data()).is_ok());
    for (int layer = 0; layer < 2; ++layer)
      for (int offset = 0; offset < kBlockSize; ++offset) expect_same_position(*from, *to, layer, 3, 1, offset);
    // Every other block of `to` is still all zeros.
    const std::vector<uint8_t> zeros(static_cast<size_t>(bytes), 0);
    for (int b : {0, 2, 3, 4}) {
      ASSERT_TRUE(to->copy_block_out(b, kNoKvBlock, out.data()).is_ok());
      EXPECT_EQ(out, zeros) << "block " << b;
    }
    // And what block 3 of `from` holds is what went in.
    ASSERT_TRUE(from->copy_block_out(3, kNoKvBlock, out.data()).is_ok());
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 31 + 3 * 7 + 1);
    EXPECT_EQ(out, pattern);
  }
}

// A store with a window group: window layers' blocks have their own ids
// (and count), every (layer, head, block) region is distinct, and a
// transfer block carries the full layers' block and the window layers'
// block of the same positions; a missing window block reads as zeros and
// is skipped on the way in.
TEST(PagedKvStoreWindowGroup, WindowLayersHaveTheirOwnBlocks) {
  ModelConfig c = config();
  c.n_layer = 4;
  c.sliding_window = 8;
  c.window_period = 2;  // layers 0 and 2 window, 1 and 3 full
  constexpr int kBlocks = 6, kWindowBlocks = 3, kBlockSize = 4;
  for (KvCacheType type : {KvCacheType::kF16, KvCacheType::kQ8_0, KvCacheType::kQ4_0}) {
    SCOPED_TRACE(kv_cache_type_name(type));
    Result<PagedKvStore> split = PagedKvStore::create(c, kBlocks, kBlockSize, type, kWindowBlocks);
    Result<PagedKvStore> whole = PagedKvStore::create(c, kBlocks, kBlockSize, type);
    ASSERT_TRUE(split.is_ok() && whole.is_ok());
    EXPECT_EQ(split->window_blocks(), kWindowBlocks);
    EXPECT_EQ(whole->window_blocks(), 0);
    EXPECT_TRUE(split->in_window_group(0) && !split->in_window_group(1));
    EXPECT_FALSE(whole->in_window_group(0));
    EXPECT_EQ(split->num_blocks(0), kWindowBlocks);
    EXPECT_EQ(split->num_blocks(1), kBlocks);
    // Two window layers hold 3 blocks instead of 6.
    EXPECT_EQ(whole->bytes() - split->bytes(), static_cast<uint64_t>(kv_bytes_per_token(c, type) / c.n_layer *
                                                                     kBlockSize * 2 * (kBlocks - kWindowBlocks)));
    // Every region of every layer, head and block starts at a distinct key.
    std::vector<const void*> starts;
    for (int layer = 0; layer < c.n_layer; ++layer)
      for (int b = 0; b < split->num_blocks(layer); ++b)
        for (int h = 0; h < c.n_head_kv; ++h) {
          if (type == KvCacheType::kF16)
            starts.push_back(split->key_at(layer, b, 0) + h * split->head_stride(layer));
          else if (type == KvCacheType::kQ8_0)
            starts.push_back(split->key_codes_at(layer, b, 0) + h * split->head_stride(layer));
          else
            starts.push_back(split->key_q4_at(layer, b, 0) + h * split->head_stride(layer) / 2);
        }
    std::sort(starts.begin(), starts.end());
    EXPECT_EQ(std::adjacent_find(starts.begin(), starts.end()), starts.end());

    // Block 4 of the full layers with window block 2, into a store of the
    // same shape at blocks 1 and 0.
    const int64_t bytes = split->block_transfer_bytes();
    EXPECT_EQ(bytes, kv_bytes_per_token(c, type) * kBlockSize);
    std::vector<uint8_t> pattern(static_cast<size_t>(bytes));
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 13 + 5);
    ASSERT_TRUE(split->copy_block_in(4, 2, pattern.data()).is_ok());
    std::vector<uint8_t> out(static_cast<size_t>(bytes));
    ASSERT_TRUE(split->copy_block_out(4, 2, out.data()).is_ok());
    EXPECT_EQ(out, pattern);
    Result<PagedKvStore> to = PagedKvStore::create(c, kBlocks, kBlockSize, type, kWindowBlocks);
    ASSERT_TRUE(to.is_ok());
    ASSERT_TRUE(to->copy_block_in(1, 0, out.data()).is_ok());
    for (int offset = 0; offset < kBlockSize; ++offset) {
      expect_same_position(*split, *to, 1, 4, 1, offset);
      expect_same_position(*split, *to, 3, 4, 1, offset);
      expect_same_position(*split, *to, 0, 2, 0, offset);
      expect_same_position(*split, *to, 2, 2, 0, offset);
    }
    // Without its window block the window layers' bytes are zeros out...
    ASSERT_TRUE(split->copy_block_out(4, kNoKvBlock, out.data()).is_ok());
    const std::vector<uint8_t> zeros(static_cast<size_t>(bytes), 0);
    EXPECT_NE(out, pattern);
    EXPECT_NE(out, zeros);
    // ...and skipped in: the full layers' block 2 takes the bytes, every
    // window block keeps what it held.
    ASSERT_TRUE(to->copy_block_in(2, kNoKvBlock, pattern.data()).is_ok());
    for (int offset = 0; offset < kBlockSize; ++offset) expect_same_position(*split, *to, 1, 4, 2, offset);
    ASSERT_TRUE(to->copy_block_out(1, 0, out.data()).is_ok());
    EXPECT_EQ(out, pattern);
    ASSERT_TRUE(to->copy_block_out(2, 1, out.data()).is_ok());
    ASSERT_TRUE(split->copy_block_out(4, kNoKvBlock, pattern.data()).is_ok());
    EXPECT_EQ(out, pattern);  // window block 1 of `to` is still zeros
  }
}

}  // namespace
}  // namespace omnibus
