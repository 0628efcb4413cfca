// Reference codecs of the 2- and 3-bit K-quant types Q2_K and Q3_K.
// Dequantization repeats ggml's dequantize_row_q2_K / _q3_K operation for
// operation (so values are bit-identical); quantization is round-to-nearest
// with a small scale search per sub-block of 16, good enough to make test
// models (not llama.cpp's weighted search).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/quant.h"
#include "tensor/quant_blocks.h"
#include "tensor/quant_codec_util.h"
#include "tensor/quant_rows.h"

namespace omnibus::quant_detail {
namespace {

constexpr int kSub = 16;                  // elements per sub-block
constexpr int kSubBlocks = kQK_K / kSub;  // 16

// Codes q[0..16) in [lo, hi] for x ~ step * q - offset, and their squared error.
float grid_codes(const float* x, float step, float offset, int lo, int hi, int* q) {
  float err = 0.0f;
  const float inv = step != 0.0f ? 1.0f / step : 0.0f;
  for (int l = 0; l < kSub; ++l) {
    q[l] = clamp_int((x[l] + offset) * inv, lo, hi);
    const float e = step * static_cast<float>(q[l]) - offset - x[l];
    err += e * e;
  }
  return err;
}

// The integer scale in [lo, hi] near `guess` whose grid (unit * scale, with
// `offset`) codes x in [qlo, qhi] with the least squared error; its codes in q.
int best_scale(const float* x, float unit, int guess, int lo, int hi, float offset, int qlo, int qhi, int* q) {
  int best = std::clamp(guess, lo, hi);
  float best_err = INFINITY;
  int trial[kSub];
  for (int sc = std::max(lo, guess - 1); sc <= std::min(hi, guess + 1); ++sc) {
    const float err = grid_codes(x, unit * static_cast<float>(sc), offset, qlo, qhi, trial);
    if (err < best_err) best_err = err, best = sc;
  }
  grid_codes(x, unit * static_cast<float>(best), offset, qlo, qhi, q);
  return best;
}

void quantize_q2_k_block(const float* x, BlockQ2_K* blk) {
  std::memset(blk, 0, sizeof *blk);
  // Per sub-block an affine grid of 4 levels spanning [min(x, 0), max(x)]:
  // the format subtracts a non-negative min.
  float step[kSubBlocks], offset[kSubBlocks], max_step = 0.0f, max_offset = 0.0f;
  for (int i = 0; i < kSubBlocks; ++i) {
    float lo = 0.0f, hi = 0.0f;
    for (int l = 0; l < kSub; ++l) lo = std::min(lo, x[kSub * i + l]), hi = std::max(hi, x[kSub * i + l]);
    step[i] = (hi - lo) / 3.0f;
    offset[i] = -lo;
    max_step = std::max(max_step, step[i]);
    max_offset = std::max(max_offset, offset[i]);
  }
  const float d = store_f16(blk->d, max_step / 15.0f);
  const float dmin = store_f16(blk->dmin, max_offset / 15.0f);
  for (int i = 0; i < kSubBlocks; ++i) {
    const int mn = dmin > 0.0f ? clamp_int(offset[i] / dmin, 0, 15) : 0;
    const int guess = d > 0.0f ? clamp_int(step[i] / d, 0, 15) : 0;
    int q[kSub];
    const int sc = best_scale(x + kSub * i, d, guess, 0, 15, dmin * static_cast<float>(mn), 0, 3, q);
    blk->scales[i] = static_cast<uint8_t>(sc | (mn << 4));
    for (int l = 0; l < kSub; ++l) {
      const int k = kSub * i + l;
      blk->qs[32 * (k / 128) + k % 32] |= static_cast<uint8_t>(q[l] << (2 * ((k % 128) / 32)));
    }
  }
}

void quantize_q3_k_block(const float* x, BlockQ3_K* blk) {
  std::memset(blk, 0, sizeof *blk);
  // Per sub-block a signed step that puts the largest magnitude at code -4
  // (codes run -4..3); then one f16 d that puts the widest step at -32.
  float step[kSubBlocks];
  for (int i = 0; i < kSubBlocks; ++i) step[i] = signed_absmax(x + kSub * i, kSub) / -4.0f;
  const float d = store_f16(blk->d, signed_absmax(step, kSubBlocks) / -32.0f);
  for (int i = 0; i < kSubBlocks; ++i) {
    const int guess = d != 0.0f ? clamp_int(step[i] / d, -32, 31) : 0;
    int q[kSub];
    const int sc = best_scale(x + kSub * i, d, guess, -32, 31, 0.0f, -4, 3, q);
    const int stored = sc + 32;
    blk->scales[i % 8] |= static_cast<uint8_t>((stored & 0x0F) << (4 * (i / 8)));
    blk->scales[8 + i % 4] |= static_cast<uint8_t>((stored >> 4) << (2 * (i / 4)));
    for (int l = 0; l < kSub; ++l) {
      const int k = kSub * i + l, code = q[l] + 4;
      blk->qs[32 * (k / 128) + k % 32] |= static_cast<uint8_t>((code & 3) << (2 * ((k % 128) / 32)));
      blk->hmask[k % 32] |= static_cast<uint8_t>((code >> 2) << (k / 32));
    }
  }
}

}  // namespace

void dequantize_q2_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ2_K*>(src) + b;
    const float d = load_f16(blk->d), dmin = load_f16(blk->dmin);
    float* y = dst + b * kQK_K;
    for (int k = 0; k < kQK_K; ++k) {
      const int sc = blk->scales[k / kSub];
      const float dl = d * static_cast<float>(sc & 0x0F), ml = dmin * static_cast<float>(sc >> 4);
      y[k] = dl * static_cast<float>(k_low2_bits(blk->qs, k)) - ml;
    }
  }
}

void dequantize_q3_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ3_K*>(src) + b;
    const float d = load_f16(blk->d);
    float* y = dst + b * kQK_K;
    for (int k = 0; k < kQK_K; ++k) {
      const float dl = d * static_cast<float>(q3_k_scale(k / kSub, blk->scales) - 32);
      const int high = (blk->hmask[k % 32] >> (k / 32)) & 1;
      y[k] = dl * static_cast<float>(k_low2_bits(blk->qs, k) - (high ? 0 : 4));
    }
  }
}

void quantize_q2_k(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) quantize_q2_k_block(src + b * kQK_K, reinterpret_cast<BlockQ2_K*>(dst) + b);
}

void quantize_q3_k(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) quantize_q3_k_block(src + b * kQK_K, reinterpret_cast<BlockQ3_K*>(dst) + b);
}

}  // namespace omnibus::quant_detail
