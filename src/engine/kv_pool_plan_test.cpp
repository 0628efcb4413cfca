// plan_kv_pools: one pool without a window group, the window layers' pool
// sized by the sequences and the step (capped at half a budget, dropped
// when too small to carry one sequence), and exact sizing for a context.
#include "engine/kv_pool_plan.h"

#include <gtest/gtest.h>

namespace omnibus {
namespace {

// Gemma 3 270M's K/V shape: 18 layers, five window layers in six, one KV
// head of 256; 1,024 bytes a layer and position in f16.
ModelConfig gemma_like(int window = 512) {
  ModelConfig c;
  c.n_layer = 18;
  c.n_head = 4;
  c.n_head_kv = 1;
  c.head_dim = 256;
  c.sliding_window = window;
  c.window_period = 6;
  return c;
}

KvPoolRequest request(int64_t budget_mib, bool window_group) {
  KvPoolRequest r;
  r.budget_bytes = budget_mib << 20;
  r.block_size = 16;
  r.window_group = window_group;
  r.max_seqs = 64;
  r.max_batched_tokens = 2048;
  return r;
}

TEST(KvPoolPlan, OnePoolWithoutAWindowGroup) {
  Result<KvPoolPlan> p = plan_kv_pools(gemma_like(), request(512, false));
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->window_blocks, 0);
  EXPECT_EQ(p->block_bytes, 18 * 1024 * 16);
  EXPECT_EQ(p->num_blocks, (int64_t{512} << 20) / (18 * 1024 * 16));
}

TEST(KvPoolPlan, WindowPoolForEverySequenceCappedAtHalfTheBudget) {
  // 64 x (32 + 2) + 128 = 2,304 window blocks of 15 layers (240 KiB each)
  // would be 540 MiB: at 2 GiB all of them, at 512 MiB half the budget.
  Result<KvPoolPlan> big = plan_kv_pools(gemma_like(), request(2048, true));
  ASSERT_TRUE(big.is_ok());
  EXPECT_EQ(big->window_blocks, 64 * 34 + 128);
  EXPECT_EQ(big->window_block_bytes, 15 * 1024 * 16);
  EXPECT_EQ(big->block_bytes, 3 * 1024 * 16);
  EXPECT_LE(big->bytes(), int64_t{2048} << 20);
  Result<KvPoolPlan> half = plan_kv_pools(gemma_like(), request(512, true));
  ASSERT_TRUE(half.is_ok());
  EXPECT_EQ(half->window_blocks, (int64_t{256} << 20) / (15 * 1024 * 16));
  EXPECT_EQ(half->num_blocks,
            ((int64_t{512} << 20) - half->window_blocks * half->window_block_bytes) / (3 * 1024 * 16));
  // Too small for one sequence's largest step (34 + 128 blocks): one pool.
  Result<KvPoolPlan> small = plan_kv_pools(gemma_like(), request(64, true));
  ASSERT_TRUE(small.is_ok());
  EXPECT_EQ(small->window_blocks, 0);
  EXPECT_EQ(small->block_bytes, 18 * 1024 * 16);
}

TEST(KvPoolPlan, ExactSizingForOneContext) {
  KvPoolRequest r = request(0, true);
  r.context_tokens = 32768;
  r.max_seqs = 1;
  r.max_batched_tokens = 512;
  Result<KvPoolPlan> p = plan_kv_pools(gemma_like(), r);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->num_blocks, 2048);
  EXPECT_EQ(p->window_blocks, 34 + 32);
  // 96 MiB of full layers and 15.5 MiB of windows, against 576 MiB.
  EXPECT_EQ(p->bytes(), 2048 * 3 * 1024 * 16 + 66 * 15 * 1024 * 16);
  r.window_group = false;
  EXPECT_EQ(plan_kv_pools(gemma_like(), r)->bytes(), int64_t{32768} * 18 * 1024);
}

TEST(KvPoolPlan, EveryLayerAWindowLayerOrNoneKeepsOnePool) {
  ModelConfig all = gemma_like();
  all.n_layer = 5;  // layers 0-4 of a period of 6: all window layers
  Result<KvPoolPlan> p = plan_kv_pools(all, request(512, true));
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->window_blocks, 0);
  ModelConfig none = gemma_like();
  none.window_period = 1;  // every layer full
  p = plan_kv_pools(none, request(512, true));
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->window_blocks, 0);
}

TEST(KvPoolPlan, ABudgetWithoutABlockIsAnError) {
  KvPoolRequest r = request(0, false);
  r.budget_bytes = 1000;
  Result<KvPoolPlan> p = plan_kv_pools(gemma_like(), r);
  ASSERT_FALSE(p.is_ok());
  EXPECT_NE(p.status().message().find("raise --kv-cache-mib"), std::string::npos);
}

}  // namespace
}  // namespace omnibus
