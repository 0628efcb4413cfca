// The AVX2 attention kernels shared by one row and two (attention_avx2.cpp,
// attention_pair_avx2.cpp): scores from row-major, transposed f16/bf16 and
// q8_0 K; the weighted sums of V; Avx2Kernels, the form the drivers
// (attention_chunk_driver.h, attention_pair_driver.h) take them in. Include
// only from *_avx2.cpp files (and the AVX-512 ones, which build on them).
#pragma once

#include <cstring>
#include <span>

#include "kernels/attention_avx2_common.h"
#include "kernels/attention_q4.h"

namespace omnibus::avx2::attention_detail {
namespace {

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

// Eight scores times scale to out, only the first `left` of them when fewer
// remain.
inline void store_scores8(__m256 acc, __m256 scale, int64_t left, float* out) {
  const __m256 s = _mm256_mul_ps(acc, scale);
  if (left >= 8) return _mm256_storeu_ps(out, s);
  alignas(32) float tmp[8];
  _mm256_store_ps(tmp, s);
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
// one per KV block. prefetch_of(k_run, v_run): the SpreadPrefetch of run
// k_run's K and run v_run's V, asked for (r + 1, r) while run r is scored.
template <class Fmt, int G, class PrefetchOf>
inline void score_runs_transposed(const float* const* q, std::span<const KvRun> runs, int64_t head_offset,
                                  int64_t dim_stride, int head_dim, float scale, float* const* out,
                                  PrefetchOf&& prefetch_of) {
  float* at[G];
  for (int g = 0; g < G; ++g) at[g] = out[g];
  for (size_t r = 0; r < runs.size(); ++r) {
    score_heads_transposed<Fmt, G>(q, runs[r].k + head_offset, dim_stride, runs[r].count, head_dim, scale, at,
                                   prefetch_of(r + 1, r));
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
                           int64_t count, int head_dim, float scale, float* const* out, SpreadPrefetch pf = {}) {
  const __m256 sc = _mm256_set1_ps(scale);
  for (int64_t j = 0; j < count; j += 16, pf = {}) {  // prefetches in the first step only
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
        pf.at(d);
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



// score_heads_q8 over all of a chunk's runs for one KV head (codes at
// runs[r].k_q + head_offset, scales at runs[r].k_scale + scale_offset), as
// score_runs_transposed.
template <int G, class PrefetchOf>
inline void score_runs_q8(const float* const* q, std::span<const KvRun> runs, int64_t head_offset,
                          int64_t scale_offset, int64_t dim_stride, int head_dim, float scale, float* const* out,
                          PrefetchOf&& prefetch_of) {
  float* at[G];
  for (int g = 0; g < G; ++g) at[g] = out[g];
  for (size_t r = 0; r < runs.size(); ++r) {
    score_heads_q8<G>(q, runs[r].k_q + head_offset, runs[r].k_scale + scale_offset, dim_stride, runs[r].count,
                      head_dim, scale, at, prefetch_of(r + 1, r));
    for (int g = 0; g < G; ++g) at[g] += runs[r].count;
  }
}

// Scores of a q4_0 K block against G heads' q8_0 Q (kernels/attention_q4.h,
// the arithmetic every path shares): eight positions per vector, K in
// octet rows of four bytes per position (`octet_stride` bytes apart), one
// f16 scale per group and position (group g's at k_scale + g *
// scale_stride). Per group: the sixteen vpmaddubsw products of the group's
// four octets summed as int16 pairs (each at most 4 x 2 x 2 x 15 x 127 =
// 30480), widened to int32 by vpmaddwd; minus the Q bias, to float; then
// score = fma(that, k_scale * q_scale, score), groups in order. Reads may
// run past the run's last position to the vector's end (the store's and
// tests' overread). pf: this run's prefetches, issued up front.
template <int G>
inline void score_heads_q4(const Q4Query* const* q, const uint8_t* k, const uint16_t* k_scale, int64_t octet_stride,
                           int64_t scale_stride, int64_t count, int head_dim, float scale, float* const* out,
                           SpreadPrefetch pf = {}) {
  for (int i = 0; i < std::max(pf.a_lines, pf.b_lines); ++i) pf.at(i);
  const __m256 sc = _mm256_set1_ps(scale);
  const __m256i low = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  for (int64_t j = 0; j < count; j += 8) {
    __m256 acc[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    for (int gi = 0; gi < head_dim / kKvQ8Group; ++gi) {
      __m256i sum16[G];
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) sum16[g] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int o = 4 * gi; o < 4 * gi + 4; ++o) {
        const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k + o * octet_stride + 4 * j));
        const __m256i lo = _mm256_and_si256(packed, low);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
          int32_t q_lo, q_hi;
          std::memcpy(&q_lo, q[g]->codes + 8 * o, 4);
          std::memcpy(&q_hi, q[g]->codes + 8 * o + 4, 4);
          sum16[g] = _mm256_add_epi16(sum16[g], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(q_lo)));
          sum16[g] = _mm256_add_epi16(sum16[g], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(q_hi)));
        }
      }
      const __m256 ks = load_f16x8(k_scale + gi * scale_stride + j);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        const __m256i isum = _mm256_sub_epi32(_mm256_madd_epi16(sum16[g], ones), _mm256_set1_epi32(q[g]->bias[gi]));
        acc[g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(ks, _mm256_set1_ps(q[g]->scale[gi])), acc[g]);
      }
    }
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) store_scores8(acc[g], sc, count - j, out[g] + j);
  }
}

// score_heads_q4 over a chunk's runs for one KV head (bytes at runs[r].k_q
// + head_bytes, scales at runs[r].k_scale + scale_offset), as
// score_runs_transposed.
template <int G, class PrefetchOf>
inline void score_runs_q4(const Q4Query* const* q, std::span<const KvRun> runs, int64_t head_bytes,
                          int64_t scale_offset, int64_t octet_stride, int64_t scale_stride, int head_dim, float scale,
                          float* const* out, PrefetchOf&& prefetch_of) {
  float* at[G];
  for (int g = 0; g < G; ++g) at[g] = out[g];
  for (size_t r = 0; r < runs.size(); ++r) {
    score_heads_q4<G>(q, reinterpret_cast<const uint8_t*>(runs[r].k_q) + head_bytes, runs[r].k_scale + scale_offset,
                      octet_stride, scale_stride, runs[r].count, head_dim, scale, at, prefetch_of(r + 1, r));
    for (int g = 0; g < G; ++g) at[g] += runs[r].count;
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

// The weights of a quantized cache's (q8_0, q4_0) value sums over the 32
// values from dimension d of KV head kv: p times each position's scale of
// that group, made per run into scratch.
inline RunWeights quantized_weights(const AttentionShape& s, const float* const* p, float* scratch, int kv, int d) {
  return RunWeights{p, scratch, kv * s.scale_head_stride + d / kKvQ8Group * s.k_dim_stride};
}

// out[g][0..8 * VECS) += w[g][j] * v_j[0..8 * VECS) over the positions of
// `runs` in order (rows at Fmt::rows(run) + offset, `stride` apart) for G
// heads sharing the V rows, each V vector widened once. Per output float:
// loaded from out, one FMA per position in order, stored back, so splitting
// positions into runs (or calls) changes nothing. The accumulators stay in
// registers across runs (a load and store per KV block cost ~10% at
// 16-position blocks). nk: another KV head's K to fetch meanwhile
// (attention_driver_common.h).
template <class Fmt, int G, int VECS>
inline void accumulate_heads32(const RunWeights& weights, std::span<const KvRun> runs, int64_t offset, int64_t stride,
                               float* const* out, const NextKeys& nk = {}) {
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
    if (nk.runs.empty() && r + 1 < runs.size())
      prefetch_rows(Fmt::rows(runs[r + 1]) + offset, runs[r + 1].count, stride * Fmt::kElementBytes);
    const char* nk_line = nk.runs.empty() ? nullptr : nk.first_line(nk.runs[r]);
    const float* w_run[G];
    weights.of_run(runs[r], at, w_run);
    const typename Fmt::Element* v = Fmt::rows(runs[r]) + offset;
    // Weights first, then one V vector at a time: G * VECS accumulators + G
    // weights + 1 vector fit the 16 ymm registers at G = 3, VECS = 4 (all
    // four V vectors live at once spilled one register every position).
    for (int64_t j = 0; j < runs[r].count; ++j, v += stride) {
      if (nk_line != nullptr && j < nk.lines) asm volatile("prefetcht0 %0" : : "m"(nk_line[64 * j]));
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
        const __m256 vv = load8_at<Fmt>(v, c);
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
                               int64_t stride, float* const* out, const NextKeys& nk = {}) {
  switch (vecs) {
    case 4: return accumulate_heads32<Fmt, G, 4>(w, runs, offset, stride, out, nk);
    case 3: return accumulate_heads32<Fmt, G, 3>(w, runs, offset, stride, out, nk);
    case 2: return accumulate_heads32<Fmt, G, 2>(w, runs, offset, stride, out, nk);
    default: return accumulate_heads32<Fmt, G, 1>(w, runs, offset, stride, out, nk);
  }
}

// accumulate_heads32 for n (1..3) heads and width (8..32, a multiple of 8;
// a q8_0 cache's weights cover one 32-value group, so width 32).
template <class Fmt>
inline void accumulate_heads(int n, int width, const RunWeights& w, std::span<const KvRun> runs, int64_t offset,
                             int64_t stride, float* const* out, const NextKeys& nk = {}) {
  switch (n) {
    case 3: return accumulate_heads_g<Fmt, 3>(width / 8, w, runs, offset, stride, out, nk);
    case 2: return accumulate_heads_g<Fmt, 2>(width / 8, w, runs, offset, stride, out, nk);
    default: return accumulate_heads_g<Fmt, 1>(width / 8, w, runs, offset, stride, out, nk);
  }
}

// accumulate_heads on either cache type: the 32 (or fewer, f16) output
// floats from dimension d of KV head kv. scratch: kHeadsPerKernel (3) x
// kAttentionChunk floats, used by q8_0 and q4_0.
inline void accumulate_values(const AttentionShape& s, int n, const float* const* p, std::span<const KvRun> runs,
                              int kv, int d, int64_t row_stride, float* scratch, float* const* out,
                              const NextKeys& nk = {}) {
  const int64_t offset = kv * s.kv_head_step() + d;
  if (s.kv_type == KvCacheType::kQ8_0)
    return accumulate_heads<Q8Elements>(n, 32, quantized_weights(s, p, scratch, kv, d), runs, offset, row_stride, out,
                                        nk);
  if (s.kv_type == KvCacheType::kQ4_0)  // offsets and strides in bytes (two codes a byte)
    return accumulate_heads<Q4Elements>(n, 32, quantized_weights(s, p, scratch, kv, d), runs, offset / 2,
                                        row_stride / 2, out, nk);
  const int width = std::min(32, s.head_dim - d);
  with_16bit_elements(s.kv_type, [&](auto fmt) {
    accumulate_heads<decltype(fmt)>(n, width, RunWeights{p}, runs, offset, row_stride, out, nk);
  });
}

// (row, head) slots of the AVX2 pair kernels (attention_pair_avx2.cpp):
// heads i0 .. i0 + n of row 0, then the same of row 1, six at most.
constexpr int kPairSlots = 2 * kHeadsPerKernel;

// The AVX2 inner loops, as the drivers (attention_chunk_driver.h,
// attention_pair_driver.h) call them: every ISA helper a driver needs is a
// member here, so the drivers include no ISA header.
struct Avx2Kernels {
  // Query heads sharing a KV head per call: three fill the 16 ymm registers.
  static constexpr int kHeadsPerBatch = attention_detail::kHeadsPerKernel;
  // The same limit for the score kernels of the layouts other than the
  // paged store's (score_heads_q8, score_heads_transposed, score_heads4)
  // and for the pair driver's slots (2 x this many).
  static constexpr int kHeadsPerKernel = attention_detail::kHeadsPerKernel;
  // No LineCursor: measured 2% slower on the Intel VM, 9% on a Zen 4 VM
  // (the value loop spills already).
  static constexpr bool kFetchesAhead = false;

  // fn(F16Elements{}) or fn(BF16Elements{}), by a 16-bit cache's type: the
  // Fmt the score kernels below take.
  template <class Fn>
  static void with_16bit_elements(KvCacheType type, Fn&& fn) {
    attention_detail::with_16bit_elements(type, fn);
  }
  static void prefetch_rows(const void* first, int64_t count, int64_t stride_bytes) {
    attention_detail::prefetch_rows(first, count, stride_bytes);
  }
  static void round_q_to_f16(const float* q, int head_begin, int heads, int head_dim, float (*qbuf)[kMaxHeadDim]) {
    attention_detail::round_q_to_f16(q, head_begin, heads, head_dim, qbuf);
  }

  template <class Fmt, int G, class PrefetchOf>
  static void score_runs(const float* const* q, std::span<const KvRun> runs, int64_t head_offset, int64_t dim_stride,
                         int head_dim, float scale, float* const* out, PrefetchOf&& prefetch_of) {
    score_runs_transposed<Fmt, G>(q, runs, head_offset, dim_stride, head_dim, scale, out, prefetch_of);
  }
  template <int G, class PrefetchOf>
  static void score_runs_q8(const float* const* q, std::span<const KvRun> runs, int64_t head_offset,
                            int64_t scale_offset, int64_t dim_stride, int head_dim, float scale, float* const* out,
                            PrefetchOf&& prefetch_of) {
    attention_detail::score_runs_q8<G>(q, runs, head_offset, scale_offset, dim_stride, head_dim, scale, out,
                                       prefetch_of);
  }
  template <int G, class PrefetchOf>
  static void score_runs_q4(const Q4Query* const* q, std::span<const KvRun> runs, int64_t head_bytes,
                            int64_t scale_offset, int64_t octet_stride, int64_t scale_stride, int head_dim, float scale,
                            float* const* out, PrefetchOf&& prefetch_of) {
    attention_detail::score_runs_q4<G>(q, runs, head_bytes, scale_offset, octet_stride, scale_stride, head_dim, scale,
                                       out, prefetch_of);
  }
  // The scores of one run in the other layouts: q8_0 K transposed per
  // block, 16-bit K transposed per block, row-major 16-bit K.
  template <int G>
  static void score_heads_q8(const float* const* q, const int8_t* k, const uint16_t* k_scale, int64_t dim_stride,
                             int64_t count, int head_dim, float scale, float* const* out) {
    attention_detail::score_heads_q8<G>(q, k, k_scale, dim_stride, count, head_dim, scale, out);
  }
  template <class Fmt, int G>
  static void score_heads_transposed(const float* const* q, const uint16_t* k, int64_t dim_stride, int64_t count,
                                     int head_dim, float scale, float* const* out) {
    attention_detail::score_heads_transposed<Fmt, G>(q, k, dim_stride, count, head_dim, scale, out);
  }
  template <class Fmt, int G>
  static void score_heads4(const float* const* q, const uint16_t* k, int64_t stride, int count, int head_dim,
                           float scale, float* const* out) {
    attention_detail::score_heads4<Fmt, G>(q, k, stride, count, head_dim, scale, out);
  }
  static float softmax_numerators(float* scores, int64_t n, float* max_out) {
    return attention_detail::softmax_numerators(scores, n, max_out);
  }
  // Output floats per accumulate_values call.
  static int value_width(const AttentionShape&) { return 32; }
  static void accumulate_values(const AttentionShape& s, int n, const float* const* p, std::span<const KvRun> runs,
                                int kv, int d, int64_t row_stride, float* scratch, float* const* out,
                                const NextKeys& nk) {
    attention_detail::accumulate_values(s, n, p, runs, kv, d, row_stride, scratch, out, nk);
  }
};

}  // namespace
}  // namespace omnibus::avx2::attention_detail
