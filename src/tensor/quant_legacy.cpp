// Reference codecs of the 32-element block types Q4_0, Q4_1, Q5_0, Q5_1 and
// Q8_0. Dequantization computes exactly what ggml's dequantize_row_* do
// (same operations in the same order, no fused multiply-add), so values are
// bit-identical; quantization is plain round-to-nearest.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/quant.h"
#include "tensor/quant_blocks.h"
#include "tensor/quant_codec_util.h"
#include "tensor/quant_rows.h"

namespace omnibus::quant_detail {
namespace {

// Nibbles of element j (low) and j + 16 (high) for j < 16.
uint8_t nibble_pair(int lo, int hi) { return static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4)); }

}  // namespace

void dequantize_q4_0(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ4_0*>(src) + b;
    const float d = load_f16(blk->d);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>((blk->qs[j] & 0x0F) - 8) * d;
      y[j + kQK / 2] = static_cast<float>((blk->qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ4_1*>(src) + b;
    const float d = load_f16(blk->d);
    const float m = load_f16(blk->m);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(blk->qs[j] & 0x0F) * d + m;
      y[j + kQK / 2] = static_cast<float>(blk->qs[j] >> 4) * d + m;
    }
  }
}

namespace {
// The 5-bit codes of one Q5 block: four low bits from qs, the fifth from qh.
void q5_codes(const uint8_t* qs, const uint8_t* qh_bytes, int* q) {
  const uint32_t qh = load_u32le(qh_bytes);
  for (int j = 0; j < kQK / 2; ++j) {
    q[j] = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
    q[j + kQK / 2] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + kQK / 2)) & 1) << 4);
  }
}

void pack_q5(const int* q, uint8_t* qs, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    qs[j] = nibble_pair(q[j], q[j + kQK / 2]);
    qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((q[j + kQK / 2] >> 4) & 1) << (j + kQK / 2);
  }
  for (int i = 0; i < 4; ++i) qh_bytes[i] = static_cast<uint8_t>(qh >> (8 * i));
}
}  // namespace

void dequantize_q5_0(const uint8_t* src, float* dst, int64_t n) {
  int q[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ5_0*>(src) + b;
    const float d = load_f16(blk->d);
    q5_codes(blk->qs, blk->qh, q);
    for (int j = 0; j < kQK; ++j) dst[b * kQK + j] = static_cast<float>(q[j] - 16) * d;
  }
}

void dequantize_q5_1(const uint8_t* src, float* dst, int64_t n) {
  int q[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ5_1*>(src) + b;
    const float d = load_f16(blk->d);
    const float m = load_f16(blk->m);
    q5_codes(blk->qs, blk->qh, q);
    for (int j = 0; j < kQK; ++j) dst[b * kQK + j] = static_cast<float>(q[j]) * d + m;
  }
}

void dequantize_q8_0(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const auto* blk = reinterpret_cast<const BlockQ8_0*>(src) + b;
    const float d = load_f16(blk->d);
    for (int j = 0; j < kQK; ++j) dst[b * kQK + j] = static_cast<float>(blk->qs[j]) * d;
  }
}

// Symmetric types put the largest-magnitude value at code 0 (value -half*d)
// so its sign is kept exactly; the others get round-to-nearest codes.
void quantize_q4_0(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* x = src + b * kQK;
    auto* blk = reinterpret_cast<BlockQ4_0*>(dst) + b;
    const float d = store_f16(blk->d, signed_absmax(x, kQK) / -8.0f);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQK / 2; ++j)
      blk->qs[j] = nibble_pair(clamp_int(x[j] * id, -8, 7) + 8, clamp_int(x[j + kQK / 2] * id, -8, 7) + 8);
  }
}

void quantize_q5_0(const float* src, uint8_t* dst, int64_t n) {
  int q[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* x = src + b * kQK;
    auto* blk = reinterpret_cast<BlockQ5_0*>(dst) + b;
    const float d = store_f16(blk->d, signed_absmax(x, kQK) / -16.0f);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQK; ++j) q[j] = clamp_int(x[j] * id, -16, 15) + 16;
    pack_q5(q, blk->qs, blk->qh);
  }
}

namespace {
// Affine types: codes 0..levels map [min, max]; the stored (rounded) d and m
// are used for the codes so that rounding of the scale does not bias them.
void affine_codes(const float* x, int levels, uint8_t* d_out, uint8_t* m_out, int* q) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < kQK; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  const float d = store_f16(d_out, (hi - lo) / static_cast<float>(levels));
  const float m = store_f16(m_out, lo);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK; ++j) q[j] = clamp_int((x[j] - m) * id, 0, levels);
}
}  // namespace

void quantize_q4_1(const float* src, uint8_t* dst, int64_t n) {
  int q[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    auto* blk = reinterpret_cast<BlockQ4_1*>(dst) + b;
    affine_codes(src + b * kQK, 15, blk->d, blk->m, q);
    for (int j = 0; j < kQK / 2; ++j) blk->qs[j] = nibble_pair(q[j], q[j + kQK / 2]);
  }
}

void quantize_q5_1(const float* src, uint8_t* dst, int64_t n) {
  int q[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    auto* blk = reinterpret_cast<BlockQ5_1*>(dst) + b;
    affine_codes(src + b * kQK, 31, blk->d, blk->m, q);
    pack_q5(q, blk->qs, blk->qh);
  }
}

void quantize_q8_0(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* x = src + b * kQK;
    auto* blk = reinterpret_cast<BlockQ8_0*>(dst) + b;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = store_f16(blk->d, amax / 127.0f);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQK; ++j) blk->qs[j] = static_cast<int8_t>(clamp_int(x[j] * id, -127, 127));
  }
}

}  // namespace omnibus::quant_detail
