// Row-layout int8 matmul kernels for quantized weights against int8
// activations (see matmul_internal.h), included by one source file per
// instruction set: matmul_q8_avx2.cpp (-mavx2 -mfma -mf16c),
// matmul_q8_avxvnni.cpp (the same plus -mavxvnni) and
// matmul_q8_avx512vnni.cpp (AVX-512 BW, VL, VNNI: the EVEX forms), reached
// only through the kernel table after a run-time CPU check. Internal linkage, as
// matmul_interleaved_kernels.h: each file keeps its own copy. With
// AVX-VNNI the exact integer sums come from vpdpbusd (legacy blocks: four
// u8 x s8 products per int32 lane) and vpdpwssd (K blocks: the int16 pair
// sums times the sub-block scale, added in one instruction) instead of
// vpmaddwd and vpaddd; the integers are the same, so are the outputs.
//
// Batch invariance: one tile kernel per type serves every x-row count (MR x
// rows by NR weight rows at a time), and each output's arithmetic is the same
// whatever tile it sits in:
//  * legacy types, per 32-block b in order:
//      S = exact int32 sum of code * q_x over the block (minus
//          bias * sum(q_x) for Q4_0 / Q5_0),
//      acc = fma(float(S), d_w[b] * d_x[b], acc);
//      acc_m = fma(m_w[b], d_x[b] * sum(q_x[b]), acc_m) for Q4_1 / Q5_1;
//    y = acc [+ acc_m]. One scalar chain per output (four outputs to a
//    4-lane vector), so a block costs one convert and one FMA per four
//    outputs, and nothing is left to reduce at the end of a row;
//  * K types, per 256-block in order: S = exact int32 sum of the
//    scale-weighted code products, acc = fma(float(S), d_w * d_x, acc), then
//    for Q4_K / Q5_K acc = fma(float(M), -dmin_w * d_x, acc) with M the
//    exact sum of the sub-block mins times the x sub-block sums; y = acc.
// Integer parts are exact (no int16 saturation is reachable: the largest
// pair sum is 2 * 128 * 127 for Q8_0), so only the float steps above round.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/matmul_avx2_common.h"
#include "kernels/matmul_internal.h"
#include "kernels/weight_prefetch.h"
#include "tensor/quant_blocks.h"

namespace omnibus::matmul_detail {
namespace {

using namespace matmul_avx2;

inline float f16_at(const uint8_t* p) { return _cvtsh_ss(load_u16le(p)); }

// 16 bytes of nibbles as 32 codes in element order: low nibbles of qs[0..16)
// then high nibbles (the layout of every legacy 4-bit block).
inline __m256i legacy_nibbles(const uint8_t* qs) {
  const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m256i shifted = _mm256_srlv_epi64(both, _mm256_setr_epi64x(0, 0, 4, 4));
  return _mm256_and_si256(shifted, _mm256_set1_epi8(0x0F));
}

// Byte j = 0x10 where bit j of the 32-bit word is set, else 0.
inline __m256i fifth_bits(uint32_t word) {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(word)),
      _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

// ---- legacy 32-element blocks --------------------------------------------

// Per legacy type: the 32 codes of block b as unsigned bytes in element
// order (Q8_0: magnitudes, with the signed bytes in `signs`), and the raw f16
// bits of its scale d (low half) and offset m (high half; 0 when the type
// has none).
struct LegacyCodes {
  __m256i codes;
  __m256i signs;
};

struct KernQ4_0 {
  static constexpr bool kSuper = false;
  static constexpr bool kBias = true, kAffine = false, kSigned = false;
  static LegacyCodes codes(const uint8_t* row, int64_t b) {
    return {legacy_nibbles((reinterpret_cast<const BlockQ4_0*>(row) + b)->qs), _mm256_setzero_si256()};
  }
  static uint32_t dm_bits(const uint8_t* row, int64_t b) {
    return load_u16le((reinterpret_cast<const BlockQ4_0*>(row) + b)->d);
  }
};

struct KernQ4_1 {
  static constexpr bool kSuper = false;
  static constexpr bool kBias = false, kAffine = true, kSigned = false;
  static LegacyCodes codes(const uint8_t* row, int64_t b) {
    return {legacy_nibbles((reinterpret_cast<const BlockQ4_1*>(row) + b)->qs), _mm256_setzero_si256()};
  }
  static uint32_t dm_bits(const uint8_t* row, int64_t b) {
    return load_u32le((reinterpret_cast<const BlockQ4_1*>(row) + b)->d);  // d then m
  }
};

struct KernQ5_0 {
  static constexpr bool kSuper = false;
  static constexpr bool kBias = true, kAffine = false, kSigned = false;
  static LegacyCodes codes(const uint8_t* row, int64_t b) {
    const auto* blk = reinterpret_cast<const BlockQ5_0*>(row) + b;
    return {_mm256_or_si256(legacy_nibbles(blk->qs), fifth_bits(load_u32le(blk->qh))), _mm256_setzero_si256()};
  }
  static uint32_t dm_bits(const uint8_t* row, int64_t b) {
    return load_u16le((reinterpret_cast<const BlockQ5_0*>(row) + b)->d);
  }
};

struct KernQ5_1 {
  static constexpr bool kSuper = false;
  static constexpr bool kBias = false, kAffine = true, kSigned = false;
  static LegacyCodes codes(const uint8_t* row, int64_t b) {
    const auto* blk = reinterpret_cast<const BlockQ5_1*>(row) + b;
    return {_mm256_or_si256(legacy_nibbles(blk->qs), fifth_bits(load_u32le(blk->qh))), _mm256_setzero_si256()};
  }
  static uint32_t dm_bits(const uint8_t* row, int64_t b) {
    return load_u32le((reinterpret_cast<const BlockQ5_1*>(row) + b)->d);  // d then m
  }
};

struct KernQ8_0 {
  static constexpr bool kSuper = false;
  static constexpr bool kBias = false, kAffine = false, kSigned = true;
  static LegacyCodes codes(const uint8_t* row, int64_t b) {
    const __m256i q = load256((reinterpret_cast<const BlockQ8_0*>(row) + b)->qs);
    return {_mm256_abs_epi8(q), q};
  }
  static uint32_t dm_bits(const uint8_t* row, int64_t b) {
    return load_u16le((reinterpret_cast<const BlockQ8_0*>(row) + b)->d);
  }
};

// Exact lane sums of code * q over 4-element groups.
template <class K>
inline __m256i legacy_lanes(const LegacyCodes& wc, const int8_t* xq) {
  __m256i xv = load256(xq);
  if constexpr (K::kSigned) xv = _mm256_sign_epi8(xv, wc.signs);
#if defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), wc.codes, xv);
#elif defined(OMNIBUS_YMM_VNNI)
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), wc.codes, xv);  // EVEX (AVX-512 VNNI + VL)
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(wc.codes, xv), _mm256_set1_epi16(1));
#endif
}

// acc + the products of one chunk of 32 codes with 32 x values, summed in
// pairs (int16: |2 x 63 x 127| fits, codes are at most 6 bits) and then
// weighted by the int16 scale in each pair of lanes: exact either way.
inline __m256i add_scaled_products(__m256i acc, __m256i codes, __m256i x, __m256i scale16) {
  return add_scaled_pairs(acc, _mm256_maddubs_epi16(codes, x), scale16);
}

// Four blocks' exact int32 lane sums reduced to one int32 each: lane t of
// the result = sum of the 8 lanes of v[t].
inline __m128i reduce4(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1), _mm256_hadd_epi32(v2, v3));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// f16 bits of the scale d (low half) and offset m (high half) of block b of
// NR weight rows, as floats: d in lanes 0..NR-1 of .d, m in those of .m
// (lanes past NR are 0).
struct RowScales {
  __m128 d, m;
};

template <class K, int NR>
inline RowScales row_scales(const uint8_t* rows, size_t row_bytes, int64_t b) {
  if constexpr (requires { K::kE8M0Scale; }) {
    // MXFP4's E8M0 exponents as mxfp4_scale makes them (tensor/quant_blocks.h).
    alignas(16) float d[4] = {};
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) d[j] = mxfp4_scale(K::exponent(rows + j * row_bytes, b));
    return {_mm_load_ps(d), _mm_setzero_ps()};
  } else {
    uint32_t bits[4] = {};
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) bits[j] = K::dm_bits(rows + j * row_bytes, b);
    const __m256 dm = _mm256_cvtph_ps(_mm_setr_epi32(static_cast<int>(bits[0]), static_cast<int>(bits[1]),
                                                     static_cast<int>(bits[2]), static_cast<int>(bits[3])));
    const __m128 lo = _mm256_castps256_ps128(dm), hi = _mm256_extractf128_ps(dm, 1);  // d0 m0 d1 m1 | d2 m2 d3 m3
    return {_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)), _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))};
  }
}

// Outputs y[r0 + i][o + j] for i < MR, j < NR, with MR = 1 (NR <= 4) or
// MR = 4 (NR <= 3). Every output gets the same arithmetic whatever the tile:
//   per block b in order: S = exact int32 sum of its code * q_x products
//   (minus the code bias times sum(q_x) for Q4_0 / Q5_0),
//     acc = fma(float(S), d_w[b] * d_x[b], acc);
//     acc_m = fma(m_w[b], d_x[b] * sum(q_x[b]), acc_m)   (Q4_1 / Q5_1 only);
//   y = acc (+ acc_m).
// Four outputs share one 4-lane vector: the MR = 1 tile puts its weight rows
// side by side, the MR = 4 tile its x rows.
template <class K, int MR, int NR>
void legacy_tile(const MatmulArgs& a, int64_t o, int64_t r0) {
  static_assert((MR == 1 && NR <= 4) || (MR == 4 && NR <= 3));
  const WeightMatrix& w = *a.w;
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  const size_t row_bytes = w.row_bytes;
  const uint8_t* rows = static_cast<const uint8_t*>(w.data) + o * row_bytes;
  const int8_t* xq = qx.q.data() + r0 * blocks * kQK;
  const float* xscale = qx.scale.data() + r0 * blocks;
  const float* xsum = K::kAffine ? qx.scaled_sum.data() + r0 * blocks : nullptr;
  const int32_t* xbias = K::kBias ? qx.bias_lanes.data() + r0 * blocks * 8 : nullptr;
  constexpr int kGroups = MR == 1 ? 1 : NR;
  __m128 acc[kGroups], acc_m[kGroups];
#pragma GCC unroll 4
  for (int g = 0; g < kGroups; ++g) acc[g] = acc_m[g] = _mm_setzero_ps();
  const NextTilePrefetch prefetch(rows, NR * row_bytes, blocks, 1);
  for (int64_t b = 0; b < blocks; ++b) {
    if constexpr (MR == 1) prefetch.part(b);
    const RowScales rs = row_scales<K, NR>(rows, row_bytes, b);
    if constexpr (MR == 1) {
      __m256i lanes[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                          _mm256_setzero_si256()};
#pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) {
        lanes[j] = legacy_lanes<K>(K::codes(rows + j * row_bytes, b), xq + b * kQK);
        if constexpr (K::kBias) lanes[j] = _mm256_sub_epi32(lanes[j], load256(xbias + b * 8));
      }
      const __m128i sums = reduce4(lanes[0], lanes[1], lanes[2], lanes[3]);
      acc[0] = _mm_fmadd_ps(_mm_cvtepi32_ps(sums), _mm_mul_ps(rs.d, _mm_set1_ps(xscale[b])), acc[0]);
      if constexpr (K::kAffine) acc_m[0] = _mm_fmadd_ps(rs.m, _mm_set1_ps(xsum[b]), acc_m[0]);
    } else {
      const __m128 dx = _mm_setr_ps(xscale[b], xscale[blocks + b], xscale[2 * blocks + b], xscale[3 * blocks + b]);
      alignas(16) float d[4], m[4];
      _mm_store_ps(d, rs.d);
      _mm_store_ps(m, rs.m);
      const __m128 sx = K::kAffine ? _mm_setr_ps(xsum[b], xsum[blocks + b], xsum[2 * blocks + b], xsum[3 * blocks + b])
                                   : _mm_setzero_ps();
#pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) {
        const LegacyCodes wc = K::codes(rows + j * row_bytes, b);
        __m256i lanes[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          const int64_t xb = i * blocks + b;
          lanes[i] = legacy_lanes<K>(wc, xq + xb * kQK);
          if constexpr (K::kBias) lanes[i] = _mm256_sub_epi32(lanes[i], load256(xbias + xb * 8));
        }
        const __m128i sums = reduce4(lanes[0], lanes[1], lanes[2], lanes[3]);
        acc[j] = _mm_fmadd_ps(_mm_cvtepi32_ps(sums), _mm_mul_ps(_mm_set1_ps(d[j]), dx), acc[j]);
        if constexpr (K::kAffine) acc_m[j] = _mm_fmadd_ps(_mm_set1_ps(m[j]), sx, acc_m[j]);
      }
    }
  }
  alignas(16) float out[kGroups][4];
#pragma GCC unroll 4
  for (int g = 0; g < kGroups; ++g) {
    _mm_store_ps(out[g], K::kAffine ? _mm_add_ps(acc[g], acc_m[g]) : acc[g]);
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) a.y[(r0 + i) * w.rows + o + j] = MR == 1 ? out[0][j] : out[j][i];
}

// ---- K-quant 256-element blocks ------------------------------------------

// Byte-shuffle controls: int16 lane k <- byte c (chunk scale), and int16
// lane k <- byte k / 2 (sub-block min for each 16-element sum).
inline __m256i int16_from_byte(int c) { return _mm256_set1_epi16(static_cast<int16_t>(0x8000 | c)); }
inline __m256i int16_pairs_from_bytes() {
  return _mm256_setr_epi8(0, -128, 0, -128, 1, -128, 1, -128, 2, -128, 2, -128, 3, -128, 3, -128, 4, -128, 4, -128, 5,
                          -128, 5, -128, 6, -128, 6, -128, 7, -128, 7, -128);
}

// The 6-bit scales and mins of a Q4_K / Q5_K block as 8 bytes each (same
// unpacking as k_scale_min, four sub-blocks per 32-bit word at a time).
struct KScales {
  __m256i scales;  // bytes 0..7 = scale of sub-block 0..7 (both halves)
  __m256i mins16;  // int16 lane k = min of sub-block k / 2
};

inline KScales k_scales(const uint8_t* packed) {
  const uint32_t u0 = load_u32le(packed), u1 = load_u32le(packed + 4), u2 = load_u32le(packed + 8);
  const uint32_t sc_lo = u0 & 0x3F3F3F3F, mn_lo = u1 & 0x3F3F3F3F;
  const uint32_t sc_hi = (u2 & 0x0F0F0F0F) | ((u0 >> 2) & 0x30303030);
  const uint32_t mn_hi = ((u2 >> 4) & 0x0F0F0F0F) | ((u1 >> 2) & 0x30303030);
  const __m256i sc =
      _mm256_broadcastsi128_si256(_mm_setr_epi32(static_cast<int>(sc_lo), static_cast<int>(sc_hi), 0, 0));
  const __m256i mn =
      _mm256_broadcastsi128_si256(_mm_setr_epi32(static_cast<int>(mn_lo), static_cast<int>(mn_hi), 0, 0));
  return {sc, _mm256_shuffle_epi8(mn, int16_pairs_from_bytes())};
}

struct KernQ4_K {
  static constexpr bool kSuper = true;
  static constexpr bool kMins = true;
  static constexpr int kCodeBiasShift = 0;
  // Adds the 8 chunks' scale-weighted products to lanes[i] for MR x rows.
  template <int MR>
  static void accumulate(const uint8_t* row, int64_t b, const int8_t* const* xq, __m256i* lanes, __m256i* mins16) {
    const auto* blk = reinterpret_cast<const BlockQ4_K*>(row) + b;
    const KScales s = k_scales(blk->scales);
    *mins16 = s.mins16;
    const __m256i low = _mm256_set1_epi8(0x0F);
#pragma GCC unroll 4
    for (int pair = 0; pair < 4; ++pair) {
      const __m256i packed = load256(blk->qs + 32 * pair);
      const __m256i codes[2] = {_mm256_and_si256(packed, low), _mm256_and_si256(_mm256_srli_epi16(packed, 4), low)};
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int c = 2 * pair + h;
        const __m256i scale = _mm256_shuffle_epi8(s.scales, int16_from_byte(c));
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i)
          lanes[i] = add_scaled_products(lanes[i], codes[h], load256(xq[i] + 32 * c), scale);
      }
    }
  }
  static float d(const uint8_t* row, int64_t b) { return f16_at((reinterpret_cast<const BlockQ4_K*>(row) + b)->d); }
  static float dmin(const uint8_t* row, int64_t b) {
    return f16_at((reinterpret_cast<const BlockQ4_K*>(row) + b)->dmin);
  }
};

struct KernQ5_K {
  static constexpr bool kSuper = true;
  static constexpr bool kMins = true;
  static constexpr int kCodeBiasShift = 0;
  template <int MR>
  static void accumulate(const uint8_t* row, int64_t b, const int8_t* const* xq, __m256i* lanes, __m256i* mins16) {
    const auto* blk = reinterpret_cast<const BlockQ5_K*>(row) + b;
    const KScales s = k_scales(blk->scales);
    *mins16 = s.mins16;
    const __m256i low = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const __m256i high = load256(blk->qh);
#pragma GCC unroll 4
    for (int pair = 0; pair < 4; ++pair) {
      const __m256i packed = load256(blk->qs + 32 * pair);
      const __m256i nib[2] = {_mm256_and_si256(packed, low), _mm256_and_si256(_mm256_srli_epi16(packed, 4), low)};
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int c = 2 * pair + h;
        const __m256i bit = _mm256_and_si256(_mm256_srl_epi16(high, _mm_cvtsi32_si128(c)), one);
        const __m256i codes = _mm256_or_si256(nib[h], _mm256_slli_epi16(bit, 4));
        const __m256i scale = _mm256_shuffle_epi8(s.scales, int16_from_byte(c));
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i)
          lanes[i] = add_scaled_products(lanes[i], codes, load256(xq[i] + 32 * c), scale);
      }
    }
  }
  static float d(const uint8_t* row, int64_t b) { return f16_at((reinterpret_cast<const BlockQ5_K*>(row) + b)->d); }
  static float dmin(const uint8_t* row, int64_t b) {
    return f16_at((reinterpret_cast<const BlockQ5_K*>(row) + b)->dmin);
  }
};

struct KernQ6_K {
  static constexpr bool kSuper = true;
  static constexpr bool kMins = false;
  static constexpr int kCodeBiasShift = 5;  // the codes' bias of 32, taken off by k_tile
  // Products of codes 0..63 weighted by the int8 scales; the -32 code bias
  // comes back as 32 * sum(scale * sum16(q_x)), returned through mins16's
  // slot as the 16 scales (int16) for the caller to apply.
  template <int MR>
  static void accumulate(const uint8_t* row, int64_t b, const int8_t* const* xq, __m256i* lanes, __m256i* scales16) {
    const auto* blk = reinterpret_cast<const BlockQ6_K*>(row) + b;
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->scales)));
    *scales16 = sc16;
    const __m256i low = _mm256_set1_epi8(0x0F), three = _mm256_set1_epi8(3);
    // int16 lanes 0..7 <- first int16 of the dword, 8..15 <- second.
    const __m256i split = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3,
                                           2, 3, 2, 3, 2, 3);
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const __m256i ql[2] = {load256(blk->ql + 64 * half), load256(blk->ql + 64 * half + 32)};
      const __m256i qh = load256(blk->qh + 32 * half);
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
        const int v = 4 * half + g;
        const __m256i lo =
            g < 2 ? _mm256_and_si256(ql[g & 1], low) : _mm256_and_si256(_mm256_srli_epi16(ql[g & 1], 4), low);
        const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * g)), three);
        const __m256i codes = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
        // Scales 2v (first 16 elements) and 2v + 1: dword v of sc16.
        const __m256i scale = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(sc16, _mm256_set1_epi32(v)), split);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i)
          lanes[i] = add_scaled_products(lanes[i], codes, load256(xq[i] + 32 * v), scale);
      }
    }
  }
  static float d(const uint8_t* row, int64_t b) { return f16_at((reinterpret_cast<const BlockQ6_K*>(row) + b)->d); }
  static float dmin(const uint8_t*, int64_t) { return 0.0f; }
};

}  // namespace
}  // namespace omnibus::matmul_detail

// Q2_K, Q3_K, IQ4_NL, MXFP4 and IQ4_XS, built from the helpers above.
#include "kernels/matmul_q8_lowbit.h"

namespace omnibus::matmul_detail {
namespace {

// Outputs of K-quant weights, tiles as legacy_tile's (MR = 1 with NR <= 4
// weight rows side by side in a 4-lane vector, or MR = 4 x rows side by
// side with NR <= 3). Per 256-block b in order, each output gets:
//   S = exact int32 sum of the block's scale-weighted code products (Q6_K,
//       Q3_K: minus 32 or 4 x the scale-weighted x sums, their code bias),
//   acc = fma(float(S), d_w[b] * d_x[b], acc);
//   Q2_K / Q4_K / Q5_K: M = exact int32 sum of the sub-block mins times the
//       sub-block x sums, acc = fma(float(M), -dmin_w[b] * d_x[b], acc);
//   y = acc.
// One scalar chain per output, so the interleaved kernels (lane r: weight
// row r; matmul_interleaved_kernels.h) reproduce it bit for bit.
template <class K, int MR, int NR>
void k_tile(const MatmulArgs& a, int64_t o, int64_t r0) {
  static_assert((MR == 1 && NR <= 4) || (MR == 4 && NR <= 3));
  const WeightMatrix& w = *a.w;
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  const size_t row_bytes = w.row_bytes;
  const uint8_t* rows = static_cast<const uint8_t*>(w.data) + o * row_bytes;
  const int8_t* xq = qx.q.data() + r0 * blocks * kQK_K;
  const float* xscale = qx.scale.data() + r0 * blocks;
  const int16_t* xsums = qx.sums16.data() + r0 * blocks * 16;
  constexpr int kGroups = MR == 1 ? 1 : NR;
  __m128 acc[kGroups];
#pragma GCC unroll 4
  for (int g = 0; g < kGroups; ++g) acc[g] = _mm_setzero_ps();
  const NextTilePrefetch prefetch(rows, NR * row_bytes, blocks, 1);
  // Lane sums of one weight row's block against MR x rows: `lanes` (code
  // products, Q6_K's bias taken off) and `mins` (Q4_K / Q5_K).
  auto block_lanes = [&](const uint8_t* row, int64_t b, __m256i* lanes, __m256i* mins) {
    const int8_t* xrow[MR];
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) xrow[i] = xq + (i * blocks + b) * kQK_K, lanes[i] = _mm256_setzero_si256();
    __m256i extra = _mm256_setzero_si256();
    K::template accumulate<MR>(row, b, xrow, lanes, &extra);
    if constexpr (K::kMins || K::kCodeBiasShift > 0) {
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const __m256i m = _mm256_madd_epi16(load256(xsums + (i * blocks + b) * 16), extra);
        if constexpr (K::kMins) {
          mins[i] = m;
        } else {
          lanes[i] = _mm256_sub_epi32(lanes[i], _mm256_slli_epi32(m, K::kCodeBiasShift));
        }
      }
    }
  };
  for (int64_t b = 0; b < blocks; ++b) {
    if constexpr (MR == 1) {
      prefetch.part(b);
      __m256i lanes[4], mins[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) lanes[j] = mins[j] = _mm256_setzero_si256();
      alignas(16) float d[4] = {}, neg_dmin[4] = {};
#pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) {
        block_lanes(rows + j * row_bytes, b, &lanes[j], &mins[j]);
        d[j] = K::d(rows + j * row_bytes, b);
        neg_dmin[j] = -K::dmin(rows + j * row_bytes, b);
      }
      const __m128 dx = _mm_set1_ps(xscale[b]);
      acc[0] = _mm_fmadd_ps(_mm_cvtepi32_ps(reduce4(lanes[0], lanes[1], lanes[2], lanes[3])),
                            _mm_mul_ps(_mm_load_ps(d), dx), acc[0]);
      if constexpr (K::kMins)
        acc[0] = _mm_fmadd_ps(_mm_cvtepi32_ps(reduce4(mins[0], mins[1], mins[2], mins[3])),
                              _mm_mul_ps(_mm_load_ps(neg_dmin), dx), acc[0]);
    } else {
      const __m128 dx = _mm_setr_ps(xscale[b], xscale[blocks + b], xscale[2 * blocks + b], xscale[3 * blocks + b]);
#pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) {
        const uint8_t* row = rows + j * row_bytes;
        __m256i lanes[4], mins[4];
        block_lanes(row, b, lanes, mins);
        acc[j] = _mm_fmadd_ps(_mm_cvtepi32_ps(reduce4(lanes[0], lanes[1], lanes[2], lanes[3])),
                              _mm_mul_ps(_mm_set1_ps(K::d(row, b)), dx), acc[j]);
        if constexpr (K::kMins)
          acc[j] = _mm_fmadd_ps(_mm_cvtepi32_ps(reduce4(mins[0], mins[1], mins[2], mins[3])),
                                _mm_mul_ps(_mm_set1_ps(-K::dmin(row, b)), dx), acc[j]);
      }
    }
  }
  alignas(16) float out[kGroups][4];
#pragma GCC unroll 4
  for (int g = 0; g < kGroups; ++g) _mm_store_ps(out[g], acc[g]);
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) a.y[(r0 + i) * w.rows + o + j] = MR == 1 ? out[0][j] : out[j][i];
}

// ---- tiling over rows ------------------------------------------------------

template <class K, int MR, int NR>
void tile(const MatmulArgs& a, int64_t o, int64_t r0) {
  if constexpr (K::kSuper) {
    k_tile<K, MR, NR>(a, o, r0);
  } else {
    legacy_tile<K, MR, NR>(a, o, r0);
  }
}

// Tile shapes (x rows by weight rows). Few x rows (decode): 1 x 4, so four
// weight rows stream at once. Batches: 4 x 3, twelve accumulators, each
// weight block unpacked once per four x rows.
constexpr int kBatchTileX = 4, kBatchTileW = 3;
constexpr int kSingleTileW = 4;

// Weight rows [o, o_end) (at most NR of them) against x rows r0..r0+MR.
template <class K, int MR, int NR>
void tile_upto(const MatmulArgs& a, int64_t o, int64_t o_end, int64_t r0) {
  switch (o_end - o) {
    case 4:
      if constexpr (NR >= 4) tile<K, MR, 4>(a, o, r0);
      break;
    case 3:
      if constexpr (NR >= 3) tile<K, MR, 3>(a, o, r0);
      break;
    case 2: tile<K, MR, 2>(a, o, r0); break;
    case 1: tile<K, MR, 1>(a, o, r0); break;
    default: break;
  }
}

// Weight tiles outermost, so the (small) weight tile stays in L1 while the
// x rows stream past it.
template <class K, int MR, int NR>
void tiles(const MatmulArgs& a, int64_t begin, int64_t end) {
  for (int64_t o = begin; o < end; o += NR) {
    const int64_t o_end = std::min(end, o + NR);
    int64_t r = 0;
    if constexpr (MR > 1)
      for (; r + MR <= a.n_x; r += MR) tile_upto<K, MR, NR>(a, o, o_end, r);
    for (; r < a.n_x; ++r) tile_upto<K, 1, NR>(a, o, o_end, r);
  }
}

template <class K>
void q8_rows(const MatmulArgs& a, int64_t begin, int64_t end) {
  if (a.n_x >= kBatchTileX) {
    tiles<K, kBatchTileX, kBatchTileW>(a, begin, end);
  } else {
    tiles<K, 1, kSingleTileW>(a, begin, end);
  }
}

// rows_avx2_q8 / rows_avxvnni_q8 / rows_avx512vnni_q8 (matmul_internal.h).
inline void q8_rows_any(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.w->dtype) {
    case DType::kQ4_0: return q8_rows<KernQ4_0>(a, row_begin, row_end);
    case DType::kQ4_1: return q8_rows<KernQ4_1>(a, row_begin, row_end);
    case DType::kQ5_0: return q8_rows<KernQ5_0>(a, row_begin, row_end);
    case DType::kQ5_1: return q8_rows<KernQ5_1>(a, row_begin, row_end);
    case DType::kQ8_0: return q8_rows<KernQ8_0>(a, row_begin, row_end);
    case DType::kQ4_K: return q8_rows<KernQ4_K>(a, row_begin, row_end);
    case DType::kQ5_K: return q8_rows<KernQ5_K>(a, row_begin, row_end);
    case DType::kQ6_K: return q8_rows<KernQ6_K>(a, row_begin, row_end);
    case DType::kQ2_K: return q8_rows<KernQ2_K>(a, row_begin, row_end);
    case DType::kQ3_K: return q8_rows<KernQ3_K>(a, row_begin, row_end);
    case DType::kIQ4_NL: return q8_rows<KernIQ4_NL>(a, row_begin, row_end);
    case DType::kMXFP4: return q8_rows<KernMXFP4>(a, row_begin, row_end);
    case DType::kIQ4_XS: return q8_rows<KernIQ4_XS>(a, row_begin, row_end);
    default: return rows_scalar(a, row_begin, row_end);
  }
}

}  // namespace
}  // namespace omnibus::matmul_detail
