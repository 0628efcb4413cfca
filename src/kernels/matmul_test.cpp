// Every matmul path against the reference, for every computable dtype, on
// awkward shapes.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "kernels/matmul_internal.h"
#include "kernels/matmul_test_util.h"

namespace omnibus {
namespace {

using testing_util::abs_products;
using testing_util::random_floats;
using testing_util::random_weights;

using testing_util::run_rows;

struct Path {
  const char* name;
  const KernelTable* table;
};

// Every kernel table this CPU runs (an AVX-512 machine runs the avx2 and
// avx-vnni tables too).
std::vector<Path> paths() {
  std::vector<Path> p;
  for (const KernelTable* t : testing_util::runnable_tables()) p.push_back({t->name, t});
  return p;
}

std::vector<int64_t> cols_for(DType t) {
  switch (dtype_info(t)->block_size) {
    case 1: return {1, 7, 33, 96, 100, 4352};
    case 32: return {32, 96, 256, 768, 4352};
    default: return {256, 768, 1536};
  }
}

// Checks one path on one shape; returns false after the first bad value.
bool check_shape(const Path& path, DType t, int64_t rows, int64_t cols, int64_t n_x) {
  const auto w = random_weights(t, rows, cols, static_cast<uint32_t>(rows * 131 + cols));
  const auto x = random_floats(n_x * cols, static_cast<uint32_t>(n_x + cols));
  std::vector<float> want(static_cast<size_t>(n_x * rows)), got(want.size(), NAN);
  matmul_ref(w.view, x.data(), n_x, want.data());
  run_rows(*path.table, w.view, x.data(), n_x, got.data(), 0, rows);
  const auto scale = abs_products(w.view, x.data(), n_x);
  for (size_t i = 0; i < want.size(); ++i) {
    const double tol = 1e-4 * scale[i] + 1e-6;
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol)) {
      ADD_FAILURE() << path.name << " " << dtype_name(t) << " rows " << rows << " cols " << cols << " n_x " << n_x
                    << " output " << i << ": got " << got[i] << " want " << want[i] << " tol " << tol;
      return false;
    }
  }
  return true;
}

class MatmulVsRef : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulVsRef, AllPathsAllShapes) {
  const DType t = GetParam();
  for (const Path& path : paths())
    for (int64_t rows : {1, 7, 33, 67})
      for (int64_t cols : cols_for(t))
        for (int64_t n_x : {1, 2, 3, 8, 17})
          if (!check_shape(path, t, rows, cols, n_x)) return;
}

// The result must not be a coincidence of symmetric data: a matmul against
// the transposed problem would differ (guards against swapped strides).
TEST_P(MatmulVsRef, DistinguishesRowsAndColumns) {
  const DType t = GetParam();
  const int64_t cols = dtype_info(t)->block_size == 256 ? 256 : 32;
  const auto w = random_weights(t, 5, cols, 9);
  const auto x = random_floats(2 * cols, 10);
  std::vector<float> y(10);
  matmul(w.view, x.data(), 2, y.data(), nullptr);
  for (int i = 1; i < 10; ++i) EXPECT_NE(y[0], y[i]);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulVsRef,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                                           DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K,
                                           DType::kQ6_K, DType::kQ2_K, DType::kQ3_K, DType::kIQ4_NL, DType::kMXFP4,
                                           DType::kIQ4_XS),
                         [](const auto& info) { return dtype_name(info.param); });

// Quantized weights use int8 activations: the result may differ from exact
// float math only by what rounding x to its block grid allows,
// sum_b (scale_b / 2) * sum_{k in b} |w_k|, plus float rounding.
TEST(Matmul, Int8ActivationErrorWithinQuantizationBound) {
  for (DType t : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0, DType::kQ4_K, DType::kQ5_K,
                  DType::kQ6_K, DType::kQ2_K, DType::kQ3_K, DType::kIQ4_NL, DType::kMXFP4, DType::kIQ4_XS}) {
    const int64_t rows = 13, cols = 768, n_x = 3;
    const int block = dtype_info(t)->block_size == 256 ? 256 : 32;
    const auto w = random_weights(t, rows, cols, 21);
    const auto x = random_floats(n_x * cols, 22);
    std::vector<float> got(static_cast<size_t>(n_x * rows));
    matmul(w.view, x.data(), n_x, got.data(), nullptr);
    std::vector<float> row(static_cast<size_t>(cols));
    double worst_ratio = 0;
    for (int64_t o = 0; o < rows; ++o) {
      dequantize_row_ref(t, static_cast<const uint8_t*>(w.view.data) + o * w.view.row_bytes, row.data(), cols);
      for (int64_t r = 0; r < n_x; ++r) {
        double exact = 0, bound = 0, scale_sum = 0;
        for (int64_t b = 0; b < cols / block; ++b) {
          double amax = 0, wabs = 0;
          for (int64_t k = b * block; k < (b + 1) * block; ++k) {
            amax = std::max(amax, static_cast<double>(std::fabs(x[static_cast<size_t>(r * cols + k)])));
            wabs += std::fabs(row[static_cast<size_t>(k)]);
            exact += static_cast<double>(x[static_cast<size_t>(r * cols + k)]) * row[static_cast<size_t>(k)];
            scale_sum += std::fabs(x[static_cast<size_t>(r * cols + k)] * row[static_cast<size_t>(k)]);
          }
          bound += amax / 127.0 / 2.0 * wabs;
        }
        const double err = std::fabs(got[static_cast<size_t>(r * rows + o)] - exact);
        ASSERT_LE(err, bound * 1.001 + 1e-5 * scale_sum) << dtype_name(t) << " output " << o;
        worst_ratio = std::max(worst_ratio, err / bound);
      }
    }
    EXPECT_GT(worst_ratio, 0.0) << dtype_name(t) << ": activations are not being quantized?";
  }
}

TEST(Matmul, PathName) {
  EXPECT_STREQ(matmul_path_name(), select_kernel_table(cpu_features()).name);
  EXPECT_EQ(&kernels(), &select_kernel_table(cpu_features()));
}

TEST(Matmul, PaddedRowsAndEmptyInputs) {
  // row_bytes larger than the packed row: the padding must be skipped.
  const auto w = testing_util::random_weights(DType::kQ4_1, 9, 64, 3, /*pad=*/6);
  const auto x = random_floats(3 * 64, 4);
  std::vector<float> want(27), got(27, NAN);
  matmul_ref(w.view, x.data(), 3, want.data());
  matmul(w.view, x.data(), 3, got.data(), nullptr);
  for (int i = 0; i < 27; ++i) EXPECT_NEAR(got[i], want[i], 1e-4);
  matmul(w.view, x.data(), 0, got.data(), nullptr);  // no rows: no work, no crash
}

}  // namespace
}  // namespace omnibus
namespace omnibus {
namespace {
// How far the K-quant kernels' float steps land from the scalar path's
// double-precision sum of the same integers (a measurement, not a check:
// --gtest_also_run_disabled_tests). One float chain per output (S per
// block) measured 2-4x closer than the eight lane chains it replaced.
TEST(MatmulBench, DISABLED_KQuantRoundingAgainstScalar) {
  for (DType t : {DType::kQ4_K, DType::kQ6_K}) {
    for (int64_t cols : {1024, 2048, 4096}) {
      const int64_t rows = 512, n_x = 4;
      const auto w = testing_util::random_weights(t, rows, cols, 5);
      auto x = testing_util::random_floats(n_x * cols, 6);
      for (size_t i = 0; i < x.size(); i += 37) x[i] *= 20;  // outliers, as in real activations
      std::vector<float> fast(rows * n_x), ref(rows * n_x);
      matmul(w.view, x.data(), n_x, fast.data(), nullptr);
      matmul_ref(w.view, x.data(), n_x, ref.data());
      double se = 0, sr = 0, mx = 0;
      for (size_t i = 0; i < fast.size(); ++i) {
        se += std::fabs(fast[i] - ref[i]);
        sr += std::fabs(ref[i]);
        mx = std::max(mx, std::fabs(static_cast<double>(fast[i]) - ref[i]));
      }
      std::printf("%s cols %lld: mean |err| %.3e, mean |y| %.3e, max err %.3e\n", dtype_name(t).c_str(), static_cast<long long>(cols),
                  se / fast.size(), sr / fast.size(), mx);
    }
  }
}
}  // namespace
}  // namespace omnibus
