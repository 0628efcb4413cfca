// Activation quantization: known values, and the AVX2 version writing the
// very bytes of the portable one (the int8 kernels rely on both agreeing).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/cpu_features.h"
#include "kernels/matmul_internal.h"
#include "kernels/matmul_test_util.h"

namespace omnibus {
namespace {

using matmul_detail::QuantizedX;

TEST(QuantizeX, KnownBlock) {
  // Largest magnitude 127 -> scale 1, so codes are x rounded half-to-even.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f, x[1] = 2.5f, x[2] = 3.5f, x[3] = -2.5f, x[4] = -0.4f, x[5] = 1.6f, x[6] = -127.0f;
  QuantizedX qx;
  matmul_detail::quantize_x(DType::kQ4_0, x.data(), 1, 32, &qx);
  ASSERT_EQ(qx.blocks, 1);
  EXPECT_EQ(qx.scale[0], 1.0f);
  const int8_t want[7] = {127, 2, 4, -2, 0, 2, -127};
  for (int k = 0; k < 7; ++k) EXPECT_EQ(qx.q[static_cast<size_t>(k)], want[k]) << k;
  // Q4_0 weights have code bias 8: lane 0 covers elements 0..3 (sum 131),
  // lane 1 elements 4..7 (sum -125).
  EXPECT_EQ(qx.bias_lanes[0], 8 * 131);
  EXPECT_EQ(qx.bias_lanes[1], 8 * -125);
  EXPECT_EQ(qx.scaled_sum[0], 6.0f);  // 127 + 2 + 4 - 2 + 0 + 2 - 127
  EXPECT_EQ(qx.bias_sum[0], 8 * 6);
  EXPECT_EQ(qx.block_sum[0], 6);
}

TEST(QuantizeX, ZeroBlockAndKLayout) {
  std::vector<float> x(512, 0.0f);
  for (int k = 256; k < 512; ++k) x[static_cast<size_t>(k)] = (k % 16 == 0) ? -1.0f : 0.5f;
  QuantizedX qx;
  matmul_detail::quantize_x(DType::kQ6_K, x.data(), 1, 512, &qx);
  ASSERT_EQ(qx.blocks, 2);
  EXPECT_EQ(qx.scale[0], 0.0f);
  for (int k = 0; k < 256; ++k) ASSERT_EQ(qx.q[static_cast<size_t>(k)], 0);
  EXPECT_EQ(qx.scale[1], 1.0f / 127.0f);
  // Per 16: one -127 and fifteen round(0.5 * 127) = 64 (63.5 ties to even).
  for (int g = 16; g < 32; ++g) EXPECT_EQ(qx.sums16[static_cast<size_t>(g)], 15 * 64 - 127) << g;
}

bool same(const QuantizedX& a, const QuantizedX& b) {
  auto eq = [](const auto& u, const auto& v) {
    return u.size() == v.size() && (u.empty() || std::memcmp(u.data(), v.data(), u.size() * sizeof(u[0])) == 0);
  };
  return a.blocks == b.blocks && eq(a.q, b.q) && eq(a.scale, b.scale) && eq(a.scaled_sum, b.scaled_sum) && eq(a.block_sum, b.block_sum) &&
         eq(a.bias_lanes, b.bias_lanes) && eq(a.bias_sum, b.bias_sum) && eq(a.sums16, b.sums16);
}

// Every SIMD table's quantizer writes the reference's bytes.
TEST(QuantizeX, EveryTableWritesTheSameBytes) {
  const auto tables = testing_util::runnable_simd_tables();
  if (tables.empty()) GTEST_SKIP() << "this CPU runs no SIMD kernel table";
  const int64_t n_x = 5, cols = 768;
  auto x = testing_util::random_floats(n_x * cols, 31, 3.0f);
  // Edge cases: exact ties, a zero block, NaN and infinity, tiny values.
  for (int k = 0; k < 32; ++k) x[static_cast<size_t>(k)] = static_cast<float>(k) - 15.5f;
  for (int k = 32; k < 64; ++k) x[static_cast<size_t>(k)] = 0.0f;
  x[70] = std::numeric_limits<float>::quiet_NaN();
  x[100] = std::numeric_limits<float>::infinity();
  x[300] = -std::numeric_limits<float>::infinity();
  for (int k = 320; k < 352; ++k) x[static_cast<size_t>(k)] = 1e-30f * static_cast<float>(k - 330);
  for (DType t : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K}) {
    QuantizedX a;
    matmul_detail::quantize_x(t, x.data(), n_x, cols, &a);
    for (const KernelTable* table : tables) {
      QuantizedX b;
      matmul_detail::shape_quantized_x(t, n_x, cols, &b);
      table->quantize_x_rows(t, x.data(), 0, n_x, &b);
      EXPECT_TRUE(same(a, b)) << dtype_name(t) << " " << table->name;
    }
  }
}

}  // namespace
}  // namespace omnibus

namespace omnibus {
namespace {

// The row-layout int8 kernels built with AVX-VNNI (vpdpbusd, vpdpwssd)
// against the AVX2 build: the same exact integer sums, so the same bits,
// for every type, tile shape (1-8 x rows, ragged weight-row counts) and
// block count. Skipped, and says so, without AVX-VNNI.
TEST(MatmulVnniTest, RowKernelsBitIdenticalToAvx2) {
  const KernelTable* vnni = find_kernel_table("avx-vnni");
  if (vnni == nullptr || !vnni->runs_on(cpu_features())) GTEST_SKIP() << "no AVX-VNNI on this CPU (or not built)";
  for (DType t : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0, DType::kQ4_K, DType::kQ5_K,
                  DType::kQ6_K}) {
    for (int64_t rows : {1, 5, 13}) {
      for (int64_t cols : {256, 768}) {
        const auto w = testing_util::random_weights(t, rows, cols, static_cast<uint32_t>(rows + cols));
        for (int64_t n_x : {1, 3, 4, 5, 8}) {
          const auto x = testing_util::random_floats(n_x * cols, static_cast<uint32_t>(n_x * 7 + cols));
          matmul_detail::QuantizedX qx;
          matmul_detail::quantize_x(t, x.data(), n_x, cols, &qx);
          std::vector<float> want(static_cast<size_t>(n_x * rows), NAN), got(want.size(), NAN);
          find_kernel_table("avx2")->rows_q8({&w.view, x.data(), &qx, n_x, want.data()}, 0, rows);
          vnni->rows_q8({&w.view, x.data(), &qx, n_x, got.data()}, 0, rows);
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
              << dtype_name(t) << " rows " << rows << " cols " << cols << " n_x " << n_x;
        }
      }
    }
  }
}

}  // namespace
}  // namespace omnibus
