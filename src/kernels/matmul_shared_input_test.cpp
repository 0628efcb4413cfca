// matmul_shared_input (q/k/v and gate/up in one job) must give exactly what
// separate matmul calls give, for every dtype and thread count, whether the
// matrices share one quantized x (same activation format, at most one code
// bias) or fall back to separate calls; and so must matmul_share, each
// thread's part of the same products.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/matmul.h"
#include "kernels/matmul_test_util.h"

namespace omnibus {
namespace {

using testing_util::random_floats;
using testing_util::random_weights;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void check(DType first, DType second, int64_t cols) {
  const int64_t n_x = 5;
  // Row counts that are not multiples of the 16-row unit, so thread shares
  // cut across the boundary between matrices.
  const auto a = random_weights(first, 37, cols, 1), b = random_weights(second, 21, cols, 2),
             c = random_weights(first, 50, cols, 3);
  const auto x = random_floats(n_x * cols, 4);
  std::vector<float> ya(n_x * 37), yb(n_x * 21), yc(n_x * 50);
  matmul(a.view, x.data(), n_x, ya.data(), nullptr);
  matmul(b.view, x.data(), n_x, yb.data(), nullptr);
  matmul(c.view, x.data(), n_x, yc.data(), nullptr);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> ga(ya.size(), -1.0f), gb(yb.size(), -1.0f), gc(yc.size(), -1.0f);
    const MatmulTarget targets[] = {{&a.view, ga.data()}, {&b.view, gb.data()}, {&c.view, gc.data()}};
    matmul_shared_input(targets, x.data(), n_x, &pool);
    EXPECT_TRUE(same_bits(ya, ga)) << dtype_name(first) << " " << threads << " threads";
    EXPECT_TRUE(same_bits(yb, gb)) << dtype_name(second) << " " << threads << " threads";
    EXPECT_TRUE(same_bits(yc, gc)) << dtype_name(first) << " " << threads << " threads";
  }
  // matmul_share: every thread's part, run here one after another, makes
  // the same outputs, under either split.
  for (int threads : {1, 2, 3, 4}) {
    for (ShareSplit split : {ShareSplit::kAcrossTargets, ShareSplit::kEachTarget}) {
      std::vector<float> ga(ya.size(), -1.0f), gb(yb.size(), -1.0f), gc(yc.size(), -1.0f);
      const MatmulTarget targets[] = {{&a.view, ga.data()}, {&b.view, gb.data()}, {&c.view, gc.data()}};
      MatmulScratch scratch;
      for (int t = 0; t < threads; ++t) matmul_share(kernels(), targets, x.data(), n_x, t, threads, split, &scratch);
      const char* how = split == ShareSplit::kAcrossTargets ? " across targets" : " each target";
      EXPECT_TRUE(same_bits(ya, ga)) << "share " << dtype_name(first) << " " << threads << how;
      EXPECT_TRUE(same_bits(yb, gb)) << "share " << dtype_name(second) << " " << threads << how;
      EXPECT_TRUE(same_bits(yc, gc)) << "share " << dtype_name(first) << " " << threads << how;
    }
  }
}

// kEachTarget's rows: whole 16-row units, contiguous, covering every row.
TEST(MatmulSharedInputTest, ShareRowsCoverEveryRowInWholeUnits) {
  for (int64_t rows : {1, 16, 37, 576, 1536}) {
    for (int threads : {1, 2, 3, 4}) {
      int64_t next = 0;
      for (int t = 0; t < threads; ++t) {
        const auto [begin, end] = matmul_share_rows(rows, t, threads);
        EXPECT_EQ(begin, next) << rows << " rows, thread " << t << " of " << threads;
        EXPECT_EQ(begin % 16, 0);
        EXPECT_LE(begin, end);
        next = end;
      }
      EXPECT_EQ(next, rows);
    }
  }
}

TEST(MatmulSharedInputTest, MatchesSeparateCallsBitForBit) {
  for (DType t : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_1})
    check(t, t, 96);
  for (DType t : {DType::kQ4_K, DType::kQ6_K}) check(t, t, 256);
}

TEST(MatmulSharedInputTest, MixedDtypesMatchSeparateCalls) {
  check(DType::kQ4_1, DType::kQ8_0, 96);  // one format, no bias: shared
  check(DType::kQ5_0, DType::kQ8_0, 96);  // Gemma 3's q/k and v: shared, x quantized for Q5_0's bias
  check(DType::kQ8_0, DType::kQ5_0, 96);  // the biased type second
  check(DType::kQ4_0, DType::kQ5_0, 96);  // two different biases: separate calls
  check(DType::kQ4_1, DType::kF32, 96);   // int8 and float activations: separate calls
  check(DType::kQ4_K, DType::kQ6_K, 256);
}

}  // namespace
}  // namespace omnibus
