// AVX2 int8 matmul kernels for quantized weights against int8 activations
// (see matmul_internal.h). Compiled with -mavx2 -mfma -mf16c; reached only
// through rows_avx2() after a run-time CPU check.
//
// Batch invariance: one tile kernel per type serves every x-row count (MR x
// rows by NR weight rows at a time), and each output's arithmetic is the same
// whatever tile it sits in:
//  * legacy types, per 32-block b in order:
//      lanes = exact int32 sums of code * q_x over 4-element groups (minus
//              bias * sum(q_x) for Q4_0 / Q5_0),
//      acc = fma(float(lanes), d_w[b] * d_x[b], acc);
//    y = hsum(acc) [+ dot over blocks of m_w[b] and d_x[b] * sum(q_x[b]) for
//    Q4_1 / Q5_1, 8 lanes then hsum];
//  * K types, per 256-block in order: exact int32 lanes of the scale-weighted
//    code products, acc = fma(float(lanes), d_w * d_x, acc), then for
//    Q4_K / Q5_K acc = fma(float(min lanes), -(dmin_w * d_x), acc); y = hsum(acc).
// Integer parts are exact (no int16 saturation is reachable: the largest
// pair sum is 2 * 128 * 127 for Q8_0), so only the float steps above round.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/matmul_avx2_common.h"
#include "kernels/matmul_internal.h"
#include "tensor/quant_blocks.h"

namespace omnibus::matmul_detail {
namespace {

using namespace matmul_avx2;

inline float f16_at(const uint8_t* p) { return _cvtsh_ss(load_u16le(p)); }

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

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
  return _mm256_madd_epi16(_mm256_maddubs_epi16(wc.codes, xv), _mm256_set1_epi16(1));
}

// The fixed dot of two float arrays: 8 lanes, k-ordered FMAs, hsum.
inline float dot_lanes(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), acc);
  if (k < n) {
    const __m256i mask = lane_mask(static_cast<int>(n - k));
    acc = _mm256_fmadd_ps(_mm256_maskload_ps(a + k, mask), _mm256_maskload_ps(b + k, mask), acc);
  }
  return hsum(acc);
}

// The tile's block-b weight scales, converted together (lane 2j = d_j, lane
// 2j + 1 = m_j), times each x row's scale: scale[i][2j] = d_j * dx_i, read
// back by broadcasts. Affine types also record m_j in mins[j * blocks + b].
template <class K, int MR, int NR>
inline void legacy_scales(const uint8_t* rows, size_t row_bytes, int64_t b, const float* xscale, int64_t blocks,
                          float (*scale)[8], float* mins) {
  uint32_t bits[4] = {};
#pragma GCC unroll 4
  for (int j = 0; j < NR; ++j) bits[j] = K::dm_bits(rows + j * row_bytes, b);
  const __m256 dm = _mm256_cvtph_ps(_mm_setr_epi32(static_cast<int>(bits[0]), static_cast<int>(bits[1]),
                                                   static_cast<int>(bits[2]), static_cast<int>(bits[3])));
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) _mm256_store_ps(scale[i], _mm256_mul_ps(dm, _mm256_broadcast_ss(xscale + i * blocks)));
  if constexpr (K::kAffine) {
    alignas(32) float dm_out[8];
    _mm256_store_ps(dm_out, dm);
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) mins[j * blocks + b] = dm_out[2 * j + 1];
  }
}

// Outputs y[r0 + i][o + j] for i < MR, j < NR (NR <= 4). mins: 4 * blocks
// floats of scratch (affine types). Loops over i and j are fully unrolled so
// the accumulators stay in registers.
template <class K, int MR, int NR>
void legacy_tile(const MatmulArgs& a, int64_t o, int64_t r0, float* mins) {
  static_assert(NR <= 4);
  const WeightMatrix& w = *a.w;
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  const size_t row_bytes = w.row_bytes;
  const uint8_t* rows = static_cast<const uint8_t*>(w.data) + o * row_bytes;
  const int8_t* xq = qx.q.data() + r0 * blocks * kQK;
  const float* xscale = qx.scale.data() + r0 * blocks;
  const int32_t* xbias = K::kBias ? qx.bias_lanes.data() + r0 * blocks * 8 : nullptr;
  __m256 acc[MR][NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    alignas(32) float scale[MR][8];
    legacy_scales<K, MR, NR>(rows, row_bytes, b, xscale + b, blocks, scale, mins);
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const LegacyCodes wc = K::codes(rows + j * row_bytes, b);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const int64_t xb = i * blocks + b;
        __m256i lanes = legacy_lanes<K>(wc, xq + xb * kQK);
        if constexpr (K::kBias) lanes = _mm256_sub_epi32(lanes, load256(xbias + xb * 8));
        acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lanes), _mm256_broadcast_ss(&scale[i][2 * j]), acc[i][j]);
      }
    }
  }
  float out[MR][NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) out[i][j] = hsum(acc[i][j]);
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) {
      if constexpr (K::kAffine)
        out[i][j] += dot_lanes(mins + j * blocks, qx.scaled_sum.data() + (r0 + i) * blocks, blocks);
      a.y[(r0 + i) * w.rows + o + j] = out[i][j];
    }
  }
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
          lanes[i] = _mm256_add_epi32(
              lanes[i], _mm256_madd_epi16(_mm256_maddubs_epi16(codes[h], load256(xq[i] + 32 * c)), scale));
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
          lanes[i] = _mm256_add_epi32(lanes[i],
                                      _mm256_madd_epi16(_mm256_maddubs_epi16(codes, load256(xq[i] + 32 * c)), scale));
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
          lanes[i] = _mm256_add_epi32(lanes[i],
                                      _mm256_madd_epi16(_mm256_maddubs_epi16(codes, load256(xq[i] + 32 * v)), scale));
      }
    }
  }
  static float d(const uint8_t* row, int64_t b) { return f16_at((reinterpret_cast<const BlockQ6_K*>(row) + b)->d); }
  static float dmin(const uint8_t*, int64_t) { return 0.0f; }
};

template <class K, int MR, int NR>
void k_tile(const MatmulArgs& a, int64_t o, int64_t r0, float*) {
  const WeightMatrix& w = *a.w;
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  const size_t row_bytes = w.row_bytes;
  const uint8_t* rows = static_cast<const uint8_t*>(w.data) + o * row_bytes;
  const int8_t* xq = qx.q.data() + r0 * blocks * kQK_K;
  const float* xscale = qx.scale.data() + r0 * blocks;
  const int16_t* xsums = qx.sums16.data() + r0 * blocks * 16;
  __m256 acc[MR][NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const int8_t* xrow[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) xrow[i] = xq + (i * blocks + b) * kQK_K;
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const uint8_t* row = rows + j * row_bytes;
      __m256i lanes[MR], extra;
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) lanes[i] = _mm256_setzero_si256();
      K::template accumulate<MR>(row, b, xrow, lanes, &extra);
      const __m256 d = _mm256_set1_ps(K::d(row, b));
      const __m256 neg_dmin = _mm256_set1_ps(-K::dmin(row, b));
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const int64_t xb = i * blocks + b;
        const __m256i sums16 = load256(xsums + xb * 16);
        const __m256 dx = _mm256_broadcast_ss(xscale + xb);
        if constexpr (!K::kMins)  // Q6_K: remove the code bias 32
          lanes[i] = _mm256_sub_epi32(lanes[i], _mm256_slli_epi32(_mm256_madd_epi16(sums16, extra), 5));
        acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lanes[i]), _mm256_mul_ps(d, dx), acc[i][j]);
        if constexpr (K::kMins)
          acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(sums16, extra)), _mm256_mul_ps(neg_dmin, dx),
                                      acc[i][j]);
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) a.y[(r0 + i) * w.rows + o + j] = hsum(acc[i][j]);
}

// ---- tiling over rows ------------------------------------------------------

template <class K, int MR, int NR>
void tile(const MatmulArgs& a, int64_t o, int64_t r0, float* mins) {
  if constexpr (K::kSuper) {
    k_tile<K, MR, NR>(a, o, r0, mins);
  } else {
    legacy_tile<K, MR, NR>(a, o, r0, mins);
  }
}

// Tile shapes (x rows by weight rows). Few x rows (decode): 1 x 4, so four
// weight rows stream at once. Batches: 4 x 3, twelve accumulators, each
// weight block unpacked once per four x rows.
constexpr int kBatchTileX = 4, kBatchTileW = 3;
constexpr int kSingleTileW = 4;

// Weight rows [o, o_end) (at most NR of them) against x rows r0..r0+MR.
template <class K, int MR, int NR>
void tile_upto(const MatmulArgs& a, int64_t o, int64_t o_end, int64_t r0, float* mins) {
  switch (o_end - o) {
    case 4:
      if constexpr (NR >= 4) tile<K, MR, 4>(a, o, r0, mins);
      break;
    case 3:
      if constexpr (NR >= 3) tile<K, MR, 3>(a, o, r0, mins);
      break;
    case 2: tile<K, MR, 2>(a, o, r0, mins); break;
    case 1: tile<K, MR, 1>(a, o, r0, mins); break;
    default: break;
  }
}

// Weight tiles outermost, so the (small) weight tile stays in L1 while the
// x rows stream past it.
template <class K, int MR, int NR>
void tiles(const MatmulArgs& a, int64_t begin, int64_t end, float* mins) {
  for (int64_t o = begin; o < end; o += NR) {
    const int64_t o_end = std::min(end, o + NR);
    int64_t r = 0;
    if constexpr (MR > 1)
      for (; r + MR <= a.n_x; r += MR) tile_upto<K, MR, NR>(a, o, o_end, r, mins);
    for (; r < a.n_x; ++r) tile_upto<K, 1, NR>(a, o, o_end, r, mins);
  }
}

template <class K>
void q8_rows(const MatmulArgs& a, int64_t begin, int64_t end) {
  thread_local std::vector<float> mins;
  mins.resize(static_cast<size_t>(4 * a.qx->blocks));
  if (a.n_x >= kBatchTileX) {
    tiles<K, kBatchTileX, kBatchTileW>(a, begin, end, mins.data());
  } else {
    tiles<K, 1, kSingleTileW>(a, begin, end, mins.data());
  }
}

}  // namespace

void rows_avx2_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.w->dtype) {
    case DType::kQ4_0: return q8_rows<KernQ4_0>(a, row_begin, row_end);
    case DType::kQ4_1: return q8_rows<KernQ4_1>(a, row_begin, row_end);
    case DType::kQ5_0: return q8_rows<KernQ5_0>(a, row_begin, row_end);
    case DType::kQ5_1: return q8_rows<KernQ5_1>(a, row_begin, row_end);
    case DType::kQ8_0: return q8_rows<KernQ8_0>(a, row_begin, row_end);
    case DType::kQ4_K: return q8_rows<KernQ4_K>(a, row_begin, row_end);
    case DType::kQ5_K: return q8_rows<KernQ5_K>(a, row_begin, row_end);
    case DType::kQ6_K: return q8_rows<KernQ6_K>(a, row_begin, row_end);
    default: return rows_scalar(a, row_begin, row_end);
  }
}

}  // namespace omnibus::matmul_detail
