// The AVX-512 VNNI pair tiles for batches (two groups of eight rows in one
// zmm register), built only in matmul_interleaved_avx512vnni.cpp; other
// builds get declarations that let interleaved_rows name them in a
// discarded branch. Part of the kernels matmul_interleaved_kernels.h
// gathers; include that header, not this one.
#pragma once

#include <type_traits>

#include "base/aligned_buffer.h"
#include "kernels/matmul_interleaved_lowbit.h"

namespace omnibus::matmul_detail {
namespace {

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
// Batches with AVX-512 VNNI (matmul_interleaved_avx512vnni.cpp): two groups
// of eight rows side by side in one zmm register (lanes 0-7 the first
// group's rows, 8-15 the second's), so each vpdpbusd adds sixteen rows'
// products, where the 256-bit kernels add eight. On an Intel Xeon
// VM a zmm vpdpbusd issued about as often as a ymm one (1.9 against
// 2 a cycle, a throughput microbenchmark), twice the multiplies. Every
// lane's arithmetic is its 256-bit kernel's (the block's exact int32 sum,
// then the same float steps in the same order), so the outputs are
// bit-identical to the 256-bit kernels'. Every interleaved type: the
// legacy types (Q4_0, Q4_1, Q5_0, Q8_0, IQ4_NL, MXFP4), the K-quants (Q2_K
// to Q6_K) and IQ4_XS (one thread, Zen 4, batches of 512: IQ4_XS 234 -> 328
// GFLOP/s over its 256-bit VNNI tile, Q3_K 168-176 -> 239-249, Q2_K 210 ->
// 248-263); decode keeps the 256-bit kernels.
template <class K>
constexpr bool kPairTile = true;
// x rows per pair tile: its accumulators (one or two int32 chains and one
// float per x row, plus Q4_1's mins; the K-quants and IQ4_XS: the block
// sum, the sub-block sum and the float) and the codes fill the 32
// registers. Eight rows measured slower for the K-quants (spills). The
// same holds for the sub-block loops: fully unrolled, GCC hoists and
// interleaves their chains until they spill (Q6_K's tile kept some 30
// zmm on the stack), so the tiles below unroll those loops only as far
// as their constants need.
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

// acc + the lane sums of u8 x (the four int8 values at x, in every lane):
// one vpdpbusd whose x operand is its {1to16} memory broadcast. On Zen 4 a
// separate broadcast from memory takes a vector pipe of its own
// (docs/findings/zen4-broadcast-from-memory-costs-a-pipe.md), and GCC
// does not fold _mm512_set1_epi32 of a load into the instruction, hence
// the asm.
inline __m512i dpbusd_x4(__m512i acc, __m512i u8, const int8_t* x) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u8), "m"(*reinterpret_cast<const int32_t*>(x)));
  return acc;
}

// A code book's signed levels + 128 (IQ4_NL's: 1..241) in every 128-bit
// lane: vpshufb by a nibble gives vpdpbusd's unsigned operand (IQ4_NL,
// MXFP4 and IQ4_XS; the sums start at -128 x the x sum to take the 128s
// back off).
inline __m512i levels_plus_128(const int8_t* book) {
  return _mm512_broadcast_i32x4(
      _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(book)), _mm_set1_epi8(static_cast<char>(0x80))));
}
inline __m512i iq4nl_levels_plus_128() { return levels_plus_128(kIq4nlValues); }

// Groups g0's and g1's block scales (lanes 0-7, 8-15), as group_scales.
template <class K>
inline __m512 pair_scales(const uint8_t* a, const uint8_t* b) {
  if constexpr (requires { K::kE8M0Scale; }) {
    const __m128i e = _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a)),
                                         _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu8_epi32(_mm_subs_epu8(e, _mm_set1_epi8(1))), 23));
  } else {
    return load_f16_pair(a, b);
  }
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
  [[maybe_unused]] const __m512i book_u8 = [&] {
    if constexpr (kCodeBook<K>) return levels_plus_128(K::kBook);
    return low;
  }();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* blk0 = g0 + b * kBlockBytes;
    const uint8_t* blk1 = g1 + b * kBlockBytes;
    const uint8_t* c0 = blk0 + K::kScaleBytes + K::kHighBytes;
    const uint8_t* c1 = blk1 + K::kScaleBytes + K::kHighBytes;
    __m512i s_lo[MR], s_hi[MR];
    if constexpr (kCodeBook<K>) {
      // IQ4_NL, MXFP4: the nibbles' code-book levels go in as level + 128,
      // the sum starting at -128 * sum(q_x), as Q8_0's flipped codes below:
      // exactly sum(level * q_x). One chain a row (s_hi stays zero).
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        s_lo[i] = _mm512_set1_epi32(-128 * qx.block_sum[(r0 + i) * blocks + b]);
        s_hi[i] = _mm512_setzero_si512();
      }
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m512i packed = load_pair256(c0 + 32 * j, c1 + 32 * j);
        const __m512i lo = _mm512_shuffle_epi8(book_u8, _mm512_and_si512(packed, low));
        const __m512i hi = _mm512_shuffle_epi8(book_u8, _mm512_and_si512(_mm512_srli_epi16(packed, 4), low));
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
          const int8_t* xb = x0 + i * x_stride + b * kQK;
          s_lo[i] = dpbusd_x4(s_lo[i], lo, xb + 4 * j);
          s_lo[i] = dpbusd_x4(s_lo[i], hi, xb + 16 + 4 * j);
        }
      }
    } else if constexpr (K::kSigned) {
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
        for (int i = 0; i < MR; ++i) s_lo[i] = dpbusd_x4(s_lo[i], w, x0 + i * x_stride + b * kQK + 4 * j);
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
          s_lo[i] = dpbusd_x4(s_lo[i], lo, xb + 4 * j);
          s_hi[i] = dpbusd_x4(s_hi[i], hi, xb + 16 + 4 * j);
        }
      }
    }
    const __m512 d = pair_scales<K>(blk0, blk1);
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

// P[i] += the lane sums of codes x (x row i's four int8 values at xb[i] +
// off, in every lane): one vpdpbusd an x row.
template <int MR>
inline void add_dot4_rows(__m512i* P, __m512i codes, const int8_t* const* xb, int64_t off) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) P[i] = dpbusd_x4(P[i], codes, xb[i] + off);
}
// S[i] += P[i] x scale, lane by lane in int32.
template <int MR>
inline void add_scaled_sums(__m512i* S, const __m512i* P, __m512i scale) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) S[i] = _mm512_add_epi32(S[i], _mm512_mullo_epi32(P[i], scale));
}
// acc[i] += float(S[i]) x d x d_x (x row r0 + i's block b scale): the
// block's float step.
template <int MR>
inline void add_block_sums(__m512* acc, const __m512i* S, __m512 d, const QuantizedX& qx, int64_t r0, int64_t b) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const __m512 dx = _mm512_set1_ps(qx.scale[(r0 + i) * qx.blocks + b]);
    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[i]), _mm512_mul_ps(d, dx), acc[i]);
  }
}
// byte_weighted_x_sums at 512 bits: lane r of sums[i] is the sum over the
// sixteen sub-blocks s of row r's int8 value s (byte s % 4 of lane r of
// words[s / 4]) times x row i's sum16 s, exactly.
template <int MR>
inline void byte_weighted_x_sums_pair(const __m512i* words, const int16_t* const* xs, __m512i* sums) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) sums[i] = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int w = 0; w < 4; ++w) {
#pragma GCC unroll 2
    for (int k = 0; k < 2; ++k) {
      // Bytes 2k and 2k + 1 of each lane as two int16 (sub-blocks 4w + 2k, 4w + 2k + 1).
      const __m512i values =
          _mm512_srai_epi16(_mm512_shuffle_epi8(words[w], wide_control(high_bytes_control(2 * k, 2 * k + 1))), 8);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m512i x_pair =
            _mm512_set1_epi32(static_cast<int>(load_u32le(reinterpret_cast<const uint8_t*>(xs[i] + 4 * w + 2 * k))));
        sums[i] = _mm512_dpwssd_epi32(sums[i], values, x_pair);
      }
    }
  }
}
// add_block_sums, then the mins term: acc[i] += float(M[i]) x -dmin x d_x
// (Q4_K, Q5_K and Q2_K).
template <int MR>
inline void add_block_sums_and_mins(__m512* acc, const __m512i* S, const __m512i* M, __m512 d, __m512 dmin,
                                    const QuantizedX& qx, int64_t r0, int64_t b) {
  const __m512 neg_dmin =
      _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(dmin), _mm512_set1_epi32(INT32_MIN)));
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const __m512 dx = _mm512_set1_ps(qx.scale[(r0 + i) * qx.blocks + b]);
    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[i]), _mm512_mul_ps(d, dx), acc[i]);
    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(M[i]), _mm512_mul_ps(neg_dmin, dx), acc[i]);
  }
}
// x rows r0..r0+MR's block b: its int8 values (xb) and sums of 16 (xs).
template <int MR>
inline void block_x_rows(const QuantizedX& qx, int64_t r0, int64_t b, const int8_t** xb, const int16_t** xs) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const int64_t xi = (r0 + i) * qx.blocks + b;
    xb[i] = qx.q.data() + xi * kQK_K;
    xs[i] = qx.sums16.data() + xi * 16;
  }
}
// Lanes 0-7 of y[i] to out0[i * 8 ..], lanes 8-15 to out1[i * 8 ..].
template <int MR>
inline void store_pair(const __m512* y, float* out0, float* out1) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    _mm256_storeu_ps(out0 + i * kInterleaveRows, _mm512_castps512_ps256(y[i]));
    _mm256_storeu_ps(out1 + i * kInterleaveRows, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(y[i]), 1)));
  }
}

// q4k_tile for groups g0 and g1 side by side (lanes 0-7, 8-15), as
// legacy_pair_tile: each lane's integers and float steps are q4k_tile's
// (the sub-block sums reached another way, below). It mirrors q4k_tile at
// 512 bits (duplicates flags the shape); a change to one must go to the
// other, and Interleave.*/q4_K,
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
    const int16_t* xs[MR];
    block_x_rows<MR>(qx, r0, b, xb, xs);
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
      // Each sub-block's code x q_x products go straight into int32 lanes
      // (vpdpbusd; at most 32 x 31 x 127), then times its scale (vpmulld):
      // the integers of q4k_tile's int16 pair sums and vpdpwssd without the
      // int16 adds. One thread, Zen 4, `*DecodeAndPrefill*` batches of 512:
      // Q4_K 212 -> 291 GFLOP/s, Q5_K 195-210 -> 273; with the x pair sums
      // taken after this loop (they held 24 registers through it) 304-314
      // and 290-295.
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m512i scale =
            _mm512_shuffle_epi8(p < 2 ? sc_lo : sc_hi, wide_control(scale_int32_control((2 * p + h) % 4)));
        __m512i P[MR];
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) P[i] = _mm512_setzero_si512();
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
          add_dot4_rows<MR>(P, nibbles, xb, 64 * p + 32 * h + 4 * l);
        }
        add_scaled_sums<MR>(S, P, scale);
      }
    }
    const __m512i mn_lo = _mm512_and_si512(u1, six);
    const __m512i mn_hi =
        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), low), _mm512_and_si512(_mm512_srli_epi32(u1, 2), top2));
    __m512i mins[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      mins[k] = _mm512_shuffle_epi8(k < 2 ? mn_lo : mn_hi, wide_control(min_pair_control(k % 2)));
    }
    // The mins term against q4k_tile's x sub-block pairs (the same value
    // in every lane), taken after the code sums so that the pairs do not
    // hold registers through them.
    __m512i M[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256i s16 = load256(xs[i]);
      const __m256i h = _mm256_hadd_epi16(s16, s16);
      const __m512i x_pairs[4] = {
          _mm512_broadcastd_epi32(_mm256_castsi256_si128(h)),
          _mm512_broadcastd_epi32(_mm_srli_si128(_mm256_castsi256_si128(h), 4)),
          _mm512_broadcastd_epi32(_mm256_extracti128_si256(h, 1)),
          _mm512_broadcastd_epi32(_mm_srli_si128(_mm256_extracti128_si256(h, 1), 4)),
      };
      M[i] = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) M[i] = _mm512_add_epi32(M[i], _mm512_madd_epi16(mins[k], x_pairs[k]));
    }
    add_block_sums_and_mins<MR>(acc, S, M, load_f16_pair(blk0, blk1), load_f16_pair(blk0 + 16, blk1 + 16), qx, r0, b);
  }
  store_pair<MR>(acc, out0, out1);
}

// The 16-element sub-block types (Q6_K, Q3_K, Q2_K) unpack a pair of groups
// once for every x row of a batch: their codes (six, three or two bits,
// spread over two or three places in the block) take as many vector
// operations to pull out as the vpdpbusd that use them, and a pair tile
// runs once per kPairRows x rows. So interleaved_rows writes the pair's
// blocks out unpacked (Unpacked16) into a buffer of its thread's, and
// unpacked16_pair_tile streams the x rows past them: per 64 codes a load
// and the vpdpbusd. One block unpacked, lanes 0-7 group g0's rows, 8-15
// g1's:
struct Unpacked16 {
  // Sub-block s's quad t (elements 16s + 4t .. + 3 of each row): unsigned
  // codes, 64 bytes at 64 (4s + t).
  static constexpr int kCodes = 0;
  // Sub-block s's scale as an int32 a lane.
  static constexpr int kScales = kCodes + 16 * 4 * 64;
  // Four words of per-sub-block bytes (sub-block s: byte s % 4 of word
  // s / 4) that weight the x sums of 16: the scales again for the code
  // bias (Q6_K, Q3_K), the mins (Q2_K).
  static constexpr int kWords = kScales + 16 * 64;
  static constexpr int kD = kWords + 4 * 64;  // d, as float
  static constexpr int kDmin = kD + 64;       // dmin, as float (Q2_K)
  static constexpr int kBytes = kDmin + 64;
};
template <class K>
constexpr bool kUnpacksPair = std::is_same_v<K, IlQ6_K> || std::is_same_v<K, IlQ3_K> || std::is_same_v<K, IlQ2_K>;

inline void store512(uint8_t* p, __m512i v) { _mm512_store_si512(reinterpret_cast<void*>(p), v); }
inline void store512(uint8_t* p, __m512 v) { _mm512_store_ps(reinterpret_cast<float*>(p), v); }

// Sub-block s's scale, byte s % 4 of words[s / 4] (a signed byte), as int32
// lanes into u.
inline void store_scales(const __m512i* words, uint8_t* u) {
#pragma GCC unroll 4
  for (int w = 0; w < 4; ++w) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      store512(u + Unpacked16::kScales + 64 * (4 * w + k),
               _mm512_srai_epi32(_mm512_shuffle_epi8(words[w], wide_control(int32_top_byte_control(k))), 24));
    }
  }
}

// Q6_K block of groups g0 and g1 into u (q6k_tile's unpacking): chunk v =
// 4h + gv of a row, quad l: low four bits from ql chunk 16h + 8(gv & 1) +
// l (high nibbles for gv >= 2), bits 4-5 from qh chunk 8h + l; quads 0-3
// are sub-block 2v, 4-7 sub-block 2v + 1.
inline void unpack_q6k_pair_block(const uint8_t* blk0, const uint8_t* blk1, uint8_t* u) {
  const __m512i low = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  const uint8_t* ql0 = blk0 + IlQ6_K::kQlOffset;
  const uint8_t* ql1 = blk1 + IlQ6_K::kQlOffset;
  const uint8_t* qh0 = blk0 + IlQ6_K::kQhOffset;
  const uint8_t* qh1 = blk1 + IlQ6_K::kQhOffset;
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v) {
    const int h = v / 4, gv = v % 4;
#pragma GCC unroll 8
    for (int l = 0; l < 8; ++l) {
      const int ql_chunk = 16 * h + 8 * (gv & 1) + l, qh_chunk = 8 * h + l;
      const __m512i packed = load_pair256(ql0 + 32 * ql_chunk, ql1 + 32 * ql_chunk);
      const __m512i nib_high = gv < 2 ? packed : _mm512_srli_epi16(packed, 4);
      // Bits 2gv, 2gv + 1 of each qh byte to bits 4-5 (q6k_tile's shifts).
      const __m512i qh = load_pair256(qh0 + 32 * qh_chunk, qh1 + 32 * qh_chunk);
      const __m512i top = gv == 2   ? _mm512_and_si512(qh, bits45)
                          : gv == 3 ? _mm512_and_si512(_mm512_srli_epi16(qh, 2), bits45)
                                    : _mm512_and_si512(_mm512_slli_epi16(qh, 4 - 2 * gv), bits45);
      store512(u + Unpacked16::kCodes + 64 * (4 * (2 * v + l / 4) + l % 4),
               _mm512_ternarylogic_epi32(nib_high, top, low, 0xE4));  // low ? nib : top
    }
  }
  __m512i words[4];
#pragma GCC unroll 4
  for (int w = 0; w < 4; ++w) {
    words[w] = load_pair256(blk0 + IlQ6_K::kScaleOffset + 32 * w, blk1 + IlQ6_K::kScaleOffset + 32 * w);
    store512(u + Unpacked16::kWords + 64 * w, words[w]);
  }
  store_scales(words, u);
  store512(u + Unpacked16::kD, load_f16_pair(blk0, blk1));
}

// The two low bits of Q2_K's and Q3_K's codes (two_bit_code_sums' order:
// sub-block s = 8n + 2j + h takes bits 2j..2j+1 of qs chunks 8n + 4h + t),
// with Q3_K's hmask bit 4n + j (of hmask chunk 4h + t) as bit 2, into u.
template <bool kHighBit>
inline void unpack_two_bit_codes(const uint8_t* qs0, const uint8_t* qs1, const uint8_t* hmask0, const uint8_t* hmask1,
                                 uint8_t* u) {
  const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
#pragma GCC unroll 2
  for (int n = 0; n < 2; ++n) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      [[maybe_unused]] const int bit = 4 * n + j;  // the hmask bit of these codes
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
        for (int t = 0; t < 4; ++t) {
          const int chunk = 8 * n + 4 * h + t;
          const __m512i q = load_pair256(qs0 + 32 * chunk, qs1 + 32 * chunk);
          const __m512i low_bits = j == 0 ? q : _mm512_srli_epi16(q, 2 * j);
          __m512i codes;
          if constexpr (kHighBit) {
            // The hmask bit to bit 2 in one shift and one mask (bits a
            // 16-bit shift carries across bytes fall outside the mask).
            const __m512i hm = load_pair256(hmask0 + 32 * (4 * h + t), hmask1 + 32 * (4 * h + t));
            const __m512i high = bit > 2    ? _mm512_and_si512(_mm512_srli_epi16(hm, bit - 2), four)
                                 : bit == 2 ? _mm512_and_si512(hm, four)
                                            : _mm512_and_si512(_mm512_slli_epi16(hm, 2 - bit), four);
            codes = _mm512_ternarylogic_epi32(low_bits, three, high, 0xEA);  // (a & b) | c
          } else {
            codes = _mm512_and_si512(low_bits, three);
          }
          store512(u + Unpacked16::kCodes + 64 * (4 * (8 * n + 2 * j + h) + t), codes);
        }
      }
    }
  }
}

// Q3_K: the sixteen scales minus 32 (q3k_tile's unpacking) weight both the
// code sums and the code bias of 4.
inline void unpack_q3k_pair_block(const uint8_t* blk0, const uint8_t* blk1, uint8_t* u) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), top2 = _mm512_set1_epi8(0x03), bias32 = _mm512_set1_epi8(32);
  const uint8_t* words0 = blk0 + IlQ3_K::kScaleOffset;
  const uint8_t* words1 = blk1 + IlQ3_K::kScaleOffset;
  const __m512i a0 = load_pair256(words0, words1), a1 = load_pair256(words0 + 32, words1 + 32),
                a2 = load_pair256(words0 + 64, words1 + 64);
  const auto top = [&](int shift) {
    return _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(a2, shift), top2), 4);
  };
  const __m512i sw[4] = {
      _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(a0, low4), top(0)), bias32),
      _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(a1, low4), top(2)), bias32),
      _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(a0, 4), low4), top(4)), bias32),
      _mm512_sub_epi8(_mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(a1, 4), low4), top(6)), bias32),
  };
#pragma GCC unroll 4
  for (int w = 0; w < 4; ++w) store512(u + Unpacked16::kWords + 64 * w, sw[w]);
  store_scales(sw, u);
  unpack_two_bit_codes<true>(blk0 + IlQ3_K::kQsOffset, blk1 + IlQ3_K::kQsOffset, blk0 + IlQ3_K::kHmaskOffset,
                             blk1 + IlQ3_K::kHmaskOffset, u);
  store512(u + Unpacked16::kD, load_f16_pair(blk0, blk1));
}

// Q2_K: the 4-bit scales weight the code sums, the 4-bit mins the x sums.
inline void unpack_q2k_pair_block(const uint8_t* blk0, const uint8_t* blk1, uint8_t* u) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m512i scales[4];
#pragma GCC unroll 4
  for (int w = 0; w < 4; ++w) {
    const __m512i word = load_pair256(blk0 + IlQ2_K::kScaleOffset + 32 * w, blk1 + IlQ2_K::kScaleOffset + 32 * w);
    scales[w] = _mm512_and_si512(word, low4);
    store512(u + Unpacked16::kWords + 64 * w, _mm512_and_si512(_mm512_srli_epi16(word, 4), low4));
  }
  store_scales(scales, u);
  unpack_two_bit_codes<false>(blk0 + IlQ2_K::kQsOffset, blk1 + IlQ2_K::kQsOffset, nullptr, nullptr, u);
  store512(u + Unpacked16::kD, load_f16_pair(blk0, blk1));
  store512(u + Unpacked16::kDmin, load_f16_pair(blk0 + 16, blk1 + 16));
}

// Every block of groups g0 and g1 unpacked into a buffer of the calling
// thread's (valid until its next call).
template <class K>
const uint8_t* unpack_pair(const uint8_t* g0, const uint8_t* g1, int64_t blocks) {
  thread_local AlignedBuffer<uint8_t> buffer;
  const size_t bytes = static_cast<size_t>(blocks) * Unpacked16::kBytes;
  if (buffer.size() < bytes) buffer.resize(bytes);
  uint8_t* u = buffer.data();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* blk0 = g0 + b * K::kBlockBytes;
    const uint8_t* blk1 = g1 + b * K::kBlockBytes;
    uint8_t* ub = u + b * Unpacked16::kBytes;
    if constexpr (std::is_same_v<K, IlQ6_K>) {
      unpack_q6k_pair_block(blk0, blk1, ub);
    } else if constexpr (std::is_same_v<K, IlQ3_K>) {
      unpack_q3k_pair_block(blk0, blk1, ub);
    } else {
      unpack_q2k_pair_block(blk0, blk1, ub);
    }
  }
  return u;
}

// The outputs of an unpacked pair of groups for x rows r0..r0+MR: per
// block, lane r of S is row r's exact sum over the sixteen sub-blocks of
// scale x sum(code x q_x), B the words' bytes times the x sums of 16; then
// K's own steps, those of its 256-bit tile (q6k_tile, q3k_tile, q2k_tile):
// the code bias of 32 or 4 off S and one float step, or Q2_K's mins term
// as a second. The same integers and float steps, so the same bits.
template <class K, int MR>
void unpacked16_pair_tile(const MatmulArgs& a, const uint8_t* unpacked, int64_t r0, float* out0, float* out1) {
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  __m512 acc[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const int8_t* xb[MR];
    const int16_t* xs[MR];
    block_x_rows<MR>(qx, r0, b, xb, xs);
    const uint8_t* u = unpacked + b * Unpacked16::kBytes;
    __m512i S[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) S[i] = _mm512_setzero_si512();
      // Not unrolled (pair_rows): 16 unrolled sub-blocks spilled, and this
      // loop made Q6_K 248-253 -> 292-298 GFLOP/s, Q3_K 226-239 -> 307, Q2_K
      // 228 -> 301-305 (one thread, batches of 512).
#pragma GCC unroll 1
    for (int s = 0; s < 16; ++s) {
      // Sub-block s's products straight into int32 lanes (at most 16 x 63
      // x 128), then times its scale once.
      __m512i P[MR];
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) P[i] = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) {
        add_dot4_rows<MR>(P, _mm512_load_si512(u + Unpacked16::kCodes + 64 * (4 * s + t)), xb, 16 * s + 4 * t);
      }
      add_scaled_sums<MR>(S, P, _mm512_load_si512(u + Unpacked16::kScales + 64 * s));
    }
    __m512i words[4], B[MR];
#pragma GCC unroll 4
    for (int w = 0; w < 4; ++w) words[w] = _mm512_load_si512(u + Unpacked16::kWords + 64 * w);
    byte_weighted_x_sums_pair<MR>(words, xs, B);
    const __m512 d = _mm512_load_ps(reinterpret_cast<const float*>(u + Unpacked16::kD));
    if constexpr (std::is_same_v<K, IlQ2_K>) {
      add_block_sums_and_mins<MR>(acc, S, B, d, _mm512_load_ps(reinterpret_cast<const float*>(u + Unpacked16::kDmin)),
                                  qx, r0, b);
    } else {
      constexpr int kBiasShift = std::is_same_v<K, IlQ6_K> ? 5 : 2;  // code bias 32 or 4
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) S[i] = _mm512_sub_epi32(S[i], _mm512_slli_epi32(B[i], kBiasShift));
      add_block_sums<MR>(acc, S, d, qx, r0, b);
    }
  }
  store_pair<MR>(acc, out0, out1);
}

// iq4xs_tile (its VNNI form) for groups g0 and g1 side by side (lanes
// 0-7, 8-15), as q4k_pair_tile: each lane's integers (level + 128 through
// vpdpbusd from -128 x the sub-block's x sum, times the scale) and float
// step are iq4xs_tile's, so the outputs are the same bits.
template <int MR>
void iq4xs_pair_tile(const MatmulArgs& a, const uint8_t* g0, const uint8_t* g1, int64_t r0, float* out0, float* out1) {
  const QuantizedX& qx = *a.qx;
  const int64_t blocks = qx.blocks;
  __m512 acc[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  const __m512i book_u8 = iq4nl_levels_plus_128();
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < blocks; ++b) {
    const int8_t* xb[MR];
    const int16_t* xs[MR];
    block_x_rows<MR>(qx, r0, b, xb, xs);
    const uint8_t* blk0 = g0 + b * IlIQ4_XS::kBlockBytes;
    const uint8_t* blk1 = g1 + b * IlIQ4_XS::kBlockBytes;
    // Row r's scale bits in lane r (g1's rows in lanes 8-15).
    const __m512i sh = _mm512_cvtepu16_epi32(
        _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk1 + IlIQ4_XS::kScalesHOffset)),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk0 + IlIQ4_XS::kScalesHOffset))));
    const __m512i sl = load_pair256(blk0 + IlIQ4_XS::kScalesLOffset, blk1 + IlIQ4_XS::kScalesLOffset);
    const uint8_t* qs0 = blk0 + IlIQ4_XS::kQsOffset;
    const uint8_t* qs1 = blk1 + IlIQ4_XS::kQsOffset;
    __m512i S[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) S[i] = _mm512_setzero_si512();
#pragma GCC unroll 1  // unrolled eight times it spilled: 309-316 -> 352-354 GFLOP/s
    for (int j = 0; j < 8; ++j) {
      const __m512i ls =
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(sl, 4 * j), _mm512_set1_epi32(0x0F)),
                          _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(sh, 2 * j), _mm512_set1_epi32(3)), 4));
      const __m512i s32 = _mm512_sub_epi32(ls, _mm512_set1_epi32(32));
      __m512i P[MR];
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) P[i] = _mm512_set1_epi32(-128 * (xs[i][2 * j] + xs[i][2 * j + 1]));
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) {
        const __m512i packed = load_pair256(qs0 + 32 * (4 * j + t), qs1 + 32 * (4 * j + t));
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const __m512i codes =
              h == 0 ? _mm512_and_si512(packed, nibble) : _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble);
          const __m512i shifted = _mm512_shuffle_epi8(book_u8, codes);
          add_dot4_rows<MR>(P, shifted, xb, 32 * j + 16 * h + 4 * t);
        }
      }
      add_scaled_sums<MR>(S, P, s32);
    }
    add_block_sums<MR>(acc, S, load_f16_pair(blk0, blk1), qx, r0, b);
  }
  store_pair<MR>(acc, out0, out1);
}

// The pair tile of K's kind.
template <class K, int MR>
void pair_tile(const MatmulArgs& a, const uint8_t* g0, const uint8_t* g1, int64_t r0, float* out0, float* out1) {
  if constexpr (std::is_same_v<K, IlIQ4_XS>) {
    iq4xs_pair_tile<MR>(a, g0, g1, r0, out0, out1);
  } else if constexpr (kUnpacksPair<K>) {
    unpacked16_pair_tile<K, MR>(a, g0, r0, out0, out1);  // g0: unpack_pair's buffer
  } else if constexpr (K::kSuper) {
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
template <class K>
constexpr bool kUnpacksPair = false;
template <class K>
const uint8_t* unpack_pair(const uint8_t* g0, const uint8_t* g1, int64_t blocks);
template <class K, int MR>
void pair_tile(const MatmulArgs& a, const uint8_t* g0, const uint8_t* g1, int64_t r0, float* out0, float* out1);
#endif

}  // namespace
}  // namespace omnibus::matmul_detail
