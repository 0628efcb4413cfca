#include "kv/block_hash.h"

#include <gtest/gtest.h>

#include <vector>

namespace omnibus {
namespace {

TEST(BlockHash, SameInputsSameHash) {
  const std::vector<std::int32_t> tokens = {17, 4093, 5, 0x7fffffff, -3, 88, 1};
  EXPECT_EQ(hash_block(root_block_hash(), tokens), hash_block(root_block_hash(), tokens));
}

TEST(BlockHash, ParentChangesHash) {
  const std::vector<std::int32_t> tokens = {17, 4093, 5, 9, 12, 88, 1};
  const BlockHash a = hash_block(root_block_hash(), {std::vector<std::int32_t>{3, 1, 4}});
  const BlockHash b = hash_block(root_block_hash(), {std::vector<std::int32_t>{3, 1, 5}});
  EXPECT_NE(hash_block(a, tokens), hash_block(b, tokens));
}

TEST(BlockHash, TokensChangeHash) {
  std::vector<std::int32_t> tokens = {17, 4093, 5, 9, 12, 88, 1};
  const BlockHash before = hash_block(root_block_hash(), tokens);
  tokens[6] = 2;
  EXPECT_NE(before, hash_block(root_block_hash(), tokens));
  // Order matters too.
  std::swap(tokens[0], tokens[1]);
  EXPECT_NE(before, hash_block(root_block_hash(), tokens));
}

TEST(BlockHash, SaltSeparatesChains) {
  const std::vector<std::int32_t> tokens = {101, 7, 33};
  EXPECT_NE(root_block_hash(0), root_block_hash(1));
  EXPECT_NE(hash_block(root_block_hash(0), tokens), hash_block(root_block_hash(42), tokens));
  EXPECT_EQ(hash_block(root_block_hash(42), tokens), hash_block(root_block_hash(42), tokens));
}

TEST(BlockHash, ChainDependsOnEveryEarlierBlock) {
  // Two three-block sequences that differ only in block 0: block 2 differs.
  const std::vector<std::int32_t> b0a = {1, 2}, b0b = {1, 3}, b1 = {9, 9}, b2 = {5, 6};
  BlockHash ha = root_block_hash(), hb = root_block_hash();
  for (const auto* blk : {&b0a, &b1, &b2}) ha = hash_block(ha, *blk);
  for (const auto* blk : {&b0b, &b1, &b2}) hb = hash_block(hb, *blk);
  EXPECT_NE(ha, hb);
}

}  // namespace
}  // namespace omnibus
