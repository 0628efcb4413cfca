// The legacy types' kernels for the interleaved layout (Q4_0, Q4_1, Q5_0,
// Q8_0, IQ4_NL, MXFP4; eight rows side by side per block, kernels/weight_interleave.h):
// the per-type block descriptions, code unpacking, exact block sums and the
// group tile. Part of the kernels matmul_interleaved_kernels.h gathers (its
// top comment says how they are built and why their bits agree); include
// that header, not this one.
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

// IQ4_NL: Q4_0's block layout; each code indexes the code book's signed
// levels (kIq4nlValues), which then go in as Q8_0's signed codes do.
struct IlIQ4_NL {
  static constexpr bool kSuper = false;
  static constexpr bool kAffine = false, kBias = false, kSigned = true, kFifthBit = false;
  static constexpr int kScaleBytes = 16, kHighBytes = 0, kCodeBytes = 128;
  static constexpr const int8_t* kBook = kIq4nlValues;
};
// MXFP4: IQ4_NL with its own code book and eight E8M0 exponent bytes for
// the scales (e[8], codes[128]: 8 x 17 bytes, the row blocks' bytes).
struct IlMXFP4 {
  static constexpr bool kSuper = false;
  static constexpr bool kAffine = false, kBias = false, kSigned = true, kFifthBit = false;
  static constexpr int kScaleBytes = 8, kHighBytes = 0, kCodeBytes = 128;
  static constexpr const int8_t* kBook = kMxfp4Values;
  static constexpr bool kE8M0Scale = true;
};

// Types whose codes index a code book of signed levels (IQ4_NL, MXFP4).
template <class K>
constexpr bool kCodeBook = requires {
  K::kBook;
};

// The eight rows' scales of one group's block as floats: f16 d[8], or
// MXFP4's exponents e[8] as mxfp4_scale makes them: the bits (e - 1) << 23,
// e = 0 and 1 saturating to 0.
template <class K>
inline __m256 group_scales(const uint8_t* blk) {
  if constexpr (requires { K::kE8M0Scale; }) {
    const __m128i e_minus_1 = _mm_subs_epu8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk)), _mm_set1_epi8(1));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu8_epi32(e_minus_1), 23));
  } else {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
  }
}

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
  if constexpr (kCodeBook<K>) {
    // The nibbles' levels, then |level| x (x with the level's sign).
    const __m256i book = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(K::kBook)));
#pragma GCC unroll 8
    for (int k = 0; k < NG * MR; ++k) sums[k] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
#pragma GCC unroll 8
      for (int g = 0; g < NG; ++g) {
        __m256i lo, hi;
        unpack_codes<K>(codes[g], j, lo, hi);
        const __m256i w_lo = _mm256_shuffle_epi8(book, lo), w_hi = _mm256_shuffle_epi8(book, hi);
        const __m256i m_lo = _mm256_abs_epi8(w_lo), m_hi = _mm256_abs_epi8(w_hi);
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
          __m256i& s = sums[g * MR + i];
          s = add_dot4(s, m_lo, _mm256_sign_epi8(broadcast4(xb[i] + 4 * j), w_lo));
          s = add_dot4(s, m_hi, _mm256_sign_epi8(broadcast4(xb[i] + 16 + 4 * j), w_hi));
        }
      }
    }
  } else if constexpr (K::kSigned) {
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
      const __m256 d = group_scales<K>(blk);
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

}  // namespace
}  // namespace omnibus::matmul_detail
