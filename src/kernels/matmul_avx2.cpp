// AVX2+FMA matmul for float weights (F32, F16, BF16); quantized weights
// take the int8 kernels (matmul_q8_avx2.cpp). Compiled with -mavx2 -mfma
// -mf16c; reached only through the kernel table (kernels/kernel_table.h)
// after a run-time CPU check.
//
// The order of arithmetic, which every float kernel here follows for every
// output y[r][o] (this is what makes results batch-invariant):
//   acc = 0 (8 lanes); for each chunk of 8 columns k = 0, 8, 16, ... in order:
//     acc = fma(w[o][k..k+8), x[r][k..k+8), acc)   (a last partial chunk is
//                                                    zero-padded on both sides)
//   y = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
// Two kernels implement it: a fused one that converts weights in registers
// (few x rows: decode is bound by reading weights) and a panel one that
// converts a block of weight rows to a float scratch once, then runs a
// register-blocked kernel over all x rows (prefill: bound by FMA throughput).
// Tiling changes only which outputs are computed side by side.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/matmul_avx2_common.h"
#include "base/cpu_features.h"
#include "kernels/matmul_internal.h"

namespace omnibus::matmul_detail {
namespace {

using namespace matmul_avx2;

constexpr int kUnit = 32;              // columns per decoder unit
constexpr int kFusedMaxXRows = 2;      // up to this many x rows use the fused kernel
constexpr int64_t kPanelRows = 64;     // weight rows decoded per panel
constexpr int kTileX = 3, kTileW = 4;  // panel micro-kernel: x rows x weight rows

// ---- fused kernel: MR x rows against NR weight rows, weights decoded in registers.

template <class D, int MR, int NR>
void fused_tile(const uint8_t* w, size_t row_bytes, const float* x, int64_t cols, float* y, int64_t y_stride) {
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  const int64_t units = cols / kUnit;
  for (int64_t u = 0; u < units; ++u) {
    for (int j = 0; j < NR; ++j) {
      __m256 wv[4];
      D::unit(w + j * row_bytes, u, wv);
      for (int c = 0; c < 4; ++c)
        for (int i = 0; i < MR; ++i)
          acc[i][j] = _mm256_fmadd_ps(wv[c], _mm256_loadu_ps(x + i * cols + kUnit * u + 8 * c), acc[i][j]);
    }
  }
  int64_t k = units * kUnit;
  for (; k + 8 <= cols; k += 8)
    for (int j = 0; j < NR; ++j) {
      const __m256 wv = D::chunk(w + j * row_bytes, k);
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + i * cols + k), acc[i][j]);
    }
  if (k < cols) {
    const int n = static_cast<int>(cols - k);
    const __m256i mask = lane_mask(n);
    for (int j = 0; j < NR; ++j) {
      const __m256 wv = D::partial(w + j * row_bytes, k, n);
      for (int i = 0; i < MR; ++i)
        acc[i][j] = _mm256_fmadd_ps(wv, _mm256_maskload_ps(x + i * cols + k, mask), acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) y[i * y_stride + j] = hsum(acc[i][j]);
}

template <class D, int MR>
void fused_rows(const WeightMatrix& w, const float* x, float* y, int64_t begin, int64_t end) {
  const auto* base = static_cast<const uint8_t*>(w.data);
  int64_t o = begin;
  for (; o + 4 <= end; o += 4) fused_tile<D, MR, 4>(base + o * w.row_bytes, w.row_bytes, x, w.cols, y + o, w.rows);
  const uint8_t* rest = base + o * w.row_bytes;
  switch (end - o) {
    case 3: fused_tile<D, MR, 3>(rest, w.row_bytes, x, w.cols, y + o, w.rows); break;
    case 2: fused_tile<D, MR, 2>(rest, w.row_bytes, x, w.cols, y + o, w.rows); break;
    case 1: fused_tile<D, MR, 1>(rest, w.row_bytes, x, w.cols, y + o, w.rows); break;
    default: break;
  }
}

// ---- panel kernel: weights already as floats (scratch, or F32 weights in place).

template <int MR, int NR>
void panel_tile(const float* x, int64_t cols, const uint8_t* w, size_t w_stride, float* y, int64_t y_stride) {
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  const float* wr[NR];
  for (int j = 0; j < NR; ++j) wr[j] = reinterpret_cast<const float*>(w + j * w_stride);
  int64_t k = 0;
  for (; k + 8 <= cols; k += 8) {
    __m256 xv[MR];
    for (int i = 0; i < MR; ++i) xv[i] = _mm256_loadu_ps(x + i * cols + k);
    for (int j = 0; j < NR; ++j) {
      const __m256 wv = _mm256_loadu_ps(wr[j] + k);
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm256_fmadd_ps(wv, xv[i], acc[i][j]);
    }
  }
  if (k < cols) {  // masked lanes read as zero on both sides, as in fused_tile
    const __m256i mask = lane_mask(static_cast<int>(cols - k));
    for (int j = 0; j < NR; ++j) {
      const __m256 wv = _mm256_maskload_ps(wr[j] + k, mask);
      for (int i = 0; i < MR; ++i)
        acc[i][j] = _mm256_fmadd_ps(wv, _mm256_maskload_ps(x + i * cols + k, mask), acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) y[i * y_stride + j] = hsum(acc[i][j]);
}

template <int MR>
void panel_x_tile(const float* x, int64_t cols, const uint8_t* panel, size_t stride, int64_t n_rows, float* y,
                  int64_t y_stride) {
  int64_t j = 0;
  for (; j + kTileW <= n_rows; j += kTileW)
    panel_tile<MR, kTileW>(x, cols, panel + j * stride, stride, y + j, y_stride);
  const uint8_t* rest = panel + j * stride;
  switch (n_rows - j) {
    case 3: panel_tile<MR, 3>(x, cols, rest, stride, y + j, y_stride); break;
    case 2: panel_tile<MR, 2>(x, cols, rest, stride, y + j, y_stride); break;
    case 1: panel_tile<MR, 1>(x, cols, rest, stride, y + j, y_stride); break;
    default: break;
  }
}

// Runs every x row against one panel of n_rows weight rows (floats, stride
// bytes apart); y points at the panel's first output column.
void panel_all_x(const float* x, int64_t n_x, int64_t cols, const uint8_t* panel, size_t stride, int64_t n_rows,
                 float* y, int64_t y_stride) {
  int64_t r = 0;
  for (; r + kTileX <= n_x; r += kTileX)
    panel_x_tile<kTileX>(x + r * cols, cols, panel, stride, n_rows, y + r * y_stride, y_stride);
  switch (n_x - r) {
    case 2: panel_x_tile<2>(x + r * cols, cols, panel, stride, n_rows, y + r * y_stride, y_stride); break;
    case 1: panel_x_tile<1>(x + r * cols, cols, panel, stride, n_rows, y + r * y_stride, y_stride); break;
    default: break;
  }
}

// Decodes weight rows [first, first + n_rows) into scratch rows of `stride`
// floats (a multiple of 8; the padding is zero).
template <class D>
void decode_panel(const WeightMatrix& w, int64_t first, int64_t n_rows, float* scratch, int64_t stride) {
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t j = 0; j < n_rows; ++j) {
    const uint8_t* row = base + (first + j) * w.row_bytes;
    float* out = scratch + j * stride;
    const int64_t units = w.cols / kUnit;
    for (int64_t u = 0; u < units; ++u) {
      __m256 wv[4];
      D::unit(row, u, wv);
      for (int c = 0; c < 4; ++c) _mm256_storeu_ps(out + kUnit * u + 8 * c, wv[c]);
    }
    int64_t k = units * kUnit;
    for (; k + 8 <= w.cols; k += 8) _mm256_storeu_ps(out + k, D::chunk(row, k));
    if (k < w.cols) _mm256_storeu_ps(out + k, D::partial(row, k, static_cast<int>(w.cols - k)));
  }
}

template <class D>
void panel_rows(const WeightMatrix& w, const float* x, int64_t n_x, float* y, int64_t begin, int64_t end) {
  const int64_t stride = (w.cols + 7) / 8 * 8;
  thread_local std::vector<float> scratch;
  if (!std::is_same_v<D, DecodeF32>) scratch.resize(static_cast<size_t>(kPanelRows * stride));
  for (int64_t p = begin; p < end; p += kPanelRows) {
    const int64_t n_rows = std::min(kPanelRows, end - p);
    if constexpr (std::is_same_v<D, DecodeF32>) {
      const auto* rows = static_cast<const uint8_t*>(w.data) + p * w.row_bytes;
      panel_all_x(x, n_x, w.cols, rows, w.row_bytes, n_rows, y + p, w.rows);
    } else {
      decode_panel<D>(w, p, n_rows, scratch.data(), stride);
      panel_all_x(x, n_x, w.cols, reinterpret_cast<const uint8_t*>(scratch.data()), stride * sizeof(float), n_rows,
                  y + p, w.rows);
    }
  }
}

template <class D>
void rows_typed(const WeightMatrix& w, const float* x, int64_t n_x, float* y, int64_t begin, int64_t end) {
  if (n_x > kFusedMaxXRows) {
    panel_rows<D>(w, x, n_x, y, begin, end);
    return;
  }
  if (n_x == 2) {
    fused_rows<D, 2>(w, x, y, begin, end);
  } else {
    fused_rows<D, 1>(w, x, y, begin, end);
  }
}

}  // namespace

void rows_avx2_float(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  const WeightMatrix& w = *a.w;
  switch (w.dtype) {
    case DType::kF32: return rows_typed<DecodeF32>(w, a.x, a.n_x, a.y, row_begin, row_end);
    case DType::kF16: return rows_typed<DecodeF16>(w, a.x, a.n_x, a.y, row_begin, row_end);
    case DType::kBF16: return rows_typed<DecodeBF16>(w, a.x, a.n_x, a.y, row_begin, row_end);
    default: rows_scalar(a, row_begin, row_end);  // not float weights: run_rows never sends them here
  }
}

}  // namespace omnibus::matmul_detail
