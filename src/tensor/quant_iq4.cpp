// Reference codecs of the non-linear 4-bit types IQ4_NL (blocks of 32) and
// IQ4_XS (super-blocks of 256 with 6-bit sub-block scales), whose codes
// index the sixteen levels of kIq4nlValues. Dequantization repeats ggml's
// dequantize_row_iq4_nl / _iq4_xs operation for operation (bit-identical
// values); quantization searches a few scales per block of 32 for the least
// squared error, good enough to make test models (not llama.cpp's search).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "tensor/quant.h"
#include "tensor/quant_blocks.h"
#include "tensor/quant_codec_util.h"
#include "tensor/quant_rows.h"

namespace omnibus::quant_detail {
namespace {

// The midpoints between neighbouring levels.
constexpr auto kMidpoints = [] {
  std::array<float, 15> mid{};
  for (int c = 0; c < 15; ++c) mid[c] = 0.5f * static_cast<float>(kIq4nlValues[c] + kIq4nlValues[c + 1]);
  return mid;
}();

// The code whose level is nearest to v: the number of midpoints below it
// (the levels ascend). Counted without branches: the quantizer's scale
// search calls this for every value of every trial scale.
int nearest_level(float v) {
  int code = 0;
  for (float mid : kMidpoints) code += v > mid ? 1 : 0;
  return code;
}

// Codes of 32 values on the grid step * kIq4nlValues, and the squared error.
float level_codes(const float* x, float step, int* q) {
  float err = 0.0f;
  const float inv = step != 0.0f ? 1.0f / step : 0.0f;
  for (int l = 0; l < 32; ++l) {
    q[l] = nearest_level(x[l] * inv);
    const float e = step * static_cast<float>(kIq4nlValues[q[l]]) - x[l];
    err += e * e;
  }
  return err;
}

// The step (before any rounding of it) that codes 32 values best: the
// largest magnitude on the outer level of its sign, then a few nearby
// steps, since the levels are not evenly spaced.
float best_step(const float* x) {
  const float amax = signed_absmax(x, 32);
  if (amax == 0.0f) return 0.0f;
  float best = amax / -127.0f, best_err = INFINITY;
  int q[32];
  for (const float base : {amax / -127.0f, amax / 113.0f}) {
    for (int t = -1; t <= 1; ++t) {
      const float step = base * (1.0f + 0.05f * static_cast<float>(t));
      const float err = level_codes(x, step, q);
      if (err < best_err) best_err = err, best = step;
    }
  }
  return best;
}

void pack_nibbles(const int* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
}

void quantize_iq4_xs_block(const float* x, BlockIQ4_XS* blk) {
  std::memset(blk, 0, sizeof *blk);
  float step[8];
  for (int j = 0; j < 8; ++j) step[j] = best_step(x + 32 * j);
  // One f16 d that puts the widest sub-block step at -32 (ls = 0).
  const float d = store_f16(blk->d, signed_absmax(step, 8) / -32.0f);
  uint16_t scales_h = 0;
  for (int j = 0; j < 8; ++j) {
    const int ls = (d != 0.0f ? clamp_int(step[j] / d, -32, 31) : 0) + 32;
    blk->scales_l[j / 2] |= static_cast<uint8_t>((ls & 0x0F) << (4 * (j % 2)));
    scales_h = static_cast<uint16_t>(scales_h | ((ls >> 4) << (2 * j)));
    int q[32];
    level_codes(x + 32 * j, d * static_cast<float>(ls - 32), q);
    pack_nibbles(q, blk->qs + 16 * j);
  }
  store_u16le(blk->scales_h, scales_h);
}

}  // namespace

void dequantize_iq4_nl(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const auto* blk = reinterpret_cast<const BlockIQ4_NL*>(src) + b;
    const float d = load_f16(blk->d);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>(kIq4nlValues[blk->qs[j] & 0x0F]);
      y[j + kQK / 2] = d * static_cast<float>(kIq4nlValues[blk->qs[j] >> 4]);
    }
  }
}

void dequantize_iq4_xs(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const auto* blk = reinterpret_cast<const BlockIQ4_XS*>(src) + b;
    const float d = load_f16(blk->d);
    float* y = dst + b * kQK_K;
    for (int j = 0; j < 8; ++j) {
      const float dl = d * static_cast<float>(iq4_xs_scale(j, *blk) - 32);
      const uint8_t* qs = blk->qs + 16 * j;
      for (int l = 0; l < 16; ++l) {
        y[32 * j + l] = dl * static_cast<float>(kIq4nlValues[qs[l] & 0x0F]);
        y[32 * j + l + 16] = dl * static_cast<float>(kIq4nlValues[qs[l] >> 4]);
      }
    }
  }
}

void quantize_iq4_nl(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    auto* blk = reinterpret_cast<BlockIQ4_NL*>(dst) + b;
    const float* x = src + b * kQK;
    const float d = store_f16(blk->d, best_step(x));
    int q[32];
    level_codes(x, d, q);
    pack_nibbles(q, blk->qs);
  }
}

void quantize_iq4_xs(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b)
    quantize_iq4_xs_block(src + b * kQK_K, reinterpret_cast<BlockIQ4_XS*>(dst) + b);
}

}  // namespace omnibus::quant_detail
