// The driver of one chunk of two consecutive prompt rows (attention.h,
// attention_row_pair_paged), ISA-neutral like attention_chunk_driver.h: the
// scores of both rows' (row, head) slots, each row's softmax, the value
// sums of both rows over the positions they share and row 1's last
// position alone. `Kernels` supplies the inner loops (pair_scores,
// softmax_numerators, accumulate_slots over slot_width output floats,
// accumulate_values over value_width) and the ISA helpers (round_q_to_f16);
// every implementation gives the single-row kernels' bits per float, so
// each row's output is bit-identical to its own single-row result on any
// path. Internal linkage, like the headers it builds on.
#pragma once

#include <algorithm>
#include <span>

#include "kernels/attention.h"
#include "kernels/attention_driver_common.h"
#include "kernels/attention_q4.h"

namespace omnibus::attention_detail {
namespace {

template <class Kernels>
void attend_heads_pair(const AttentionShape& s, const float* q0, const float* q1, std::span<const KvRun> runs,
                       int64_t count0, int64_t row_stride, float* scores, const AttentionPartial& out0,
                       const AttentionPartial& out1, int head_begin, int head_end) {
  const int group = s.n_head / s.n_head_kv;
  const int heads = head_end - head_begin;
  int64_t n_kv = 0;
  for (const KvRun& run : runs) n_kv += run.count;
  // Slots are (row, head): heads i0 .. i0 + n of row 0, then the same of
  // row 1; 2n of them (n <= Kernels::kHeadsPerKernel).
  constexpr int kPerCall = Kernels::kHeadsPerKernel;
  constexpr int kSlots = 2 * kPerCall;
  alignas(32) float qbuf[2][kMaxHeadsPerPass][kMaxHeadDim];
  Kernels::round_q_to_f16(q0, head_begin, heads, s.head_dim, qbuf[0]);
  Kernels::round_q_to_f16(q1, head_begin, heads, s.head_dim, qbuf[1]);
  // q4_0 scores take each row's Q as q8_0 codes (attention_q4.h).
  Q4Query q4buf[2][kMaxHeadsPerPass];
  if (s.kv_type == KvCacheType::kQ4_0) {
    quantize_q4_queries(q0, head_begin, heads, s.head_dim, q4buf[0]);
    quantize_q4_queries(q1, head_begin, heads, s.head_dim, q4buf[1]);
  }
  const int kv_first = head_begin / group, kv_last = (head_end - 1) / group;
  // Row r's scores of head i at scores + (r * heads + i) * n_kv (row 0 uses
  // the first count0).
  auto score_row = [&](int r, int i) { return scores + (static_cast<int64_t>(r) * heads + i) * n_kv; };
  auto for_head_batches = [&](auto&& fn) {
    for (int kv = kv_first; kv <= kv_last; ++kv) {
      const int i_end = std::min(head_end, (kv + 1) * group) - head_begin;
      for (int i0 = std::max(head_begin, kv * group) - head_begin; i0 < i_end; i0 += kPerCall)
        fn(kv, i0, std::min(kPerCall, i_end - i0));
    }
  };
  Kernels::pair_scores(s, runs, kv_first, kv_last, for_head_batches, qbuf, q4buf, score_row);
  const AttentionPartial* outs_by_row[2] = {&out0, &out1};
  for (int row = 0; row < 2; ++row) {
    const AttentionPartial& out = *outs_by_row[row];
    const int64_t count = row == 0 ? count0 : n_kv;
    for (int i = 0; i < heads; ++i) {
      float* oh = out.acc + static_cast<int64_t>(i) * s.head_dim;
      std::fill(oh, oh + s.head_dim, 0.0f);
      out.sum[i] = Kernels::softmax_numerators(score_row(row, i), count, &out.max[i]);
    }
  }
  // Values: both rows over the first count0 positions, then row 1 alone
  // over the rest (at most one position), each output's chain in order.
  KvRunScratch<kAttentionChunk> shared_scratch, tail_scratch;
  KvRun* shared = shared_scratch.data();
  KvRun* tail = tail_scratch.data();
  // q8_0, q4_0: each slot's weights times the scales; the single-row
  // tail's AVX-512 value pass takes two groups' of up to kPerCall heads.
  alignas(32) float weights[kSlots * kAttentionChunk];
  const int64_t k_step = s.k_run_step(row_stride), v_step = s.v_run_step(row_stride);
  const size_t n_shared = slice_runs(runs, 0, count0, k_step, v_step, shared);
  const size_t n_tail = slice_runs(runs, count0, n_kv - count0, k_step, v_step, tail);
  for_head_batches([&](int kv, int i0, int n) {
    const float* ps[kSlots];
    float* outs[kSlots];
    const int slot_width = Kernels::slot_width(s);
    for (int d = 0; d < s.head_dim; d += slot_width) {
      for (int g = 0; g < 2 * n; ++g) {
        ps[g] = score_row(g / n, i0 + g % n);
        outs[g] = outs_by_row[g / n]->acc + static_cast<int64_t>(i0 + g % n) * s.head_dim + d;
      }
      Kernels::accumulate_slots(s, 2 * n, ps, std::span<const KvRun>(shared, n_shared), kv, d, row_stride, weights,
                                outs);
    }
    if (n_tail == 0) return;
    const int value_width = Kernels::value_width(s);
    for (int d = 0; d < s.head_dim; d += value_width) {
      const float* ps1[kPerCall];
      float* outs1[kPerCall];
      for (int g = 0; g < n; ++g) {
        ps1[g] = score_row(1, i0 + g) + count0;
        outs1[g] = out1.acc + static_cast<int64_t>(i0 + g) * s.head_dim + d;
      }
      Kernels::accumulate_values(s, n, ps1, std::span<const KvRun>(tail, n_tail), kv, d, row_stride, weights, outs1,
                                 NextKeys{});
    }
  });
}

// attention_chunk_pair (attention.h) with Kernels' inner loops.
template <class Kernels>
void attention_chunk_pair_with(const AttentionShape& s, const float* q0, const float* q1, std::span<const KvRun> runs,
                               int64_t count0, int64_t row_stride, float* scores, const AttentionPartial& out0,
                               const AttentionPartial& out1, int head_begin, int head_end) {
  attend_heads_pair<Kernels>(s, q0, q1, runs, count0, row_stride, scores, out0, out1, head_begin, head_end);
}

}  // namespace
}  // namespace omnibus::attention_detail
