// NEON matmul for quantized weights in row layout against int8 activations
// (matmul_internal.h), for aarch64. Included by matmul_neon.cpp (plain
// ARMv8-A: the integer dots by vmull_s8 + vpadalq_s16),
// matmul_neondot.cpp (+dotprod: by sdot, vdotq_s32) and matmul_neoni8mm.cpp
// (+i8mm: batch tiles of four x rows by smmla); all give the same integers,
// so the same bits. Everything here sits in an anonymous
// namespace: each file gets its own copy, built with its own flags.
//
// Each output gets exactly the arithmetic of the avx2 kernels
// (matmul_q8_kernels.h), so the neon table's matmuls give the avx2 table's
// bits:
//  * legacy types, per 32-block b in order: S = the exact integer sum of
//      code * q_x (Q4_0 / Q5_0 with the code bias taken off),
//      acc = fma(float(S), d_w[b] * d_x[b], acc),
//      acc_m = fma(m_w[b], d_x[b] * sum(q_x[b]), acc_m) (Q4_1 / Q5_1);
//    y = acc (+ acc_m);
//  * K types, per 256-block in order: S = the exact integer sum of the
//    scale-weighted code products (Q6_K: codes - 32), acc = fma(float(S),
//    d_w * d_x, acc), then for Q4_K / Q5_K acc = fma(float(M), -dmin_w *
//    d_x, acc) with M the exact sum of the sub-block mins times the x
//    sub-block sums; y = acc.
// The integers come from vmull_s8 (int8 x int8 -> int16, exact) and
// vpadalq_s16 (pairs into int32), or from sdot (four products into each
// int32 lane), so any way of summing them gives the same S; codes are made signed first (Q4_0's nibble - 8 and so on),
// which folds the code bias into the products instead of subtracting bias * sum(q_x) afterwards: the same integer.
//
// Tiles: four weight rows side by side in one 4-lane accumulator (a tile
// with fewer rows repeats its last row and drops the extra lanes), against
// one x row, or four at a time in batches so each weight block is unpacked
// once per four x rows. Which tile an output sits in never changes it.
// Weights stay in row layout (the table has no interleaved kernels).
#pragma once

#include <arm_neon.h>

#include <algorithm>
#include <type_traits>

#include "kernels/matmul_internal.h"
#include "tensor/quant_blocks.h"

namespace omnibus::matmul_detail {
namespace {

// f16 bits of four rows' scales as floats (exact).
inline float32x4_t f16x4(const uint16_t bits[4]) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(bits))); }

// Exact int32 lane sums of 16 / 32 int8 products (which products go to
// which lane differs between the two forms; only the lanes' total is used).
inline int32x4_t dot16(int8x16_t c, const int8_t* x) {
  const int8x16_t xv = vld1q_s8(x);
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(vdupq_n_s32(0), c, xv);
#else
  return vpadalq_s16(vpaddlq_s16(vmull_s8(vget_low_s8(c), vget_low_s8(xv))), vmull_high_s8(c, xv));
#endif
}
inline int32x4_t dot32(int8x16_t c0, int8x16_t c1, const int8_t* x) {
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(vdotq_s32(vdupq_n_s32(0), c0, vld1q_s8(x)), c1, vld1q_s8(x + 16));
#else
  return vaddq_s32(dot16(c0, x), dot16(c1, x + 16));
#endif
}

// Four rows' lane sums reduced: lane j = the sum of v[j]'s lanes.
inline int32x4_t reduce4(const int32x4_t v[4]) { return vpaddq_s32(vpaddq_s32(v[0], v[1]), vpaddq_s32(v[2], v[3])); }

// Low and high nibbles of 16 bytes: elements 0..15 and 16..31 of a legacy
// 4-bit block.
struct Halves {
  int8x16_t lo, hi;
};
inline Halves nibbles(const uint8_t* qs) {
  const uint8x16_t packed = vld1q_u8(qs);
  return {vreinterpretq_s8_u8(vandq_u8(packed, vdupq_n_u8(0x0F))), vreinterpretq_s8_u8(vshrq_n_u8(packed, 4))};
}

// 0x10 in byte j where bit j of the 16-bit word is set.
inline int8x16_t fifth_bits16(uint32_t bits) {
  const uint8x16_t spread =
      vcombine_u8(vdup_n_u8(static_cast<uint8_t>(bits)), vdup_n_u8(static_cast<uint8_t>(bits >> 8)));
  static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  return vreinterpretq_s8_u8(vandq_u8(vtstq_u8(spread, vld1q_u8(kBit)), vdupq_n_u8(0x10)));
}

// ---- legacy 32-element blocks: signed codes, d and m bits per block.

struct LegacyBase {
  static constexpr bool kSuper = false, kMins = false;
};

struct KernQ4_0 : LegacyBase {
  static constexpr bool kAffine = false;
  using Block = BlockQ4_0;
  static Halves codes(const Block& b) {
    const Halves n = nibbles(b.qs);
    return {vsubq_s8(n.lo, vdupq_n_s8(8)), vsubq_s8(n.hi, vdupq_n_s8(8))};
  }
};

struct KernQ4_1 : LegacyBase {
  static constexpr bool kAffine = true;
  using Block = BlockQ4_1;
  static Halves codes(const Block& b) { return nibbles(b.qs); }
};

struct KernQ5_0 : LegacyBase {
  static constexpr bool kAffine = false;
  using Block = BlockQ5_0;
  static Halves codes(const Block& b) {
    const Halves n = nibbles(b.qs);
    const uint32_t qh = load_u32le(b.qh);
    return {vsubq_s8(vorrq_s8(n.lo, fifth_bits16(qh)), vdupq_n_s8(16)),
            vsubq_s8(vorrq_s8(n.hi, fifth_bits16(qh >> 16)), vdupq_n_s8(16))};
  }
};

struct KernQ5_1 : LegacyBase {
  static constexpr bool kAffine = true;
  using Block = BlockQ5_1;
  static Halves codes(const Block& b) {
    const Halves n = nibbles(b.qs);
    const uint32_t qh = load_u32le(b.qh);
    return {vorrq_s8(n.lo, fifth_bits16(qh)), vorrq_s8(n.hi, fifth_bits16(qh >> 16))};
  }
};

struct KernQ8_0 : LegacyBase {
  static constexpr bool kAffine = false;
  using Block = BlockQ8_0;
  static Halves codes(const Block& b) { return {vld1q_s8(b.qs), vld1q_s8(b.qs + 16)}; }
};

template <class K>
const typename K::Block& block_at(const uint8_t* row, int64_t b) {
  return reinterpret_cast<const typename K::Block*>(row)[b];
}

// What one block of four weight rows contributes, for MR x rows.
template <int MR>
struct BlockTerms {
  int32x4_t s[MR];     // lane j: S of weight row j
  int32x4_t mins[MR];  // K types with mins: M of weight row j
  float32x4_t d, m;    // d_w; m_w (legacy affine) or -dmin_w (K with mins)
};

// Block b of four weight rows: their codes, and d (and m) into t.
template <class K, int MR>
void legacy_block(const uint8_t* const rows[4], int64_t b, Halves c[4], BlockTerms<MR>* t) {
  uint16_t d_bits[4], m_bits[4] = {};
  for (int j = 0; j < 4; ++j) {
    const auto& blk = block_at<K>(rows[j], b);
    c[j] = K::codes(blk);
    d_bits[j] = load_u16le(blk.d);
    if constexpr (K::kAffine) m_bits[j] = load_u16le(blk.m);
  }
  t->d = f16x4(d_bits);
  t->m = f16x4(m_bits);
}

template <class K, int MR>
void legacy_terms(const uint8_t* const rows[4], int64_t b, const int8_t* const xb[MR], BlockTerms<MR>* t) {
  Halves c[4];
  legacy_block<K>(rows, b, c, t);
  for (int i = 0; i < MR; ++i) {
    int32x4_t lanes[4];
    for (int j = 0; j < 4; ++j) lanes[j] = dot32(c[j].lo, c[j].hi, xb[i]);
    t->s[i] = reduce4(lanes);
  }
}

// ---- K-quant 256-element blocks.

struct KBase {
  static constexpr bool kSuper = true, kAffine = false;
};

// Q4_K / Q5_K: eight sub-blocks of 32 with 6-bit scales and mins.
template <bool kFive>
struct KernQ45_K : KBase {
  static constexpr bool kMins = true;
  using Block = std::conditional_t<kFive, BlockQ5_K, BlockQ4_K>;
  // Codes of sub-block j as two halves (elements 0..15, 16..31).
  static void codes(const Block& blk, Halves out[8]) {
    for (int pair = 0; pair < 4; ++pair) {
      for (int h = 0; h < 2; ++h) {
        const uint8_t* qs = blk.qs + 32 * pair + 16 * h;
        const uint8x16_t packed = vld1q_u8(qs);
        const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(packed, vdupq_n_u8(0x0F)));
        const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(packed, 4));
        int8x16_t* even = h == 0 ? &out[2 * pair].lo : &out[2 * pair].hi;
        int8x16_t* odd = h == 0 ? &out[2 * pair + 1].lo : &out[2 * pair + 1].hi;
        *even = lo, *odd = hi;
      }
    }
    if constexpr (kFive) {
      // Bit j of qh[l] is bit 4 of element l of sub-block j.
      const uint8x16_t qh[2] = {vld1q_u8(blk.qh), vld1q_u8(blk.qh + 16)};
      for (int j = 0; j < 8; ++j) {
        const int8x16_t shift = vdupq_n_s8(static_cast<int8_t>(4 - j));  // bit j to bit 4
        const auto fifth = [&](uint8x16_t h) {
          return vreinterpretq_s8_u8(vandq_u8(vshlq_u8(h, shift), vdupq_n_u8(0x10)));
        };
        out[j].lo = vorrq_s8(out[j].lo, fifth(qh[0]));
        out[j].hi = vorrq_s8(out[j].hi, fifth(qh[1]));
      }
    }
  }
};

template <class K, int MR>
void k45_terms(const uint8_t* const rows[4], int64_t b, const int8_t* const xb[MR], const int16_t* const sums[MR],
               BlockTerms<MR>* t) {
  uint16_t d_bits[4], dmin_bits[4];
  int32_t s[MR][4], m[MR][4];
  for (int j = 0; j < 4; ++j) {
    const auto& blk = block_at<K>(rows[j], b);
    d_bits[j] = load_u16le(blk.d);
    dmin_bits[j] = load_u16le(blk.dmin);
    uint8_t sc[8], mn[8];
    for (int k = 0; k < 8; ++k) k_scale_min(k, blk.scales, &sc[k], &mn[k]);
    Halves c[8];
    K::codes(blk, c);
    for (int i = 0; i < MR; ++i) {
      int32x4_t lanes = vdupq_n_s32(0);
      int32_t mins = 0;
      for (int k = 0; k < 8; ++k) {
        lanes = vmlaq_n_s32(lanes, dot32(c[k].lo, c[k].hi, xb[i] + 32 * k), sc[k]);
        mins += mn[k] * (sums[i][2 * k] + sums[i][2 * k + 1]);
      }
      s[i][j] = vaddvq_s32(lanes);
      m[i][j] = mins;
    }
  }
  t->d = f16x4(d_bits);
  t->m = vnegq_f32(f16x4(dmin_bits));
  for (int i = 0; i < MR; ++i) t->s[i] = vld1q_s32(s[i]), t->mins[i] = vld1q_s32(m[i]);
}

struct KernQ6_K : KBase {
  static constexpr bool kMins = false;
  using Block = BlockQ6_K;
  // Codes - 32 (signed, -32..31) of the block's 16 groups of 16 elements,
  // group 8 * half + 2 * g (+1 for the second 16) of element 128 * half +
  // 32 * g + l (BlockQ6_K's layout).
  static void codes(const Block& blk, int8x16_t out[16]) {
    for (int half = 0; half < 2; ++half) {
      for (int g = 0; g < 4; ++g) {
        for (int part = 0; part < 2; ++part) {
          const uint8x16_t ql = vld1q_u8(blk.ql + 64 * half + 32 * (g & 1) + 16 * part);
          const uint8x16_t qh = vld1q_u8(blk.qh + 32 * half + 16 * part);
          const uint8x16_t lo = g < 2 ? vandq_u8(ql, vdupq_n_u8(0x0F)) : vshrq_n_u8(ql, 4);
          const int8x16_t shift = vdupq_n_s8(static_cast<int8_t>(4 - 2 * g));  // bits 2g, 2g+1 to 4, 5
          const uint8x16_t hi = vandq_u8(vshlq_u8(qh, shift), vdupq_n_u8(0x30));
          out[8 * half + 2 * g + part] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, hi)), vdupq_n_s8(32));
        }
      }
    }
  }
};

template <int MR>
void q6k_terms(const uint8_t* const rows[4], int64_t b, const int8_t* const xb[MR], BlockTerms<MR>* t) {
  uint16_t d_bits[4];
  int32_t s[MR][4];
  for (int j = 0; j < 4; ++j) {
    const auto& blk = block_at<KernQ6_K>(rows[j], b);
    d_bits[j] = load_u16le(blk.d);
    int8x16_t c[16];
    KernQ6_K::codes(blk, c);
    for (int i = 0; i < MR; ++i) {
      int32x4_t lanes = vdupq_n_s32(0);
      for (int g = 0; g < 16; ++g) lanes = vmlaq_n_s32(lanes, dot16(c[g], xb[i] + 16 * g), blk.scales[g]);
      s[i][j] = vaddvq_s32(lanes);
    }
  }
  t->d = f16x4(d_bits);
  for (int i = 0; i < MR; ++i) t->s[i] = vld1q_s32(s[i]);
}

#if defined(__ARM_FEATURE_MATMUL_INT8)
// ---- i8mm: four weight rows against four x rows (batches) by smmla, which
// multiplies a 2x8 int8 block by another's transpose into 2x2 int32:
// lanes (w0.x0, w0.x1, w1.x0, w1.x1) for weight rows w0, w1 and x rows x0,
// x1, eight elements of each. A pair of weight rows against a pair of x
// rows takes one instruction per eight elements where sdot takes four.
// The same exact integers as dot16/dot32.

// Eight-element chunks of rows a and b side by side: elements 0..7 of each
// (lo), 8..15 of each (hi).
inline int8x16_t chunk_pair_lo(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
inline int8x16_t chunk_pair_hi(int8x16_t a, int8x16_t b) {
  return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}

// x rows 2p and 2p + 1 of four, `n` elements, as chunk pairs:
// out[p * n / 8 + k] holds chunk k (elements 8k..8k+7) of both.
template <int n>
void x_chunk_pairs(const int8_t* const xb[4], int8x16_t* out) {
  for (int p = 0; p < 2; ++p) {
    for (int v = 0; v < n / 16; ++v) {
      const int8x16_t a = vld1q_s8(xb[2 * p] + 16 * v), b = vld1q_s8(xb[2 * p + 1] + 16 * v);
      out[p * n / 8 + 2 * v] = chunk_pair_lo(a, b);
      out[p * n / 8 + 2 * v + 1] = chunk_pair_hi(a, b);
    }
  }
}

// acc + the 2x2 sums over 16 elements of weight rows w0, w1 (codes) against
// the x pair's two chunk pairs at xp.
inline int32x4_t mmla16(int32x4_t acc, int8x16_t w0, int8x16_t w1, const int8x16_t* xp) {
  acc = vmmlaq_s32(acc, chunk_pair_lo(w0, w1), xp[0]);
  return vmmlaq_s32(acc, chunk_pair_hi(w0, w1), xp[1]);
}

// The four x rows' S lanes from the 2x2 results acc[weight pair][x pair].
inline void s_from_pairs(const int32x4_t acc[2][2], int32x4_t s[4]) {
  for (int ip = 0; ip < 2; ++ip) {
    s[2 * ip] = vuzp1q_s32(acc[0][ip], acc[1][ip]);
    s[2 * ip + 1] = vuzp2q_s32(acc[0][ip], acc[1][ip]);
  }
}

// A 2x2 result's lanes scaled per weight row: (a, a, b, b).
inline int32x4_t row_pair_scale(int32_t a, int32_t b) { return vcombine_s32(vdup_n_s32(a), vdup_n_s32(b)); }

// The four x rows' S lanes of a 256-element block given as 16 groups of 16
// codes a weight row, group g of row j weighted by scale(j, g).
template <class Scale>
void scaled_groups_mmla(const int8x16_t groups[4][16], Scale scale, const int8_t* const xb[4], int32x4_t s[4]) {
  int8x16_t xp[2][32];
  x_chunk_pairs<256>(xb, &xp[0][0]);
  int32x4_t acc[2][2];
  for (int jp = 0; jp < 2; ++jp) {
    for (int ip = 0; ip < 2; ++ip) {
      acc[jp][ip] = vdupq_n_s32(0);
      for (int g = 0; g < 16; ++g) {
        const int32x4_t sub = mmla16(vdupq_n_s32(0), groups[2 * jp][g], groups[2 * jp + 1][g], &xp[ip][2 * g]);
        acc[jp][ip] = vmlaq_s32(acc[jp][ip], sub, row_pair_scale(scale(2 * jp, g), scale(2 * jp + 1, g)));
      }
    }
  }
  s_from_pairs(acc, s);
}

template <class K>
void legacy_terms_mmla(const uint8_t* const rows[4], int64_t b, const int8_t* const xb[4], BlockTerms<4>* t) {
  Halves c[4];
  legacy_block<K>(rows, b, c, t);
  int8x16_t xp[2][4];
  x_chunk_pairs<32>(xb, &xp[0][0]);
  int32x4_t acc[2][2];
  for (int jp = 0; jp < 2; ++jp) {
    for (int ip = 0; ip < 2; ++ip) {
      acc[jp][ip] = mmla16(vdupq_n_s32(0), c[2 * jp].lo, c[2 * jp + 1].lo, &xp[ip][0]);
      acc[jp][ip] = mmla16(acc[jp][ip], c[2 * jp].hi, c[2 * jp + 1].hi, &xp[ip][2]);
    }
  }
  s_from_pairs(acc, t->s);
}

template <class K>
void k45_terms_mmla(const uint8_t* const rows[4], int64_t b, const int8_t* const xb[4], const int16_t* const sums[4],
                    BlockTerms<4>* t) {
  uint16_t d_bits[4], dmin_bits[4];
  uint8_t sc[4][8], mn[4][8];
  Halves c[4][8];
  for (int j = 0; j < 4; ++j) {
    const auto& blk = block_at<K>(rows[j], b);
    d_bits[j] = load_u16le(blk.d);
    dmin_bits[j] = load_u16le(blk.dmin);
    for (int k = 0; k < 8; ++k) k_scale_min(k, blk.scales, &sc[j][k], &mn[j][k]);
    K::codes(blk, c[j]);
  }
  int8x16_t groups[4][16];  // sub-block k's halves are groups 2k and 2k + 1, both of scale sc[k]
  for (int j = 0; j < 4; ++j)
    for (int k = 0; k < 8; ++k) groups[j][2 * k] = c[j][k].lo, groups[j][2 * k + 1] = c[j][k].hi;
  scaled_groups_mmla(
      groups, [&sc](int j, int g) { return static_cast<int32_t>(sc[j][g / 2]); }, xb, t->s);
  for (int i = 0; i < 4; ++i) {
    int32_t m[4];
    for (int j = 0; j < 4; ++j) {
      m[j] = 0;
      for (int k = 0; k < 8; ++k) m[j] += mn[j][k] * (sums[i][2 * k] + sums[i][2 * k + 1]);
    }
    t->mins[i] = vld1q_s32(m);
  }
  t->d = f16x4(d_bits);
  t->m = vnegq_f32(f16x4(dmin_bits));
}

inline void q6k_terms_mmla(const uint8_t* const rows[4], int64_t b, const int8_t* const xb[4], BlockTerms<4>* t) {
  uint16_t d_bits[4];
  const int8_t* scales[4];
  int8x16_t c[4][16];
  for (int j = 0; j < 4; ++j) {
    const auto& blk = block_at<KernQ6_K>(rows[j], b);
    d_bits[j] = load_u16le(blk.d);
    scales[j] = blk.scales;
    KernQ6_K::codes(blk, c[j]);
  }
  scaled_groups_mmla(
      c, [&scales](int j, int g) { return static_cast<int32_t>(scales[j][g]); }, xb, t->s);
  t->d = f16x4(d_bits);
}
#endif  // __ARM_FEATURE_MATMUL_INT8

// Outputs y[r0 + i][o + j] for i < MR and j < nr (nr <= 4), with the
// arithmetic at the top of this file.
template <class K, int MR>
void tile(const MatmulArgs& a, int64_t o, int nr, int64_t r0) {
  const WeightMatrix& w = *a.w;
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  const int block = K::kSuper ? kQK_K : kQK;
  const uint8_t* rows[4];
  for (int j = 0; j < 4; ++j)
    rows[j] = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(o + std::min(j, nr - 1)) * w.row_bytes;
  float32x4_t acc[MR], acc_m[MR];
  for (int i = 0; i < MR; ++i) acc[i] = acc_m[i] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < blocks; ++b) {
    const int8_t* xb[MR];
    const int16_t* sums[MR];
    for (int i = 0; i < MR; ++i) {
      const int64_t xi = (r0 + i) * blocks + b;
      xb[i] = qx.q.data() + xi * block;
      if constexpr (K::kSuper) sums[i] = qx.sums16.data() + xi * 16;
    }
    BlockTerms<MR> t;
#if defined(__ARM_FEATURE_MATMUL_INT8)
    constexpr bool kMmla = MR == 4;
#else
    constexpr bool kMmla = false;
#endif
    if constexpr (kMmla) {
#if defined(__ARM_FEATURE_MATMUL_INT8)
      if constexpr (!K::kSuper) {
        legacy_terms_mmla<K>(rows, b, xb, &t);
      } else if constexpr (K::kMins) {
        k45_terms_mmla<K>(rows, b, xb, sums, &t);
      } else {
        q6k_terms_mmla(rows, b, xb, &t);
      }
#endif
    } else if constexpr (!K::kSuper) {
      legacy_terms<K, MR>(rows, b, xb, &t);
    } else if constexpr (K::kMins) {
      k45_terms<K, MR>(rows, b, xb, sums, &t);
    } else {
      q6k_terms<MR>(rows, b, xb, &t);
    }
    for (int i = 0; i < MR; ++i) {
      const int64_t xi = (r0 + i) * blocks + b;
      const float dx = qx.scale[static_cast<size_t>(xi)];
      acc[i] = vfmaq_f32(acc[i], vcvtq_f32_s32(t.s[i]), vmulq_n_f32(t.d, dx));
      if constexpr (K::kAffine) acc_m[i] = vfmaq_n_f32(acc_m[i], t.m, qx.scaled_sum[static_cast<size_t>(xi)]);
      if constexpr (K::kMins) acc[i] = vfmaq_f32(acc[i], vcvtq_f32_s32(t.mins[i]), vmulq_n_f32(t.m, dx));
    }
  }
  for (int i = 0; i < MR; ++i) {
    float out[4];
    vst1q_f32(out, K::kAffine ? vaddq_f32(acc[i], acc_m[i]) : acc[i]);
    for (int j = 0; j < nr; ++j) a.y[(r0 + i) * w.rows + o + j] = out[j];
  }
}

// Four x rows at a time once there are four: each weight block's codes
// serve all four.
constexpr int kBatchTileX = 4;

template <class K>
void q8_rows(const MatmulArgs& a, int64_t begin, int64_t end) {
  for (int64_t o = begin; o < end; o += 4) {
    const int nr = static_cast<int>(std::min<int64_t>(4, end - o));
    int64_t r = 0;
    for (; r + kBatchTileX <= a.n_x; r += kBatchTileX) tile<K, kBatchTileX>(a, o, nr, r);
    for (; r < a.n_x; ++r) tile<K, 1>(a, o, nr, r);
  }
}

// The row-layout kernels for every type they cover, the scalar reference for
// the rest.
void neon_q8_rows_any(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.w->dtype) {
    case DType::kQ4_0: return q8_rows<KernQ4_0>(a, row_begin, row_end);
    case DType::kQ4_1: return q8_rows<KernQ4_1>(a, row_begin, row_end);
    case DType::kQ5_0: return q8_rows<KernQ5_0>(a, row_begin, row_end);
    case DType::kQ5_1: return q8_rows<KernQ5_1>(a, row_begin, row_end);
    case DType::kQ8_0: return q8_rows<KernQ8_0>(a, row_begin, row_end);
    case DType::kQ4_K: return q8_rows<KernQ45_K<false>>(a, row_begin, row_end);
    case DType::kQ5_K: return q8_rows<KernQ45_K<true>>(a, row_begin, row_end);
    case DType::kQ6_K: return q8_rows<KernQ6_K>(a, row_begin, row_end);
    default: return rows_scalar(a, row_begin, row_end);
  }
}

}  // namespace
}  // namespace omnibus::matmul_detail
