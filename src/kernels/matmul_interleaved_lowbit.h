// The kernels of Q2_K, Q3_K and IQ4_XS weights in the interleaved layout (eight
// rows side by side per 256-element block; kernels/weight_interleave.h).
// Part of the kernels matmul_interleaved_kernels.h gathers; include that
// header, not this one.
//
// Each output gets the row-layout k_tile's arithmetic (matmul_q8_kernels.h,
// the unpacking in matmul_q8_lowbit.h): per block an exact int32 sum S, then
// acc = fma(float(S), d * d_x, acc), so the two layouts give the same bits.
// What the layout buys is q4k_tile's: lane r of every vector is weight row
// r, so no horizontal sums, and one unpacked code vector serves every x row
// of a batch (or one broadcast of x four groups in decode).
#pragma once

#include "kernels/matmul_interleaved_kquants.h"

namespace omnibus::matmul_detail {
namespace {

// Q3_K group block: d[8] (f16), scale words [3][8] (row r's twelve packed
// scale bytes, word w at 16 + 32w + 4r), hmask chunks [8][32], qs chunks
// [16][32] (chunk j: bytes 4j..4j+3 of each row, row 0 first).
struct IlQ3_K {
  static constexpr bool kSuper = true, kSigned = false;
  static constexpr int kBlockBytes = kInterleaveRows * 110;
  static constexpr int kScaleOffset = 16, kHmaskOffset = 112, kQsOffset = 368;
};
// Q2_K group block: d[8], dmin[8] (f16), scale words [4][8] (row r's
// sixteen scale bytes: 4-bit scale low, 4-bit min high), qs chunks [16][32].
struct IlQ2_K {
  static constexpr bool kSuper = true, kSigned = false;
  static constexpr int kBlockBytes = kInterleaveRows * 84;
  static constexpr int kScaleOffset = 32, kQsOffset = 160;
};
// IQ4_XS group block: d[8] (f16), scales_h[8] (u16), scales_l words [8],
// qs chunks [32][32].
struct IlIQ4_XS {
  static constexpr bool kSuper = true;
  static constexpr bool kSigned = true;  // code-book levels are signed: four x rows a batch, as Q8_0
  static constexpr int kBlockBytes = kInterleaveRows * 136;
  static constexpr int kScalesHOffset = 16, kScalesLOffset = 32, kQsOffset = 64;
};

// The scale-weighted code sums of one Q2_K or Q3_K group block against MR
// x rows (sums[i], lane r: row r). Element 128n + 32j + l of a row (l <
// 32) has its low two bits at bits 2j..2j+1 of qs byte 32n + l (Q3_K: its
// third at bit 4n + j of hmask byte l; GGUF's order); its 16-element
// sub-block is 8n + 2j + (l >= 16). So qs chunk c = 8n + 4h + t (h = l >=
// 16) and hmask chunk 4h + t give, for each j, the codes of elements 128n +
// 32j + 16h + 4t.. of sub-block 8n + 2j + h. Per sub-block the products
// (codes 0..7: |4 x 2 x 7 x 127| fits) are summed as int16 over its four
// chunks and weighted once by its scale, byte s % 4 of scale_words[s / 4].
template <int MR, bool kHighBit>
inline void two_bit_code_sums(const uint8_t* qs, const uint8_t* hmask, const __m256i* scale_words,
                              const int8_t* const* xb, __m256i* sums) {
  const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
  __m256i* S = sums;
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) S[i] = _mm256_setzero_si256();
#pragma GCC unroll 2
  for (int n = 0; n < 2; ++n) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      [[maybe_unused]] const int bit = 4 * n + j;  // the hmask bit of these codes
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int s = 8 * n + 2 * j + h;
        const __m256i scale = int16_pairs_of_bytes(scale_words[s / 4], s % 4, s % 4);
        __m256i pairs[MR];
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) pairs[i] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int t = 0; t < 4; ++t) {
          const __m256i q = load256(qs + 32 * (8 * n + 4 * h + t));
          __m256i codes = _mm256_and_si256(j == 0 ? q : _mm256_srli_epi16(q, 2 * j), three);
          if constexpr (kHighBit) {
            // The hmask bit to bit 2 of each byte in one shift and one
            // mask (bits a 16-bit shift carries across bytes fall
            // outside the mask).
            const __m256i hm = load256(hmask + 32 * (4 * h + t));
            const __m256i hi = bit > 2    ? _mm256_and_si256(_mm256_srli_epi16(hm, bit - 2), four)
                               : bit == 2 ? _mm256_and_si256(hm, four)
                                          : _mm256_and_si256(_mm256_slli_epi16(hm, 2 - bit), four);
            codes = _mm256_or_si256(codes, hi);
          }
#pragma GCC unroll 4
          for (int i = 0; i < MR; ++i) {
            pairs[i] = _mm256_add_epi16(
                pairs[i], _mm256_maddubs_epi16(codes, broadcast4(xb[i] + 128 * n + 32 * j + 16 * h + 4 * t)));
            keep_in_register(pairs[i]);
          }
        }
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) S[i] = add_scaled_pairs(S[i], pairs[i], scale);
      }
    }
  }
}

// Q3_K outputs of NG groups for x rows r0..r0+MR (as q6k_tile): the code
// sums of two_bit_code_sums with the rows' signed scales; the code bias of
// 4 comes off as 4 x the sum of scale x the x sums of 16, as the row kernel
// takes it.
template <int NG, int MR>
void q3k_tile(const MatmulArgs& a, const uint8_t* const* groups, int64_t r0, float* const* out) {
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  __m256 acc[NG * MR];
#pragma GCC unroll 8
  for (int k = 0; k < NG * MR; ++k) acc[k] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0x0F), top2 = _mm256_set1_epi8(0x03), bias32 = _mm256_set1_epi8(32);
  for (int64_t b = 0; b < blocks; ++b) {
    const int8_t* xb[MR];
    const int16_t* xs[MR];
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const int64_t xi = (r0 + i) * blocks + b;
      xb[i] = qx.q.data() + xi * kQK_K;
      xs[i] = qx.sums16.data() + xi * 16;
    }
#pragma GCC unroll 1
    for (int g = 0; g < NG; ++g) {
      const uint8_t* blk = groups[g] + b * IlQ3_K::kBlockBytes;
      if constexpr (MR == 1) prefetch_block_ahead<IlQ3_K::kBlockBytes>(blk);
      // The sixteen scales minus 32, four to a lane (word w: scales
      // 4w..4w+3): q3_k_scales16's unpacking, eight rows at once.
      const uint8_t* words = blk + IlQ3_K::kScaleOffset;
      const __m256i a0 = load256(words), a1 = load256(words + 32), a2 = load256(words + 64);
      const auto top = [&](int shift) {
        return _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(a2, shift), top2), 4);
      };
      const __m256i sw[4] = {
          _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(a0, low4), top(0)), bias32),
          _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(a1, low4), top(2)), bias32),
          _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(a0, 4), low4), top(4)), bias32),
          _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(a1, 4), low4), top(6)), bias32),
      };
      const uint8_t* qs = blk + IlQ3_K::kQsOffset;
      const uint8_t* hmask = blk + IlQ3_K::kHmaskOffset;
      __m256i S[MR];
      two_bit_code_sums<MR, true>(qs, hmask, sw, xb, S);
      // The code bias: 4 x sum over the sixteen scales of scale x sum16(q_x).
      __m256i bias[MR];
      byte_weighted_x_sums<MR>(sw, xs, bias);
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const __m256 dx = _mm256_set1_ps(qx.scale[(r0 + i) * blocks + b]);
        const __m256i sum = _mm256_sub_epi32(S[i], _mm256_slli_epi32(bias[i], 2));
        acc[g * MR + i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(d, dx), acc[g * MR + i]);
      }
    }
  }
  store_tile<NG, MR>(acc, out);
}

// Q2_K outputs of NG groups for x rows r0..r0+MR: Q3_K's two low bits
// alone (the same qs order and 16-element sub-blocks), weighted by the
// 4-bit scales, and the mins term of Q4_K (lane r of M: the sum of row r's
// sub-block mins times the x sums of 16), with k_tile's two float steps.
template <int NG, int MR>
void q2k_tile(const MatmulArgs& a, const uint8_t* const* groups, int64_t r0, float* const* out) {
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  __m256 acc[NG * MR];
#pragma GCC unroll 8
  for (int k = 0; k < NG * MR; ++k) acc[k] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < blocks; ++b) {
    const int8_t* xb[MR];
    const int16_t* xs[MR];
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const int64_t xi = (r0 + i) * blocks + b;
      xb[i] = qx.q.data() + xi * kQK_K;
      xs[i] = qx.sums16.data() + xi * 16;
    }
#pragma GCC unroll 1
    for (int g = 0; g < NG; ++g) {
      const uint8_t* blk = groups[g] + b * IlQ2_K::kBlockBytes;
      if constexpr (MR == 1) prefetch_block_ahead<IlQ2_K::kBlockBytes>(blk);
      const uint8_t* words = blk + IlQ2_K::kScaleOffset;
      const uint8_t* qs = blk + IlQ2_K::kQsOffset;
      __m256i scales[4], S[MR];
#pragma GCC unroll 4
      for (int w = 0; w < 4; ++w) scales[w] = _mm256_and_si256(load256(words + 32 * w), low4);
      two_bit_code_sums<MR, false>(qs, nullptr, scales, xb, S);
      // The mins term: sum over the sixteen mins of min x sum16(q_x).
      __m256i mins[4], M[MR];
#pragma GCC unroll 4
      for (int w = 0; w < 4; ++w) mins[w] = _mm256_and_si256(_mm256_srli_epi16(load256(words + 32 * w), 4), low4);
      byte_weighted_x_sums<MR>(mins, xs, M);
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
      const __m256 neg_dmin = _mm256_xor_ps(
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16))), _mm256_set1_ps(-0.0f));
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const __m256 dx = _mm256_set1_ps(qx.scale[(r0 + i) * blocks + b]);
        __m256& y = acc[g * MR + i];
        y = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[i]), _mm256_mul_ps(d, dx), y);
        y = _mm256_fmadd_ps(_mm256_cvtepi32_ps(M[i]), _mm256_mul_ps(neg_dmin, dx), y);
      }
    }
  }
  store_tile<NG, MR>(acc, out);
}

// IQ4_XS outputs of NG groups for x rows r0..r0+MR (as q6k_tile). Sub-block
// j of a row (elements 32j..32j+31) is qs chunks 4j..4j+3: chunk 4j + t
// holds elements 32j + 4t.. in its low nibbles and 32j + 16 + 4t.. in its
// high ones (GGUF's pairing). The codes become the code book's signed
// levels (vpshufb); a level times x goes in as |level| x (x with the
// level's sign), as Q8_0's codes do, and each pair sum (at most 2 x 127 x
// 127) is weighted by the sub-block's signed 6-bit scale at once: the
// widening multiply every signed pair needs anyway. With VNNI the
// sub-block's products go straight into int32 lanes instead (below), the
// same integers: 1B-shape IQ4_XS on Zen 4 (bench_shapes.py, two threads,
// medians of three) prefill 127.8 -> 201.6 tok/s, decode 35.7 -> 57.0;
// one thread, `*DecodeAndPrefill*` batches, 234 GFLOP/s where the avx2
// table (no VNNI) makes 100.
template <int NG, int MR>
void iq4xs_tile(const MatmulArgs& a, const uint8_t* const* groups, int64_t r0, float* const* out) {
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  __m256 acc[NG * MR];
#pragma GCC unroll 8
  for (int k = 0; k < NG * MR; ++k) acc[k] = _mm256_setzero_ps();
  const __m256i book = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  [[maybe_unused]] const __m256i low16 = _mm256_set1_epi32(0xFFFF);
  [[maybe_unused]] const __m256i book_u8 = _mm256_xor_si256(book, _mm256_set1_epi8(static_cast<char>(0x80)));
  for (int64_t b = 0; b < blocks; ++b) {
    const int8_t* xb[MR];
    [[maybe_unused]] const int16_t* xs[MR];
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const int64_t xi = (r0 + i) * blocks + b;
      xb[i] = qx.q.data() + xi * kQK_K;
      xs[i] = qx.sums16.data() + xi * 16;
    }
#pragma GCC unroll 1
    for (int g = 0; g < NG; ++g) {
      const uint8_t* blk = groups[g] + b * IlIQ4_XS::kBlockBytes;
      if constexpr (MR == 1) prefetch_block_ahead<IlIQ4_XS::kBlockBytes>(blk);
      // Row r's scale bits in lane r: scales_h widened, scales_l as is.
      const __m256i sh =
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + IlIQ4_XS::kScalesHOffset)));
      const __m256i sl = load256(blk + IlIQ4_XS::kScalesLOffset);
      const uint8_t* qs = blk + IlIQ4_XS::kQsOffset;
      __m256i S[MR];
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) S[i] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        // ls - 32 (iq4_xs_scale), then the same int16 in both halves of the lane.
        const __m256i ls =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(sl, 4 * j), _mm256_set1_epi32(0x0F)),
                            _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(sh, 2 * j), _mm256_set1_epi32(3)), 4));
        const __m256i s32 = _mm256_sub_epi32(ls, _mm256_set1_epi32(32));
        // With VNNI the levels go in unsigned, level + 128 (1..241), four
        // products a lane in one vpdpbusd, and the sum starts at -128 x the
        // sub-block's x sum to take the 128s back off: P = sum(level x q_x)
        // exactly, then S += scale x P (|P| <= 32 x 127 x 127). The same
        // integer S as the pair sums without VNNI, two instructions an x
        // row per 32 codes where those take three (no sign, no widening).
#if defined(OMNIBUS_YMM_VNNI)
        __m256i P[MR];
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) P[i] = _mm256_set1_epi32(-128 * (xs[i][2 * j] + xs[i][2 * j + 1]));
#else
        const __m256i scale = _mm256_or_si256(_mm256_and_si256(s32, low16), _mm256_slli_epi32(s32, 16));
#endif
#pragma GCC unroll 4
        for (int t = 0; t < 4; ++t) {
          const __m256i packed = load256(qs + 32 * (4 * j + t));
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h) {
            const __m256i codes =
                h == 0 ? _mm256_and_si256(packed, nibble) : _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
            const int off = 32 * j + 16 * h + 4 * t;  // of these codes' x values in each x row's block
#if defined(OMNIBUS_YMM_VNNI)
            const __m256i shifted = _mm256_shuffle_epi8(book_u8, codes);
#pragma GCC unroll 4
            for (int i = 0; i < MR; ++i) P[i] = add_dot4(P[i], shifted, broadcast4(xb[i] + off));
#else
            const __m256i levels = _mm256_shuffle_epi8(book, codes);
            const __m256i magnitudes = _mm256_abs_epi8(levels);
#pragma GCC unroll 4
            for (int i = 0; i < MR; ++i) {
              const __m256i x = _mm256_sign_epi8(broadcast4(xb[i] + off), levels);
              S[i] = add_scaled_pairs(S[i], _mm256_maddubs_epi16(magnitudes, x), scale);
            }
#endif
          }
        }
#if defined(OMNIBUS_YMM_VNNI)
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) S[i] = _mm256_add_epi32(S[i], _mm256_mullo_epi32(P[i], s32));
#endif
      }
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const __m256 dx = _mm256_set1_ps(qx.scale[(r0 + i) * blocks + b]);
        acc[g * MR + i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[i]), _mm256_mul_ps(d, dx), acc[g * MR + i]);
      }
    }
  }
  store_tile<NG, MR>(acc, out);
}

}  // namespace
}  // namespace omnibus::matmul_detail
