// The K-quant kernels for the interleaved layout (Q4_K, Q5_K, Q6_K; 256-
// element blocks): k_tile's steps eight rows at a time. Part of the kernels
// matmul_interleaved_kernels.h gathers; include that header, not this one.
#pragma once

#include "kernels/matmul_interleaved_legacy.h"

namespace omnibus::matmul_detail {
namespace {

// Decode (one x row): each stream's block eight ahead into the L2 while
// this one is computed (the K-quant and low-bit tiles; the legacy types'
// kernel needs none, decode_rows).
//
// Into the L2 (prefetcht1), not the L1: on the Zen 4 VM (AVX-512, ~42 GB/s
// probed) prefetcht0 two blocks ahead left Q6_K decode from DRAM at 8.7
// GB/s on one thread, where the kernel runs at 27 GB/s from the L2; with
// prefetcht1 eight blocks ahead it reached 26.5 (`*DecodeAtEightBillion*`,
// 128256 x 2048, medians of 20 calls; two threads 17.3 -> 37.5 GB/s, the
// memory's rate; Q4_K 22.6 -> 27.8 on one thread; 1B-shape decode, two
// threads, end to end: Q6_K 16.9 -> 25.9 tok/s, Q4_K_M 27.0 -> 38.6;
// docs/findings/kquant-decode-prefetch-into-l2.md). Into the L1 the
// prefetches of four streams contend with the demand loads for the L1's
// few miss buffers; the L2 has many more. Distances 2 and 4 into the L2
// were slower, 16 the same as 8.
//
// Past a group's last block the stream goes on into the group after it
// (the next group of a decode stream is the next in memory), so those
// blocks are fetched too: stopping at the group's end left the first
// blocks of every group to arrive on demand (Zen 1 VM, one thread, the Q6_K
// output projection 70.3/75.4/64.4 -> 62.1/56.2/51.1 ms). A prefetch past
// the end of the matrix is harmless: prefetches never fault.
//
// kL1Blocks > 0 also fetches the block that far ahead on into the L1
// (prefetcht0), for Q6_K: its decode computes the slowest per byte (about
// 32 GB/s a thread from the L2, Q4_K 37, Q4_0 57), and with the block
// waiting in the L2 rather than the L1 it lost time on every line's demand
// load. 1B-shape Q6_K, two threads, decode tok/s, six alternating runs:
// 8 blocks into the L2 alone 25.6-30.8 (median 26.8), plus 2 into the L1
// 28.1-36.7 (30.1); 12 into the L2 with 2 into the L1 the same (30.4).
// Q4_K (its 128256 x 2048 decode, two threads) and Q3_K measured no
// difference through the Zen 4 VM's noise, so they keep the L2 prefetch
// alone.
// With both prefetches Q6_K decode also walks one stream a thread, not
// four (kDecodeStreams; docs/findings/q6k-decode-one-stream-two-prefetches.md).
constexpr int kDecodePrefetchBlocks = 8;
template <int kBlockBytes, int kL1Blocks = 0>
inline void prefetch_block_ahead(const uint8_t* blk) {
  for (int c = 0; c < kBlockBytes; c += 64)
    _mm_prefetch(reinterpret_cast<const char*>(blk + kDecodePrefetchBlocks * kBlockBytes + c), _MM_HINT_T1);
  if constexpr (kL1Blocks > 0) {
    for (int c = 0; c < kBlockBytes; c += 64)
      _mm_prefetch(reinterpret_cast<const char*>(blk + kL1Blocks * kBlockBytes + c), _MM_HINT_T0);
  }
}

// Group g's accumulator for x row i to out[g][i * 8 ..].
template <int NG, int MR>
inline void store_tile(const __m256* acc, float* const* out) {
#pragma GCC unroll 8
  for (int g = 0; g < NG; ++g)
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) _mm256_storeu_ps(out[g] + i * kInterleaveRows, acc[g * MR + i]);
}

// vpshufb control: in each 32-bit lane (weight row) both int16 halves <- byte
// c of the lane (the scale of sub-block c of a four-scale word).
inline __m256i scale_pair_control(int c) {
  const int k = 0x80 << 8 | c;  // byte c, then a zero byte
  return _mm256_setr_epi16(k, k, k + 4, k + 4, k + 8, k + 8, k + 12, k + 12, k, k, k + 4, k + 4, k + 8, k + 8, k + 12,
                           k + 12);
}
// vpshufb control: each 32-bit lane (weight row) <- byte c of the lane,
// zero-extended (the scale of sub-block c of a four-scale word as an int32).
inline __m256i scale_int32_control(int c) {
  const int k = 0x80 << 8 | c;
  const auto z = static_cast<int16_t>(0x8080);  // two zeroing bytes (high bit set)
  return _mm256_setr_epi16(k, z, k + 4, z, k + 8, z, k + 12, z, k, z, k + 4, z, k + 8, z, k + 12, z);
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
      if constexpr (MR == 1) prefetch_block_ahead<K::kBlockBytes>(blk);
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
  store_tile<NG, MR>(acc, out);
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
// vpshufb control: each 32-bit lane's byte b into the lane's top byte, the
// rest zero; an arithmetic shift right by 24 then makes it a signed int32.
inline __m256i int32_top_byte_control(int b) {
  const auto z = static_cast<int16_t>(0x8080);
  const int k = b << 8 | 0x80;
  return _mm256_setr_epi16(z, k, z, k + 0x400, z, k + 0x800, z, k + 0xC00, z, k, z, k + 0x400, z, k + 0x800, z,
                           k + 0xC00);
}
// Each 32-bit lane <- its byte b as a signed int32.
inline __m256i int32_of_bytes(__m256i words, int b) {
  return _mm256_srai_epi32(_mm256_shuffle_epi8(words, int32_top_byte_control(b)), 24);
}

// Lane r of sums[i]: the sum over the sixteen 16-element sub-blocks s of
// row r's int8 value s (byte s % 4 of lane r of words[s / 4]) times x row
// i's sum16 s, exactly: Q6_K's and Q3_K's code bias, Q2_K's mins term.
template <int MR>
inline void byte_weighted_x_sums(const __m256i* words, const int16_t* const* xs, __m256i* sums) {
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) sums[i] = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int w = 0; w < 4; ++w) {
#pragma GCC unroll 2
    for (int k = 0; k < 2; ++k) {
      const __m256i values = int16_pairs_of_bytes(words[w], 2 * k, 2 * k + 1);  // sub-blocks 4w + 2k, 4w + 2k + 1
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const __m256i x_pair =
            _mm256_set1_epi32(static_cast<int>(load_u32le(reinterpret_cast<const uint8_t*>(xs[i] + 4 * w + 2 * k))));
        sums[i] = _mm256_add_epi32(sums[i], _mm256_madd_epi16(values, x_pair));
      }
    }
  }
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
  const __m256i low = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
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
      if constexpr (MR == 1) prefetch_block_ahead<IlQ6_K::kBlockBytes, 2>(blk);
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
          // Chunk l of this sub-block (quads 4 half .. 4 half + 3): row r's
          // 6-bit codes in lane r.
          const auto chunk_codes = [&](int l) {
            const __m256i packed = load256(ql + 32 * (16 * h + 8 * (gv & 1) + l));
            const __m256i nib_high = gv < 2 ? packed : _mm256_srli_epi16(packed, 4);  // the nibble in bits 0-3
            // Bits 2gv, 2gv + 1 of each qh byte to bits 4-5 in one shift and
            // one mask (a 16-bit shift carries bits across the byte
            // boundary, but only outside the mask).
            const __m256i qh_chunk = load256(qh + 32 * (8 * h + l));
            const __m256i top = gv == 2   ? _mm256_and_si256(qh_chunk, bits45)
                                : gv == 3 ? _mm256_and_si256(_mm256_srli_epi16(qh_chunk, 2), bits45)
                                          : _mm256_and_si256(_mm256_slli_epi16(qh_chunk, 4 - 2 * gv), bits45);
#if defined(__AVX512VL__)
            // low ? nib_high : top, bit by bit: the mask and the or in one.
            return _mm256_ternarylogic_epi32(nib_high, top, low, 0xE4);
#else
            return _mm256_or_si256(_mm256_and_si256(nib_high, low), top);
#endif
          };
#if defined(OMNIBUS_YMM_VNNI)
          // The sub-block's products straight into int32 lanes (at most 16 x
          // 63 x 128), then times its scale once: one vpdpbusd an x row per
          // chunk where the int16 pair sums take two. The same integer S.
          const __m256i scale = int32_of_bytes(word, byte);
          __m256i P[MR];
#pragma GCC unroll 4
          for (int i = 0; i < MR; ++i) P[i] = _mm256_setzero_si256();
#pragma GCC unroll 4
          for (int t = 0; t < 4; ++t) {
            const int l = 4 * half + t;
            const __m256i codes = chunk_codes(l);
#pragma GCC unroll 4
            for (int i = 0; i < MR; ++i) P[i] = add_dot4(P[i], codes, broadcast4(xb[i] + 32 * v + 4 * l));
          }
#pragma GCC unroll 4
          for (int i = 0; i < MR; ++i) S[i] = _mm256_add_epi32(S[i], _mm256_mullo_epi32(P[i], scale));
#else
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
              const __m256i codes = chunk_codes(l);
#pragma GCC unroll 4
              for (int i = 0; i < MR; ++i) {
                pairs[i] = _mm256_add_epi16(pairs[i], _mm256_maddubs_epi16(codes, broadcast4(xb[i] + 32 * v + 4 * l)));
                keep_in_register(pairs[i]);
              }
            }
#pragma GCC unroll 4
            for (int i = 0; i < MR; ++i) S[i] = add_scaled_pairs(S[i], pairs[i], scale);
          }
#endif
        }
      }
      // The code bias: 32 x sum over the sixteen scales of scale x sum16(q_x).
      const __m256i scale_words[4] = {load256(words), load256(words + 32), load256(words + 64), load256(words + 96)};
      __m256i bias[MR];
      byte_weighted_x_sums<MR>(scale_words, xs, bias);
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const __m256 dx = _mm256_set1_ps(qx.scale[(r0 + i) * blocks + b]);
        const __m256i sum = _mm256_sub_epi32(S[i], _mm256_slli_epi32(bias[i], 5));
        acc[g * MR + i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(d, dx), acc[g * MR + i]);
      }
    }
  }
  store_tile<NG, MR>(acc, out);
}

}  // namespace
}  // namespace omnibus::matmul_detail
