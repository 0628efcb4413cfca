// AVX2+FMA attention_chunk_pair: one chunk of two consecutive prompt rows
// of one sequence (attention.h, attention_row_pair_paged). Each widened K
// and V vector serves both rows' heads: (row, head) slots, six at most;
// each row's arithmetic is the single-row kernels' (attention_avx2.cpp), so
// its output is bit-identical to its own single-row result.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/attention_avx2_kernels.h"
#include "kernels/attention_pair_driver.h"

namespace omnibus::avx2::attention_detail {
namespace {

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

// The AVX2 pair loops: scores run by run (the next run's K fetched in a
// burst first), each run for every batch of heads; value sums sixteen
// floats at a time (six slots x two vectors of accumulators fill the
// registers).
struct Avx2PairKernels : Avx2Kernels {
  template <class ForHeadBatches, class ScoreRow>
  static void pair_scores(const AttentionShape& s, std::span<const KvRun> runs, int kv_first, int kv_last,
                          ForHeadBatches&& for_head_batches, const float (*qbuf)[kMaxHeadsPerPass][kMaxHeadDim],
                          const Q4Query (*)[kMaxHeadsPerPass], ScoreRow&& score_row) {
    const bool q8 = s.kv_type == KvCacheType::kQ8_0;  // never q4_0 (attention_pairs_supported)
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
  }
  static int slot_width(const AttentionShape&) { return 16; }
  static void accumulate_slots(const AttentionShape& s, int slots, const float* const* ps, std::span<const KvRun> runs,
                               int kv, int d, int64_t row_stride, float* weights, float* const* outs) {
    const int64_t offset = kv * s.kv_head_step() + d;
    if (s.kv_type == KvCacheType::kQ8_0) {
      const RunWeights w = quantized_weights(s, ps, weights, kv, d);
      return attention_detail::accumulate_slots<Q8Elements>(slots, w, runs, offset, row_stride, outs);
    }
    with_16bit_elements(s.kv_type, [&](auto fmt) {
      attention_detail::accumulate_slots<decltype(fmt)>(slots, RunWeights{ps}, runs, offset, row_stride, outs);
    });
  }
};

}  // namespace
}  // namespace omnibus::avx2::attention_detail

namespace omnibus::avx2 {

void attention_chunk_pair(const AttentionShape& s, const float* q0, const float* q1, std::span<const KvRun> runs,
                          int64_t count0, int64_t row_stride, float* scores, const AttentionPartial& out0,
                          const AttentionPartial& out1, int head_begin, int head_end) {
  omnibus::attention_detail::attention_chunk_pair_with<attention_detail::Avx2PairKernels>(
      s, q0, q1, runs, count0, row_stride, scores, out0, out1, head_begin, head_end);
}

}  // namespace omnibus::avx2
