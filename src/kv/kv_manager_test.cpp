#include "kv/kv_manager.h"
#include "kv/kv_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

namespace omnibus {
namespace {

constexpr std::int32_t kBlock = 4;

KvManager make(std::int32_t blocks, bool caching = true, std::int32_t block_size = kBlock) {
  auto m = KvManager::create({blocks, block_size, caching});
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  return std::move(m).value();
}

using kv_testing::expect_ok;
using kv_testing::tokens;

// Runs a whole prompt through: match, allocate, commit. Returns cached tokens.
std::int64_t prefill(KvManager& kv, SeqId id, const std::vector<std::int32_t>& prompt,
                     std::uint64_t salt = 0) {
  EXPECT_TRUE(kv.add_sequence(id, salt).is_ok());
  const std::int64_t hit = kv.match_prefix(id, prompt);
  EXPECT_TRUE(kv.ensure_capacity(id, static_cast<std::int64_t>(prompt.size())));
  EXPECT_TRUE(kv.commit_tokens(id, std::span(prompt).subspan(hit)).is_ok());
  return hit;
}

TEST(KvManager, RejectsBadOptions) {
  EXPECT_FALSE(KvManager::create({0, 16, true}).is_ok());
  EXPECT_FALSE(KvManager::create({8, 0, true}).is_ok());
  EXPECT_TRUE(KvManager::create({1, 1, false}).is_ok());
}

TEST(KvManager, CapacityAndBlockTable) {
  KvManager kv = make(7);
  ASSERT_TRUE(kv.add_sequence(1).is_ok());
  EXPECT_FALSE(kv.add_sequence(1).is_ok());
  EXPECT_EQ(kv.blocks_needed(1, 9), 3);
  ASSERT_TRUE(kv.ensure_capacity(1, 9));
  EXPECT_EQ(kv.block_table(1).size(), 3u);
  ASSERT_TRUE(kv.ensure_capacity(1, 12));  // still 3 blocks
  EXPECT_EQ(kv.block_table(1).size(), 3u);
  EXPECT_EQ(kv.stats().blocks_used, 3);
  const auto prompt = tokens(9, 1);
  ASSERT_TRUE(kv.commit_tokens(1, prompt).is_ok());
  EXPECT_EQ(kv.num_tokens(1), 9);
  // 13 tokens would need a fourth block that is not there yet.
  EXPECT_FALSE(kv.commit_tokens(1, tokens(4, 2)).is_ok());
  EXPECT_EQ(kv.num_tokens(1), 9);
  expect_ok(kv);
  kv.free_sequence(1);
  EXPECT_EQ(kv.stats().blocks_used, 0);
  EXPECT_TRUE(kv.block_table(1).empty());
  expect_ok(kv);
}

TEST(KvManager, NoRoomTakesNothing) {
  KvManager kv = make(5);
  ASSERT_TRUE(kv.add_sequence(1).is_ok());
  ASSERT_TRUE(kv.add_sequence(2).is_ok());
  ASSERT_TRUE(kv.ensure_capacity(1, 13));  // 4 blocks
  EXPECT_FALSE(kv.ensure_capacity(2, 5));  // needs 2, 1 free
  EXPECT_TRUE(kv.block_table(2).empty());
  EXPECT_EQ(kv.num_free_blocks(), 1);
  EXPECT_FALSE(kv.ensure_capacity(99, 1));  // unknown sequence
  EXPECT_TRUE(kv.can_ever_fit(20));
  EXPECT_FALSE(kv.can_ever_fit(21));
  expect_ok(kv);
}

TEST(KvManager, PrefixHitAfterSequenceFinished) {
  KvManager kv = make(16);
  const auto prompt = tokens(11, 1);  // 2 full blocks + 3 tokens
  EXPECT_EQ(prefill(kv, 1, prompt), 0);
  EXPECT_EQ(kv.stats().blocks_cached, 2);  // the partial third block is not cached
  const std::vector<BlockId> first(kv.block_table(1).begin(), kv.block_table(1).end());
  kv.free_sequence(1);
  EXPECT_EQ(kv.stats().blocks_used, 0);
  EXPECT_EQ(kv.stats().blocks_cached, 2);

  EXPECT_EQ(prefill(kv, 2, prompt), 8);
  const auto table = kv.block_table(2);
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0], first[0]);
  EXPECT_EQ(table[1], first[1]);
  EXPECT_EQ(kv.stats().prefix_queried_tokens, 22);
  EXPECT_EQ(kv.stats().prefix_hit_tokens, 8);
  expect_ok(kv);
}

TEST(KvManager, SharedPrefixBetweenLiveSequences) {
  KvManager kv = make(16);
  auto a = tokens(10, 1);
  auto b = a;
  b[9] = 7;  // same first 2 blocks, different tail
  b.push_back(8);
  prefill(kv, 1, a);
  EXPECT_EQ(prefill(kv, 2, b), 8);
  const BlockId shared0 = kv.block_table(1)[0], shared1 = kv.block_table(1)[1];
  EXPECT_EQ(kv.block_table(2)[0], shared0);
  EXPECT_EQ(kv.pool().ref_count(shared0), 2);
  EXPECT_EQ(kv.pool().ref_count(shared1), 2);
  EXPECT_NE(kv.block_table(2)[2], kv.block_table(1)[2]);
  EXPECT_EQ(kv.stats().blocks_used, 4);
  expect_ok(kv);
  kv.free_sequence(1);
  EXPECT_EQ(kv.pool().ref_count(shared0), 1);
  EXPECT_EQ(kv.stats().blocks_used, 3);  // shared blocks still held by 2
  expect_ok(kv);
  kv.free_sequence(2);
  EXPECT_EQ(kv.pool().ref_count(shared0), 0);
  EXPECT_EQ(kv.stats().blocks_used, 0);
  expect_ok(kv);
}

TEST(KvManager, PartialBlockNeverCachedUntilFull) {
  KvManager kv = make(8);
  ASSERT_TRUE(kv.add_sequence(1).is_ok());
  ASSERT_TRUE(kv.ensure_capacity(1, 7));
  const auto t = tokens(7, 3);
  ASSERT_TRUE(kv.commit_tokens(1, std::span(t).first(3)).is_ok());
  EXPECT_EQ(kv.stats().blocks_cached, 0);
  ASSERT_TRUE(kv.commit_tokens(1, std::span(t).subspan(3)).is_ok());  // fills block 0
  EXPECT_EQ(kv.stats().blocks_cached, 1);
  EXPECT_TRUE(kv.pool().block_hash(kv.block_table(1)[0]).has_value());
  EXPECT_FALSE(kv.pool().block_hash(kv.block_table(1)[1]).has_value());
  kv.free_sequence(1);
  // A prompt that agrees on the 3 tokens of the partial block only hits block 0.
  auto longer = t;
  longer.push_back(5);
  longer.push_back(6);
  ASSERT_TRUE(kv.add_sequence(2).is_ok());
  EXPECT_EQ(kv.match_prefix(2, longer), 4);
  expect_ok(kv);
}

TEST(KvManager, CommitsAcrossStepsHashLikeOnePrefill) {
  // Decode-style commits one token at a time must cache the same blocks as
  // a one-shot prefill of the same tokens.
  KvManager kv = make(16);
  const auto t = tokens(13, 4);
  ASSERT_TRUE(kv.add_sequence(1).is_ok());
  for (int i = 0; i < 13; ++i) {
    ASSERT_TRUE(kv.ensure_capacity(1, i + 1));
    ASSERT_TRUE(kv.commit_tokens(1, std::span(t).subspan(i, 1)).is_ok());
  }
  kv.free_sequence(1);
  ASSERT_TRUE(kv.add_sequence(2).is_ok());
  EXPECT_EQ(kv.match_prefix(2, t), 12);
  expect_ok(kv);
}

TEST(KvManager, MatchNeverReturnsWholePrompt) {
  KvManager kv = make(16);
  const auto prompt = tokens(12, 5);  // exactly 3 blocks
  prefill(kv, 1, prompt);
  kv.free_sequence(1);
  ASSERT_TRUE(kv.add_sequence(2).is_ok());
  EXPECT_EQ(kv.match_prefix(2, prompt), 8);  // last block recomputed
  kv.free_sequence(2);
  ASSERT_TRUE(kv.add_sequence(3).is_ok());
  EXPECT_EQ(kv.match_prefix(3, std::span(prompt).first(1)), 0);
  ASSERT_TRUE(kv.add_sequence(4).is_ok());
  EXPECT_EQ(kv.match_prefix(4, std::span(prompt).first(5)), 4);
  expect_ok(kv);
}

TEST(KvManager, MatchOnlyOnFreshSequence) {
  KvManager kv = make(16);
  const auto prompt = tokens(9, 6);
  prefill(kv, 1, prompt);
  kv.free_sequence(1);
  ASSERT_TRUE(kv.add_sequence(2).is_ok());
  ASSERT_TRUE(kv.ensure_capacity(2, 1));
  EXPECT_EQ(kv.match_prefix(2, prompt), 0);  // already has a block
  EXPECT_EQ(kv.match_prefix(77, prompt), 0);  // unknown
  expect_ok(kv);
}

TEST(KvManager, CachingDisabledNeverHits) {
  KvManager kv = make(16, /*caching=*/false);
  const auto prompt = tokens(11, 7);
  EXPECT_EQ(prefill(kv, 1, prompt), 0);
  EXPECT_EQ(kv.stats().blocks_cached, 0);
  kv.free_sequence(1);
  EXPECT_EQ(prefill(kv, 2, prompt), 0);
  EXPECT_EQ(kv.stats().blocks_cached, 0);
  EXPECT_EQ(kv.stats().prefix_hit_tokens, 0);
  expect_ok(kv);
}

TEST(KvManager, SaltSeparatesCaches) {
  KvManager kv = make(16);
  const auto prompt = tokens(9, 8);
  prefill(kv, 1, prompt, /*salt=*/11);
  kv.free_sequence(1);
  EXPECT_EQ(prefill(kv, 2, prompt, /*salt=*/12), 0);
  kv.free_sequence(2);
  EXPECT_EQ(prefill(kv, 3, prompt, /*salt=*/11), 8);
  expect_ok(kv);
}

TEST(KvManager, OlderFinishedPrefixIsEvictedFirst) {
  // 6 blocks. A (2 full blocks) finishes, then B (2 full blocks) finishes.
  // The free list is now: 2 never-used blocks, A's tail, A's head, B's
  // tail, B's head. A new sequence needing 3 blocks takes the unused two
  // and A's tail, so A keeps its head block and B stays whole.
  KvManager kv = make(6);
  prefill(kv, 1, tokens(8, 1));
  prefill(kv, 2, tokens(8, 2));
  kv.free_sequence(1);
  kv.free_sequence(2);
  ASSERT_TRUE(kv.add_sequence(3).is_ok());
  ASSERT_TRUE(kv.ensure_capacity(3, 12));
  EXPECT_EQ(kv.stats().blocks_cached, 3);  // A lost its tail block, B intact
  kv.free_sequence(3);
  ASSERT_TRUE(kv.add_sequence(4).is_ok());
  EXPECT_EQ(kv.match_prefix(4, tokens(9, 2)), 8);  // B fully cached
  ASSERT_TRUE(kv.add_sequence(5).is_ok());
  EXPECT_EQ(kv.match_prefix(5, tokens(9, 1)), 4);  // A's head block survived
  expect_ok(kv);
}

// Random continuous-batching traffic over a small pool: prompts drawn from a
// few shared prefixes, chunked prefill, decode, finishes and failed admits.
TEST(KvManager, RandomTrafficKeepsInvariants) {
  std::mt19937 rng(2024);
  constexpr std::int32_t kBlocks = 23;
  KvManager kv = make(kBlocks, true, 5);
  struct Live {
    std::vector<std::int32_t> tokens;  // prompt, grown by decode
  };
  std::map<SeqId, Live> live;
  SeqId next_id = 1;
  std::int64_t hits = 0;
  int refused = 0;
  for (int step = 0; step < 10000; ++step) {
    const int op = static_cast<int>(rng() % 10);  // 0-2 admit, 3-8 run, 9 finish
    if (op <= 2 && live.size() < 8) {
      const SeqId id = next_id++;
      Live s;
      const int prefix = static_cast<int>(rng() % 3);
      s.tokens = tokens(1 + static_cast<int>(rng() % 23), prefix);
      for (auto& t : s.tokens) t += (rng() % 6 == 0) ? 1 : 0;  // occasional divergence
      ASSERT_TRUE(kv.add_sequence(id).is_ok());
      const std::int64_t hit = kv.match_prefix(id, s.tokens);
      ASSERT_LT(hit, static_cast<std::int64_t>(s.tokens.size()));
      ASSERT_EQ(hit % 5, 0);
      hits += hit;
      live[id] = std::move(s);
    } else if (op >= 3 && op <= 8 && !live.empty()) {
      // Advance one sequence by a chunk (prefill) or one token (decode).
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      Live& s = it->second;
      const std::int64_t done = kv.num_tokens(it->first);
      if (done >= static_cast<std::int64_t>(s.tokens.size()))
        s.tokens.push_back(static_cast<std::int32_t>(50 + rng() % 900));
      const std::int64_t chunk = std::min<std::int64_t>(
          1 + rng() % 7, static_cast<std::int64_t>(s.tokens.size()) - done);
      const std::int32_t free_before = kv.num_free_blocks();
      if (!kv.ensure_capacity(it->first, done + chunk)) {
        ASSERT_EQ(kv.num_free_blocks(), free_before);  // took nothing
        ++refused;
        continue;
      }
      ASSERT_TRUE(kv.commit_tokens(it->first, std::span(s.tokens).subspan(done, chunk)).is_ok());
    } else if (op == 9 && !live.empty()) {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      kv.free_sequence(it->first);
      live.erase(it);
    }
    if (step % 25 == 0) {
      const Status st = kv.check_invariants();
      ASSERT_TRUE(st.is_ok()) << "step " << step << ": " << st.to_string();
      ASSERT_EQ(kv.stats().blocks_used + kv.stats().blocks_free, kBlocks);
    }
  }
  // The traffic did exercise the cache and the pool did run out.
  EXPECT_GT(hits, 0);
  EXPECT_GT(refused, 0);
  EXPECT_EQ(kv.stats().prefix_hit_tokens, hits);
  for (auto& [id, s] : live) kv.free_sequence(id);
  EXPECT_EQ(kv.stats().blocks_used, 0);
  expect_ok(kv);
}

}  // namespace
}  // namespace omnibus
