// The AVX-512F inner loops of attention (attention_avx512.cpp, one row;
// attention_pair_avx512.cpp, two rows): the AVX2 kernels' arithmetic per
// float (attention_avx2_kernels.h) on sixteen lanes:
//  * scores from transposed K: sixteen positions per vector and up to four
//    vectors (a group of runs) at once, so each (row, head) slot's FMA chain
//    over d has many chains beside it (the AVX2 decode kernel's six left
//    the FMA pipes waiting on latency); each score is still one FMA chain
//    over d = 0 .. head_dim - 1 in order, then times scale;
//  * softmax numerators sixteen at a time, each half added to the same
//    eight-lane sum in position order as the AVX2 kernel adds its eights;
//  * values: up to 64 output floats of up to six slots per pass (sixteen per
//    vector), one FMA per value element in position order.
// A result never depends on which path computed it, so a CPU's path never
// changes an output; kernels_test checks every cache type and shape against
// the AVX2 path. Include only from *_avx512.cpp files (compiled with
// AVX-512F); internal linkage, as the AVX2 headers.
#pragma once

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off
// source and warn that it "may be used uninitialized" (a known false
// positive); nothing here reads such lanes. Not pushed and popped: the
// warnings come where the kernels are instantiated, after this header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <type_traits>

#include "kernels/attention.h"
#include "kernels/attention_avx2_kernels.h"

namespace omnibus::avx512 {
namespace {

using namespace avx2::attention_detail;

// Sixteen cache elements widened to f32 in order, by cache type.
struct WideF16 {
  using Element = uint16_t;
  static const Element* rows(const KvRun& run) { return run.v; }
  static __m512 load(const Element* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};
struct WideBF16 {
  using Element = uint16_t;
  static const Element* rows(const KvRun& run) { return run.v; }
  static __m512 load(const Element* p) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
};
struct WideQ8 {
  using Element = int8_t;
  static const Element* rows(const KvRun& run) { return run.v_q; }
  static __m512 load(const Element* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
};
// q4_0 V (kernels/kv_quant.h): a position's 32-value groups of 16 bytes,
// each group two vectors (values 0-15, the low nibbles, then 16-31, the
// high ones), each code - 8 as f32.
struct WideQ4 {
  using Element = uint8_t;
  static constexpr int kVectorBytes = 8;  // bytes a vector of sixteen takes, on average
  static const Element* rows(const KvRun& run) { return reinterpret_cast<const uint8_t*>(run.v_q); }
  // The group at p from one widening: each byte zero-extended to its int32
  // lane, and code - 8 looked up by the low four bits (vpermps reads only
  // those), the lane shifted right by four for the high nibble. The table
  // holds the exact floats a conversion gives, so the same bits in three
  // shuffles and a shift instead of nine integer steps.
  static void load_group(const Element* p, __m512* out) {
    const __m512 table = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    const __m512i wide = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    out[0] = _mm512_permutexvar_ps(wide, table);
    out[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(wide, 4), table);
  }
};
// The first VECS vectors of sixteen elements of a value row at p: from p +
// 16c for the unpacked types, a group (two vectors) at a time for q4_0
// (an odd last vector is its group's first).
template <class Wide, int VECS>
inline void load_vectors(const typename Wide::Element* p, __m512* out) {
  if constexpr (requires { Wide::load_group(p, out); }) {
    int c = 0;
#pragma GCC unroll 4
    for (; c + 2 <= VECS; c += 2) Wide::load_group(p + Wide::kVectorBytes * c, out + c);
    if (c < VECS) {
      __m512 group[2];
      Wide::load_group(p + Wide::kVectorBytes * c, group);
      out[c] = group[0];
    }
  } else {
#pragma GCC unroll 8
    for (int c = 0; c < VECS; ++c) out[c] = Wide::load(p + 16 * c);
  }
}
// The bytes a vector of sixteen elements takes.
template <class Wide>
constexpr int64_t vector_bytes() {
  if constexpr (requires { Wide::kVectorBytes; }) {
    return Wide::kVectorBytes;
  } else {
    return 16 * static_cast<int64_t>(sizeof(typename Wide::Element));
  }
}
template <class Fmt>
using WideOf = std::conditional_t<std::is_same_v<Fmt, BF16Elements>, WideBF16, WideF16>;

// Up to this many vectors of sixteen positions per score kernel call; q8_0
// for more than three slots: two (its group partials double the
// accumulators, and 6 x 4 x 2 would not fit the 32 registers).
constexpr int kScoreVectors = 4;
constexpr int score_vectors_for(int slots, bool q8) { return q8 && slots > 3 ? 2 : kScoreVectors; }

// Sixteen positions of one run: K (or codes) of the first at k, K scales
// (q8_0) at k_scale, scores to out[g] + at for the first `count`.
template <class Element>
struct ScoreVector {
  const Element* k;
  const uint16_t* k_scale;
  int64_t at;
  int count;
};

// A chunk's positions in vectors of sixteen (never across runs), run after
// run, in groups of up to kScoreVectors.
template <class Element>
struct ScoreGroups {
  std::span<const KvRun> runs;
  const Element* (*k_of)(const KvRun&);
  int64_t head_offset, scale_offset;
  size_t r = 0;
  int64_t j = 0, at = 0;

  // Fills vec (up to `limit` <= kScoreVectors entries) and starts (the
  // runs that begin in the group); returns the number of vectors, 0 at the
  // end.
  int group(ScoreVector<Element>* vec, int limit, size_t* starts, int* n_starts) {
    int n = 0;
    *n_starts = 0;
    while (n < limit && r < runs.size()) {
      const KvRun& run = runs[r];
      if (j == 0) starts[(*n_starts)++] = r;
      const uint16_t* scales = run.k_scale == nullptr ? nullptr : run.k_scale + scale_offset + j;
      vec[n++] = {k_of(run) + head_offset + j, scales, at + j, static_cast<int>(std::min<int64_t>(16, run.count - j))};
      j += 16;
      if (j >= run.count) at += run.count, j = 0, ++r;
    }
    return n;
  }
};

// Software prefetches spread over a group's d loop: at step d, line d of
// the K of the runs one group ahead and of the V of the group's runs, up
// to the lines all those runs have (the rest went in a burst when the
// group began). Streams past the group's run count repeat stream 0, so
// the step has no per-run checks: with a check per run and step (the AVX2
// kernels' SpreadPrefetch) the prefetching cost more than the FMAs in
// cache (1.13 against 0.78 us for a chunk's scores).
struct GroupPrefetch {
  const char* k[kScoreVectors] = {};
  const char* v[kScoreVectors] = {};
  int k_lines = 0, v_lines = 0;
  LineCursor* ahead = nullptr;  // the next unit's lines: one step per run per d
  template <int V>
  void at(int d) const {
    if (ahead != nullptr) ahead->step(V);
    if (d < k_lines) {
#pragma GCC unroll 8
      for (int i = 0; i < V; ++i) asm volatile("prefetcht0 %0" : : "m"(k[i][64 * d]));
    }
    if (d < v_lines) {
#pragma GCC unroll 8
      for (int i = 0; i < V; ++i) asm volatile("prefetcht0 %0" : : "m"(v[i][64 * d]));
    }
  }
};

// The GroupPrefetch of a group whose runs starts[0 .. n) begin in it:
// prefetch_of(k_run, v_run) (the driver's SpreadPrefetch) for each, K one
// group (n runs) ahead.
template <class PrefetchOf>
inline GroupPrefetch group_prefetch(const size_t* starts, int n, PrefetchOf&& prefetch_of) {
  GroupPrefetch g;
  if (n == 0) return g;
  SpreadPrefetch p[kScoreVectors];
  g.k_lines = g.v_lines = 1 << 30;
  for (int i = 0; i < n; ++i) {
    p[i] = prefetch_of(starts[i] + n, starts[i]);
    if (i == 0) g.ahead = p[i].ahead;
    g.k_lines = p[i].a == nullptr ? 0 : std::min(g.k_lines, p[i].a_lines);
    g.v_lines = p[i].b == nullptr ? 0 : std::min(g.v_lines, p[i].b_lines);
  }
  for (int i = 0; i < kScoreVectors; ++i) {
    const SpreadPrefetch& src = p[i < n ? i : 0];
    g.k[i] = src.a, g.v[i] = src.b;
    if (i >= n) continue;
    // Lines past the common count (a short run's neighbours have more).
    if (src.a != nullptr && src.a_lines > g.k_lines) prefetch_rows(src.a + 64 * g.k_lines, src.a_lines - g.k_lines, 64);
    if (src.b != nullptr && src.b_lines > g.v_lines) prefetch_rows(src.b + 64 * g.v_lines, src.b_lines - g.v_lines, 64);
  }
  return g;
}

// acc + *w * v, *w broadcast by the FMA's own memory operand ({1to16}):
// the same single rounding as _mm512_fmadd_ps(_mm512_set1_ps(*w), v, acc).
// On the Zen 4 VM a vbroadcastss zmm from memory also takes a vector pipe:
// a standalone q4_0 value loop (per position six broadcasts, eight decode
// steps, twelve FMAs) ran 16.6 cycles a position with them and 12.4 (its
// FMA floor) with the broadcasts folded into the FMAs' loads
// (docs/findings/zen4-broadcast-from-memory-costs-a-pipe.md). GCC keeps a set1 that
// several FMAs share in a register, so the fold is written out.
inline __m512 fmadd_broadcast(const float* w, __m512 v, __m512 acc) {
  asm("vfmadd231ps %[w]%{1to16%}, %[v], %[acc]" : [acc] "+v"(acc) : [v] "v"(v), [w] "m"(*w));
  return acc;
}

// score * scale for the first `count` lanes to out.
inline void store_scores(__m512 acc, __m512 scale, int count, float* out) {
  _mm512_mask_storeu_ps(out, static_cast<__mmask16>((1u << count) - 1), _mm512_mul_ps(acc, scale));
}

// Scores of V vectors (sixteen positions each) against G heads' q, K
// transposed (dimension d of a vector's positions at k + d * dim_stride):
// per score one FMA chain over d in order with q[g][d] broadcast, as
// score_heads_transposed. Reads may run 15 elements past a run's last
// position (kTransposedKeyOverread); those lanes are dropped.
template <class Wide, int G, int V>
inline void score_vectors(const float* const* q, const ScoreVector<typename Wide::Element>* vec, int64_t dim_stride,
                          int head_dim, __m512 scale, float* const* out, const GroupPrefetch& pf) {
  __m512 acc[G][V];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[g][v] = _mm512_setzero_ps();
  const typename Wide::Element* k[V];
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) k[v] = vec[v].k;
  for (int d = 0; d < head_dim; ++d) {
    pf.at<V>(d);
    __m512 kv[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) kv[v] = Wide::load(k[v] + d * dim_stride);
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[g][v] = fmadd_broadcast(&q[g][d], kv[v], acc[g][v]);
  }
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) store_scores(acc[g][v], scale, vec[v].count, out[g] + vec[v].at);
}

// score_vectors for q8_0 K: per score each group's codes dotted with q in
// one FMA chain over d, then added as part * group scale, groups in order
// (score_heads_q8's arithmetic).
template <int G, int V>
inline void score_vectors_q8(const float* const* q, const ScoreVector<int8_t>* vec, int64_t dim_stride, int head_dim,
                             __m512 scale, float* const* out, const GroupPrefetch& pf) {
  __m512 acc[G][V];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[g][v] = _mm512_setzero_ps();
  for (int d0 = 0; d0 < head_dim; d0 += kKvQ8Group) {
    __m512 part[G][V];
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) part[g][v] = _mm512_setzero_ps();
    for (int d = d0; d < d0 + kKvQ8Group; ++d) {
      pf.at<V>(d);
      __m512 kv[V];
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) kv[v] = WideQ8::load(vec[v].k + d * dim_stride);
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v) part[g][v] = fmadd_broadcast(&q[g][d], kv[v], part[g][v]);
    }
    const int64_t scale_row = d0 / kKvQ8Group * dim_stride;
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      const __m512 sv = WideF16::load(vec[v].k_scale + scale_row);
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) acc[g][v] = _mm512_fmadd_ps(part[g][v], sv, acc[g][v]);
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) store_scores(acc[g][v], scale, vec[v].count, out[g] + vec[v].at);
}

// All of a chunk's scores for one KV head, group of vectors after group:
// score(vectors, n, prefetch) per group, the group's GroupPrefetch built
// from prefetch_of (a no-op one in prefill, whose K and V are in cache).
template <class Element, class PrefetchOf, class Score>
inline void score_groups(ScoreGroups<Element> groups, int limit, PrefetchOf&& prefetch_of, Score&& score) {
  ScoreVector<Element> vec[kScoreVectors];
  size_t starts[kScoreVectors];
  int n_starts = 0;
  while (const int n = groups.group(vec, limit, starts, &n_starts))
    score(vec, n, group_prefetch(starts, n_starts, prefetch_of));
}

// The drivers' Kernels (attention_chunk_driver.h): Avx2Kernels's helpers
// and its kernels for the layouts other than the paged store's, with wider
// ones for the paged layout, the softmax and the values.
struct Avx512Kernels : Avx2Kernels {
  // Query heads sharing a KV head per call: four (GQA groups of 4 and 8,
  // Gemma 3's MQA 4:1) fit the 32 zmm registers in both passes (scores:
  // 4 x 4 accumulators; values: 4 x 4 accumulators and 4 weights).
  static constexpr int kHeadsPerBatch = 4;
  // The 16-bit caches' loops step the next unit's LineCursor.
  static constexpr bool kFetchesAhead = true;
  template <class Fmt, int G, class PrefetchOf>
  static void score_runs(const float* const* q, std::span<const KvRun> runs, int64_t head_offset, int64_t dim_stride,
                         int head_dim, float scale, float* const* out, PrefetchOf&& prefetch_of) {
    using Wide = WideOf<Fmt>;
    const __m512 sc = _mm512_set1_ps(scale);
    ScoreGroups<uint16_t> groups{runs, [](const KvRun& r) { return r.k; }, head_offset, 0};
    score_groups(groups, score_vectors_for(G, false), prefetch_of,
                 [&](const ScoreVector<uint16_t>* vec, int n, const GroupPrefetch& pf) {
                   switch (n) {
                     case 4: return score_vectors<Wide, G, 4>(q, vec, dim_stride, head_dim, sc, out, pf);
                     case 3: return score_vectors<Wide, G, 3>(q, vec, dim_stride, head_dim, sc, out, pf);
                     case 2: return score_vectors<Wide, G, 2>(q, vec, dim_stride, head_dim, sc, out, pf);
                     default: return score_vectors<Wide, G, 1>(q, vec, dim_stride, head_dim, sc, out, pf);
                   }
                 });
  }
  template <int G, class PrefetchOf>
  static void score_runs_q8(const float* const* q, std::span<const KvRun> runs, int64_t head_offset,
                            int64_t scale_offset, int64_t dim_stride, int head_dim, float scale, float* const* out,
                            PrefetchOf&& prefetch_of) {
    const __m512 sc = _mm512_set1_ps(scale);
    ScoreGroups<int8_t> groups{runs, [](const KvRun& r) { return r.k_q; }, head_offset, scale_offset};
    score_groups(groups, score_vectors_for(G, true), prefetch_of,
                 [&](const ScoreVector<int8_t>* vec, int n, const GroupPrefetch& pf) {
                   switch (n) {
                     case 4:
                       if constexpr (score_vectors_for(G, true) >= 4)
                         return score_vectors_q8<G, 4>(q, vec, dim_stride, head_dim, sc, out, pf);
                       [[fallthrough]];
                     case 3:
                       if constexpr (score_vectors_for(G, true) >= 3)
                         return score_vectors_q8<G, 3>(q, vec, dim_stride, head_dim, sc, out, pf);
                       [[fallthrough]];
                     case 2: return score_vectors_q8<G, 2>(q, vec, dim_stride, head_dim, sc, out, pf);
                     default: return score_vectors_q8<G, 1>(q, vec, dim_stride, head_dim, sc, out, pf);
                   }
                 });
  }

  // score_heads_q4 (attention_avx2_kernels.h) on sixteen positions per
  // vector: the same integers and float steps per lane, so the same bits.
  template <int G>
  static void score_heads_q4(const Q4Query* const* q, const uint8_t* k, const uint16_t* k_scale,
                             int64_t octet_stride, int64_t scale_stride, int64_t count, int head_dim, float scale,
                             float* const* out, SpreadPrefetch pf) {
    for (int i = 0; i < std::max(pf.a_lines, pf.b_lines); ++i) pf.at(i);
    const __m512 sc = _mm512_set1_ps(scale);
    const __m512i low = _mm512_set1_epi8(0x0F);
    [[maybe_unused]] const __m512i ones = _mm512_set1_epi16(1);
    for (int64_t j = 0; j < count; j += 16) {
      __m512 acc[G];
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
      for (int gi = 0; gi < head_dim / kKvQ8Group; ++gi) {
        __m512i sum16[G];
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) sum16[g] = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int o = 4 * gi; o < 4 * gi + 4; ++o) {
          const __m512i packed = _mm512_loadu_si512(k + o * octet_stride + 4 * j);
          const __m512i lo = _mm512_and_si512(packed, low);
          const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low);
#pragma GCC unroll 4
          for (int g = 0; g < G; ++g) {
            int32_t q_lo, q_hi;
            std::memcpy(&q_lo, q[g]->codes + 8 * o, 4);
            std::memcpy(&q_hi, q[g]->codes + 8 * o + 4, 4);
#if defined(__AVX512VNNI__)
            // The same four-byte sums per int32 lane as the pairs below
            // (exact either way), in one instruction instead of three.
            sum16[g] = _mm512_dpbusd_epi32(sum16[g], lo, _mm512_set1_epi32(q_lo));
            sum16[g] = _mm512_dpbusd_epi32(sum16[g], hi, _mm512_set1_epi32(q_hi));
#else
            sum16[g] = _mm512_add_epi16(sum16[g], _mm512_maddubs_epi16(lo, _mm512_set1_epi32(q_lo)));
            sum16[g] = _mm512_add_epi16(sum16[g], _mm512_maddubs_epi16(hi, _mm512_set1_epi32(q_hi)));
#endif
          }
        }
        const __m512 ks = WideF16::load(k_scale + gi * scale_stride + j);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
#if defined(__AVX512VNNI__)
          const __m512i isum = _mm512_sub_epi32(sum16[g], _mm512_set1_epi32(q[g]->bias[gi]));
#else
          const __m512i isum =
              _mm512_sub_epi32(_mm512_madd_epi16(sum16[g], ones), _mm512_set1_epi32(q[g]->bias[gi]));
#endif
          acc[g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(ks, _mm512_set1_ps(q[g]->scale[gi])),
                                   acc[g]);
        }
      }
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g)
        store_scores(acc[g], sc, static_cast<int>(std::min<int64_t>(16, count - j)), out[g] + j);
    }
  }
  template <int G, class PrefetchOf>
  static void score_runs_q4(const Q4Query* const* q, std::span<const KvRun> runs, int64_t head_bytes,
                            int64_t scale_offset, int64_t octet_stride, int64_t scale_stride, int head_dim,
                            float scale, float* const* out, PrefetchOf&& prefetch_of) {
    float* at[G];
    for (int g = 0; g < G; ++g) at[g] = out[g];
    for (size_t r = 0; r < runs.size(); ++r) {
      score_heads_q4<G>(q, reinterpret_cast<const uint8_t*>(runs[r].k_q) + head_bytes, runs[r].k_scale + scale_offset,
                        octet_stride, scale_stride, runs[r].count, head_dim, scale, at, prefetch_of(r + 1, r));
      for (int g = 0; g < G; ++g) at[g] += runs[r].count;
    }
  }

  // softmax_numerators (attention_avx2_common.h) sixteen at a time: the same
  // max, the same exp per lane, and each sixteen's two halves added to the
  // eight-lane sum in position order, as the AVX2 loop adds its eights.
  static float softmax_numerators(float* scores, int64_t n, float* max_out) {
    const float max = max_score(scores, n);
    *max_out = max;
    const __m512 m = _mm512_set1_ps(max);
    __m256 sum = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
      const __m512 e = round_f16(exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(scores + j), m)));
      _mm512_storeu_ps(scores + j, e);
      sum = _mm256_add_ps(sum, _mm512_castps512_ps256(e));
      sum = _mm256_add_ps(sum, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
    }
    return hsum(numerators_from(scores, j, n, max, sum));
  }

  // 64 output floats per pass (four vectors of sixteen per head, up to four
  // heads: sixteen accumulators). A quantized cache's pass spans two
  // 32-value groups, each with its own weights (p times that group's
  // scale): with one group per pass (32 floats, six accumulators for
  // SmolLM2's three heads) each accumulator's FMA chain waited on its own
  // latency. A head_dim of an odd number of groups or sixteens ends on a
  // narrower pass.
  static int value_width(const AttentionShape&) { return 64; }

  // scratch: 2 x n x kAttentionChunk floats for a quantized cache.
  static void accumulate_values(const AttentionShape& s, int n, const float* const* p, std::span<const KvRun> runs,
                                int kv, int d, int64_t row_stride, float* scratch, float* const* out,
                                const NextKeys& nk) {
    const int64_t offset = kv * s.kv_head_step() + d;
    if (s.kv_type == KvCacheType::kQ8_0 || s.kv_type == KvCacheType::kQ4_0) {
      const RunWeights w[2] = {quantized_weights(s, p, scratch, kv, d),
                               quantized_weights(s, p, scratch + n * kAttentionChunk, kv, d + kKvQ8Group)};
      const bool two = s.head_dim - d >= 2 * kKvQ8Group;
      if (s.kv_type == KvCacheType::kQ8_0) {
        if (two) return values_by_heads<WideQ8, 2>(n, 4, w, runs, offset, row_stride, out, nk);
        return values_by_heads<WideQ8>(n, 2, w, runs, offset, row_stride, out, nk);
      }
      // Offsets and strides in bytes (two codes a byte).
      if (two) return values_by_heads<WideQ4, 2>(n, 4, w, runs, offset / 2, row_stride / 2, out, nk);
      return values_by_heads<WideQ4>(n, 2, w, runs, offset / 2, row_stride / 2, out, nk);
    }
    const int vecs = std::min(64, s.head_dim - d) / 16;
    const RunWeights w{p};
    if (s.kv_type == KvCacheType::kBF16)
      return values_by_heads<WideBF16>(n, vecs, &w, runs, offset, row_stride, out, nk);
    values_by_heads<WideF16>(n, vecs, &w, runs, offset, row_stride, out, nk);
  }

  // The building blocks of the above (the pair kernels use them too).
  static __m512 exp_nonpositive(__m512 x);
  static __m512 round_f16(__m512 x) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }

  // out[g][0 .. 16 * VECS) += w[g][j] * v_j over the runs' positions in
  // order (accumulate_heads32's arithmetic per float), each V vector
  // widened once for the G heads. GROUPS > 1: the vectors split evenly into
  // that many quantization groups, group k's weights from weights[k].
  template <class Wide, int G, int VECS, int GROUPS>
  static void values(const RunWeights* weights, std::span<const KvRun> runs, int64_t offset, int64_t stride,
                     float* const* out, const NextKeys& nk) {
    static_assert(VECS % GROUPS == 0);
    constexpr int kGroupVecs = VECS / GROUPS;
    __m512 acc[G][VECS];
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
      for (int c = 0; c < VECS; ++c) acc[g][c] = _mm512_loadu_ps(out[g] + 16 * c);
    const int64_t row_bytes = VECS * vector_bytes<Wide>();
    // Only the 16-bit caches' loops carry the next unit's lines (LineCursor).
    constexpr bool kSixteenBit = std::is_same_v<Wide, WideF16> || std::is_same_v<Wide, WideBF16>;
    LineCursor::Walk ahead = kSixteenBit && nk.ahead != nullptr ? nk.ahead->walk() : LineCursor::Walk{};
    int64_t at = 0;
    for (size_t r = 0; r < runs.size(); at += runs[r++].count) {
      if (nk.runs.empty() && nk.ahead == nullptr && r + 1 < runs.size()) {
        const auto* next = reinterpret_cast<const char*>(Wide::rows(runs[r + 1]) + offset);
        const int64_t stride_bytes = stride * static_cast<int64_t>(sizeof(typename Wide::Element));
        for (int64_t line = 0; line < row_bytes; line += 64) prefetch_rows(next + line, runs[r + 1].count, stride_bytes);
      }
      // The next KV head's K lines: this pass's share, spread over the
      // run's positions (two per position when there are twice as many).
      const char* nk_line = nk.runs.empty() ? nullptr : nk.first_line(nk.runs[r]);
      const int64_t count = runs[r].count;
      const float* w_run[GROUPS][G];
#pragma GCC unroll 2
      for (int k = 0; k < GROUPS; ++k) weights_of_run(weights[k], runs[r], at, w_run[k]);
      const typename Wide::Element* v = Wide::rows(runs[r]) + offset;
      for (int64_t j = 0; j < count; ++j, v += stride) {
        if (nk_line != nullptr) {
          if (j < nk.lines) asm volatile("prefetcht0 %0" : : "m"(nk_line[64 * j]));
          if (j + count < nk.lines) asm volatile("prefetcht0 %0" : : "m"(nk_line[64 * (j + count)]));
        }
        if constexpr (kSixteenBit) {
          if (nk.ahead != nullptr) ahead.step(kValueStepWeight);
        }
        __m512 vv[VECS];
        load_vectors<Wide, VECS>(v, vv);
#pragma GCC unroll 8
        for (int c = 0; c < VECS; ++c)
#pragma GCC unroll 8
          for (int g = 0; g < G; ++g) acc[g][c] = fmadd_broadcast(&w_run[c / kGroupVecs][g][j], vv[c], acc[g][c]);
      }
    }
    if (kSixteenBit && nk.ahead != nullptr) nk.ahead->save(ahead);
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g)
#pragma GCC unroll 8
      for (int c = 0; c < VECS; ++c) _mm512_storeu_ps(out[g] + 16 * c, acc[g][c]);
  }

  // RunWeights::of_run sixteen products at a time (the same single product
  // per weight, so the same bits; the AVX2 loop's eight were ~12% of the
  // q4_0 value pass).
  template <int N>
  static void weights_of_run(const RunWeights& rw, const KvRun& run, int64_t at, const float* (&w)[N]) {
    if (rw.scratch == nullptr) return rw.of_run(run, at, w);
    const uint16_t* scale = run.v_scale + rw.scale_offset;
    const int64_t count = run.count;
    for (int n = 0; n < N; ++n) {
      const float* p = rw.p[n] + at;
      float* out = rw.scratch + n * kAttentionChunk;
      int64_t j = 0;
      for (; j + 16 <= count; j += 16)
        _mm512_storeu_ps(out + j, _mm512_mul_ps(_mm512_loadu_ps(p + j), WideF16::load(scale + j)));
      if (j < count) {
        const auto m = static_cast<__mmask16>((1u << (count - j)) - 1);
        const __m512 sv = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_maskz_loadu_epi16(m, scale + j)));
        _mm512_mask_storeu_ps(out + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, p + j), sv));
      }
      w[n] = out;
    }
  }

  template <class Wide, int G, int GROUPS>
  static void values_g(int vecs, const RunWeights* w, std::span<const KvRun> runs, int64_t offset, int64_t stride,
                       float* const* out, const NextKeys& nk) {
    if constexpr (GROUPS > 1) {
      return values<Wide, G, 2 * GROUPS, GROUPS>(w, runs, offset, stride, out, nk);  // two vectors a group
    } else {
      switch (vecs) {
        case 4: return values<Wide, G, 4, 1>(w, runs, offset, stride, out, nk);
        case 3: return values<Wide, G, 3, 1>(w, runs, offset, stride, out, nk);
        case 2: return values<Wide, G, 2, 1>(w, runs, offset, stride, out, nk);
        default: return values<Wide, G, 1, 1>(w, runs, offset, stride, out, nk);
      }
    }
  }
  // GROUPS quantization groups per pass (weights[0 .. GROUPS)), `vecs`
  // vectors of sixteen per head.
  template <class Wide, int GROUPS = 1>
  static void values_by_heads(int n, int vecs, const RunWeights* w, std::span<const KvRun> runs, int64_t offset,
                              int64_t stride, float* const* out, const NextKeys& nk) {
    if constexpr (GROUPS > 1) {  // at most four heads (kHeadsPerBatch): 4 x 4 accumulators
      switch (n) {
        case 4: return values_g<Wide, 4, GROUPS>(vecs, w, runs, offset, stride, out, nk);
        case 3: return values_g<Wide, 3, GROUPS>(vecs, w, runs, offset, stride, out, nk);
        case 2: return values_g<Wide, 2, GROUPS>(vecs, w, runs, offset, stride, out, nk);
        default: return values_g<Wide, 1, GROUPS>(vecs, w, runs, offset, stride, out, nk);
      }
    } else {
      switch (n) {
        case 6: return values_g<Wide, 6, 1>(vecs, w, runs, offset, stride, out, nk);
        case 4: return values_g<Wide, 4, 1>(vecs, w, runs, offset, stride, out, nk);
        case 3: return values_g<Wide, 3, 1>(vecs, w, runs, offset, stride, out, nk);
        case 2: return values_g<Wide, 2, 1>(vecs, w, runs, offset, stride, out, nk);
        default: return values_g<Wide, 1, 1>(vecs, w, runs, offset, stride, out, nk);
      }
    }
  }
};

// exp_nonpositive (attention_avx2_common.h) on sixteen lanes: the same
// operations in the same order, so the same bits per lane.
inline __m512 Avx512Kernels::exp_nonpositive(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.33654f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 r2 = _mm512_mul_ps(r, r);
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, r2, r), _mm512_set1_ps(1.0f));
  const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(y, _mm512_castsi512_ps(bits));
}

}  // namespace
}  // namespace omnibus::avx512
