// Batch invariance: y[r][o] is bit-identical however x rows are grouped, how
// many threads run, and how weight rows are split among them.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_internal.h"
#include "kernels/matmul_test_util.h"

namespace omnibus {
namespace {

using testing_util::random_floats;
using testing_util::random_weights;

constexpr int64_t kRows = 67;  // not a multiple of any tile
constexpr int64_t kXRows = 17;

int64_t cols_for(DType t) {
  switch (dtype_info(t)->block_size) {
    case 1: return 100;  // exercises the partial last chunk
    case 32: return 96;
    default: return 512;
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Computes x rows in consecutive groups of the given sizes (cycled).
std::vector<float> in_groups(const WeightMatrix& w, const std::vector<float>& x, const std::vector<int64_t>& sizes,
                             ThreadPool* pool) {
  std::vector<float> y(static_cast<size_t>(kXRows * w.rows), -1.0f);
  int64_t r = 0;
  for (size_t g = 0; r < kXRows; ++g) {
    const int64_t n = std::min(sizes[g % sizes.size()], kXRows - r);
    matmul(w, x.data() + r * w.cols, n, y.data() + r * w.rows, pool);
    r += n;
  }
  return y;
}

class Invariance : public ::testing::TestWithParam<DType> {};

TEST_P(Invariance, GroupingAndThreadsDoNotChangeBits) {
  const DType t = GetParam();
  const int64_t cols = cols_for(t);
  const auto w = random_weights(t, kRows, cols, 77);
  const auto x = random_floats(kXRows * cols, 78);
  const auto all = in_groups(w.view, x, {kXRows}, nullptr);
  EXPECT_TRUE(same_bits(all, in_groups(w.view, x, {1}, nullptr))) << "one row at a time";
  EXPECT_TRUE(same_bits(all, in_groups(w.view, x, {2}, nullptr))) << "pairs";
  EXPECT_TRUE(same_bits(all, in_groups(w.view, x, {3, 5, 1, 7, 2}, nullptr))) << "mixed groups";
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    EXPECT_TRUE(same_bits(all, in_groups(w.view, x, {kXRows}, &pool))) << threads << " threads";
    EXPECT_TRUE(same_bits(all, in_groups(w.view, x, {1}, &pool))) << threads << " threads, single rows";
    EXPECT_TRUE(same_bits(all, in_groups(w.view, x, {4, 2, 11}, &pool))) << threads << " threads, mixed";
  }
}

// Row ranges that cut through every tile size, computed directly by each path.
TEST_P(Invariance, ArbitraryRowSplitsDoNotChangeBits) {
  const DType t = GetParam();
  const int64_t cols = cols_for(t);
  const auto w = random_weights(t, kRows, cols, 79);
  const auto x = random_floats(kXRows * cols, 80);
  using testing_util::run_rows;
  for (const KernelTable* table : testing_util::runnable_tables()) {
    const KernelTable& fn = *table;
    for (int64_t n_x : {int64_t{1}, int64_t{2}, kXRows}) {
      std::vector<float> whole(static_cast<size_t>(n_x * kRows)), split(whole.size(), -1.0f);
      run_rows(fn, w.view, x.data(), n_x, whole.data(), 0, kRows);
      const int64_t cuts[] = {0, 1, 6, 9, 22, 23, 50, 61, kRows};
      for (size_t c = 0; c + 1 < std::size(cuts); ++c)
        run_rows(fn, w.view, x.data(), n_x, split.data(), cuts[c], cuts[c + 1]);
      EXPECT_TRUE(same_bits(whole, split)) << dtype_name(t) << " n_x " << n_x;
    }
    // And a single x row must match its row in a batch.
    std::vector<float> batch(static_cast<size_t>(kXRows * kRows)), one(static_cast<size_t>(kRows));
    run_rows(fn, w.view, x.data(), kXRows, batch.data(), 0, kRows);
    for (int64_t r = 0; r < kXRows; ++r) {
      run_rows(fn, w.view, x.data() + r * cols, 1, one.data(), 0, kRows);
      ASSERT_EQ(std::memcmp(one.data(), batch.data() + r * kRows, one.size() * sizeof(float)), 0)
          << dtype_name(t) << " x row " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, Invariance,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                                           DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K,
                                           DType::kQ6_K, DType::kQ3_K, DType::kIQ4_XS, DType::kIQ4_NL, DType::kMXFP4,
                                           DType::kQ2_K),
                         [](const auto& info) { return dtype_name(info.param); });

}  // namespace
}  // namespace omnibus
