// KvManager's window group (sliding-window layers' blocks): released as the
// window moves on, bounded per sequence, and matched from the prefix cache
// only with the window blocks the next row reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <vector>

#include "kv/kv_manager.h"
#include "kv/kv_test_util.h"

namespace omnibus {
namespace {

constexpr std::int32_t kBlock = 4;
constexpr std::int32_t kWindow = 8;

KvManager make(std::int32_t blocks, std::int32_t window_blocks, bool caching = true) {
  KvManagerOptions options;
  options.num_blocks = blocks;
  options.block_size = kBlock;
  options.enable_prefix_caching = caching;
  options.window = kWindow;
  options.window_blocks = window_blocks;
  auto m = KvManager::create(options);
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  return std::move(m).value();
}

using kv_testing::expect_ok;
using kv_testing::tokens;

std::int64_t live(std::span<const BlockId> table) {
  return std::count_if(table.begin(), table.end(), [](BlockId b) { return b != kNoBlock; });
}

// Whether every window block a row at `pos` sees is held (`pos` itself
// too, unless only what it reads of earlier positions is asked for).
bool holds_window_of(std::span<const BlockId> window_table, std::int64_t pos, bool own = true) {
  for (std::int64_t p = std::max<std::int64_t>(0, pos - kWindow + 1); p < pos + (own ? 1 : 0); ++p)
    if (p / kBlock >= static_cast<std::int64_t>(window_table.size()) || window_table[p / kBlock] == kNoBlock)
      return false;
  return true;
}

TEST(KvManagerWindow, RejectsHalfAGroup) {
  KvManagerOptions options{8, kBlock, true};
  options.window = kWindow;
  EXPECT_FALSE(KvManager::create(options).is_ok());
  options.window = 0;
  options.window_blocks = 4;
  EXPECT_FALSE(KvManager::create(options).is_ok());
  options.window = kWindow;
  EXPECT_TRUE(KvManager::create(options).is_ok());
}

// Decoding one token a step, or prefilling in chunks: each step's rows find
// their window's blocks, and a sequence never holds more than the window's
// blocks plus the step's.
TEST(KvManagerWindow, ReleasesBlocksTheWindowHasLeft) {
  for (bool caching : {true, false}) {
    for (int chunk : {1, 3, 8}) {
      SCOPED_TRACE(testing::Message() << "caching " << caching << ", chunk " << chunk);
      KvManager kv = make(64, 8, caching);
      ASSERT_TRUE(kv.add_sequence(1).is_ok());
      const std::vector<std::int32_t> t = tokens(100, 1);
      for (int n = 0; n < 100; n += chunk) {
        const int step = std::min(chunk, 100 - n);
        ASSERT_TRUE(kv.ensure_capacity(1, n + step));
        const std::span<const BlockId> window = kv.window_block_table(1);
        ASSERT_EQ(window.size(), kv.block_table(1).size());
        for (int p = n; p < n + step; ++p) EXPECT_TRUE(holds_window_of(window, p)) << p;
        EXPECT_LE(live(window), (kWindow + chunk - 1) / kBlock + 2);
        ASSERT_TRUE(kv.commit_tokens(1, std::span(t).subspan(n, step)).is_ok());
        expect_ok(kv);
        EXPECT_LE(live(kv.window_block_table(1)), kWindow / kBlock + 1);
      }
      EXPECT_EQ(kv.block_table(1).size(), 25u);
      EXPECT_EQ(kv.stats().window_blocks_used, live(kv.window_block_table(1)));
      kv.free_sequence(1);
      expect_ok(kv);
      EXPECT_EQ(kv.stats().blocks_used, 0);
      EXPECT_EQ(kv.stats().window_blocks_used, 0);
    }
  }
}

// A pool too small for the step's window blocks refuses it whole, taking
// nothing from either pool.
TEST(KvManagerWindow, NoRoomInTheWindowPoolTakesNothing) {
  KvManager kv = make(64, 3);
  ASSERT_TRUE(kv.add_sequence(1).is_ok());
  EXPECT_FALSE(kv.ensure_capacity(1, 16));  // 4 window blocks
  EXPECT_TRUE(kv.block_table(1).empty());
  EXPECT_EQ(kv.stats().blocks_used, 0);
  EXPECT_EQ(kv.stats().window_blocks_used, 0);
  EXPECT_TRUE(kv.ensure_capacity(1, 12));
  expect_ok(kv);
}

// A prompt's prefix comes back from the cache with the window blocks its
// next row reads and none before them; the matched sequence then runs on.
TEST(KvManagerWindow, PrefixMatchTakesTheLastWindow) {
  KvManager kv = make(64, 16);
  const std::vector<std::int32_t> prompt = tokens(41, 2);
  ASSERT_TRUE(kv.add_sequence(1).is_ok());
  ASSERT_TRUE(kv.ensure_capacity(1, 41));
  ASSERT_TRUE(kv.commit_tokens(1, prompt).is_ok());
  kv.free_sequence(1);
  expect_ok(kv);

  ASSERT_TRUE(kv.add_sequence(2).is_ok());
  EXPECT_EQ(kv.match_prefix(2, prompt), 40);
  expect_ok(kv);
  const std::span<const BlockId> window = kv.window_block_table(2);
  ASSERT_EQ(window.size(), 10u);
  EXPECT_TRUE(holds_window_of(window, 40, /*own=*/false));
  EXPECT_EQ(live(window), 2);  // positions 33..39: blocks 8 and 9
  ASSERT_TRUE(kv.ensure_capacity(2, 45));
  ASSERT_TRUE(kv.commit_tokens(2, tokens(5, 3)).is_ok());
  expect_ok(kv);
  kv.free_sequence(2);
  expect_ok(kv);
}

// When the window pool has evicted some of a prefix's window blocks, the
// match stops at the longest prefix whose last window is still cached.
TEST(KvManagerWindow, PrefixMatchStopsWhereTheWindowWasEvicted) {
  KvManager kv = make(64, 12);
  const std::vector<std::int32_t> prompt = tokens(61, 4);
  // Sequence 1 writes 60 tokens but window blocks only for its last window
  // (as a KV import does): blocks 13 and 14.
  ASSERT_TRUE(kv.add_sequence(1).is_ok());
  ASSERT_TRUE(kv.ensure_capacity(1, 60, 60 - kWindow + 1));
  EXPECT_EQ(live(kv.window_block_table(1)), 2);
  ASSERT_TRUE(kv.commit_tokens(1, std::span(prompt).first(60)).is_ok());
  kv.free_sequence(1);
  // Sequence 2 prefills the first 33 tokens: window blocks 0..7 cached
  // (block 8 holds one token, not full: never cached).
  ASSERT_TRUE(kv.add_sequence(2).is_ok());
  EXPECT_EQ(kv.match_prefix(2, std::span(prompt).first(33)), 0);  // no window blocks for any prefix yet
  ASSERT_TRUE(kv.ensure_capacity(2, 33));
  ASSERT_TRUE(kv.commit_tokens(2, std::span(prompt).first(33)).is_ok());
  kv.free_sequence(2);
  expect_ok(kv);
  // Three fresh window blocks: the never-used one, then sequence 1's
  // (freed before sequence 2's). The longest prefix whose window is still
  // cached is 32 tokens (its next row reads positions 25..31: blocks 6, 7).
  ASSERT_TRUE(kv.add_sequence(4).is_ok());
  ASSERT_TRUE(kv.ensure_capacity(4, 12, 0));
  ASSERT_TRUE(kv.add_sequence(5).is_ok());
  EXPECT_EQ(kv.match_prefix(5, prompt), 32);
  expect_ok(kv);
  EXPECT_TRUE(holds_window_of(kv.window_block_table(5), 32, /*own=*/false));
  EXPECT_EQ(live(kv.window_block_table(5)), 2);
}

// Random traffic over a small pool: shared prefixes, chunked prefills,
// decode, frees; invariants hold throughout and every step's rows find
// their window.
TEST(KvManagerWindow, RandomTrafficKeepsInvariants) {
  std::mt19937 rng(11);
  KvManager kv = make(80, 24);
  std::vector<std::pair<SeqId, std::vector<std::int32_t>>> running;
  SeqId next = 1;
  for (int step = 0; step < 2000; ++step) {
    if (running.size() < 3 && rng() % 4 == 0) {
      std::vector<std::int32_t> prompt = tokens(static_cast<int>(rng() % 30) + 1, static_cast<int>(rng() % 3));
      ASSERT_TRUE(kv.add_sequence(next).is_ok());
      kv.match_prefix(next, prompt);
      running.push_back({next++, std::move(prompt)});
    }
    if (running.empty()) continue;
    const std::size_t pick = rng() % running.size();
    const SeqId id = running[pick].first;
    const std::vector<std::int32_t>& prompt = running[pick].second;
    const std::int64_t have = kv.num_tokens(id);
    const std::int64_t n = static_cast<std::int64_t>(rng() % 6) + 1;
    if (have + n > 120 || rng() % 50 == 0 || !kv.ensure_capacity(id, have + n)) {
      kv.free_sequence(id);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(pick));
      expect_ok(kv);
      continue;
    }
    for (std::int64_t p = have; p < have + n; ++p) ASSERT_TRUE(holds_window_of(kv.window_block_table(id), p));
    std::vector<std::int32_t> next_tokens;
    for (std::int64_t p = have; p < have + n; ++p)
      next_tokens.push_back(p < static_cast<std::int64_t>(prompt.size()) ? prompt[p] : static_cast<std::int32_t>(p));
    ASSERT_TRUE(kv.commit_tokens(id, next_tokens).is_ok());
    expect_ok(kv);
  }
}

}  // namespace
}  // namespace omnibus
