// Reference codecs of the 256-element K-quant types Q4_K, Q5_K and Q6_K.
// Dequantization repeats ggml's arithmetic operation for operation (so values
// are bit-identical); quantization is a simple round-to-nearest with a small
// per-sub-block scale search, good enough to make test models.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/quant.h"
#include "tensor/quant_blocks.h"
#include "tensor/quant_codec_util.h"
#include "tensor/quant_rows.h"

namespace omnibus::quant_detail {
namespace {

constexpr int kSubBlocks = kQK_K / 32;  // Q4_K / Q5_K sub-blocks of 32

// Codes q[0..32) in 0..levels for x ~ step * q - offset, and their squared error.
float affine_codes(const float* x, float step, float offset, int levels, int* q) {
  float err = 0.0f;
  const float inv = step != 0.0f ? 1.0f / step : 0.0f;
  for (int l = 0; l < 32; ++l) {
    q[l] = clamp_int((x[l] + offset) * inv, 0, levels);
    const float e = step * static_cast<float>(q[l]) - offset - x[l];
    err += e * e;
  }
  return err;
}

// Chooses the 6-bit scales and mins and the codes (0..levels) of one Q4_K or
// Q5_K super-block; writes d, dmin and the packed scales into the block.
void k_affine_quantize(const float* x, int levels, uint8_t* d_out, uint8_t* dmin_out, uint8_t* scales, int* q) {
  float step[kSubBlocks], offset[kSubBlocks];
  float max_step = 0.0f, max_offset = 0.0f;
  for (int j = 0; j < kSubBlocks; ++j) {
    // The format subtracts a non-negative min, so the range always spans 0.
    float lo = 0.0f, hi = 0.0f;
    for (int l = 0; l < 32; ++l) {
      lo = std::min(lo, x[32 * j + l]);
      hi = std::max(hi, x[32 * j + l]);
    }
    step[j] = (hi - lo) / static_cast<float>(levels);
    offset[j] = -lo;
    max_step = std::max(max_step, step[j]);
    max_offset = std::max(max_offset, offset[j]);
  }
  const float d = store_f16(d_out, max_step / 63.0f);
  const float dmin = store_f16(dmin_out, max_offset / 63.0f);
  std::memset(scales, 0, 12);
  for (int j = 0; j < kSubBlocks; ++j) {
    const int mn = dmin > 0.0f ? clamp_int(offset[j] / dmin, 0, 63) : 0;
    const int guess = d > 0.0f ? clamp_int(step[j] / d, 0, 63) : 0;
    // Try the neighbours of the rounded scale: rounding the scale down can
    // clip the top of the range, rounding it up wastes a level.
    int best_sc = guess;
    float best_err = INFINITY;
    int trial[32];
    for (int sc = std::max(0, guess - 1); sc <= std::min(63, guess + 1); ++sc) {
      const float err =
          affine_codes(x + 32 * j, d * static_cast<float>(sc), dmin * static_cast<float>(mn), levels, trial);
      if (err < best_err) {
        best_err = err;
        best_sc = sc;
      }
    }
    affine_codes(x + 32 * j, d * static_cast<float>(best_sc), dmin * static_cast<float>(mn), levels, q + 32 * j);
    if (j < 4) {
      scales[j] = static_cast<uint8_t>(best_sc);
      scales[j + 4] = static_cast<uint8_t>(mn);
    } else {
      scales[j + 4] = static_cast<uint8_t>((best_sc & 0x0F) | ((mn & 0x0F) << 4));
      scales[j - 4] |= static_cast<uint8_t>((best_sc >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((mn >> 4) << 6);
    }
  }
}

}  // namespace

void dequantize_q4_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ4_K*>(src) + b;
    const float d = load_f16(blk->d);
    const float dmin = load_f16(blk->dmin);
    float* y = dst + b * kQK_K;
    for (int j = 0; j < kSubBlocks; ++j) {
      uint8_t sc, mn;
      k_scale_min(j, blk->scales, &sc, &mn);
      const float dj = d * static_cast<float>(sc);
      const float mj = dmin * static_cast<float>(mn);
      const uint8_t* qs = blk->qs + 32 * (j / 2);
      const int shift = 4 * (j & 1);
      for (int l = 0; l < 32; ++l) y[32 * j + l] = dj * static_cast<float>((qs[l] >> shift) & 0x0F) - mj;
    }
  }
}

void dequantize_q5_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ5_K*>(src) + b;
    const float d = load_f16(blk->d);
    const float dmin = load_f16(blk->dmin);
    float* y = dst + b * kQK_K;
    for (int j = 0; j < kSubBlocks; ++j) {
      uint8_t sc, mn;
      k_scale_min(j, blk->scales, &sc, &mn);
      const float dj = d * static_cast<float>(sc);
      const float mj = dmin * static_cast<float>(mn);
      const uint8_t* qs = blk->qs + 32 * (j / 2);
      const int shift = 4 * (j & 1);
      for (int l = 0; l < 32; ++l) {
        const int q = ((qs[l] >> shift) & 0x0F) | (((blk->qh[l] >> j) & 1) << 4);
        y[32 * j + l] = dj * static_cast<float>(q) - mj;
      }
    }
  }
}

void dequantize_q6_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ6_K*>(src) + b;
    const float d = load_f16(blk->d);
    float* y = dst + b * kQK_K;
    for (int k = 0; k < kQK_K; ++k) {
      const int half = k / 128, g = (k % 128) / 32, l = k % 32;
      const int lo = (blk->ql[64 * half + 32 * (g & 1) + l] >> (4 * (g >> 1))) & 0x0F;
      const int hi = (blk->qh[32 * half + l] >> (2 * g)) & 3;
      y[k] = d * static_cast<float>(blk->scales[k / 16]) * static_cast<float>((lo | (hi << 4)) - 32);
    }
  }
}

void quantize_q4_k(const float* src, uint8_t* dst, int64_t n) {
  int q[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    auto* blk = reinterpret_cast<BlockQ4_K*>(dst) + b;
    k_affine_quantize(src + b * kQK_K, 15, blk->d, blk->dmin, blk->scales, q);
    std::memset(blk->qs, 0, sizeof blk->qs);
    for (int j = 0; j < kSubBlocks; ++j)
      for (int l = 0; l < 32; ++l) blk->qs[32 * (j / 2) + l] |= static_cast<uint8_t>(q[32 * j + l] << (4 * (j & 1)));
  }
}

void quantize_q5_k(const float* src, uint8_t* dst, int64_t n) {
  int q[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    auto* blk = reinterpret_cast<BlockQ5_K*>(dst) + b;
    k_affine_quantize(src + b * kQK_K, 31, blk->d, blk->dmin, blk->scales, q);
    std::memset(blk->qs, 0, sizeof blk->qs);
    std::memset(blk->qh, 0, sizeof blk->qh);
    for (int j = 0; j < kSubBlocks; ++j) {
      for (int l = 0; l < 32; ++l) {
        const int code = q[32 * j + l];
        blk->qs[32 * (j / 2) + l] |= static_cast<uint8_t>((code & 0x0F) << (4 * (j & 1)));
        blk->qh[l] |= static_cast<uint8_t>(((code >> 4) & 1) << j);
      }
    }
  }
}

void quantize_q6_k(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* x = src + b * kQK_K;
    auto* blk = reinterpret_cast<BlockQ6_K*>(dst) + b;
    std::memset(blk, 0, sizeof *blk);
    // Per 16 elements, a signed scale that puts the largest magnitude at code
    // -32; then one f16 super-scale so that the largest of those is -128.
    float sub_scale[kQK_K / 16];
    float widest = 0.0f;
    for (int i = 0; i < kQK_K / 16; ++i) {
      float best = 0.0f;
      for (int l = 0; l < 16; ++l)
        if (std::fabs(x[16 * i + l]) > std::fabs(best)) best = x[16 * i + l];
      sub_scale[i] = best / -32.0f;
      if (std::fabs(sub_scale[i]) > std::fabs(widest)) widest = sub_scale[i];
    }
    const float d = store_f16(blk->d, widest / -128.0f);
    for (int k = 0; k < kQK_K; ++k) {
      const int i = k / 16;
      if (k % 16 == 0) blk->scales[i] = static_cast<int8_t>(d != 0.0f ? clamp_int(sub_scale[i] / d, -128, 127) : 0);
      const float step = d * static_cast<float>(blk->scales[i]);
      const int code = (step != 0.0f ? clamp_int(x[k] / step, -32, 31) : 0) + 32;
      const int half = k / 128, g = (k % 128) / 32, l = k % 32;
      blk->ql[64 * half + 32 * (g & 1) + l] |= static_cast<uint8_t>((code & 0x0F) << (4 * (g >> 1)));
      blk->qh[32 * half + l] |= static_cast<uint8_t>((code >> 4) << (2 * g));
    }
  }
}

}  // namespace omnibus::quant_detail
