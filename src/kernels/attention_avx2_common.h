// Building blocks of the AVX2 attention kernels (attention_avx2.cpp, one
// row; attention_pair_avx2.cpp, two rows): widening the cache's elements
// to f32 (f16, bf16, q8_0 codes), prefetching, the softmax numerators, Q's
// rounding and the head-batch limits. Include only from *_avx2.cpp files
// (compiled with AVX2+FMA+F16C).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/attention_driver_common.h"
#include "kernels/line_cursor.h"

namespace omnibus::avx2::attention_detail {
// The drivers' shared types and limits (SpreadPrefetch, NextKeys,
// kMaxHeadsPerPass).
using namespace ::omnibus::attention_detail;
namespace {

// 8 f16 values widened to f32.
inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// 8 bf16 values widened to f32, in order.
inline __m256 load_bf16x8(const uint16_t* p) {
  return _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}

// 16 bf16 values widened to f32 with their lanes split: even = elements 0,
// 2, .., 14, odd = 1, 3, .., 15. Two integer ops for sixteen values (the
// odd ones are the high halves of the 32-bit lanes already), against two
// vcvtph2ps at three FMAs' time each for f16.
inline void load_bf16x16_split(const uint16_t* p, __m256& even, __m256& odd) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  even = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));
  odd = _mm256_castsi256_ps(_mm256_and_si256(raw, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}

// Sixteen floats in order (a: 0..7, b: 8..15) to split lanes (a: even, b:
// odd), and back. Pure moves: the arithmetic on each float is unchanged.
inline void split_lanes(__m256& a, __m256& b) {
  const __m256 lo = _mm256_permute2f128_ps(a, b, 0x20), hi = _mm256_permute2f128_ps(a, b, 0x31);
  a = _mm256_shuffle_ps(lo, hi, 0x88);
  b = _mm256_shuffle_ps(lo, hi, 0xDD);
}
inline void join_lanes(__m256& even, __m256& odd) {
  const __m256 u0 = _mm256_unpacklo_ps(even, odd), u1 = _mm256_unpackhi_ps(even, odd);
  even = _mm256_permute2f128_ps(u0, u1, 0x20);
  odd = _mm256_permute2f128_ps(u0, u1, 0x31);
}

// 8 int8 codes (a q8_0 cache) widened to f32; the load folds into
// vpmovsxbd (loading 16 and unpacking the high half cost a shuffle more).
inline __m256 load_i8x8(const int8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// How the kernels read the cache's elements, by cache type: f16 or bf16
// (K at run.k, V rows at run.v), or q8_0 codes (V at run.v_q; then each
// weight is multiplied by its position's scale first, see RunWeights; q8_0
// K has kernels of its own). load8: eight elements in order. load16:
// sixteen, in order unless kSplitLanes (then split as load_bf16x16_split);
// kernels that use load16 keep such accumulators split and join them at
// the end, so each float's arithmetic is the same either way.
struct F16Elements {
  using Element = uint16_t;
  static constexpr int64_t kElementBytes = 2;
  static constexpr bool kSplitLanes = false;
  static const Element* rows(const KvRun& run) { return run.v; }
  static __m256 load8(const Element* v) { return load_f16x8(v); }
  static void load16(const Element* v, __m256& a, __m256& b) { a = load_f16x8(v), b = load_f16x8(v + 8); }
};
struct BF16Elements {
  using Element = uint16_t;
  static constexpr int64_t kElementBytes = 2;
  static constexpr bool kSplitLanes = true;
  static const Element* rows(const KvRun& run) { return run.v; }
  static __m256 load8(const Element* v) { return load_bf16x8(v); }
  static void load16(const Element* v, __m256& a, __m256& b) { load_bf16x16_split(v, a, b); }
};
struct Q8Elements {
  using Element = int8_t;
  static constexpr int64_t kElementBytes = 1;
  static constexpr bool kSplitLanes = false;
  static const Element* rows(const KvRun& run) { return run.v_q; }
  static __m256 load8(const Element* v) { return load_i8x8(v); }
  static void load16(const Element* v, __m256& a, __m256& b) { a = load_i8x8(v), b = load_i8x8(v + 8); }
};
// q4_0 V (kernels/kv_quant.h): v points at a position's 16 bytes of one
// 32-value group, offsets and strides count bytes. Vector c (0..3) of the
// group is values 8c .. 8c + 7 in order, each code - 8 as f32.
struct Q4Elements {
  using Element = uint8_t;
  static constexpr int64_t kElementBytes = 1;
  static constexpr bool kSplitLanes = false;
  static const Element* rows(const KvRun& run) { return reinterpret_cast<const uint8_t*>(run.v_q); }
  static __m256 load8_at(const Element* v, int c) {
    __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(v + 8 * (c & 1)));
    if (c >= 2) bytes = _mm_srli_epi16(bytes, 4);
    const __m128i codes = _mm_sub_epi8(_mm_and_si128(bytes, _mm_set1_epi8(0x0F)), _mm_set1_epi8(8));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes));
  }
  // Unused (no split lanes, so accumulate_heads32 takes load8_at); here so
  // that its split-lane loop compiles. Vectors 0 and 1 of the group at v.
  static void load16(const Element* v, __m256& a, __m256& b) { a = load8_at(v, 0), b = load8_at(v, 1); }
};
// Vector c of a value row as accumulate_heads32 reads it: eight elements
// from v + 8c for the unpacked types, Q4Elements's own for q4_0.
template <class Fmt>
inline __m256 load8_at(const typename Fmt::Element* v, int c) {
  if constexpr (requires { Fmt::load8_at(v, c); }) {
    return Fmt::load8_at(v, c);
  } else {
    return Fmt::load8(v + 8 * c);
  }
}

// fn(F16Elements{}) or fn(BF16Elements{}), by a 16-bit cache's type.
template <class Fn>
inline void with_16bit_elements(KvCacheType type, Fn&& fn) {
  if (type == KvCacheType::kBF16) return fn(BF16Elements{});
  fn(F16Elements{});
}

// One prefetch per position of a run's V rows (the 64-byte line holding the
// slice the value kernels read next), so V streams from DRAM at long
// context; with a 64-byte stride, every line of a span. asm, not
// _mm_prefetch: GCC 12 dropped the builtin's calls from the kernels'
// lambdas (none were in the object code).
inline void prefetch_rows(const void* first, int64_t count, int64_t stride_bytes) {
  const auto* p = static_cast<const char*>(first);
  for (int64_t j = 0; j < count; ++j, p += stride_bytes) asm volatile("prefetcht0 %0" : : "m"(*p));
}

// e^x for x <= 0 (softmax inputs after subtracting the max); below about
// -87.3 the result is the smallest normal float, ~1e-38, not 0: harmless
// next to the max position's 1.
inline __m256 exp_nonpositive(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.33654f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // r = x - n ln2, with ln2 split so n * hi is exact.
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 r2 = _mm256_mul_ps(r, r);
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(bits));
}

// x rounded to the nearest f16 value.
inline __m256 round_f16(__m256 x) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The largest of n scores.
inline float max_score(const float* scores, int64_t n) {
  // Four chains: one chain of vmaxps (latency 4) was 1.6% of a 1,926-token
  // prefill in perf. A maximum is exact in any order, so the result is the
  // same.
  __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    m0 = _mm256_max_ps(m0, _mm256_loadu_ps(scores + j));
    m1 = _mm256_max_ps(m1, _mm256_loadu_ps(scores + j + 8));
    m2 = _mm256_max_ps(m2, _mm256_loadu_ps(scores + j + 16));
    m3 = _mm256_max_ps(m3, _mm256_loadu_ps(scores + j + 24));
  }
  __m256 vmax = _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3));
  for (; j + 8 <= n; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(scores + j));
  float max_score = -INFINITY;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  for (float l : lanes) max_score = std::max(max_score, l);
  for (; j < n; ++j) max_score = std::max(max_score, scores[j]);
  return max_score;
}

// scores[j] = e^(scores[j] - max) rounded to f16 for j in [from, n), eight
// at a time, each eight added to `sum` in position order (`from` a
// multiple of 8); returns the new sum. Wider kernels do the positions
// before `from` themselves, adding their eights in the same order.
inline __m256 numerators_from(float* scores, int64_t from, int64_t n, float max_score, __m256 sum) {
  const __m256 m = _mm256_set1_ps(max_score);
  int64_t j = from;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = round_f16(exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(scores + j), m)));
    _mm256_storeu_ps(scores + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (j < n) {
    alignas(32) float tail[8];
    const int rest = static_cast<int>(n - j);
    for (int i = 0; i < 8; ++i) tail[i] = i < rest ? scores[j + i] : -INFINITY;  // e^-inf lanes -> ~0, masked below
    __m256 e = round_f16(exp_nonpositive(_mm256_sub_ps(_mm256_load_ps(tail), m)));
    alignas(32) float keep[8];
    for (int i = 0; i < 8; ++i) keep[i] = i < rest ? 1.0f : 0.0f;
    e = _mm256_mul_ps(e, _mm256_load_ps(keep));
    _mm256_store_ps(tail, e);
    std::copy(tail, tail + rest, scores + j);
    sum = _mm256_add_ps(sum, e);
  }
  return sum;
}

// scores[j] = e^(scores[j] - max), rounded to f16; returns the sum (8 lanes
// in position order, then hsum) and stores the max in *max_out.
inline float softmax_numerators(float* scores, int64_t n, float* max_out) {
  *max_out = max_score(scores, n);
  return hsum(numerators_from(scores, 0, n, *max_out, _mm256_setzero_ps()));
}

// Heads of one GQA group sharing a KV head, at most this many per kernel call.
constexpr int kHeadsPerKernel = 3;

// Q of heads [head_begin, head_begin + heads) rounded to f16, as llama.cpp's
// CPU attention does, into qbuf.
inline void round_q_to_f16(const float* q, int head_begin, int heads, int head_dim, float (*qbuf)[kMaxHeadDim]) {
  for (int i = 0; i < heads; ++i) {
    const float* qsrc = q + static_cast<int64_t>(head_begin + i) * head_dim;
    for (int d = 0; d < head_dim; d += 8) {
      const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(qsrc + d), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_store_ps(qbuf[i] + d, _mm256_cvtph_ps(half));
    }
  }
}

}  // namespace
}  // namespace omnibus::avx2::attention_detail
