#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace omnibus {
namespace {

void expect_ok(const BlockPool& pool) {
  const Status st = pool.check_invariants();
  EXPECT_TRUE(st.is_ok()) << st.to_string();
}

TEST(BlockPool, StartsAllFree) {
  BlockPool pool(7);
  EXPECT_EQ(pool.num_total(), 7);
  EXPECT_EQ(pool.num_free(), 7);
  EXPECT_EQ(pool.num_used(), 0);
  EXPECT_EQ(pool.num_cached(), 0);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{0, 1, 2, 3, 4, 5, 6}));
  expect_ok(pool);
}

TEST(BlockPool, AllocateAndFreeTrackRefCounts) {
  BlockPool pool(7);
  auto a = pool.allocate(3);
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ(a->size(), 3u);
  EXPECT_EQ(std::set<BlockId>(a->begin(), a->end()).size(), 3u);
  for (BlockId b : *a) EXPECT_EQ(pool.ref_count(b), 1);
  EXPECT_EQ(pool.num_used(), 3);
  EXPECT_EQ(pool.num_free(), 4);
  pool.ref((*a)[1]);
  EXPECT_EQ(pool.ref_count((*a)[1]), 2);
  pool.free(*a);
  EXPECT_EQ(pool.ref_count((*a)[0]), 0);
  EXPECT_EQ(pool.ref_count((*a)[1]), 1);  // still held by the second ref
  EXPECT_EQ(pool.num_used(), 1);
  expect_ok(pool);
  const BlockId last[] = {(*a)[1]};
  pool.free(last);
  EXPECT_EQ(pool.num_free(), 7);
  expect_ok(pool);
}

TEST(BlockPool, AllocationIsAllOrNothing) {
  BlockPool pool(5);
  ASSERT_TRUE(pool.allocate(3).has_value());
  EXPECT_FALSE(pool.allocate(3).has_value());
  EXPECT_EQ(pool.num_free(), 2);  // the failed call took nothing
  auto rest = pool.allocate(2);
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(pool.num_free(), 0);
  EXPECT_FALSE(pool.allocate(1).has_value());
  EXPECT_TRUE(pool.allocate(0).has_value());
  expect_ok(pool);
}

TEST(BlockPool, FreedBlockKeepsHashUntilReallocated) {
  BlockPool pool(3);
  auto a = pool.allocate(1);
  ASSERT_TRUE(a);
  const BlockId b = (*a)[0];
  ASSERT_TRUE(pool.cache_full_block(b, 0xabcdef));
  pool.free(*a);
  EXPECT_EQ(pool.lookup(0xabcdef), b);
  EXPECT_EQ(pool.num_cached(), 1);
  // Taking it back through the cache removes it from the free list.
  pool.ref(b);
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_EQ(pool.ref_count(b), 1);
  const BlockId again[] = {b};
  pool.free(again);
  // Allocating every block evicts it: the hash goes.
  auto all = pool.allocate(3);
  ASSERT_TRUE(all);
  EXPECT_FALSE(pool.lookup(0xabcdef).has_value());
  EXPECT_FALSE(pool.block_hash(b).has_value());
  EXPECT_EQ(pool.num_cached(), 0);
  expect_ok(pool);
}

TEST(BlockPool, EvictsCachedBlocksInFreeOrder) {
  BlockPool pool(4);
  auto a = pool.allocate(4);
  ASSERT_TRUE(a);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(pool.cache_full_block((*a)[i], 1000 + i));
  // Free in the order 2, 0, 3, 1: that is the eviction order.
  for (int i : {2, 0, 3, 1}) {
    const BlockId one[] = {(*a)[i]};
    pool.free(one);
  }
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{(*a)[2], (*a)[0], (*a)[3], (*a)[1]}));
  auto first = pool.allocate(1);
  ASSERT_TRUE(first);
  EXPECT_EQ((*first)[0], (*a)[2]);
  EXPECT_FALSE(pool.lookup(1002).has_value());
  EXPECT_EQ(pool.lookup(1000), (*a)[0]);
  auto second = pool.allocate(1);
  ASSERT_TRUE(second);
  EXPECT_EQ((*second)[0], (*a)[0]);
  EXPECT_FALSE(pool.lookup(1000).has_value());
  EXPECT_TRUE(pool.lookup(1003).has_value());
  EXPECT_TRUE(pool.lookup(1001).has_value());
  expect_ok(pool);
}

TEST(BlockPool, RefOfFreeBlockRemovesItFromTheMiddle) {
  BlockPool pool(5);
  auto a = pool.allocate(5);
  ASSERT_TRUE(a);
  pool.free(*a);
  pool.ref((*a)[2]);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{(*a)[0], (*a)[1], (*a)[3], (*a)[4]}));
  pool.ref((*a)[0]);
  pool.ref((*a)[4]);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{(*a)[1], (*a)[3]}));
  expect_ok(pool);
}

TEST(BlockPool, DuplicateHashIsNotCachedTwice) {
  BlockPool pool(3);
  auto a = pool.allocate(2);
  ASSERT_TRUE(a);
  EXPECT_TRUE(pool.cache_full_block((*a)[0], 77));
  EXPECT_FALSE(pool.cache_full_block((*a)[1], 77));  // another block has it
  EXPECT_FALSE(pool.cache_full_block((*a)[0], 78));  // this block has one
  EXPECT_EQ(pool.lookup(77), (*a)[0]);
  EXPECT_EQ(pool.num_cached(), 1);
  expect_ok(pool);
}

TEST(BlockPool, LastUsedAdvances) {
  BlockPool pool(2);
  auto a = pool.allocate(2);
  ASSERT_TRUE(a);
  const std::uint64_t t0 = pool.last_used((*a)[0]);
  pool.touch((*a)[0]);
  EXPECT_GT(pool.last_used((*a)[0]), t0);
  EXPECT_EQ(pool.last_used((*a)[1]), t0);
}

TEST(BlockPool, RandomOperationsKeepInvariants) {
  std::mt19937 rng(12345);
  BlockPool pool(33);
  std::vector<std::vector<BlockId>> holders;  // each a bag of references
  std::uint64_t next_hash = 1;
  for (int step = 0; step < 10000; ++step) {
    const int op = static_cast<int>(rng() % 5);
    if (op == 0) {
      const int n = static_cast<int>(rng() % 9);
      const bool room = n <= pool.num_free();
      auto got = pool.allocate(n);
      ASSERT_EQ(got.has_value(), room);
      if (got) holders.push_back(*got);
    } else if (op == 1 && !holders.empty()) {
      const size_t i = rng() % holders.size();
      pool.free(holders[i]);
      holders.erase(holders.begin() + static_cast<long>(i));
    } else if (op == 2 && !holders.empty() && !holders.back().empty()) {
      const BlockId b = holders.back()[rng() % holders.back().size()];
      // Small hash range so duplicates happen and must be refused.
      pool.cache_full_block(b, next_hash++ % 50);
    } else if (op == 3) {
      const auto found = pool.lookup(rng() % 50);
      if (found) {
        pool.ref(*found);
        holders.push_back({*found});
      }
    } else if (op == 4 && step % 97 == 0) {
      for (auto& h : holders) pool.free(h);
      holders.clear();
    }
    if (step % 50 == 0) {
      const Status st = pool.check_invariants();
      ASSERT_TRUE(st.is_ok()) << "step " << step << ": " << st.to_string();
    }
  }
  for (auto& h : holders) pool.free(h);
  EXPECT_EQ(pool.num_free(), 33);
  expect_ok(pool);
}

}  // namespace
}  // namespace omnibus
