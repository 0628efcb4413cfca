// The Walsh-Hadamard rotation of quantized KV caches (kernels/hadamard.h):
// llama.cpp's matrix (Sylvester's construction, scaled by 1/sqrt(n)), its
// own inverse, and llama.cpp's block sizes.
#include "kernels/hadamard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "kernels/kernel_table_test_util.h"

namespace omnibus {
namespace {

// H as llama.cpp builds it (ggml_gen_hadamard): h[0][0] = 1/sqrt(n), then
// each doubling [[H, H], [H, -H]].
std::vector<double> sylvester(int n) {
  std::vector<double> h(n * n);
  h[0] = 1.0 / std::sqrt(static_cast<double>(n));
  for (int s = 1; s < n; s *= 2)
    for (int i = 0; i < s; ++i)
      for (int j = 0; j < s; ++j) {
        const double v = h[i * n + j];
        h[(i + s) * n + j] = v;
        h[i * n + j + s] = v;
        h[(i + s) * n + j + s] = -v;
      }
  return h;
}

TEST(HadamardTest, MatchesTheMatrixAndUndoesItself) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  for (int n : {64, 128, 256}) {
    const auto h = sylvester(n);
    std::vector<float> x(3 * n);
    for (float& v : x) v = dist(rng);
    std::vector<float> y = x;
    hadamard_blocks(y.data(), 3, n);
    for (int b = 0; b < 3; ++b)
      for (int i = 0; i < n; ++i) {
        double want = 0;
        for (int j = 0; j < n; ++j) want += h[i * n + j] * x[b * n + j];
        ASSERT_NEAR(y[b * n + i], want, 1e-5) << "n " << n << " block " << b << " at " << i;
      }
    hadamard_blocks(y.data(), 3, n);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i], x[i], 1e-5) << "n " << n << " at " << i;
  }
}

// Every SIMD table's transform writes the scalar one's bits.
TEST(HadamardTest, EveryTableMatchesScalarBits) {
  const auto tables = testing_util::runnable_simd_tables();
  if (tables.empty()) GTEST_SKIP() << "this CPU runs no SIMD kernel table";
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-30.0f, 30.0f);
  for (int n : {8, 16, 64, 128, 256}) {
    std::vector<float> want(5 * n);
    for (float& v : want) v = dist(rng);
    const std::vector<float> input = want;
    ref::hadamard_blocks(want.data(), 5, n);
    for (const KernelTable* t : tables) {
      std::vector<float> got = input;
      t->hadamard_blocks(got.data(), 5, n);
      EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float))) << "n " << n << " " << t->name;
    }
  }
}

TEST(HadamardTest, BlockSizesFollowLlamaCpp) {
  EXPECT_EQ(64, hadamard_key_block(64));
  EXPECT_EQ(128, hadamard_key_block(128));
  EXPECT_EQ(64, hadamard_key_block(192));
  EXPECT_EQ(256, hadamard_key_block(256));
  EXPECT_EQ(0, hadamard_key_block(32));
  EXPECT_EQ(0, hadamard_key_block(80));
  EXPECT_EQ(64, hadamard_value_block(256));
  EXPECT_EQ(0, hadamard_value_block(96));
}

}  // namespace
}  // namespace omnibus
