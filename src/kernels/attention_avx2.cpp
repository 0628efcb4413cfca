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
// A bf16 cache goes through the f16 kernels with a cheaper widening
// (BF16Elements, attention_avx2_common.h). The building blocks are in
// attention_avx2_common.h and attention_avx2_kernels.h, the two-row
// version in attention_pair_avx2.cpp.
// Requires head_dim % 8 == 0 (q8_0: % 32); attention.cpp falls back to the
// reference otherwise.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/attention_avx2_kernels.h"

namespace omnibus::avx2 {
namespace {

using namespace attention_detail;

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

}  // namespace

void attention_chunk(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end) {
  for (int h = head_begin; h < head_end; h += kMaxHeadsPerPass) {
    const int i = h - head_begin;
    const AttentionPartial part{out.acc + static_cast<int64_t>(i) * s.head_dim, out.max + i, out.sum + i};
    attend_heads(s, q, runs, row_stride, scores, part, h, std::min(head_end, h + kMaxHeadsPerPass));
  }
}

}  // namespace omnibus::avx2
