// BlockPool: the bookkeeping of a fixed set of KV-cache blocks, sized once
// at start (DESIGN invariant 2: bounded memory). Blocks are integer ids
// 0..num_blocks-1 into a separate K/V array, never pointers.
//
// Each block has a reference count (how many sequences' block tables hold
// it) and, once full and registered, a content hash (kv/block_hash.h) under
// which the prefix cache can find it. Blocks with no references sit in a
// free list in eviction order: least recently freed at the head. A free
// block keeps its hash, so a later request with the same prefix can take it
// back (ref) instead of recomputing it; only when allocate() hands it out
// for new data is its hash dropped. So the free list doubles as the prefix
// cache's LRU, and every free block, cached or not, counts as available.
//
// Every operation is O(1) (the free list is doubly linked through block
// ids; the hash map is a hash table). Not thread-safe: the engine thread
// owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/block_hash.h"

namespace omnibus {

using BlockId = std::int32_t;
inline constexpr BlockId kNoBlock = -1;

class BlockPool {
 public:
  // All blocks start free and uncached; the free list starts in id order.
  explicit BlockPool(std::int32_t num_blocks);

  // n fresh blocks with one reference each, taken from the head of the free
  // list (evicting any cached hash they held); nullopt, taking nothing, if
  // fewer than n are free. n <= 0 gives an empty vector.
  std::optional<std::vector<BlockId>> allocate(std::int32_t n);

  // Drops one reference from each block, in order. A block whose count
  // reaches 0 goes to the tail of the free list, keeping its hash; so to
  // have a sequence's later blocks evicted first, pass them in reverse.
  void free(std::span<const BlockId> blocks);

  // Adds a reference. A free block (necessarily one found by lookup) leaves
  // the free list and is no longer evictable.
  void ref(BlockId block);

  // Marks the block as used now (last_used), without changing its count.
  void touch(BlockId block);

  // The block registered under `hash`, used or free; nullopt if none.
  std::optional<BlockId> lookup(BlockHash hash) const;

  // Registers a full, referenced block under `hash`. Returns false, leaving
  // the block uncached, if the block already has a hash or another block
  // already holds this one (two sequences computed the same block without
  // sharing it; the first stays the cached copy).
  bool cache_full_block(BlockId block, BlockHash hash);

  std::int32_t num_total() const { return static_cast<std::int32_t>(blocks_.size()); }
  std::int32_t num_free() const { return num_free_; }
  std::int32_t num_used() const { return num_total() - num_free_; }
  // Blocks holding a hash, used or free.
  std::int32_t num_cached() const { return static_cast<std::int32_t>(by_hash_.size()); }

  std::int32_t ref_count(BlockId block) const { return blocks_[block].ref_count; }
  std::optional<BlockHash> block_hash(BlockId block) const;
  // Tick of the last allocate/ref/touch/free of this block (a counter that
  // grows by one per such event, not a clock).
  std::uint64_t last_used(BlockId block) const { return blocks_[block].last_used; }
  bool is_valid(BlockId block) const { return block >= 0 && block < num_total(); }

  // The free list from head (next evicted) to tail. For tests and debugging.
  std::vector<BlockId> free_list() const;

  // Checks every internal invariant (counts, list links, hash map agrees
  // with blocks); an internal error naming the first broken one. O(n).
  Status check_invariants() const;

 private:
  struct Block {
    std::int32_t ref_count = 0;
    bool has_hash = false;
    bool in_free_list = false;
    BlockHash hash = 0;
    std::uint64_t last_used = 0;
    BlockId prev = kNoBlock;  // free-list links, meaningful while in it
    BlockId next = kNoBlock;
  };

  void push_back_free(BlockId block);
  void unlink_free(BlockId block);
  void drop_hash(BlockId block);
  Status check_free_list() const;

  std::vector<Block> blocks_;
  std::unordered_map<BlockHash, BlockId> by_hash_;
  BlockId free_head_ = kNoBlock;
  BlockId free_tail_ = kNoBlock;
  std::int32_t num_free_ = 0;
  std::uint64_t tick_ = 0;
};

}  // namespace omnibus
