// The row-layout int8 kernels of Q2_K, Q3_K, IQ4_NL, MXFP4 and IQ4_XS weights: the
// per-type code unpacking behind matmul_q8_kernels.h's tiles, which
// includes this file after its own K structs (it uses that file's helpers
// and is not a header of its own). Same contract as the types there: every
// integer sum exact, then legacy_tile's float steps (IQ4_NL, a 32-element
// block type like Q8_0) or k_tile's (the three 256-element types):
//  * Q2_K: codes 0..3 weighted by the 4-bit scale of their 16 elements,
//    minus dmin times the exact sum of the 4-bit mins times the x sums of
//    16 (Q4_K's mins term, per 16 instead of per 32);
//  * Q3_K: codes 0..7 (two low bits | the hmask bit << 2) weighted by the
//    signed 6-bit scale (sc - 32) of their 16 elements; the format's code
//    bias 4 comes off as 4 * sum(scale * x sums of 16), as Q6_K's 32 does;
//  * IQ4_NL and IQ4_XS: the code book's signed levels times x, as Q8_0's
//    signed codes (magnitudes times x with the level's sign: pair sums
//    stay within int16, 2 x 127 x 127), IQ4_XS weighted by the signed
//    6-bit scale (ls - 32) of each 32 elements;
//  * MXFP4: IQ4_NL's arithmetic with its own code book (0..+-12) and an
//    E8M0 exponent for the scale (matmul_q8_kernels.h row_scales).
#pragma once

#include <immintrin.h>

#include "kernels/matmul_avx2_common.h"
#include "tensor/quant_blocks.h"

namespace omnibus::matmul_detail {
namespace {

// The code book in both 128-bit halves, for vpshufb lookups by code.
inline __m256i iq4nl_book() {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
}

// int16 scales of chunk v's two 16-element halves from 16 int16 scales (lane
// i = scale of elements 16i..16i+15): lanes 0..7 <- scale 2v, 8..15 <- 2v + 1.
inline __m256i chunk_scales16(__m256i scales16, int v) {
  const __m256i split =
      _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  return _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(scales16, _mm256_set1_epi32(v)), split);
}

struct KernIQ4_NL {
  static constexpr bool kSuper = false;
  static constexpr bool kBias = false, kAffine = false, kSigned = true;
  static LegacyCodes codes(const uint8_t* row, int64_t b) {
    const __m256i levels =
        _mm256_shuffle_epi8(iq4nl_book(), legacy_nibbles((reinterpret_cast<const BlockIQ4_NL*>(row) + b)->qs));
    return {_mm256_abs_epi8(levels), levels};
  }
  static uint32_t dm_bits(const uint8_t* row, int64_t b) {
    return load_u16le((reinterpret_cast<const BlockIQ4_NL*>(row) + b)->d);
  }
};

// MXFP4: a 17-byte block, the exponent byte and then IQ4_NL's nibbles.
inline __m256i mxfp4_book() {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)));
}

struct KernMXFP4 {
  static constexpr bool kSuper = false;
  static constexpr bool kBias = false, kAffine = false, kSigned = true;
  static constexpr bool kE8M0Scale = true;
  static LegacyCodes codes(const uint8_t* row, int64_t b) {
    const __m256i levels =
        _mm256_shuffle_epi8(mxfp4_book(), legacy_nibbles((reinterpret_cast<const BlockMXFP4*>(row) + b)->qs));
    return {_mm256_abs_epi8(levels), levels};
  }
  static uint8_t exponent(const uint8_t* row, int64_t b) { return (reinterpret_cast<const BlockMXFP4*>(row) + b)->e; }
};

struct KernQ2_K {
  static constexpr bool kSuper = true;
  static constexpr bool kMins = true;
  static constexpr int kCodeBiasShift = 0;
  // Chunk v = 4 * half + g (elements 32v..32v+31) holds bits 2g..2g+1 of
  // the 32 bytes qs[32 * half ..], in element order.
  template <int MR>
  static void accumulate(const uint8_t* row, int64_t b, const int8_t* const* xq, __m256i* lanes, __m256i* mins16) {
    const auto* blk = reinterpret_cast<const BlockQ2_K*>(row) + b;
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->scales));
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed, nibble));
    *mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), nibble));
    const __m256i three = _mm256_set1_epi8(3);
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const __m256i q = load256(blk->qs + 32 * half);
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
        const int v = 4 * half + g;
        const __m256i codes = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * g)), three);
        const __m256i scale = chunk_scales16(sc16, v);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) lanes[i] = add_scaled_products(lanes[i], codes, load256(xq[i] + 32 * v), scale);
      }
    }
  }
  static float d(const uint8_t* row, int64_t b) { return f16_at((reinterpret_cast<const BlockQ2_K*>(row) + b)->d); }
  static float dmin(const uint8_t* row, int64_t b) {
    return f16_at((reinterpret_cast<const BlockQ2_K*>(row) + b)->dmin);
  }
};

// A Q3_K block's sixteen 6-bit scales minus 32, as int16 lanes (the
// unpacking of q3_k_scale, four scales per 32-bit word).
inline __m256i q3_k_scales16(const uint8_t* packed) {
  const uint32_t a0 = load_u32le(packed), a1 = load_u32le(packed + 4), a2 = load_u32le(packed + 8);
  constexpr uint32_t kLow = 0x0F0F0F0F, kTop = 0x03030303;
  const uint32_t s0 = (a0 & kLow) | ((a2 & kTop) << 4);
  const uint32_t s1 = (a1 & kLow) | (((a2 >> 2) & kTop) << 4);
  const uint32_t s2 = ((a0 >> 4) & kLow) | (((a2 >> 4) & kTop) << 4);
  const uint32_t s3 = ((a1 >> 4) & kLow) | (((a2 >> 6) & kTop) << 4);
  const __m128i stored =
      _mm_setr_epi32(static_cast<int>(s0), static_cast<int>(s1), static_cast<int>(s2), static_cast<int>(s3));
  return _mm256_cvtepi8_epi16(_mm_sub_epi8(stored, _mm_set1_epi8(32)));
}

struct KernQ3_K {
  static constexpr bool kSuper = true;
  static constexpr bool kMins = false;
  static constexpr int kCodeBiasShift = 2;  // the codes' bias of 4, taken off by k_tile
  // Codes 0..7 weighted by the signed scales; the scales go back through
  // the last argument for k_tile to take off the bias (as Q6_K's).
  template <int MR>
  static void accumulate(const uint8_t* row, int64_t b, const int8_t* const* xq, __m256i* lanes, __m256i* scales16) {
    const auto* blk = reinterpret_cast<const BlockQ3_K*>(row) + b;
    const __m256i sc16 = q3_k_scales16(blk->scales);
    *scales16 = sc16;
    const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    const __m256i hmask = load256(blk->hmask);
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const __m256i q = load256(blk->qs + 32 * half);
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
        const int v = 4 * half + g;
        const __m256i low = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * g)), three);
        const __m256i high = _mm256_and_si256(_mm256_srl_epi16(hmask, _mm_cvtsi32_si128(v)), one);
        const __m256i codes = _mm256_or_si256(low, _mm256_slli_epi16(high, 2));
        const __m256i scale = chunk_scales16(sc16, v);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) lanes[i] = add_scaled_products(lanes[i], codes, load256(xq[i] + 32 * v), scale);
      }
    }
  }
  static float d(const uint8_t* row, int64_t b) { return f16_at((reinterpret_cast<const BlockQ3_K*>(row) + b)->d); }
  static float dmin(const uint8_t*, int64_t) { return 0.0f; }
};

struct KernIQ4_XS {
  static constexpr bool kSuper = true;
  static constexpr bool kMins = false;
  static constexpr int kCodeBiasShift = 0;  // signed levels: no bias, no x sums needed
  template <int MR>
  static void accumulate(const uint8_t* row, int64_t b, const int8_t* const* xq, __m256i* lanes, __m256i*) {
    const auto* blk = reinterpret_cast<const BlockIQ4_XS*>(row) + b;
    const __m256i book = iq4nl_book(), nibble = _mm256_set1_epi8(0x0F);
#pragma GCC unroll 4
    for (int pair = 0; pair < 4; ++pair) {
      // Sub-blocks 2 * pair and 2 * pair + 1: 16 bytes each, low nibbles
      // their elements 0..15, high nibbles 16..31.
      const __m256i packed = load256(blk->qs + 32 * pair);
      const __m256i lo = _mm256_and_si256(packed, nibble);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
      const __m256i codes[2] = {_mm256_permute2x128_si256(lo, hi, 0x20), _mm256_permute2x128_si256(lo, hi, 0x31)};
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * pair + h;
        const __m256i levels = _mm256_shuffle_epi8(book, codes[h]);
        const __m256i magnitudes = _mm256_abs_epi8(levels);
        const __m256i scale = _mm256_set1_epi16(static_cast<int16_t>(iq4_xs_scale(j, *blk) - 32));
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
          const __m256i x = _mm256_sign_epi8(load256(xq[i] + 32 * j), levels);
          lanes[i] = add_scaled_pairs(lanes[i], _mm256_maddubs_epi16(magnitudes, x), scale);
        }
      }
    }
  }
  static float d(const uint8_t* row, int64_t b) { return f16_at((reinterpret_cast<const BlockIQ4_XS*>(row) + b)->d); }
  static float dmin(const uint8_t*, int64_t) { return 0.0f; }
};

}  // namespace
}  // namespace omnibus::matmul_detail
