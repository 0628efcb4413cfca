// The reference matmul (for tests) and the portable scalar path used when
// the CPU lacks AVX2+FMA.
#include <vector>

#include "kernels/matmul_internal.h"
#include "tensor/quant.h"

namespace omnibus {

using matmul_detail::ActFormat;
using matmul_detail::QuantizedX;

void matmul_ref(const WeightMatrix& w, const float* x, int64_t n_x, float* y) {
  if (matmul_detail::act_format(w.dtype) != ActFormat::kFloat) {
    QuantizedX qx;
    matmul_detail::quantize_x(w.dtype, x, n_x, w.cols, &qx);
    for (int64_t r = 0; r < n_x; ++r)
      for (int64_t o = 0; o < w.rows; ++o)
        y[r * w.rows + o] = static_cast<float>(matmul_detail::q8_dot_ref(w, o, qx, r));
    return;
  }
  std::vector<float> row(static_cast<size_t>(w.cols));
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t o = 0; o < w.rows; ++o) {
    dequantize_row_ref(w.dtype, base + static_cast<size_t>(o) * w.row_bytes, row.data(), w.cols);
    for (int64_t r = 0; r < n_x; ++r) {
      const float* xr = x + r * w.cols;
      double sum = 0.0;
      for (int64_t k = 0; k < w.cols; ++k) sum += static_cast<double>(xr[k]) * row[static_cast<size_t>(k)];
      y[r * w.rows + o] = static_cast<float>(sum);
    }
  }
}

namespace matmul_detail {
namespace {

// Eight partial sums (element k goes to lane k % 8), combined in a fixed
// tree: the same order for every output, and vectorizable by the compiler.
float dot8(const float* a, const float* b, int64_t n) {
  float lane[8] = {};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l) lane[l] += a[k + l] * b[k + l];
  for (int l = 0; k + l < n; ++l) lane[l] += a[k + l] * b[k + l];
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

}  // namespace

void rows_scalar(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  const WeightMatrix& w = *a.w;
  if (a.qx != nullptr) {  // quantized weights: the reference int8 math
    for (int64_t o = row_begin; o < row_end; ++o)
      for (int64_t r = 0; r < a.n_x; ++r) a.y[r * w.rows + o] = static_cast<float>(q8_dot_ref(w, o, *a.qx, r));
    return;
  }
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(w.cols));
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t o = row_begin; o < row_end; ++o) {
    dequantize_row_ref(w.dtype, base + static_cast<size_t>(o) * w.row_bytes, row.data(), w.cols);
    for (int64_t r = 0; r < a.n_x; ++r) a.y[r * w.rows + o] = dot8(a.x + r * w.cols, row.data(), w.cols);
  }
}

}  // namespace matmul_detail
}  // namespace omnibus
