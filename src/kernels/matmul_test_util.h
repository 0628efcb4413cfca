// Test helpers: random weight matrices in any dtype, random activations.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/kernel_table_test_util.h"
#include "kernels/matmul.h"
#include "kernels/matmul_internal.h"
#include "tensor/quant.h"

namespace omnibus::testing_util {

// A weight matrix that owns its bytes.
struct OwnedWeights {
  std::vector<uint8_t> bytes;
  WeightMatrix view;
};

inline std::vector<float> random_floats(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& f : v) f = dist(rng);
  return v;
}

// rows x cols random weights (with a few outliers) packed row by row in t.
// pad adds unused bytes after every row, so row_bytes != packed row size.
inline OwnedWeights random_weights(DType t, int64_t rows, int64_t cols, uint32_t seed, size_t pad = 0) {
  const size_t packed = dtype_bytes(t, cols).value();
  OwnedWeights w;
  w.bytes.assign(static_cast<size_t>(rows) * (packed + pad) + 1, 0xA5);
  const auto values = random_floats(rows * cols, seed, 0.05f);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> row(values.begin() + r * cols, values.begin() + (r + 1) * cols);
    if (cols > 3) row[static_cast<size_t>((r * 7) % cols)] *= 8.0f;
    quantize_row_ref(t, row.data(), w.bytes.data() + static_cast<size_t>(r) * (packed + pad), cols);
  }
  // Start one byte in, so rows are not aligned (as in a mapped file).
  w.bytes.insert(w.bytes.begin(), 0x5A);
  w.view = WeightMatrix{t, w.bytes.data() + 1, rows, cols, packed + pad};
  return w;
}

// sum_k |x[r][k] * w[o][k]| with w dequantized by the reference: the scale
// of the rounding error any correct summation order can make.
inline std::vector<double> abs_products(const WeightMatrix& w, const float* x, int64_t n_x) {
  std::vector<double> out(static_cast<size_t>(n_x * w.rows));
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t o = 0; o < w.rows; ++o) {
    dequantize_row_ref(w.dtype, static_cast<const uint8_t*>(w.data) + o * w.row_bytes, row.data(), w.cols);
    for (int64_t r = 0; r < n_x; ++r) {
      double s = 0;
      for (int64_t k = 0; k < w.cols; ++k)
        s += std::fabs(static_cast<double>(x[r * w.cols + k]) * row[static_cast<size_t>(k)]);
      out[static_cast<size_t>(r * w.rows + o)] = s;
    }
  }
  return out;
}

// Runs `table`'s row workers over weight rows [begin, end), preparing the
// int8 activations as matmul() does.
inline void run_rows(const KernelTable& table, const WeightMatrix& w, const float* x, int64_t n_x, float* y,
                     int64_t begin, int64_t end) {
  matmul_detail::QuantizedX qx;
  const bool int8 = matmul_detail::act_format(w.dtype) != matmul_detail::ActFormat::kFloat;
  if (int8) matmul_detail::quantize_x(w.dtype, x, n_x, w.cols, &qx);
  matmul_detail::run_rows(table, matmul_detail::MatmulArgs{&w, x, int8 ? &qx : nullptr, n_x, y}, begin, end);
}

}  // namespace omnibus::testing_util
