// AVX2+FMA attention for one query row (see attention.h). Same two passes as
// the reference, vectorised:
//  * scores: eight positions at a time, each with an 8-lane accumulator over
//    head_dim, reduced by one transposing add tree; every position's lanes
//    are reduced in the same order whether it sits in a full group of eight,
//    a short group at the end of a run, or another run, so the scores (and
//    so the output) do not depend on how positions are split into runs;
//  * softmax: a vector exp (Cephes-style range reduction and polynomial,
//    under 1 ulp on the range used) over the contiguous score buffer, each
//    numerator rounded to f16, summed in 8 lanes in position order;
//  * values: accumulators for 64 output floats at a time, one FMA per value
//    element in position order, scaled by 1/sum once at the end;
//  * all heads of a call are served block by block, so GQA heads sharing a
//    KV head reuse its block from L1.
// K and V are f16 (the cache's format), widened with F16C as they load. Q
// and the softmax numerators are rounded to f16 as llama.cpp's CPU
// attention does: the golden tests agree with llama.cpp a little better so
// (docs/correctness.md).
// Requires head_dim % 8 == 0; attention.cpp falls back to the reference
// otherwise.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"

namespace omnibus::avx2 {
namespace {

// out[p] = the sum of the 8 lanes of acc[p], as
// ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)), for p < 8. The halves are added
// with 128-bit ops (vperm2f128 is slow on Zen 1); same sums, same order.
inline void transpose_sum8(const __m256 (&acc)[8], __m128* lo4, __m128* hi4) {
  const __m256 t01 = _mm256_hadd_ps(acc[0], acc[1]);
  const __m256 t23 = _mm256_hadd_ps(acc[2], acc[3]);
  const __m256 t45 = _mm256_hadd_ps(acc[4], acc[5]);
  const __m256 t67 = _mm256_hadd_ps(acc[6], acc[7]);
  const __m256 u = _mm256_hadd_ps(t01, t23);  // p0..p3: (l0+l1)+(l2+l3) | (l4+l5)+(l6+l7)
  const __m256 v = _mm256_hadd_ps(t45, t67);  // p4..p7
  *lo4 = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
  *hi4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
}

// 8 f16 values widened to f32.
inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Scores of `count` (1..8) consecutive positions starting at k (f32 rows
// `stride` elements apart) against qh, times `scale`, into out[0..count).
inline void score_group(const float* qh, const float* k, int64_t stride, int count, int head_dim, float scale,
                        float* out) {
  __m256 acc[8];
  for (int p = 0; p < 8; ++p) acc[p] = _mm256_setzero_ps();
  for (int d = 0; d < head_dim; d += 8) {
    const __m256 qv = _mm256_loadu_ps(qh + d);
    // Unused positions keep zero accumulators: their lanes of the sum are
    // discarded and do not touch the others.
    switch (count) {
      case 8: acc[7] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 7 * stride + d), acc[7]); [[fallthrough]];
      case 7: acc[6] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 6 * stride + d), acc[6]); [[fallthrough]];
      case 6: acc[5] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 5 * stride + d), acc[5]); [[fallthrough]];
      case 5: acc[4] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 4 * stride + d), acc[4]); [[fallthrough]];
      case 4: acc[3] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 3 * stride + d), acc[3]); [[fallthrough]];
      case 3: acc[2] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 2 * stride + d), acc[2]); [[fallthrough]];
      case 2: acc[1] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 1 * stride + d), acc[1]); [[fallthrough]];
      default: acc[0] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + d), acc[0]);
    }
  }
  __m128 lo4, hi4;
  transpose_sum8(acc, &lo4, &hi4);
  const __m128 sc = _mm_set1_ps(scale);
  lo4 = _mm_mul_ps(lo4, sc);
  hi4 = _mm_mul_ps(hi4, sc);
  if (count == 8) {
    _mm_storeu_ps(out, lo4);
    _mm_storeu_ps(out + 4, hi4);
  } else {
    alignas(16) float tmp[8];
    _mm_store_ps(tmp, lo4);
    _mm_store_ps(tmp + 4, hi4);
    std::copy(tmp, tmp + count, out);
  }
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

// scores[j] = e^(scores[j] - max); returns the sum, 8 lanes in order then hsum.
float softmax_numerators(float* scores, int64_t n) {
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(scores + j));
  float max_score = -INFINITY;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  for (float l : lanes) max_score = std::max(max_score, l);
  for (; j < n; ++j) max_score = std::max(max_score, scores[j]);

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

// out[0..width) += p_j * v_j[0..width) for the `count` positions of one run
// starting at v and p, width <= 64 and a multiple of 8. The accumulators are
// loaded from and stored back to `out`, exactly, so a head's sum is the same
// chain of FMAs in position order whether or not other heads' runs are
// interleaved with it.
inline void accumulate_values(const float* p, const float* v, int64_t stride, int64_t count, int width,
                              float* out) {
  const int vecs = width / 8;
  __m256 acc[8];
  for (int c = 0; c < 8; ++c) acc[c] = c < vecs ? _mm256_loadu_ps(out + 8 * c) : _mm256_setzero_ps();
  for (int64_t j = 0; j < count; ++j, v += stride) {
    const __m256 w = _mm256_set1_ps(p[j]);
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      if (c < vecs) acc[c] = _mm256_fmadd_ps(w, _mm256_loadu_ps(v + 8 * c), acc[c]);
    }
  }
  for (int c = 0; c < vecs; ++c) _mm256_storeu_ps(out + 8 * c, acc[c]);
}

// Heads [head_begin, head_end), at most kMaxHeadsPerPass of them. Each
// pass over a run (a KV block) serves every head before moving on, so the
// heads that share a KV head (GQA) read its block from L1 rather than from
// memory once each; each head's arithmetic is unchanged by the grouping.
constexpr int kMaxHeadsPerPass = 16;
// Positions widened to f32 at a time (a stack buffer of kSlice x head_dim).
constexpr int64_t kSlice = 16;

void attend_heads(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                  float* scores, float* out, int head_begin, int head_end) {
  const int group = s.n_head / s.n_head_kv;
  const int heads = head_end - head_begin;
  int64_t n_kv = 0;
  for (const KvRun& run : runs) n_kv += run.count;
  // Q rounded to f16, as llama.cpp's CPU attention does.
  alignas(32) float qbuf[kMaxHeadsPerPass][kMaxHeadDim];
  for (int i = 0; i < heads; ++i) {
    const float* qsrc = q + static_cast<int64_t>(head_begin + i) * s.head_dim;
    for (int d = 0; d < s.head_dim; d += 8) {
      const __m128i half = _mm256_cvtps_ph(_mm256_loadu_ps(qsrc + d), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_store_ps(qbuf[i] + d, _mm256_cvtph_ps(half));
    }
  }
  // K and V are widened to f32 once per slice of kSlice positions and KV
  // head, then read by every head of the call that shares that KV head
  // (GQA). The widening is exact, so the scores and sums are the same as
  // from the f16 rows directly.
  const int kv_first = head_begin / group, kv_last = (head_end - 1) / group;
  alignas(32) float wide[kSlice * kMaxHeadDim];
  auto widen = [&](const uint16_t* src, int kv, int64_t count) {
    for (int64_t j = 0; j < count; ++j) {
      const uint16_t* row = src + j * row_stride + static_cast<int64_t>(kv) * s.head_dim;
      for (int d = 0; d < s.head_dim; d += 8) _mm256_store_ps(wide + j * s.head_dim + d, load_f16x8(row + d));
    }
  };
  // At long context K and V come from DRAM: fetch the next run (a KV block,
  // contiguous) while this one is computed.
  auto prefetch_run = [&](size_t r, bool keys) {
    if (r >= runs.size()) return;
    const auto* p = reinterpret_cast<const char*>(keys ? runs[r].k : runs[r].v);
    const int64_t bytes = runs[r].count * row_stride * static_cast<int64_t>(sizeof(uint16_t));
    for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T0);
  };
  // Scores: head i's go to scores[i * n_kv ...].
  int64_t first = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    const KvRun& run = runs[r];
    prefetch_run(r + 1, true);
    for (int64_t j0 = 0; j0 < run.count; j0 += kSlice) {
      const int64_t count = std::min<int64_t>(kSlice, run.count - j0);
      for (int kv = kv_first; kv <= kv_last; ++kv) {
        widen(run.k + j0 * row_stride, kv, count);
        for (int i = std::max(head_begin, kv * group) - head_begin; i < std::min(head_end, (kv + 1) * group) - head_begin;
             ++i) {
          for (int64_t j = 0; j < count; j += 8) {
            score_group(qbuf[i], wide + j * s.head_dim, s.head_dim, static_cast<int>(std::min<int64_t>(8, count - j)),
                        s.head_dim, s.scale, scores + i * n_kv + first + j0 + j);
          }
        }
      }
    }
    first += run.count;
  }
  float inv_sum[kMaxHeadsPerPass];
  for (int i = 0; i < heads; ++i) {
    float* oh = out + static_cast<int64_t>(head_begin + i) * s.head_dim;
    std::fill(oh, oh + s.head_dim, 0.0f);
    inv_sum[i] = n_kv == 0 ? 0.0f : 1.0f / softmax_numerators(scores + i * n_kv, n_kv);
  }
  if (n_kv == 0) return;
  // Values: each output float's sum runs over positions in order, 64 floats
  // (eight accumulators) at a time.
  first = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    const KvRun& run = runs[r];
    prefetch_run(r + 1, false);
    for (int64_t j0 = 0; j0 < run.count; j0 += kSlice) {
      const int64_t count = std::min<int64_t>(kSlice, run.count - j0);
      for (int kv = kv_first; kv <= kv_last; ++kv) {
        widen(run.v + j0 * row_stride, kv, count);
        for (int i = std::max(head_begin, kv * group) - head_begin; i < std::min(head_end, (kv + 1) * group) - head_begin;
             ++i) {
          for (int d = 0; d < s.head_dim; d += 64) {
            accumulate_values(scores + i * n_kv + first + j0, wide + d, s.head_dim, count, std::min(64, s.head_dim - d),
                              out + static_cast<int64_t>(head_begin + i) * s.head_dim + d);
          }
        }
      }
    }
    first += run.count;
  }
  for (int i = 0; i < heads; ++i) {
    float* oh = out + static_cast<int64_t>(head_begin + i) * s.head_dim;
    const __m256 scale = _mm256_set1_ps(inv_sum[i]);
    for (int d = 0; d < s.head_dim; d += 8) _mm256_storeu_ps(oh + d, _mm256_mul_ps(_mm256_loadu_ps(oh + d), scale));
  }
}

}  // namespace

void attention_row_paged(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                         float* scores, float* out, int head_begin, int head_end) {
  for (int h = head_begin; h < head_end; h += kMaxHeadsPerPass) {
    attend_heads(s, q, runs, row_stride, scores, out, h, std::min(head_end, h + kMaxHeadsPerPass));
  }
}

}  // namespace omnibus::avx2
