// AVX2+FMA attention_chunk: one chunk of one query row (see attention.h).
// Same two passes as the reference, vectorised:
//  * scores from transposed K (the paged store's layout): sixteen positions
//    at a time in two vectors for up to three heads sharing a KV head, one
//    FMA chain over d per score, q broadcast;
//  * scores from row-major K: four positions at a time for up to three heads
//    sharing a KV head (GQA), so each K vector is widened from f16 once for
//    all of them;
//    each score has an 8-lane accumulator over head_dim, reduced by one
//    fixed add tree ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)); a position's
//    score does not depend on the group of four, the run or the heads it is
//    computed with, so results do not depend on how positions are split
//    into runs (KV blocks);
//  * softmax: a vector exp (Cephes-style range reduction and polynomial,
//    under 1 ulp on the range used) over the contiguous score buffer, each
//    numerator rounded to f16, summed in 8 lanes in position order;
//  * values: 32 output floats of up to three heads at a time, one FMA per
//    value element in position order (each V vector widened once for the
//    heads), left unnormalised (attention_finish divides by the sum);
//  * the next KV block is prefetched while one is computed.
// Q and the softmax numerators are rounded to f16 as llama.cpp's CPU
// attention does: the golden tests agree with llama.cpp a little better so
// (docs/correctness.md).
// A q8_0 cache (int8 codes, f16 scale per 32 values) goes through its own
// score and value kernels: codes widened to f32 in registers, each group's
// partial dot scaled once (scores), the weight times the scale once per
// position (values).
// Requires head_dim % 8 == 0 (q8_0: % 32); attention.cpp falls back to the
// reference otherwise.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"

namespace omnibus::avx2 {
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

// Prefetches spread over a kernel's loop instead of issued in one burst
// before it: at step i, line i of a and of b (while i < lines). With one or
// two per step of the d loop instead of ~200 per KV block up front, a
// decode row at 2,048 positions from DRAM went 309-333 -> 280-311 us (bf16;
// docs/profiling.md); likely the burst queued on the core's few
// outstanding misses.
struct SpreadPrefetch {
  const char* a = nullptr;  // may be null
  const char* b = nullptr;  // may be null
  int a_lines = 0, b_lines = 0;
  void at(int i) const {
    if (i < a_lines) asm volatile("prefetcht0 %0" : : "m"(a[64 * i]));
    if (i < b_lines) asm volatile("prefetcht0 %0" : : "m"(b[64 * i]));
  }
};

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

// scores[j] = e^(scores[j] - max), rounded to f16; returns the sum (8 lanes
// in order, then hsum) and stores the max in *max_out.
float softmax_numerators(float* scores, int64_t n, float* max_out) {
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(scores + j));
  float max_score = -INFINITY;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  for (float l : lanes) max_score = std::max(max_score, l);
  for (; j < n; ++j) max_score = std::max(max_score, scores[j]);
  *max_out = max_score;

  const __m256 m = _mm256_set1_ps(max_score);
  __m256 sum = _mm256_setzero_ps();
  j = 0;
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
  return hsum(sum);
}

// Scores of `count` (1..4) consecutive positions (f16 rows at k, `stride`
// apart) against G heads' q vectors at once, so each K vector is widened
// once for the G heads of a GQA group: out[g][p] for p < count. Each score
// has its own eight lanes over head_dim in order, one fixed add tree
// ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)), then times scale, so which
// positions and heads share a call changes nothing.
template <class Fmt, int G>
inline void score_heads4(const float* const* q, const uint16_t* k, int64_t stride, int count, int head_dim,
                         float scale, float* const* out) {
  __m256 acc[G][4];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) acc[g][p] = _mm256_setzero_ps();
  for (int d = 0; d < head_dim; d += 8) {
    __m256 qv[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) qv[g] = _mm256_loadu_ps(q[g] + d);
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      if (p >= count) break;  // unused positions keep zero accumulators
      const __m256 kv = Fmt::load8(k + p * stride + d);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) acc[g][p] = _mm256_fmadd_ps(qv[g], kv, acc[g][p]);
    }
  }
  const __m128 sc = _mm_set1_ps(scale);
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const __m256 u = _mm256_hadd_ps(_mm256_hadd_ps(acc[g][0], acc[g][1]), _mm256_hadd_ps(acc[g][2], acc[g][3]));
    const __m128 sums = _mm_mul_ps(_mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1)), sc);
    if (count == 4) {
      _mm_storeu_ps(out[g], sums);
    } else {
      alignas(16) float tmp[4];
      _mm_store_ps(tmp, sums);
      std::copy(tmp, tmp + count, out[g]);
    }
  }
}

// Sixteen scores (two accumulators of eight positions) times scale to out,
// only the first `left` of them when fewer remain.
inline void store_scores16(const __m256* acc, __m256 scale, int64_t left, float* out) {
  const __m256 s0 = _mm256_mul_ps(acc[0], scale), s1 = _mm256_mul_ps(acc[1], scale);
  if (left >= 16) {
    _mm256_storeu_ps(out, s0);
    _mm256_storeu_ps(out + 8, s1);
    return;
  }
  alignas(32) float tmp[16];
  _mm256_store_ps(tmp, s0);
  _mm256_store_ps(tmp + 8, s1);
  std::copy(tmp, tmp + left, out);
}

// Scores of `count` positions against G heads' q vectors from transposed K
// (k: dimension d of position j at k + d * dim_stride + j): sixteen
// positions per step, two vectors of eight, each score one FMA chain over
// d = 0 .. head_dim - 1 in order with q[g][d] broadcast, then times scale.
// A position's score does not depend on the step, run or heads it is
// computed with. Vectors may read up to 15 elements past the last position
// (kTransposedKeyOverread); those lanes are computed and dropped.
template <class Fmt, int G>
inline void score_heads_transposed(const float* const* q, const uint16_t* k, int64_t dim_stride, int64_t count,
                                   int head_dim, float scale, float* const* out, SpreadPrefetch pf = {}) {
  const __m256 sc = _mm256_set1_ps(scale);
  for (int64_t j = 0; j < count; j += 16, pf = {}) {  // prefetches in the first step only
    __m256 acc[G][2];
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) acc[g][0] = acc[g][1] = _mm256_setzero_ps();
    const uint16_t* kj = k + j;
    // Split lanes (bf16) load sixteen positions at the cost of eight.
    if (Fmt::kSplitLanes || count - j > 8) {
      for (int d = 0; d < head_dim; ++d, kj += dim_stride) {
        pf.at(d);
        __m256 k0, k1;
        Fmt::load16(kj, k0, k1);
#pragma GCC unroll 8
        for (int g = 0; g < G; ++g) {
          const __m256 qd = _mm256_broadcast_ss(q[g] + d);
          acc[g][0] = _mm256_fmadd_ps(qd, k0, acc[g][0]);
          acc[g][1] = _mm256_fmadd_ps(qd, k1, acc[g][1]);
        }
      }
    } else {
      for (int d = 0; d < head_dim; ++d, kj += dim_stride) {
        pf.at(d);
        const __m256 k0 = Fmt::load8(kj);
#pragma GCC unroll 8
        for (int g = 0; g < G; ++g) acc[g][0] = _mm256_fmadd_ps(_mm256_broadcast_ss(q[g] + d), k0, acc[g][0]);
      }
    }
    if constexpr (Fmt::kSplitLanes) {
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) join_lanes(acc[g][0], acc[g][1]);
    }
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) store_scores16(acc[g], sc, count - j, out[g] + j);
  }
}

// score_heads_transposed over all of a chunk's runs for one KV head (K of
// run r at runs[r].k + head_offset), run after run, each run's scores at
// out[g] + its first position: one call per KV head and chunk instead of
// one per KV block. prefetch_of(r): the SpreadPrefetch for run r.
template <class Fmt, int G, class PrefetchOf>
inline void score_runs_transposed(const float* const* q, std::span<const KvRun> runs, int64_t head_offset,
                                  int64_t dim_stride, int head_dim, float scale, float* const* out,
                                  PrefetchOf&& prefetch_of) {
  float* at[G];
  for (int g = 0; g < G; ++g) at[g] = out[g];
  for (size_t r = 0; r < runs.size(); ++r) {
    score_heads_transposed<Fmt, G>(q, runs[r].k + head_offset, dim_stride, runs[r].count, head_dim, scale, at,
                                   prefetch_of(r));
    for (int g = 0; g < G; ++g) at[g] += runs[r].count;
  }
}

// score_heads_transposed for q8_0 K: codes transposed like f16 K, one f16
// scale per group of kKvQ8Group dimensions and position (group g's scales
// of these positions at k_scale + g * dim_stride). Per score: each group's
// codes dotted with q in one FMA chain over d, then added to the score as
// part * scale (FMA), groups in order. Reads of codes and scales may run up
// to 15 elements past the last position.
template <int G>
inline void score_heads_q8(const float* const* q, const int8_t* k, const uint16_t* k_scale, int64_t dim_stride,
                           int64_t count, int head_dim, float scale, float* const* out) {
  const __m256 sc = _mm256_set1_ps(scale);
  for (int64_t j = 0; j < count; j += 16) {
    __m256 acc[G][2];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[g][0] = acc[g][1] = _mm256_setzero_ps();
    const int8_t* kj = k + j;
    const uint16_t* sj = k_scale + j;
    for (int d0 = 0; d0 < head_dim; d0 += kKvQ8Group, sj += dim_stride) {
      __m256 part[G][2];
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) part[g][0] = part[g][1] = _mm256_setzero_ps();
      for (int d = d0; d < d0 + kKvQ8Group; ++d, kj += dim_stride) {
        const __m256 k0 = load_i8x8(kj), k1 = load_i8x8(kj + 8);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
          const __m256 qd = _mm256_broadcast_ss(q[g] + d);
          part[g][0] = _mm256_fmadd_ps(qd, k0, part[g][0]);
          part[g][1] = _mm256_fmadd_ps(qd, k1, part[g][1]);
        }
      }
      const __m256 s0 = load_f16x8(sj), s1 = load_f16x8(sj + 8);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        acc[g][0] = _mm256_fmadd_ps(part[g][0], s0, acc[g][0]);
        acc[g][1] = _mm256_fmadd_ps(part[g][1], s1, acc[g][1]);
      }
    }
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) store_scores16(acc[g], sc, count - j, out[g] + j);
  }
}



// p[j] * scale[j] for a run's `count` positions into w (the q8_0 value
// weight: one rounding).
inline void scale_weights(const float* p, const uint16_t* scale, int64_t count, float* w) {
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) _mm256_storeu_ps(w + j, _mm256_mul_ps(_mm256_loadu_ps(p + j), load_f16x8(scale + j)));
  for (; j < count; ++j) w[j] = p[j] * _cvtsh_ss(scale[j]);
}

// The weights the value kernels multiply V by: slot n's softmax numerators
// p[n] (position j of the runs at p[n][j]); for a q8_0 cache times the
// scale of the 32 values being summed (at run.v_scale + scale_offset, one
// per position), made per run into `scratch` (kAttentionChunk floats per
// slot: a run holds at most a chunk's positions).
struct RunWeights {
  const float* const* p;
  float* scratch = nullptr;  // null: f16, the weights are p itself
  int64_t scale_offset = 0;
  // w[n]: slot n's weight of the run's first position (which is position
  // `at` of the runs).
  template <int N>
  void of_run(const KvRun& run, int64_t at, const float* (&w)[N]) const {
    for (int n = 0; n < N; ++n) {
      if (scratch == nullptr) {
        w[n] = p[n] + at;
        continue;
      }
      float* scaled = scratch + n * kAttentionChunk;
      scale_weights(p[n] + at, run.v_scale + scale_offset, run.count, scaled);
      w[n] = scaled;
    }
  }
};

// out[g][0..8 * VECS) += w[g][j] * v_j[0..8 * VECS) over the positions of
// `runs` in order (rows at Fmt::rows(run) + offset, `stride` apart) for G
// heads sharing the V rows, each V vector widened once. Per output float:
// loaded from out, one FMA per position in order, stored back, so splitting
// positions into runs (or calls) changes nothing. The accumulators stay in
// registers across runs (a load and store per KV block cost ~10% at
// 16-position blocks).
template <class Fmt, int G, int VECS>
inline void accumulate_heads32(const RunWeights& weights, std::span<const KvRun> runs, int64_t offset, int64_t stride,
                               float* const* out) {
  __m256 acc[G][VECS];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
    for (int c = 0; c < VECS; ++c) acc[g][c] = _mm256_loadu_ps(out[g] + 8 * c);
  // Split lanes: vectors c, c + 1 (c even) hold 16 floats as load16 splits
  // them; an odd last vector stays in order (load8).
  constexpr int kPaired = Fmt::kSplitLanes ? VECS / 2 * 2 : 0;
  if constexpr (kPaired > 0) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
      for (int c = 0; c < kPaired; c += 2) split_lanes(acc[g][c], acc[g][c + 1]);
  }
  int64_t at = 0;  // position of the run's first, counted from runs[0]'s
  for (size_t r = 0; r < runs.size(); at += runs[r++].count) {
    if (r + 1 < runs.size())
      prefetch_rows(Fmt::rows(runs[r + 1]) + offset, runs[r + 1].count, stride * Fmt::kElementBytes);
    const float* w_run[G];
    weights.of_run(runs[r], at, w_run);
    const typename Fmt::Element* v = Fmt::rows(runs[r]) + offset;
    // Weights first, then one V vector at a time: G * VECS accumulators + G
    // weights + 1 vector fit the 16 ymm registers at G = 3, VECS = 4 (all
    // four V vectors live at once spilled one register every position).
    for (int64_t j = 0; j < runs[r].count; ++j, v += stride) {
      __m256 w[G];
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) w[g] = _mm256_broadcast_ss(w_run[g] + j);
#pragma GCC unroll 4
      for (int c = 0; c < kPaired; c += 2) {
        __m256 v0, v1;
        Fmt::load16(v + 8 * c, v0, v1);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
          acc[g][c] = _mm256_fmadd_ps(w[g], v0, acc[g][c]);
          acc[g][c + 1] = _mm256_fmadd_ps(w[g], v1, acc[g][c + 1]);
        }
      }
#pragma GCC unroll 4
      for (int c = kPaired; c < VECS; ++c) {
        const __m256 vv = Fmt::load8(v + 8 * c);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) acc[g][c] = _mm256_fmadd_ps(w[g], vv, acc[g][c]);
      }
    }
  }
  if constexpr (kPaired > 0) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
      for (int c = 0; c < kPaired; c += 2) join_lanes(acc[g][c], acc[g][c + 1]);
  }
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 4
    for (int c = 0; c < VECS; ++c) _mm256_storeu_ps(out[g] + 8 * c, acc[g][c]);
}

// accumulate_heads32 for G heads and `vecs` (1..4) vectors of 8 floats.
template <class Fmt, int G>
inline void accumulate_heads_g(int vecs, const RunWeights& w, std::span<const KvRun> runs, int64_t offset,
                               int64_t stride, float* const* out) {
  switch (vecs) {
    case 4: return accumulate_heads32<Fmt, G, 4>(w, runs, offset, stride, out);
    case 3: return accumulate_heads32<Fmt, G, 3>(w, runs, offset, stride, out);
    case 2: return accumulate_heads32<Fmt, G, 2>(w, runs, offset, stride, out);
    default: return accumulate_heads32<Fmt, G, 1>(w, runs, offset, stride, out);
  }
}

// accumulate_heads32 for n (1..3) heads and width (8..32, a multiple of 8;
// a q8_0 cache's weights cover one 32-value group, so width 32).
template <class Fmt>
inline void accumulate_heads(int n, int width, const RunWeights& w, std::span<const KvRun> runs, int64_t offset,
                             int64_t stride, float* const* out) {
  switch (n) {
    case 3: return accumulate_heads_g<Fmt, 3>(width / 8, w, runs, offset, stride, out);
    case 2: return accumulate_heads_g<Fmt, 2>(width / 8, w, runs, offset, stride, out);
    default: return accumulate_heads_g<Fmt, 1>(width / 8, w, runs, offset, stride, out);
  }
}

// accumulate_heads on either cache type: the 32 (or fewer, f16) output
// floats from dimension d of KV head kv. scratch: kHeadsPerKernel (3) x
// kAttentionChunk floats, used by q8_0.
inline void accumulate_values(const AttentionShape& s, int n, const float* const* p, std::span<const KvRun> runs,
                              int kv, int d, int64_t row_stride, float* scratch, float* const* out) {
  const int64_t offset = kv * s.kv_head_step() + d;
  if (s.kv_type == KvCacheType::kQ8_0) {
    const RunWeights w{p, scratch, kv * s.scale_head_stride + d / kKvQ8Group * s.k_dim_stride};
    return accumulate_heads<Q8Elements>(n, 32, w, runs, offset, row_stride, out);
  }
  const int width = std::min(32, s.head_dim - d);
  with_16bit_elements(s.kv_type, [&](auto fmt) {
    accumulate_heads<decltype(fmt)>(n, width, RunWeights{p}, runs, offset, row_stride, out);
  });
}

// Heads of one GQA group sharing a KV head, at most this many per kernel call.
constexpr int kHeadsPerKernel = 3;

// Heads [head_begin, head_end), at most kMaxHeadsPerPass of them. Each
// pass over a run (a KV block) serves every head before moving on, so the
// heads that share a KV head (GQA) read its block from L1 rather than from
// memory once each; each head's arithmetic is unchanged by the grouping.
constexpr int kMaxHeadsPerPass = 16;

// Q of heads [head_begin, head_begin + heads) rounded to f16, as llama.cpp's
// CPU attention does, into qbuf.
void round_q_to_f16(const float* q, int head_begin, int heads, int head_dim, float (*qbuf)[kMaxHeadDim]) {
  for (int i = 0; i < heads; ++i) {
    const float* qsrc = q + static_cast<int64_t>(head_begin + i) * head_dim;
    for (int d = 0; d < head_dim; d += 8) {
      const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(qsrc + d), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_store_ps(qbuf[i] + d, _mm256_cvtph_ps(half));
    }
  }
}

void attend_heads(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                  float* scores, const AttentionPartial& out, int head_begin, int head_end) {
  const int group = s.n_head / s.n_head_kv;
  const int heads = head_end - head_begin;
  int64_t n_kv = 0;
  for (const KvRun& run : runs) n_kv += run.count;
  alignas(32) float qbuf[kMaxHeadsPerPass][kMaxHeadDim];
  round_q_to_f16(q, head_begin, heads, s.head_dim, qbuf);
  // The heads of the call that share a KV head (GQA) go through the kernels
  // together, up to kHeadsPerKernel at a time, so each K and V vector is
  // widened from f16 once for all of them.
  const int kv_first = head_begin / group, kv_last = (head_end - 1) / group;
  // At long context K and V come from DRAM: fetch the next run (a KV block)
  // while this one is computed.
  const bool q8 = s.kv_type == KvCacheType::kQ8_0;
  const int64_t element_bytes = q8 ? 1 : 2;
  auto prefetch = [element_bytes](const void* from, int64_t elements) {
    prefetch_rows(from, (elements * element_bytes + 63) / 64, 64);  // every line of the span
  };
  // K of run r (the value kernels prefetch V themselves).
  auto prefetch_keys = [&](size_t r) {
    if (r >= runs.size()) return;
    const void* base = q8 ? static_cast<const void*>(runs[r].k_q) : static_cast<const void*>(runs[r].k);
    // One head's positions (or whole rows); transposed K: one head's block.
    const int64_t span = s.k_dim_stride != 0 ? s.head_dim * s.k_dim_stride : runs[r].count * row_stride;
    if (s.kv_head_stride == 0) return prefetch(base, span);
    for (int kv = kv_first; kv <= kv_last; ++kv)
      prefetch(static_cast<const char*>(base) + kv * s.kv_head_stride * element_bytes, span);
  };
  // V of run r, during the scores: the value pass after the softmax then
  // finds the chunk's V (96 KB at SmolLM2's shape) in cache instead of
  // waiting on DRAM one block ahead.
  auto prefetch_values = [&](size_t r) {
    const void* base = q8 ? static_cast<const void*>(runs[r].v_q) : static_cast<const void*>(runs[r].v);
    const int64_t span = runs[r].count * row_stride;
    if (s.kv_head_stride == 0) return prefetch(base, span);
    for (int kv = kv_first; kv <= kv_last; ++kv)
      prefetch(static_cast<const char*>(base) + kv * s.kv_head_stride * element_bytes, span);
  };
  // 16-bit transposed K in the paged layout: the score kernel spreads the
  // prefetches of the next run's K and this run's V over its d loop
  // (spread_prefetch) instead of the bursts above.
  const bool spread = !q8 && s.k_dim_stride != 0 && s.kv_head_stride != 0;
  // The next run's K of the head (its positions' rows of the block: head_dim
  // rows of k_dim_stride, the last one cut at the run's end) and this run's
  // V rows of the head, over the head_dim steps of the d loop (one line of
  // each per step at SmolLM2's shape and blocks of 16: 32 lines each).
  auto spread_prefetch = [&](size_t r, int kv) {
    const char* next_k = nullptr;
    int64_t k_bytes = 0;
    if (r + 1 < runs.size()) {
      next_k = reinterpret_cast<const char*>(runs[r + 1].k + kv * s.kv_head_stride);
      k_bytes = ((s.head_dim - 1) * s.k_dim_stride + runs[r + 1].count) * 2;
    }
    SpreadPrefetch pf{next_k, reinterpret_cast<const char*>(runs[r].v + kv * s.kv_head_stride),
                      static_cast<int>((k_bytes + 63) / 64), static_cast<int>((runs[r].count * row_stride * 2 + 63) / 64)};
    // Lines past the loop's head_dim steps (blocks of more than 32
    // positions at head_dim 64) go in a burst now.
    if (pf.a_lines > s.head_dim) prefetch_rows(pf.a + 64 * s.head_dim, pf.a_lines - s.head_dim, 64);
    if (pf.b_lines > s.head_dim) prefetch_rows(pf.b + 64 * s.head_dim, pf.b_lines - s.head_dim, 64);
    return pf;
  };
  // For each run r (positions first .. first + count) and each batch of at
  // most kHeadsPerKernel heads sharing a KV head: fn(run, first, i0, n, kv),
  // i0 counted from head_begin; the bursts of prefetches, unless spread.
  auto for_runs_and_head_batches = [&](auto&& fn) {
    int64_t first = 0;
    for (size_t r = 0; r < runs.size(); ++r) {
      prefetch_keys(r + 1);
      prefetch_values(r);
      for (int kv = kv_first; kv <= kv_last; ++kv) {
        const int i_end = std::min(head_end, (kv + 1) * group) - head_begin;
        for (int i0 = std::max(head_begin, kv * group) - head_begin; i0 < i_end; i0 += kHeadsPerKernel)
          fn(runs[r], first, i0, std::min(kHeadsPerKernel, i_end - i0), kv);
      }
      first += runs[r].count;
    }
  };
  // Scores: head i's go to scores[i * n_kv ...].
  if (spread) {
    // KV head by KV head, each over all the runs in one kernel call.
    prefetch_keys(0);  // run 0's K: nothing computes before it
    for (int kv = kv_first; kv <= kv_last; ++kv) {
      const int i_begin = std::max(head_begin, kv * group) - head_begin;
      const int i_end = std::min(head_end, (kv + 1) * group) - head_begin;
      for (int i0 = i_begin; i0 < i_end; i0 += kHeadsPerKernel) {
        const int n = std::min(kHeadsPerKernel, i_end - i0);
        const float* qs[kHeadsPerKernel];
        float* outs[kHeadsPerKernel];
        for (int g = 0; g < n; ++g) {
          qs[g] = qbuf[i0 + g];
          outs[g] = scores + (i0 + g) * n_kv;
        }
        // The first batch of the KV head's query heads prefetches for all.
        auto prefetch_of = [&, first_batch = i0 == i_begin](size_t r) {
          return first_batch ? spread_prefetch(r, kv) : SpreadPrefetch{};
        };
        const int64_t head_offset = kv * s.kv_head_step();
        with_16bit_elements(s.kv_type, [&](auto fmt) {
          using Fmt = decltype(fmt);
          switch (n) {
            case 3: score_runs_transposed<Fmt, 3>(qs, runs, head_offset, s.k_dim_stride, s.head_dim, s.scale, outs, prefetch_of); break;
            case 2: score_runs_transposed<Fmt, 2>(qs, runs, head_offset, s.k_dim_stride, s.head_dim, s.scale, outs, prefetch_of); break;
            default: score_runs_transposed<Fmt, 1>(qs, runs, head_offset, s.k_dim_stride, s.head_dim, s.scale, outs, prefetch_of); break;
          }
        });
      }
    }
  } else for_runs_and_head_batches([&](const KvRun& run, int64_t first, int i0, int n, int kv) {
    const float* qs[kHeadsPerKernel];
    float* outs[kHeadsPerKernel];
    if (q8) {
      for (int g = 0; g < n; ++g) {
        qs[g] = qbuf[i0 + g];
        outs[g] = scores + (i0 + g) * n_kv + first;
      }
      const int8_t* k = run.k_q + kv * s.kv_head_step();
      const uint16_t* ks = run.k_scale + kv * s.scale_head_stride;
      switch (n) {
        case 3: score_heads_q8<3>(qs, k, ks, s.k_dim_stride, run.count, s.head_dim, s.scale, outs); break;
        case 2: score_heads_q8<2>(qs, k, ks, s.k_dim_stride, run.count, s.head_dim, s.scale, outs); break;
        default: score_heads_q8<1>(qs, k, ks, s.k_dim_stride, run.count, s.head_dim, s.scale, outs); break;
      }
      return;
    }
    if (s.k_dim_stride != 0) {
      for (int g = 0; g < n; ++g) {
        qs[g] = qbuf[i0 + g];
        outs[g] = scores + (i0 + g) * n_kv + first;
      }
      const uint16_t* k = run.k + kv * s.kv_head_step();
      with_16bit_elements(s.kv_type, [&](auto fmt) {
        using Fmt = decltype(fmt);
        switch (n) {
          case 3: score_heads_transposed<Fmt, 3>(qs, k, s.k_dim_stride, run.count, s.head_dim, s.scale, outs); break;
          case 2: score_heads_transposed<Fmt, 2>(qs, k, s.k_dim_stride, run.count, s.head_dim, s.scale, outs); break;
          default: score_heads_transposed<Fmt, 1>(qs, k, s.k_dim_stride, run.count, s.head_dim, s.scale, outs); break;
        }
      });
      return;
    }
    for (int64_t j = 0; j < run.count; j += 4) {
      for (int g = 0; g < n; ++g) {
        qs[g] = qbuf[i0 + g];
        outs[g] = scores + (i0 + g) * n_kv + first + j;
      }
      const uint16_t* k = run.k + j * row_stride + kv * s.kv_head_step();
      const int count = static_cast<int>(std::min<int64_t>(4, run.count - j));
      with_16bit_elements(s.kv_type, [&](auto fmt) {
        using Fmt = decltype(fmt);
        switch (n) {
          case 3: score_heads4<Fmt, 3>(qs, k, row_stride, count, s.head_dim, s.scale, outs); break;
          case 2: score_heads4<Fmt, 2>(qs, k, row_stride, count, s.head_dim, s.scale, outs); break;
          default: score_heads4<Fmt, 1>(qs, k, row_stride, count, s.head_dim, s.scale, outs); break;
        }
      });
    }
  });
  for (int i = 0; i < heads; ++i) {
    float* oh = out.acc + static_cast<int64_t>(i) * s.head_dim;
    std::fill(oh, oh + s.head_dim, 0.0f);
    out.max[i] = -INFINITY;  // an empty chunk (no caller sends one): max -inf, sum 0
    out.sum[i] = n_kv == 0 ? 0.0f : softmax_numerators(scores + i * n_kv, n_kv, &out.max[i]);
  }
  if (n_kv == 0) return;
  // Values: for each batch of heads sharing a KV head and each 32 floats of
  // their outputs, one kernel call over all the chunk's runs (each output
  // float's sum in position order).
  alignas(32) float weight_scratch[kHeadsPerKernel * kAttentionChunk];
  for (int kv = kv_first; kv <= kv_last; ++kv) {
    const int i_end = std::min(head_end, (kv + 1) * group) - head_begin;
    for (int i0 = std::max(head_begin, kv * group) - head_begin; i0 < i_end; i0 += kHeadsPerKernel) {
      const int n = std::min(kHeadsPerKernel, i_end - i0);
      const float* ps[kHeadsPerKernel];
      float* outs[kHeadsPerKernel];
      for (int d = 0; d < s.head_dim; d += 32) {
        for (int g = 0; g < n; ++g) {
          ps[g] = scores + (i0 + g) * n_kv;
          outs[g] = out.acc + static_cast<int64_t>(i0 + g) * s.head_dim + d;
        }
        accumulate_values(s, n, ps, runs, kv, d, row_stride, weight_scratch, outs);
      }
    }
  }
}

// score_heads_q8 for N (row, head) slots sharing q8_0 K, eight positions
// per step (N = 6 slots of score and group-partial accumulators fit the
// registers only at one vector each). Per score the arithmetic of
// score_heads_q8: each group's FMA chain over d, then part * scale added.
template <int N>
inline void score_slots_q8(const float* const* q, const int8_t* k, const uint16_t* k_scale, int64_t dim_stride,
                           int64_t count, int head_dim, float scale, float* const* out) {
  const __m256 sc = _mm256_set1_ps(scale);
  for (int64_t j = 0; j < count; j += 8) {
    __m256 acc[N];
#pragma GCC unroll 8
    for (int n = 0; n < N; ++n) acc[n] = _mm256_setzero_ps();
    const int8_t* kj = k + j;
    const uint16_t* sj = k_scale + j;
    for (int d0 = 0; d0 < head_dim; d0 += kKvQ8Group, sj += dim_stride) {
      __m256 part[N];
#pragma GCC unroll 8
      for (int n = 0; n < N; ++n) part[n] = _mm256_setzero_ps();
      for (int d = d0; d < d0 + kKvQ8Group; ++d, kj += dim_stride) {
        const __m256 k0 = load_i8x8(kj);
#pragma GCC unroll 8
        for (int n = 0; n < N; ++n) part[n] = _mm256_fmadd_ps(_mm256_broadcast_ss(q[n] + d), k0, part[n]);
      }
      const __m256 s0 = load_f16x8(sj);
#pragma GCC unroll 8
      for (int n = 0; n < N; ++n) acc[n] = _mm256_fmadd_ps(part[n], s0, acc[n]);
    }
    const int64_t left = count - j;
#pragma GCC unroll 8
    for (int n = 0; n < N; ++n) {
      const __m256 v = _mm256_mul_ps(acc[n], sc);
      if (left >= 8) {
        _mm256_storeu_ps(out[n] + j, v);
      } else {
        alignas(32) float tmp[8];
        _mm256_store_ps(tmp, v);
        std::copy(tmp, tmp + left, out[n] + j);
      }
    }
  }
}

// out[n][0..16) += w[n][j] * v_j[0..16) for N (row, head) slots sharing the
// V rows (Fmt::rows(run) + offset, `stride` apart), over the runs' positions
// in order; each V vector widened once for all N. 16 floats, not 32: N = 6
// slots x 2 vectors of accumulators leave room for the V vectors and one
// weight. Per output float the arithmetic of accumulate_heads32.
template <class Fmt, int N>
inline void accumulate_slots16(const RunWeights& weights, std::span<const KvRun> runs, int64_t offset, int64_t stride,
                               float* const* out) {
  __m256 acc[N][2];
#pragma GCC unroll 6
  for (int n = 0; n < N; ++n) {
    acc[n][0] = _mm256_loadu_ps(out[n]), acc[n][1] = _mm256_loadu_ps(out[n] + 8);
    if constexpr (Fmt::kSplitLanes) split_lanes(acc[n][0], acc[n][1]);
  }
  int64_t at = 0;
  for (size_t r = 0; r < runs.size(); at += runs[r++].count) {
    if (r + 1 < runs.size())
      prefetch_rows(Fmt::rows(runs[r + 1]) + offset, runs[r + 1].count, stride * Fmt::kElementBytes);
    const float* w_run[N];
    weights.of_run(runs[r], at, w_run);
    const typename Fmt::Element* v = Fmt::rows(runs[r]) + offset;
    for (int64_t j = 0; j < runs[r].count; ++j, v += stride) {
      __m256 v0, v1;
      Fmt::load16(v, v0, v1);
#pragma GCC unroll 6
      for (int n = 0; n < N; ++n) {
        const __m256 w = _mm256_broadcast_ss(w_run[n] + j);
        acc[n][0] = _mm256_fmadd_ps(w, v0, acc[n][0]);
        acc[n][1] = _mm256_fmadd_ps(w, v1, acc[n][1]);
      }
    }
  }
#pragma GCC unroll 6
  for (int n = 0; n < N; ++n) {
    if constexpr (Fmt::kSplitLanes) join_lanes(acc[n][0], acc[n][1]);
    _mm256_storeu_ps(out[n], acc[n][0]), _mm256_storeu_ps(out[n] + 8, acc[n][1]);
  }
}

// accumulate_slots16 for 2, 4 or 6 slots.
template <class Fmt>
inline void accumulate_slots(int slots, const RunWeights& w, std::span<const KvRun> runs, int64_t offset,
                             int64_t stride, float* const* out) {
  switch (slots) {
    case 6: return accumulate_slots16<Fmt, 6>(w, runs, offset, stride, out);
    case 4: return accumulate_slots16<Fmt, 4>(w, runs, offset, stride, out);
    default: return accumulate_slots16<Fmt, 2>(w, runs, offset, stride, out);
  }
}

// Slots are (row, head): heads i0 .. i0 + n of row 0, then the same of row
// 1; 2n of them (n <= kHeadsPerKernel).
constexpr int kPairSlots = 2 * kHeadsPerKernel;

void attend_heads_pair(const AttentionShape& s, const float* q0, const float* q1, std::span<const KvRun> runs,
                       int64_t count0, int64_t row_stride, float* scores, const AttentionPartial& out0,
                       const AttentionPartial& out1, int head_begin, int head_end) {
  const int group = s.n_head / s.n_head_kv;
  const int heads = head_end - head_begin;
  int64_t n_kv = 0;
  for (const KvRun& run : runs) n_kv += run.count;
  alignas(32) float qbuf[2][kMaxHeadsPerPass][kMaxHeadDim];
  round_q_to_f16(q0, head_begin, heads, s.head_dim, qbuf[0]);
  round_q_to_f16(q1, head_begin, heads, s.head_dim, qbuf[1]);
  const int kv_first = head_begin / group, kv_last = (head_end - 1) / group;
  const bool q8 = s.kv_type == KvCacheType::kQ8_0;
  // Row r's scores of head i at scores + (r * heads + i) * n_kv (row 0 uses
  // the first count0).
  auto score_row = [&](int r, int i) { return scores + (static_cast<int64_t>(r) * heads + i) * n_kv; };
  auto for_head_batches = [&](auto&& fn) {
    for (int kv = kv_first; kv <= kv_last; ++kv) {
      const int i_end = std::min(head_end, (kv + 1) * group) - head_begin;
      for (int i0 = std::max(head_begin, kv * group) - head_begin; i0 < i_end; i0 += kHeadsPerKernel)
        fn(kv, i0, std::min(kHeadsPerKernel, i_end - i0));
    }
  };
  int64_t first = 0;
  for (size_t r = 0; r < runs.size(); first += runs[r++].count) {
    if (r + 1 < runs.size())
      for (int kv = kv_first; kv <= kv_last; ++kv) {
        // One KV head's block of K: head_dim x block positions.
        const int64_t bytes = s.head_dim * s.k_dim_stride * (q8 ? 1 : 2);
        const char* base = q8 ? reinterpret_cast<const char*>(runs[r + 1].k_q + kv * s.kv_head_step())
                              : reinterpret_cast<const char*>(runs[r + 1].k + kv * s.kv_head_step());
        prefetch_rows(base, bytes / 64, 64);
      }
    for_head_batches([&](int kv, int i0, int n) {
      const float* qs[kPairSlots];
      float* outs[kPairSlots];
      for (int g = 0; g < 2 * n; ++g) {
        qs[g] = qbuf[g / n][i0 + g % n];
        outs[g] = score_row(g / n, i0 + g % n) + first;
      }
      const int64_t count = runs[r].count;
      if (q8) {
        const int8_t* k = runs[r].k_q + kv * s.kv_head_step();
        const uint16_t* ks = runs[r].k_scale + kv * s.scale_head_stride;
        switch (n) {
          case 3: score_slots_q8<6>(qs, k, ks, s.k_dim_stride, count, s.head_dim, s.scale, outs); break;
          case 2: score_slots_q8<4>(qs, k, ks, s.k_dim_stride, count, s.head_dim, s.scale, outs); break;
          default: score_slots_q8<2>(qs, k, ks, s.k_dim_stride, count, s.head_dim, s.scale, outs); break;
        }
        return;
      }
      const uint16_t* k = runs[r].k + kv * s.kv_head_step();
      with_16bit_elements(s.kv_type, [&](auto fmt) {
        using Fmt = decltype(fmt);
        switch (n) {
          case 3: score_heads_transposed<Fmt, 6>(qs, k, s.k_dim_stride, count, s.head_dim, s.scale, outs); break;
          case 2: score_heads_transposed<Fmt, 4>(qs, k, s.k_dim_stride, count, s.head_dim, s.scale, outs); break;
          default: score_heads_transposed<Fmt, 2>(qs, k, s.k_dim_stride, count, s.head_dim, s.scale, outs); break;
        }
      });
    });
  }
  const AttentionPartial* outs_by_row[2] = {&out0, &out1};
  for (int row = 0; row < 2; ++row) {
    const AttentionPartial& out = *outs_by_row[row];
    const int64_t count = row == 0 ? count0 : n_kv;
    for (int i = 0; i < heads; ++i) {
      float* oh = out.acc + static_cast<int64_t>(i) * s.head_dim;
      std::fill(oh, oh + s.head_dim, 0.0f);
      out.sum[i] = softmax_numerators(score_row(row, i), count, &out.max[i]);
    }
  }
  // Values: both rows over the first count0 positions, then row 1 alone
  // over the rest (at most one position), each output's chain in order.
  KvRun shared[kAttentionChunk], tail[kAttentionChunk];
  // q8_0: each slot's weights times the scales (RunWeights).
  alignas(32) float weights[kPairSlots * kAttentionChunk];
  const size_t n_shared = slice_runs(runs, 0, count0, 1, row_stride, shared);
  const size_t n_tail = slice_runs(runs, count0, n_kv - count0, 1, row_stride, tail);
  for_head_batches([&](int kv, int i0, int n) {
    const float* ps[kPairSlots];
    float* outs[kPairSlots];
    for (int d = 0; d < s.head_dim; d += 16) {
      for (int g = 0; g < 2 * n; ++g) {
        ps[g] = score_row(g / n, i0 + g % n);
        outs[g] = outs_by_row[g / n]->acc + static_cast<int64_t>(i0 + g % n) * s.head_dim + d;
      }
      const std::span<const KvRun> both(shared, n_shared);
      const int64_t offset = kv * s.kv_head_step() + d;
      if (q8) {
        const RunWeights w{ps, weights, kv * s.scale_head_stride + d / kKvQ8Group * s.k_dim_stride};
        accumulate_slots<Q8Elements>(2 * n, w, both, offset, row_stride, outs);
      } else {
        with_16bit_elements(s.kv_type, [&](auto fmt) {
          accumulate_slots<decltype(fmt)>(2 * n, RunWeights{ps}, both, offset, row_stride, outs);
        });
      }
    }
    if (n_tail == 0) return;
    for (int d = 0; d < s.head_dim; d += 32) {
      const float* ps1[kHeadsPerKernel];
      float* outs1[kHeadsPerKernel];
      for (int g = 0; g < n; ++g) {
        ps1[g] = score_row(1, i0 + g) + count0;
        outs1[g] = out1.acc + static_cast<int64_t>(i0 + g) * s.head_dim + d;
      }
      accumulate_values(s, n, ps1, std::span<const KvRun>(tail, n_tail), kv, d, row_stride, weights, outs1);
    }
  });
}

}  // namespace

void attention_chunk(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end) {
  for (int h = head_begin; h < head_end; h += kMaxHeadsPerPass) {
    const int i = h - head_begin;
    const AttentionPartial part{out.acc + static_cast<int64_t>(i) * s.head_dim, out.max + i, out.sum + i};
    attend_heads(s, q, runs, row_stride, scores, part, h, std::min(head_end, h + kMaxHeadsPerPass));
  }
}

void attention_chunk_pair(const AttentionShape& s, const float* q0, const float* q1, std::span<const KvRun> runs,
                          int64_t count0, int64_t row_stride, float* scores, const AttentionPartial& out0,
                          const AttentionPartial& out1, int head_begin, int head_end) {
  attend_heads_pair(s, q0, q1, runs, count0, row_stride, scores, out0, out1, head_begin, head_end);
}

}  // namespace omnibus::avx2
