// NEON matmul for float weights (F32, F16, BF16), compiled only for
// aarch64. Every output follows the avx2 float kernels' order
// (matmul_avx2.cpp), so the bits are the avx2 table's:
//   acc = 0 (8 lanes); for each chunk of 8 columns k = 0, 8, 16, ... in order:
//     acc = fma(w[o][k..k+8), x[r][k..k+8), acc)   (a last partial chunk is
//                                                    zero-padded on both sides)
//   y = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
// with the 8 lanes as two 4-float halves. One kernel for every batch size:
// four weight rows against one x row (a plain loop; decode reads each
// weight once either way, and prefill on this path is not a target yet).
#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "kernels/matmul_internal.h"

namespace omnibus::matmul_detail {
namespace {

struct F8 {
  float32x4_t lo, hi;
};

// Weight decoders: eight elements from column k, widened exactly.
struct DecodeF32 {
  static F8 chunk(const uint8_t* row, int64_t k) {
    const auto* p = reinterpret_cast<const float*>(row) + k;
    return {vld1q_f32(p), vld1q_f32(p + 4)};
  }
  static constexpr int kBytes = 4;
};

struct DecodeF16 {
  static F8 chunk(const uint8_t* row, int64_t k) {
    const uint16x8_t h = vld1q_u16(reinterpret_cast<const uint16_t*>(row + 2 * k));
    return {vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h))), vcvt_high_f32_f16(vreinterpretq_f16_u16(h))};
  }
  static constexpr int kBytes = 2;
};

struct DecodeBF16 {
  static F8 chunk(const uint8_t* row, int64_t k) {
    const uint16x8_t h = vld1q_u16(reinterpret_cast<const uint16_t*>(row + 2 * k));
    return {vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16)), vreinterpretq_f32_u32(vshll_high_n_u16(h, 16))};
  }
  static constexpr int kBytes = 2;
};

// The last n < 8 elements of a row, zero-padded (weights through a copy,
// so nothing past the row is read).
template <class D>
F8 partial_weights(const uint8_t* row, int64_t k, int n) {
  alignas(16) uint8_t tmp[8 * 4] = {};
  std::memcpy(tmp, row + k * D::kBytes, static_cast<size_t>(n) * D::kBytes);
  return D::chunk(tmp, 0);
}
inline F8 partial_x(const float* x, int n) {
  float tmp[8] = {};
  std::memcpy(tmp, x, static_cast<size_t>(n) * sizeof(float));
  return {vld1q_f32(tmp), vld1q_f32(tmp + 4)};
}

inline F8 fma8(F8 acc, F8 a, F8 b) { return {vfmaq_f32(acc.lo, a.lo, b.lo), vfmaq_f32(acc.hi, a.hi, b.hi)}; }

// avx2's hsum: pairs (a0+a1, a2+a3, a4+a5, a6+a7), then quads, then the two.
inline float hsum(F8 v) {
  const float32x4_t pairs = vpaddq_f32(v.lo, v.hi);
  const float32x4_t quads = vpaddq_f32(pairs, pairs);
  return vgetq_lane_f32(quads, 0) + vgetq_lane_f32(quads, 1);
}

// y[o + j] for j < NR, one x row.
template <class D, int NR>
void tile(const uint8_t* w, size_t row_bytes, const float* x, int64_t cols, float* y) {
  F8 acc[NR];
  for (int j = 0; j < NR; ++j) acc[j] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  int64_t k = 0;
  for (; k + 8 <= cols; k += 8) {
    const F8 xv = {vld1q_f32(x + k), vld1q_f32(x + k + 4)};
    for (int j = 0; j < NR; ++j) acc[j] = fma8(acc[j], D::chunk(w + j * row_bytes, k), xv);
  }
  if (k < cols) {
    const int n = static_cast<int>(cols - k);
    const F8 xv = partial_x(x + k, n);
    for (int j = 0; j < NR; ++j) acc[j] = fma8(acc[j], partial_weights<D>(w + j * row_bytes, k, n), xv);
  }
  for (int j = 0; j < NR; ++j) y[j] = hsum(acc[j]);
}

template <class D>
void rows_typed(const MatmulArgs& a, int64_t begin, int64_t end) {
  const WeightMatrix& w = *a.w;
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t r = 0; r < a.n_x; ++r) {
    const float* x = a.x + r * w.cols;
    float* y = a.y + r * w.rows;
    int64_t o = begin;
    for (; o + 4 <= end; o += 4) tile<D, 4>(base + o * w.row_bytes, w.row_bytes, x, w.cols, y + o);
    for (; o < end; ++o) tile<D, 1>(base + o * w.row_bytes, w.row_bytes, x, w.cols, y + o);
  }
}

}  // namespace

void rows_neon_float(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.w->dtype) {
    case DType::kF32: return rows_typed<DecodeF32>(a, row_begin, row_end);
    case DType::kF16: return rows_typed<DecodeF16>(a, row_begin, row_end);
    case DType::kBF16: return rows_typed<DecodeBF16>(a, row_begin, row_end);
    default: return rows_scalar(a, row_begin, row_end);  // not float weights: run_rows never sends them here
  }
}

}  // namespace omnibus::matmul_detail
