// The int8 kernels for weights in the interleaved layout (eight rows side by
// side per block; kernels/weight_interleave.h), included by one source file
// per instruction set: matmul_interleaved_avx2.cpp (-mavx2 -mfma -mf16c),
// matmul_interleaved_avxvnni.cpp (the same plus -mavxvnni) and
// matmul_interleaved_avx512vnni.cpp (AVX-512 BW, VL and VNNI: the 512-bit
// pair tiles below, and the 256-bit kernels with EVEX vpdpbusd). The kernels
// here and the helpers of matmul_avx2_common.h have internal linkage, so
// each file keeps its own copy compiled for its own instructions (no copy
// built for AVX-VNNI can be picked by the linker for a CPU without it).
// What else they call with external linkage (load_u32le, std::min,
// std::copy) is plain integer code that no -m flag changes.
//
// Each output gets exactly the arithmetic of the row-layout kernels
// (matmul_q8_kernels.h), so the two layouts give bit-identical results:
//   legacy types, per 32-block b in order: S = exact int32 sum of code *
//   q_x over the block (minus the code bias times sum(q_x) for Q4_0),
//     acc = fma(float(S), d_w[b] * d_x[b], acc);
//     acc_m = fma(m_w[b], d_x[b] * sum(q_x[b]), acc_m)   (Q4_1 only);
//   y = acc (+ acc_m);
//   K-quants, per 256-block: k_tile's steps (q4k_tile, q6k_tile below).
// What the layout changes is the cost: lane r of every vector is weight row
// r, so S arrives one row per lane with no horizontal adds, and for 4-bit
// codes (products <= 2 * 15 * 127 per int16 pair) the eight products of a
// block are summed as int16 before one widening multiply, about half the
// multiply-pipe work of the row layout.
// With VNNI (AVX-VNNI, or AVX-512 VNNI's 256-bit form) a block's exact int32 sums come from
// vpdpbusd, which adds four u8 x s8 products into each int32 lane in one
// instruction, instead of vpmaddubsw into int16, int16 adds and one
// vpmaddwd widening. The sums are exact either way (the int16 steps never
// saturate: the bounds below), so the two builds give bit-identical outputs.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/matmul_avx2_common.h"
#include "kernels/matmul_internal.h"
#include "kernels/weight_interleave.h"
#include "tensor/quant_blocks.h"

namespace omnibus::matmul_detail {
namespace {

using namespace matmul_avx2;

// An empty asm that claims to change v: the compiler must keep the running
// sum in a register in program order. Without it GCC reassociates the int16
// adds into a tree, computes every product first and spills them to the
// stack (about 2x slower for batches).
inline void keep_in_register(__m256i& v) { asm("" : "+x"(v)); }

// Four int8 activations repeated in every 32-bit lane.
inline __m256i broadcast4(const int8_t* x) {
  return _mm256_set1_epi32(static_cast<int>(load_u32le(reinterpret_cast<const uint8_t*>(x))));
}

// Per type: the block's scale bytes (d, m), fifth-bit bytes (Q5_0) and
// code bytes for eight rows (kernels/weight_interleave.h).
struct IlQ4_0 {
  static constexpr bool kSuper = false;
  static constexpr bool kAffine = false, kBias = true, kSigned = false, kFifthBit = false;
  static constexpr int kScaleBytes = 16, kHighBytes = 0, kCodeBytes = 128;
};
struct IlQ4_1 {
  static constexpr bool kSuper = false;
  static constexpr bool kAffine = true, kBias = false, kSigned = false, kFifthBit = false;
  static constexpr int kScaleBytes = 32, kHighBytes = 0, kCodeBytes = 128;
};
struct IlQ5_0 {
  static constexpr bool kSuper = false;
  static constexpr bool kAffine = false, kBias = true, kSigned = false, kFifthBit = true;
  static constexpr int kScaleBytes = 16, kHighBytes = 32, kCodeBytes = 128;
};
struct IlQ8_0 {
  static constexpr bool kSuper = false;
  static constexpr bool kAffine = false, kBias = false, kSigned = true, kFifthBit = false;
  static constexpr int kScaleBytes = 16, kHighBytes = 0, kCodeBytes = 256;
};

// Q4_K: 256-element blocks with 6-bit sub-block scales and mins (q4k_tile).
struct IlQ4_K {
  static constexpr bool kSuper = true, kSigned = false, kFifthBit = false;
  static constexpr int kBlockBytes = kInterleaveRows * 144, kCodeOffset = 128;
};
// Q5_K: Q4_K's layout with the fifth bits (qh chunks [8][32]) before the codes.
struct IlQ5_K {
  static constexpr bool kSuper = true, kSigned = false, kFifthBit = true;
  static constexpr int kBlockBytes = kInterleaveRows * 176, kCodeOffset = 384;
};
// Q6_K: 256-element blocks of 6-bit codes with int8 scales per 16 (q6k_tile).
struct IlQ6_K {
  static constexpr bool kSuper = true, kSigned = false;
  static constexpr int kBlockBytes = kInterleaveRows * 210;
  // d[8] (f16), then the scale words, ql and qh chunks (weight_interleave.h).
  static constexpr int kScaleOffset = 16, kQlOffset = 144, kQhOffset = 1168;
};

// Codes of chunk j (elements 4j..4j+3 in `lo`, 16+4j..16+4j+3 in `hi`, one
// byte per code) of one group's block; Q5_0 adds bit 4 of each code from
// the regrouped fifth bits just before the codes (kernels/weight_interleave.h).
template <class K>
inline void unpack_codes(const uint8_t* codes, int j, __m256i& lo, __m256i& hi) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i packed = load256(codes + 32 * j);
  lo = _mm256_and_si256(packed, low);
  hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low);
  if constexpr (K::kFifthBit) {
    const __m256i high = load256(codes - K::kHighBytes);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi32(high, 4 - j), bit4));
    hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_srli_epi32(high, j), bit4));
  }
}

// acc + the sum of each lane's four u8 x s8 products, exactly: one vpdpbusd
// with AVX-VNNI, else vpmaddubsw (pairs into int16: |2 x 128 x 127| fits)
// and a widening vpmaddwd.
inline __m256i add_dot4(__m256i acc, __m256i u8, __m256i s8) {
#if defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(acc, u8, s8);
#elif defined(OMNIBUS_YMM_VNNI)
  return _mm256_dpbusd_epi32(acc, u8, s8);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
#endif
}

// Exact int32 sums over one block of NG groups of eight rows (lane r: row r)
// against MR x rows: codes[g] points at group g's codes of the block (its
// fifth bits, Q5_0, just before them), xb[i] at x row i's 32 int8 values of
// it; sums[g * MR + i]. The sums are exact integers, so neither the tile
// shape nor the instruction set changes them. Decode (MR = 1) walks several
// groups at once and shares each broadcast of x among them; batches (NG =
// 1) share each unpacked block among the x rows.
template <class K, int NG, int MR>
inline void block_sums(const uint8_t* const* codes, const int8_t* const* xb, __m256i* sums) {
  if constexpr (K::kSigned) {
    // Q8_0: |w| x (x with w's sign).
#pragma GCC unroll 8
    for (int k = 0; k < NG * MR; ++k) sums[k] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
#pragma GCC unroll 8
      for (int g = 0; g < NG; ++g) {
        const __m256i w = load256(codes[g] + 32 * j);
        const __m256i mag = _mm256_abs_epi8(w);
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i)
          sums[g * MR + i] = add_dot4(sums[g * MR + i], mag, _mm256_sign_epi8(broadcast4(xb[i] + 4 * j), w));
      }
    }
  } else {
#if defined(OMNIBUS_YMM_VNNI)
    // Straight into int32 lanes, low and high code halves in two chains
    // (added at the end; integer sums, so the order changes nothing).
    __m256i s_lo[NG * MR], s_hi[NG * MR];
#pragma GCC unroll 8
    for (int k = 0; k < NG * MR; ++k) s_lo[k] = s_hi[k] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
#pragma GCC unroll 8
      for (int g = 0; g < NG; ++g) {
        __m256i lo, hi;
        unpack_codes<K>(codes[g], j, lo, hi);
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
          s_lo[g * MR + i] = add_dot4(s_lo[g * MR + i], lo, broadcast4(xb[i] + 4 * j));
          s_hi[g * MR + i] = add_dot4(s_hi[g * MR + i], hi, broadcast4(xb[i] + 16 + 4 * j));
        }
      }
    }
#pragma GCC unroll 8
    for (int k = 0; k < NG * MR; ++k) sums[k] = _mm256_add_epi32(s_lo[k], s_hi[k]);
#else
    // Products summed as int16 and widened once (about half the
    // multiply-pipe work of widening every pair).
    const __m256i ones16 = _mm256_set1_epi16(1);
    __m256i p[NG * MR];
#pragma GCC unroll 8
    for (int k = 0; k < NG * MR; ++k) p[k] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
#pragma GCC unroll 8
      for (int g = 0; g < NG; ++g) {
        __m256i lo, hi;
        unpack_codes<K>(codes[g], j, lo, hi);
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
          __m256i& acc = p[g * MR + i];
          acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(lo, broadcast4(xb[i] + 4 * j)));
          keep_in_register(acc);
          acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(hi, broadcast4(xb[i] + 16 + 4 * j)));
          keep_in_register(acc);
        }
      }
      if constexpr (K::kFifthBit) {
        // 5-bit codes: |p| <= 4 * 2 * 31 * 127 = 31496 after two chunks,
        // so the int16 sums are widened halfway through the block.
        if (j == 1) {
#pragma GCC unroll 8
          for (int k = 0; k < NG * MR; ++k) sums[k] = _mm256_madd_epi16(p[k], ones16), p[k] = _mm256_setzero_si256();
        }
      }
    }
    // 4-bit codes: |p| <= 8 * 2 * 15 * 127 = 30480: no int16 overflow before widening.
#pragma GCC unroll 8
    for (int k = 0; k < NG * MR; ++k)
      sums[k] = K::kFifthBit ? _mm256_add_epi32(sums[k], _mm256_madd_epi16(p[k], ones16))
                             : _mm256_madd_epi16(p[k], ones16);
#endif
  }
}

// Outputs of NG groups of eight weight rows for x rows r0..r0+MR: group g's
// for x row i written to out[g][i * 8 + r].
template <class K, int NG, int MR>
void legacy_group_tile(const MatmulArgs& a, const uint8_t* const* groups, int64_t r0, float* const* out) {
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  constexpr int kBlockBytes = K::kScaleBytes + K::kHighBytes + K::kCodeBytes;
  __m256 acc[NG * MR], acc_m[NG * MR];
#pragma GCC unroll 8
  for (int k = 0; k < NG * MR; ++k) acc[k] = acc_m[k] = _mm256_setzero_ps();
  // x rows r0.. are consecutive in qx: row i's block b at x0 + i * cols + b * kQK.
  const int8_t* const x0 = qx.q.data() + r0 * qx.cols;
  const int64_t x_stride = qx.cols;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* codes[NG];
#pragma GCC unroll 8
    for (int g = 0; g < NG; ++g) codes[g] = groups[g] + b * kBlockBytes + K::kScaleBytes + K::kHighBytes;
    const int8_t* xb[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) xb[i] = x0 + i * x_stride + b * kQK;
    __m256i sums[NG * MR];
    block_sums<K, NG, MR>(codes, xb, sums);
#pragma GCC unroll 8
    for (int g = 0; g < NG; ++g) {
      const uint8_t* blk = groups[g] + b * kBlockBytes;
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
      const __m256 m = K::kAffine ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16)))
                                  : _mm256_setzero_ps();
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const int64_t xi = (r0 + i) * blocks + b;
        const int k = g * MR + i;
        if constexpr (K::kBias) sums[k] = _mm256_sub_epi32(sums[k], _mm256_set1_epi32(qx.bias_sum[xi]));
        acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[k]), _mm256_mul_ps(d, _mm256_set1_ps(qx.scale[xi])), acc[k]);
        if constexpr (K::kAffine) acc_m[k] = _mm256_fmadd_ps(m, _mm256_set1_ps(qx.scaled_sum[xi]), acc_m[k]);
      }
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < NG; ++g)
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const int k = g * MR + i;
      _mm256_storeu_ps(out[g] + i * kInterleaveRows, K::kAffine ? _mm256_add_ps(acc[k], acc_m[k]) : acc[k]);
    }
}

// Decode (one x row): each group's next-but-one block into the cache while
// this one is computed. Without it Q6_K decoded Gemma 3 2-3% slower than its
// row layout (five alternating pairs, 2026-12-02), with it level (four
// pairs, 120.7 vs 119.3 tok/s, in the noise); the legacy types' kernel
// needs none (decode_rows).
template <int kBlockBytes>
inline void prefetch_block_two_ahead(const uint8_t* blk, int64_t b, int64_t blocks) {
  if (b + 2 >= blocks) return;
  for (int c = 0; c < kBlockBytes; c += 64)
    _mm_prefetch(reinterpret_cast<const char*>(blk + 2 * kBlockBytes + c), _MM_HINT_T0);
}

// vpshufb control: in each 32-bit lane (weight row) both int16 halves <- byte
// c of the lane (the scale of sub-block c of a four-scale word).
inline __m256i scale_pair_control(int c) {
  const int k = 0x80 << 8 | c;  // byte c, then a zero byte
  return _mm256_setr_epi16(k, k, k + 4, k + 4, k + 8, k + 8, k + 12, k + 12, k, k, k + 4, k + 4, k + 8, k + 8, k + 12,
                           k + 12);
}
// In each 32-bit lane: int16 halves <- bytes 2k and 2k + 1 (two sub-blocks' mins).
inline __m256i min_pair_control(int k) {
  const int a = 0x80 << 8 | 2 * k, b = 0x80 << 8 | (2 * k + 1);
  return _mm256_setr_epi16(a, b, a + 4, b + 4, a + 8, b + 8, a + 12, b + 12, a, b, a + 4, b + 4, a + 8, b + 8, a + 12,
                           b + 12);
}

// Q4_K and Q5_K outputs of NG groups of eight weight rows for x rows
// r0..r0+MR (as legacy_group_tile). Q5_K's fifth bit of sub-block c's
// element e is bit c of byte e of the row's qh (KernQ5_K's unpacking), so
// code chunk 8p + l takes it from qh chunk l. Per block, lane r of S is row r's exact sum of scale x
// code x q_x over the block, lane r of M the sum of its sub-block mins times
// the x sub-block sums; then the float steps of the row kernel's k_tile in
// its order: acc = fma(float(S), d * d_x, acc); acc = fma(float(M), -dmin *
// d_x, acc). Bit-identical to the row layout.
template <class K, int NG, int MR>
void q4k_tile(const MatmulArgs& a, const uint8_t* const* groups, int64_t r0, float* const* out) {
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  __m256 acc[NG * MR];
#pragma GCC unroll 8
  for (int k = 0; k < NG * MR; ++k) acc[k] = _mm256_setzero_ps();
  const __m256i low = _mm256_set1_epi8(0x0F), six = _mm256_set1_epi8(0x3F), top2 = _mm256_set1_epi8(0x30);
  for (int64_t b = 0; b < blocks; ++b) {
    const int8_t* xb[MR];
    // The x sub-block sums (int16, at most 32 x 128) two to a 32-bit lane,
    // broadcast: pair k holds sub-blocks 2k and 2k + 1.
    __m256i x_pairs[MR][4];
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const int64_t xi = (r0 + i) * blocks + b;
      xb[i] = qx.q.data() + xi * kQK_K;
      const __m256i s16 = load256(qx.sums16.data() + xi * 16);
      const __m256i h = _mm256_hadd_epi16(s16, s16);  // dwords 0, 1: sub-blocks 0-3; dwords 4, 5: 4-7
      x_pairs[i][0] = _mm256_permutevar8x32_epi32(h, _mm256_set1_epi32(0));
      x_pairs[i][1] = _mm256_permutevar8x32_epi32(h, _mm256_set1_epi32(1));
      x_pairs[i][2] = _mm256_permutevar8x32_epi32(h, _mm256_set1_epi32(4));
      x_pairs[i][3] = _mm256_permutevar8x32_epi32(h, _mm256_set1_epi32(5));
    }
#pragma GCC unroll 1
    for (int g = 0; g < NG; ++g) {
      const uint8_t* blk = groups[g] + b * K::kBlockBytes;
      if constexpr (MR == 1) prefetch_block_two_ahead<K::kBlockBytes>(blk, b, blocks);
      // Row r's scale words in lane r (k_scales's unpacking, eight rows at once).
      const __m256i u0 = load256(blk + 32), u1 = load256(blk + 64), u2 = load256(blk + 96);
      const __m256i sc_lo = _mm256_and_si256(u0, six);
      const __m256i sc_hi =
          _mm256_or_si256(_mm256_and_si256(u2, low), _mm256_and_si256(_mm256_srli_epi32(u0, 2), top2));
      const uint8_t* codes = blk + K::kCodeOffset;
      __m256i S[MR];
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) S[i] = _mm256_setzero_si256();
      // Per sub-block c = 2p + h: its products summed as int16 over the eight
      // code chunks (|8 x 2 x 15 x 128| = 30720 fits), then weighted by the
      // rows' scales once: half the multiplies of weighting every chunk.
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const __m256i scale = _mm256_shuffle_epi8(p < 2 ? sc_lo : sc_hi, scale_pair_control((2 * p + h) % 4));
          __m256i pairs[MR];
#pragma GCC unroll 4
          for (int i = 0; i < MR; ++i) pairs[i] = _mm256_setzero_si256();
#pragma GCC unroll 8
          for (int l = 0; l < 8; ++l) {
            const __m256i packed = load256(codes + 32 * (8 * p + l));
            __m256i nibbles = h == 0 ? _mm256_and_si256(packed, low)
                                     : _mm256_and_si256(_mm256_srli_epi16(packed, 4), low);
            if constexpr (K::kFifthBit) {
              // qh chunk l sits after the scale words (IlQ5_K).
              const __m256i bit = _mm256_and_si256(_mm256_srli_epi16(load256(blk + 128 + 32 * l), 2 * p + h),
                                                   _mm256_set1_epi8(1));
              nibbles = _mm256_or_si256(nibbles, _mm256_slli_epi16(bit, 4));
            }
#pragma GCC unroll 4
            for (int i = 0; i < MR; ++i) {
              pairs[i] = _mm256_add_epi16(pairs[i], _mm256_maddubs_epi16(nibbles, broadcast4(xb[i] + 64 * p + 32 * h + 4 * l)));
              keep_in_register(pairs[i]);
            }
            // 5-bit codes: |4 x 2 x 31 x 128| = 31744 fits, eight chunks
            // would not: weigh the first four, then the rest.
            if constexpr (K::kFifthBit) {
              if (l == 3) {
#pragma GCC unroll 4
                for (int i = 0; i < MR; ++i) S[i] = add_scaled_pairs(S[i], pairs[i], scale), pairs[i] = _mm256_setzero_si256();
              }
            }
          }
#pragma GCC unroll 4
          for (int i = 0; i < MR; ++i) S[i] = add_scaled_pairs(S[i], pairs[i], scale);
        }
      }
      const __m256i mn_lo = _mm256_and_si256(u1, six);
      const __m256i mn_hi =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), low), _mm256_and_si256(_mm256_srli_epi32(u1, 2), top2));
      __m256i M[MR];
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) M[i] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m256i mins = _mm256_shuffle_epi8(k < 2 ? mn_lo : mn_hi, min_pair_control(k % 2));
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) M[i] = _mm256_add_epi32(M[i], _mm256_madd_epi16(mins, x_pairs[i][k]));
      }
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
      const __m256 neg_dmin = _mm256_xor_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16))),
                                            _mm256_set1_ps(-0.0f));
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const __m256 dx = _mm256_set1_ps(qx.scale[(r0 + i) * blocks + b]);
        __m256& y = acc[g * MR + i];
        y = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[i]), _mm256_mul_ps(d, dx), y);
        y = _mm256_fmadd_ps(_mm256_cvtepi32_ps(M[i]), _mm256_mul_ps(neg_dmin, dx), y);
      }
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < NG; ++g)
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) _mm256_storeu_ps(out[g] + i * kInterleaveRows, acc[g * MR + i]);
}

// vpshufb control: in each 32-bit lane (weight row) int16 half k <- byte
// bytes[k] of the lane in the high byte, the low byte zero: an arithmetic
// shift right by 8 then sign-extends each (Q6_K's scales are int8).
inline __m256i high_bytes_control(int b0, int b1) {
  const int a = b0 << 8 | 0x80, b = b1 << 8 | 0x80;
  return _mm256_setr_epi16(a, b, a + 0x400, b + 0x400, a + 0x800, b + 0x800, a + 0xC00, b + 0xC00, a, b, a + 0x400,
                           b + 0x400, a + 0x800, b + 0x800, a + 0xC00, b + 0xC00);
}
inline __m256i int16_pairs_of_bytes(__m256i words, int b0, int b1) {
  return _mm256_srai_epi16(_mm256_shuffle_epi8(words, high_bytes_control(b0, b1)), 8);
}

// Q6_K outputs (as q4k_tile). Group block (weight_interleave.h): d[8] (f16),
// scale words [4][8], ql chunks [32][32], qh chunks [16][32]. Chunk v =
// 4h + g of a row (elements 32v..32v+31), quad l (its elements 4l..4l+3):
// low four bits from ql chunk 16h + 8(g & 1) + l (low nibbles for g < 2,
// high for g >= 2), bits 4-5 from qh chunk 8h + l (bits 2g, 2g + 1); quads
// 0-3 take scale 2v, quads 4-7 scale 2v + 1 (KernQ6_K's unpacking). Per
// block, lane r of S is row r's exact sum of scale x code x q_x minus 32 x
// the sum of scale x x sub-block sum (the code bias), then the row kernel's
// float step: acc = fma(float(S), d * d_x, acc). Bit-identical to it.
template <int NG, int MR>
void q6k_tile(const MatmulArgs& a, const uint8_t* const* groups, int64_t r0, float* const* out) {
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  __m256 acc[NG * MR];
#pragma GCC unroll 8
  for (int k = 0; k < NG * MR; ++k) acc[k] = _mm256_setzero_ps();
  const __m256i low = _mm256_set1_epi8(0x0F), three = _mm256_set1_epi8(3);
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
      const uint8_t* blk = groups[g] + b * IlQ6_K::kBlockBytes;
      if constexpr (MR == 1) prefetch_block_two_ahead<IlQ6_K::kBlockBytes>(blk, b, blocks);
      const uint8_t* words = blk + IlQ6_K::kScaleOffset;
      const uint8_t* ql = blk + IlQ6_K::kQlOffset;
      const uint8_t* qh = blk + IlQ6_K::kQhOffset;
      __m256i S[MR];
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) S[i] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int v = 0; v < 8; ++v) {
        const int h = v / 4, gv = v % 4;
        const __m256i word = load256(words + 32 * (v / 2));  // scales 2v, 2v + 1: bytes 2(v % 2), +1
#pragma GCC unroll 2
        for (int half = 0; half < 2; ++half) {
          const int byte = 2 * (v % 2) + half;
          const __m256i scale = int16_pairs_of_bytes(word, byte, byte);
          // Quads 4 half .. 4 half + 3 in int16 pairs of quads (|2 x 2 x 63
          // x 128| = 32256 fits), each pair weighted by the scale once.
#pragma GCC unroll 2
          for (int q2 = 0; q2 < 2; ++q2) {
            __m256i pairs[MR];
#pragma GCC unroll 4
            for (int i = 0; i < MR; ++i) pairs[i] = _mm256_setzero_si256();
#pragma GCC unroll 2
            for (int t = 0; t < 2; ++t) {
              const int l = 4 * half + 2 * q2 + t;
              const __m256i packed = load256(ql + 32 * (16 * h + 8 * (gv & 1) + l));
              const __m256i nib = gv < 2 ? _mm256_and_si256(packed, low)
                                         : _mm256_and_si256(_mm256_srli_epi16(packed, 4), low);
              const __m256i top = _mm256_and_si256(_mm256_srli_epi16(load256(qh + 32 * (8 * h + l)), 2 * gv), three);
              const __m256i codes = _mm256_or_si256(nib, _mm256_slli_epi16(top, 4));
#pragma GCC unroll 4
              for (int i = 0; i < MR; ++i) {
                pairs[i] = _mm256_add_epi16(pairs[i], _mm256_maddubs_epi16(codes, broadcast4(xb[i] + 32 * v + 4 * l)));
                keep_in_register(pairs[i]);
              }
            }
#pragma GCC unroll 4
            for (int i = 0; i < MR; ++i) S[i] = add_scaled_pairs(S[i], pairs[i], scale);
          }
        }
      }
      // The code bias: 32 x sum over the sixteen scales of scale x sum16(q_x).
      __m256i bias[MR];
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) bias[i] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int w = 0; w < 4; ++w) {
        const __m256i word = load256(words + 32 * w);
#pragma GCC unroll 2
        for (int k = 0; k < 2; ++k) {
          const __m256i sc = int16_pairs_of_bytes(word, 2 * k, 2 * k + 1);  // scales 4w + 2k, 4w + 2k + 1
#pragma GCC unroll 4
          for (int i = 0; i < MR; ++i) {
            const __m256i x_pair = _mm256_set1_epi32(static_cast<int>(load_u32le(reinterpret_cast<const uint8_t*>(xs[i] + 4 * w + 2 * k))));
            bias[i] = _mm256_add_epi32(bias[i], _mm256_madd_epi16(sc, x_pair));
          }
        }
      }
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const __m256 dx = _mm256_set1_ps(qx.scale[(r0 + i) * blocks + b]);
        const __m256i sum = _mm256_sub_epi32(S[i], _mm256_slli_epi32(bias[i], 5));
        acc[g * MR + i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(d, dx), acc[g * MR + i]);
      }
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < NG; ++g)
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) _mm256_storeu_ps(out[g] + i * kInterleaveRows, acc[g * MR + i]);
}

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
// Batches with AVX-512 VNNI (matmul_interleaved_avx512vnni.cpp): two groups
// of eight rows side by side in one zmm register (lanes 0-7 the first
// group's rows, 8-15 the second's), so each vpdpbusd adds sixteen rows'
// products, where the 256-bit kernels add eight. On the Intel VM of
// 2026-12-02 a zmm vpdpbusd issued about as often as a ymm one (1.9 against
// 2 a cycle, a throughput microbenchmark), twice the multiplies. Every
// lane's arithmetic is legacy_group_tile's (the block's exact int32 sum,
// then the same float steps in the same order), so the outputs are
// bit-identical to the 256-bit kernels'. The legacy types (Q4_0, Q4_1,
// Q5_0, Q8_0), Q4_K and Q5_K; Q6_K and decode keep the 256-bit kernels.
template <class K>
constexpr bool kPairTile = !std::is_same_v<K, IlQ6_K>;
// x rows per pair tile: its accumulators (one or two int32 chains and one
// float per x row, plus Q4_1's mins; Q4_K/Q5_K: the block sum, the int16
// pair sums and the float) and the codes fill the 32 registers.
template <class K>
constexpr int pair_rows() {
  if constexpr (K::kSuper) {
    return 6;
  } else {
    return K::kAffine ? 6 : 8;
  }
}
template <class K>
constexpr int kPairRows = pair_rows<K>();

// 32 bytes at a (lanes 0-7) and 32 at b (lanes 8-15).
inline __m512i load_pair256(const uint8_t* a, const uint8_t* b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(load256(a)), load256(b), 1);
}
// Eight f16 at a (lanes 0-7) and eight at b (lanes 8-15), widened.
inline __m512 load_f16_pair(const uint8_t* a, const uint8_t* b) {
  return _mm512_cvtph_ps(_mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)),
                                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(a))));
}

// Outputs of groups g0 and g1 (eight weight rows each) for x rows
// r0..r0+MR: g0's for x row i to out0[i * 8 + r], g1's to out1[i * 8 + r].
template <class K, int MR>
void legacy_pair_tile(const MatmulArgs& a, const uint8_t* g0, const uint8_t* g1, int64_t r0, float* out0,
                      float* out1) {
  static_assert(kPairTile<K> && !K::kSuper);
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  constexpr int kBlockBytes = K::kScaleBytes + K::kHighBytes + K::kCodeBytes;
  __m512 acc[MR], acc_m[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) acc[i] = acc_m[i] = _mm512_setzero_ps();
  const int8_t* const x0 = qx.q.data() + r0 * qx.cols;
  const int64_t x_stride = qx.cols;
  const __m512i low = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* blk0 = g0 + b * kBlockBytes;
    const uint8_t* blk1 = g1 + b * kBlockBytes;
    const uint8_t* c0 = blk0 + K::kScaleBytes + K::kHighBytes;
    const uint8_t* c1 = blk1 + K::kScaleBytes + K::kHighBytes;
    const auto quad = [](const int8_t* p) {
      return _mm512_set1_epi32(static_cast<int>(load_u32le(reinterpret_cast<const uint8_t*>(p))));
    };
    __m512i s_lo[MR], s_hi[MR];
    if constexpr (K::kSigned) {
      // Q8_0: vpdpbusd wants one unsigned side, so the codes go in as
      // w + 128 (the top bit flipped) and the sum starts at -128 * sum(q_x)
      // to take 128 * sum(q_x) back off: exactly sum(w * q_x).
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        s_lo[i] = _mm512_set1_epi32(-128 * qx.block_sum[(r0 + i) * blocks + b]);
        s_hi[i] = _mm512_setzero_si512();
      }
      const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m512i w = _mm512_xor_si512(load_pair256(c0 + 32 * j, c1 + 32 * j), flip);
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i)
          s_lo[i] = _mm512_dpbusd_epi32(s_lo[i], w, quad(x0 + i * x_stride + b * kQK + 4 * j));
      }
    } else {
      // unpack_codes on both groups at once; low and high code halves in two
      // chains, added at the end (integer sums: the order changes nothing).
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) s_lo[i] = s_hi[i] = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m512i packed = load_pair256(c0 + 32 * j, c1 + 32 * j);
        __m512i lo = _mm512_and_si512(packed, low);
        __m512i hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low);
        if constexpr (K::kFifthBit) {
          const __m512i high = load_pair256(c0 - K::kHighBytes, c1 - K::kHighBytes);
          const __m512i bit4 = _mm512_set1_epi8(0x10);
          lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_slli_epi32(high, 4 - j), bit4));
          hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_srli_epi32(high, j), bit4));
        }
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
          const int8_t* xb = x0 + i * x_stride + b * kQK;
          s_lo[i] = _mm512_dpbusd_epi32(s_lo[i], lo, quad(xb + 4 * j));
          s_hi[i] = _mm512_dpbusd_epi32(s_hi[i], hi, quad(xb + 16 + 4 * j));
        }
      }
    }
    const __m512 d = load_f16_pair(blk0, blk1);
    const __m512 m = K::kAffine ? load_f16_pair(blk0 + 16, blk1 + 16) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const int64_t xi = (r0 + i) * blocks + b;
      __m512i sum = _mm512_add_epi32(s_lo[i], s_hi[i]);
      if constexpr (K::kBias) sum = _mm512_sub_epi32(sum, _mm512_set1_epi32(qx.bias_sum[xi]));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(d, _mm512_set1_ps(qx.scale[xi])), acc[i]);
      if constexpr (K::kAffine) acc_m[i] = _mm512_fmadd_ps(m, _mm512_set1_ps(qx.scaled_sum[xi]), acc_m[i]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const __m512 y = K::kAffine ? _mm512_add_ps(acc[i], acc_m[i]) : acc[i];
    _mm256_storeu_ps(out0 + i * kInterleaveRows, _mm512_castps512_ps256(y));
    _mm256_storeu_ps(out1 + i * kInterleaveRows, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(y), 1)));
  }
}
// A 256-bit vpshufb control (the same in each 128-bit lane) in both halves.
inline __m512i wide_control(__m256i control) { return _mm512_broadcast_i64x4(control); }

// q4k_tile for groups g0 and g1 side by side (lanes 0-7, 8-15), as
// legacy_pair_tile: each lane's integers and float steps are q4k_tile's.
// It mirrors q4k_tile step for step at 512 bits (duplicates flags the
// shape); a change to one must go to the other, and Interleave.*/q4_K,
// /q5_K (bit identity with the row layout, run on a CPU with AVX-512 VNNI)
// would catch a drift. A width-generic kernel is left for later.
template <class K, int MR>
void q4k_pair_tile(const MatmulArgs& a, const uint8_t* g0, const uint8_t* g1, int64_t r0, float* out0, float* out1) {
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  __m512 acc[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  const __m512i low = _mm512_set1_epi8(0x0F), six = _mm512_set1_epi8(0x3F), top2 = _mm512_set1_epi8(0x30);
  for (int64_t b = 0; b < blocks; ++b) {
    const int8_t* xb[MR];
    // q4k_tile's x sub-block pairs (the same value in every lane).
    __m512i x_pairs[MR][4];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const int64_t xi = (r0 + i) * blocks + b;
      xb[i] = qx.q.data() + xi * kQK_K;
      const __m256i s16 = load256(qx.sums16.data() + xi * 16);
      const __m256i h = _mm256_hadd_epi16(s16, s16);
      x_pairs[i][0] = _mm512_broadcastd_epi32(_mm256_castsi256_si128(h));
      x_pairs[i][1] = _mm512_broadcastd_epi32(_mm_srli_si128(_mm256_castsi256_si128(h), 4));
      x_pairs[i][2] = _mm512_broadcastd_epi32(_mm256_extracti128_si256(h, 1));
      x_pairs[i][3] = _mm512_broadcastd_epi32(_mm_srli_si128(_mm256_extracti128_si256(h, 1), 4));
    }
    const uint8_t* blk0 = g0 + b * K::kBlockBytes;
    const uint8_t* blk1 = g1 + b * K::kBlockBytes;
    const __m512i u0 = load_pair256(blk0 + 32, blk1 + 32), u1 = load_pair256(blk0 + 64, blk1 + 64),
                  u2 = load_pair256(blk0 + 96, blk1 + 96);
    const __m512i sc_lo = _mm512_and_si512(u0, six);
    const __m512i sc_hi =
        _mm512_or_si512(_mm512_and_si512(u2, low), _mm512_and_si512(_mm512_srli_epi32(u0, 2), top2));
    const uint8_t* codes0 = blk0 + K::kCodeOffset;
    const uint8_t* codes1 = blk1 + K::kCodeOffset;
    __m512i S[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) S[i] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m512i scale =
            _mm512_shuffle_epi8(p < 2 ? sc_lo : sc_hi, wide_control(scale_pair_control((2 * p + h) % 4)));
        __m512i pairs[MR];
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) pairs[i] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int l = 0; l < 8; ++l) {
          const __m512i packed = load_pair256(codes0 + 32 * (8 * p + l), codes1 + 32 * (8 * p + l));
          __m512i nibbles =
              h == 0 ? _mm512_and_si512(packed, low) : _mm512_and_si512(_mm512_srli_epi16(packed, 4), low);
          if constexpr (K::kFifthBit) {
            const __m512i bit = _mm512_and_si512(
                _mm512_srli_epi16(load_pair256(blk0 + 128 + 32 * l, blk1 + 128 + 32 * l), 2 * p + h),
                _mm512_set1_epi8(1));
            nibbles = _mm512_or_si512(nibbles, _mm512_slli_epi16(bit, 4));
          }
#pragma GCC unroll 8
          for (int i = 0; i < MR; ++i) {
            const int8_t* x4 = xb[i] + 64 * p + 32 * h + 4 * l;
            const __m512i xq = _mm512_set1_epi32(static_cast<int>(load_u32le(reinterpret_cast<const uint8_t*>(x4))));
            pairs[i] = _mm512_add_epi16(pairs[i], _mm512_maddubs_epi16(nibbles, xq));
          }
          if constexpr (K::kFifthBit) {
            if (l == 3) {
#pragma GCC unroll 8
              for (int i = 0; i < MR; ++i)
                S[i] = _mm512_dpwssd_epi32(S[i], pairs[i], scale), pairs[i] = _mm512_setzero_si512();
            }
          }
        }
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) S[i] = _mm512_dpwssd_epi32(S[i], pairs[i], scale);
      }
    }
    const __m512i mn_lo = _mm512_and_si512(u1, six);
    const __m512i mn_hi =
        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), low), _mm512_and_si512(_mm512_srli_epi32(u1, 2), top2));
    __m512i M[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) M[i] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512i mins = _mm512_shuffle_epi8(k < 2 ? mn_lo : mn_hi, wide_control(min_pair_control(k % 2)));
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) M[i] = _mm512_add_epi32(M[i], _mm512_madd_epi16(mins, x_pairs[i][k]));
    }
    const __m512 d = load_f16_pair(blk0, blk1);
    const __m512 neg_dmin = _mm512_castsi512_ps(
        _mm512_xor_si512(_mm512_castps_si512(load_f16_pair(blk0 + 16, blk1 + 16)), _mm512_set1_epi32(INT32_MIN)));
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 dx = _mm512_set1_ps(qx.scale[(r0 + i) * blocks + b]);
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[i]), _mm512_mul_ps(d, dx), acc[i]);
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(M[i]), _mm512_mul_ps(neg_dmin, dx), acc[i]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    _mm256_storeu_ps(out0 + i * kInterleaveRows, _mm512_castps512_ps256(acc[i]));
    _mm256_storeu_ps(out1 + i * kInterleaveRows,
                     _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[i]), 1)));
  }
}

// The pair tile of K's kind.
template <class K, int MR>
void pair_tile(const MatmulArgs& a, const uint8_t* g0, const uint8_t* g1, int64_t r0, float* out0, float* out1) {
  if constexpr (K::kSuper) {
    q4k_pair_tile<K, MR>(a, g0, g1, r0, out0, out1);
  } else {
    legacy_pair_tile<K, MR>(a, g0, g1, r0, out0, out1);
  }
}
#else
// Builds without AVX-512 VNNI: no pair tile (the declarations only let
// interleaved_rows name it in a discarded branch).
template <class K>
constexpr bool kPairTile = false;
template <class K>
constexpr int kPairRows = 1;
template <class K, int MR>
void pair_tile(const MatmulArgs& a, const uint8_t* g0, const uint8_t* g1, int64_t r0, float* out0, float* out1);
#endif

// Outputs of NG groups of eight weight rows for x rows r0..r0+MR, whatever
// the type.
template <class K, int NG, int MR>
void tile(const MatmulArgs& a, const uint8_t* const* groups, int64_t r0, float* const* out) {
  if constexpr (std::is_same_v<K, IlQ6_K>) {
    q6k_tile<NG, MR>(a, groups, r0, out);
  } else if constexpr (K::kSuper) {
    q4k_tile<K, NG, MR>(a, groups, r0, out);
  } else {
    legacy_group_tile<K, NG, MR>(a, groups, r0, out);
  }
}

// Batches: MR x rows share each unpacked block. Three for 4- and 5-bit codes,
// four for Q8_0: with four x rows the Q4 tile's sixteen accumulators no
// longer fit the registers and its loop spilled (`*MatmulBench*`, 512 rows,
// one thread, in turns: Q4_1 19.5-20.1 -> 18.3-18.9 ms, Q4_0 18.7-18.9 ->
// 18.0-18.2 with three; Q8_0 28.9-29.2 -> 29.4-29.7, so it keeps four).
// Each output's arithmetic is the same whatever the tile's row count.
template <class K>
constexpr int kBatchRows = K::kSigned ? 4 : 3;
constexpr int kMaxBatchRows = 4;

// Decode walks this many far-apart groups of a thread's rows together.
//
// Why: with one x row a group's block is used once, so decode streams the
// weights from DRAM, and one sequential stream per core left the memory
// system underused on this machine (Zen 1 VM, 2 cores); software prefetch
// one to eight groups ahead, into L1 or L2, measured no better than none.
// Four streams, a quarter of the thread's rows apart, keep more lines in
// flight, and the four groups share each broadcast of x. Measured against
// the one-stream kernel (`--gtest_filter=*MatmulBench*`, the two builds in
// turns, four rounds, busy VM, 2026-12-01): 49152 x 576 from DRAM on two
// threads, medians Q4_1 1170 -> 871 us, Q8_0 2243 -> 1530 us; on one
// thread 4-7% faster from DRAM and 11% in L2 (the shared broadcasts). Six
// streams measured the same as four end to end, eight slower (the
// accumulators no longer fit in registers).
constexpr int kDecodeStreams = 4;

// Groups [0, n) of a thread's share (group i at `first + i * group_bytes`)
// for the single x row: kDecodeStreams sections walked side by side, then
// the remainder together.
template <class K>
void decode_rows(const MatmulArgs& a, const uint8_t* first, size_t group_bytes, int64_t n, int64_t row0,
                 int64_t row_end) {
  alignas(32) float out[kDecodeStreams * kInterleaveRows];
  auto emit = [&](int64_t gi, const float* o8) {
    const int64_t o = row0 + gi * kInterleaveRows;
    // One store for a whole group (a std::copy of eight floats was a
    // memmove call per group: ~0.6% of decode samples in perf; end to end
    // within noise).
    if (row_end - o >= kInterleaveRows) return _mm256_storeu_ps(a.y + o, _mm256_load_ps(o8));
    std::copy(o8, o8 + (row_end - o), a.y + o);
  };
  // NG groups, group g being index idx(g), in one pass.
  auto run = [&]<int NG>(auto idx) {
    const uint8_t* groups[NG];
    float* outs[NG];
    for (int g = 0; g < NG; ++g) groups[g] = first + idx(g) * group_bytes, outs[g] = out + g * kInterleaveRows;
    tile<K, NG, 1>(a, groups, 0, outs);
    for (int g = 0; g < NG; ++g) emit(idx(g), outs[g]);
  };
  const int64_t len = n / kDecodeStreams;
  for (int64_t i = 0; i < len; ++i) run.template operator()<kDecodeStreams>([&](int g) { return g * len + i; });
  const int64_t done = kDecodeStreams * len;
  auto rest = [&](int g) { return done + g; };
  static_assert(kDecodeStreams == 4, "the remainder switch below covers 1..3 groups");
  switch (n - done) {
    case 1:
      return run.template operator()<1>(rest);
    case 2:
      return run.template operator()<2>(rest);
    case 3:
      return run.template operator()<3>(rest);
    default:
      return;
  }
}

template <class K>
void interleaved_rows(const MatmulArgs& a, int64_t begin, int64_t end) {
  const WeightMatrix& w = *a.w;
  const auto* base = static_cast<const uint8_t*>(w.data);
  const size_t group_bytes = static_cast<size_t>(kInterleaveRows) * w.row_bytes;
  // begin is a multiple of 8 (matmul() splits rows in units of 16); end may
  // cut the last, padded group.
  const uint8_t* first = base + (begin / kInterleaveRows) * group_bytes;
  if (a.n_x == 1)
    return decode_rows<K>(a, first, group_bytes, (end - begin + kInterleaveRows - 1) / kInterleaveRows, begin, end);
  static_assert(kBatchRows<K> <= kMaxBatchRows, "out holds kMaxBatchRows x rows");
  alignas(32) float out[kMaxBatchRows * kInterleaveRows];
  // Tile buffer `from` (8 floats per x row) to outputs o.. (count of them)
  // of x rows r0 .. r0 + mr.
  auto emit = [&](const float* from, int64_t o, int64_t count, int64_t r0, int mr) {
    for (int i = 0; i < mr; ++i) {
      float* dst = a.y + (r0 + i) * w.rows + o;
      if (count == kInterleaveRows) {
        _mm256_storeu_ps(dst, _mm256_load_ps(from + i * kInterleaveRows));
      } else {
        std::copy(from + i * kInterleaveRows, from + i * kInterleaveRows + count, dst);
      }
    }
  };
  // One group's outputs o.. (count) for x rows r .. n_x: kBatchRows at a
  // time, the rows left over in one tile (a pass per row would unpack the
  // block once per row).
  auto group_rows = [&](const uint8_t* group, int64_t o, int64_t count, int64_t r) {
    float* const outs[1] = {out};
    for (; r + kBatchRows<K> <= a.n_x; r += kBatchRows<K>) {
      tile<K, 1, kBatchRows<K>>(a, &group, r, outs);
      emit(out, o, count, r, kBatchRows<K>);
    }
    static_assert(kMaxBatchRows == 4, "the switch below covers 1..3 rows");
    switch (a.n_x - r) {
      case 3:
        tile<K, 1, 3>(a, &group, r, outs);
        break;
      case 2:
        tile<K, 1, 2>(a, &group, r, outs);
        break;
      case 1:
        tile<K, 1, 1>(a, &group, r, outs);
        break;
      default:
        break;
    }
    emit(out, o, count, r, static_cast<int>(a.n_x - r));
  };
  for (int64_t o = begin; o < end; o += kInterleaveRows) {
    const uint8_t* group = first + ((o - begin) / kInterleaveRows) * group_bytes;
    if constexpr (kPairTile<K>) {
      // Two whole groups (o and o + 8): x rows kPairRows at a time, both
      // groups in each zmm register; the rows left over per group.
      if (o + 2 * kInterleaveRows <= end) {
        constexpr int kRows = kPairRows<K>;
        alignas(64) float out0[kRows * kInterleaveRows], out1[kRows * kInterleaveRows];
        int64_t r = 0;
        for (; r + kRows <= a.n_x; r += kRows) {
          pair_tile<K, kRows>(a, group, group + group_bytes, r, out0, out1);
          emit(out0, o, kInterleaveRows, r, kRows);
          emit(out1, o + kInterleaveRows, kInterleaveRows, r, kRows);
        }
        if (r < a.n_x) {
          group_rows(group, o, kInterleaveRows, r);
          group_rows(group + group_bytes, o + kInterleaveRows, kInterleaveRows, r);
        }
        o += kInterleaveRows;  // the second group is done too
        continue;
      }
    }
    group_rows(group, o, std::min<int64_t>(kInterleaveRows, end - o), 0);
  }
}

// Every interleaved type.
inline void interleaved_rows_any(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.w->dtype) {
    case DType::kQ4_0:
      return interleaved_rows<IlQ4_0>(a, row_begin, row_end);
    case DType::kQ4_1:
      return interleaved_rows<IlQ4_1>(a, row_begin, row_end);
    case DType::kQ5_0:
      return interleaved_rows<IlQ5_0>(a, row_begin, row_end);
    case DType::kQ8_0:
      return interleaved_rows<IlQ8_0>(a, row_begin, row_end);
    case DType::kQ4_K:
      return interleaved_rows<IlQ4_K>(a, row_begin, row_end);
    case DType::kQ5_K:
      return interleaved_rows<IlQ5_K>(a, row_begin, row_end);
    case DType::kQ6_K:
      return interleaved_rows<IlQ6_K>(a, row_begin, row_end);
    default:
      break;  // interleave8() makes no other type
  }
}

}  // namespace
}  // namespace omnibus::matmul_detail
