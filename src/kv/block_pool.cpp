#include "kv/block_pool.h"

#include <cassert>
#include <string>

namespace omnibus {

BlockPool::BlockPool(std::int32_t num_blocks) : blocks_(num_blocks > 0 ? num_blocks : 0) {
  for (BlockId id = 0; id < num_total(); ++id) push_back_free(id);
}

std::optional<std::vector<BlockId>> BlockPool::allocate(std::int32_t n) {
  if (n > num_free_) return std::nullopt;
  std::vector<BlockId> out;
  if (n <= 0) return out;
  out.reserve(n);
  ++tick_;
  for (std::int32_t i = 0; i < n; ++i) {
    const BlockId id = free_head_;
    unlink_free(id);
    drop_hash(id);  // the block is about to hold other tokens
    Block& b = blocks_[id];
    b.ref_count = 1;
    b.last_used = tick_;
    out.push_back(id);
  }
  return out;
}

void BlockPool::free(std::span<const BlockId> blocks) {
  ++tick_;
  for (BlockId id : blocks) {
    // Ids come from our own block tables; a bad one is a bug upstream.
    // Skipping it keeps the pool consistent in release builds.
    assert(is_valid(id) && blocks_[id].ref_count > 0);
    if (!is_valid(id) || blocks_[id].ref_count <= 0) continue;
    Block& b = blocks_[id];
    b.last_used = tick_;
    if (--b.ref_count == 0) push_back_free(id);
  }
}

void BlockPool::ref(BlockId block) {
  assert(is_valid(block));
  if (!is_valid(block)) return;
  Block& b = blocks_[block];
  if (b.in_free_list) unlink_free(block);
  ++b.ref_count;
  b.last_used = ++tick_;
}

void BlockPool::touch(BlockId block) {
  assert(is_valid(block));
  if (is_valid(block)) blocks_[block].last_used = ++tick_;
}

std::optional<BlockId> BlockPool::lookup(BlockHash hash) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

bool BlockPool::cache_full_block(BlockId block, BlockHash hash) {
  assert(is_valid(block) && blocks_[block].ref_count > 0);
  if (!is_valid(block) || blocks_[block].ref_count <= 0) return false;
  Block& b = blocks_[block];
  if (b.has_hash) return false;
  if (!by_hash_.emplace(hash, block).second) return false;
  b.has_hash = true;
  b.hash = hash;
  return true;
}

std::optional<BlockHash> BlockPool::block_hash(BlockId block) const {
  if (!is_valid(block) || !blocks_[block].has_hash) return std::nullopt;
  return blocks_[block].hash;
}

std::vector<BlockId> BlockPool::free_list() const {
  std::vector<BlockId> out;
  out.reserve(num_free_);
  for (BlockId id = free_head_; id != kNoBlock; id = blocks_[id].next) out.push_back(id);
  return out;
}

void BlockPool::push_back_free(BlockId block) {
  Block& b = blocks_[block];
  b.prev = free_tail_;
  b.next = kNoBlock;
  if (free_tail_ != kNoBlock) {
    blocks_[free_tail_].next = block;
  } else {
    free_head_ = block;
  }
  free_tail_ = block;
  b.in_free_list = true;
  ++num_free_;
}

void BlockPool::unlink_free(BlockId block) {
  Block& b = blocks_[block];
  if (b.prev != kNoBlock) {
    blocks_[b.prev].next = b.next;
  } else {
    free_head_ = b.next;
  }
  if (b.next != kNoBlock) {
    blocks_[b.next].prev = b.prev;
  } else {
    free_tail_ = b.prev;
  }
  b.prev = b.next = kNoBlock;
  b.in_free_list = false;
  --num_free_;
}

void BlockPool::drop_hash(BlockId block) {
  Block& b = blocks_[block];
  if (!b.has_hash) return;
  by_hash_.erase(b.hash);
  b.has_hash = false;
  b.hash = 0;
}

Status BlockPool::check_free_list() const {
  std::int32_t count = 0;
  BlockId prev = kNoBlock;
  for (BlockId id = free_head_; id != kNoBlock; id = blocks_[id].next) {
    if (!is_valid(id)) return Status::internal("free list holds bad id " + std::to_string(id));
    const Block& b = blocks_[id];
    if (!b.in_free_list || b.ref_count != 0)
      return Status::internal("block " + std::to_string(id) + " is in the free list but not free");
    if (b.prev != prev)
      return Status::internal("free list back link broken at " + std::to_string(id));
    if (++count > num_total()) return Status::internal("free list has a cycle");
    prev = id;
  }
  if (prev != free_tail_) return Status::internal("free list tail is wrong");
  if (count != num_free_)
    return Status::internal("free list has " + std::to_string(count) + " blocks, count says " +
                            std::to_string(num_free_));
  return Status::ok();
}

Status BlockPool::check_invariants() const {
  OMNIBUS_RETURN_IF_ERROR(check_free_list());
  std::int32_t free_blocks = 0, hashed = 0;
  for (BlockId id = 0; id < num_total(); ++id) {
    const Block& b = blocks_[id];
    const std::string name = "block " + std::to_string(id);
    if (b.ref_count < 0) return Status::internal(name + " has a negative ref count");
    if ((b.ref_count == 0) != b.in_free_list)
      return Status::internal(name + ": ref count " + std::to_string(b.ref_count) +
                              " disagrees with free-list membership");
    free_blocks += b.in_free_list ? 1 : 0;
    if (!b.has_hash) continue;
    ++hashed;
    auto it = by_hash_.find(b.hash);
    if (it == by_hash_.end() || it->second != id)
      return Status::internal(name + " holds a hash the map does not point back from");
  }
  if (free_blocks != num_free_) return Status::internal("free count is wrong");
  if (num_used() + num_free() != num_total()) return Status::internal("used + free != total");
  for (const auto& [hash, id] : by_hash_) {
    if (!is_valid(id) || !blocks_[id].has_hash || blocks_[id].hash != hash)
      return Status::internal("hash map points at block " + std::to_string(id) +
                              " which does not hold that hash");
  }
  if (hashed != num_cached()) return Status::internal("cached count is wrong");
  return Status::ok();
}

}  // namespace omnibus
