// AVX-512F attention_chunk_pair: the pair driver (attention_pair_driver.h)
// with the sixteen-lane loops of attention_avx512_kernels.h. Scores go KV
// head by KV head over all the chunk's runs, both rows' slots of a GQA
// group together (up to six slots x four vectors of sixteen positions per
// step of d: each widened K vector feeds six FMAs); value sums 32 floats of
// up to six slots at a time. Each row's output is bit-identical to the AVX2
// pair's and to its own single-row result (AttentionAvx512Test). Only
// called where avx512_attention_usable (attention.cpp).
#include "kernels/attention_avx512_kernels.h"
#include "kernels/attention_pair_driver.h"

namespace omnibus::avx512 {
namespace {

struct Avx512PairKernels : Avx512Kernels {
  template <class ForHeadBatches, class ScoreRow>
  static void pair_scores(const AttentionShape& s, std::span<const KvRun> runs, int, int,
                          ForHeadBatches&& for_head_batches, const float (*qbuf)[kMaxHeadsPerPass][kMaxHeadDim],
                          const Q4Query (*q4buf)[kMaxHeadsPerPass], ScoreRow&& score_row) {
    auto no_prefetch = [](size_t, size_t) { return SpreadPrefetch{}; };
    for_head_batches([&](int kv, int i0, int n) {
      const float* qs[kPairSlots];
      float* outs[kPairSlots];
      for (int g = 0; g < 2 * n; ++g) {
        qs[g] = qbuf[g / n][i0 + g % n];
        outs[g] = score_row(g / n, i0 + g % n);
      }
      const int64_t head_offset = kv * s.kv_head_step();
      const int64_t ds = s.k_dim_stride;
      if (s.kv_type == KvCacheType::kQ4_0) {
        const Q4Query* q4s[kPairSlots];
        for (int g = 0; g < 2 * n; ++g) q4s[g] = &q4buf[g / n][i0 + g % n];
        const int64_t scale_offset = kv * s.scale_head_stride, head_bytes = head_offset / 2;
        switch (n) {
          case 3: return score_runs_q4<6>(q4s, runs, head_bytes, scale_offset, 4 * ds, ds, s.head_dim, s.scale, outs, no_prefetch);
          case 2: return score_runs_q4<4>(q4s, runs, head_bytes, scale_offset, 4 * ds, ds, s.head_dim, s.scale, outs, no_prefetch);
          default: return score_runs_q4<2>(q4s, runs, head_bytes, scale_offset, 4 * ds, ds, s.head_dim, s.scale, outs, no_prefetch);
        }
      }
      if (s.kv_type == KvCacheType::kQ8_0) {
        const int64_t scale_offset = kv * s.scale_head_stride;
        switch (n) {
          case 3: return score_runs_q8<6>(qs, runs, head_offset, scale_offset, ds, s.head_dim, s.scale, outs, no_prefetch);
          case 2: return score_runs_q8<4>(qs, runs, head_offset, scale_offset, ds, s.head_dim, s.scale, outs, no_prefetch);
          default: return score_runs_q8<2>(qs, runs, head_offset, scale_offset, ds, s.head_dim, s.scale, outs, no_prefetch);
        }
      }
      with_16bit_elements(s.kv_type, [&](auto fmt) {
        using Fmt = decltype(fmt);
        switch (n) {
          case 3: return score_runs<Fmt, 6>(qs, runs, head_offset, ds, s.head_dim, s.scale, outs, no_prefetch);
          case 2: return score_runs<Fmt, 4>(qs, runs, head_offset, ds, s.head_dim, s.scale, outs, no_prefetch);
          default: return score_runs<Fmt, 2>(qs, runs, head_offset, ds, s.head_dim, s.scale, outs, no_prefetch);
        }
      });
    });
  }

  // Six slots x two vectors of accumulators, six weights and a V vector fit
  // the 32 registers; four vectors (64 floats) would not.
  static int slot_width(const AttentionShape&) { return 32; }
  static void accumulate_slots(const AttentionShape& s, int slots, const float* const* ps, std::span<const KvRun> runs,
                               int kv, int d, int64_t row_stride, float* weights, float* const* outs) {
    const int64_t offset = kv * s.kv_head_step() + d;
    const int vecs = std::min(32, s.head_dim - d) / 16;  // a head_dim of an odd number of sixteens ends on one
    if (s.kv_type == KvCacheType::kQ8_0) {
      const RunWeights w = quantized_weights(s, ps, weights, kv, d);
      return values_by_heads<WideQ8>(slots, vecs, &w, runs, offset, row_stride, outs, NextKeys{});
    }
    if (s.kv_type == KvCacheType::kQ4_0) {
      // One 32-value group (head_dim is whole groups); offsets and strides
      // in bytes.
      const RunWeights w = quantized_weights(s, ps, weights, kv, d);
      return values_by_heads<WideQ4>(slots, 2, &w, runs, offset / 2, row_stride / 2, outs, NextKeys{});
    }
    const RunWeights w{ps};
    if (s.kv_type == KvCacheType::kBF16)
      return values_by_heads<WideBF16>(slots, vecs, &w, runs, offset, row_stride, outs, NextKeys{});
    values_by_heads<WideF16>(slots, vecs, &w, runs, offset, row_stride, outs, NextKeys{});
  }
};

}  // namespace

void attention_chunk_pair(const AttentionShape& s, const float* q0, const float* q1, std::span<const KvRun> runs,
                          int64_t count0, int64_t row_stride, float* scores, const AttentionPartial& out0,
                          const AttentionPartial& out1, int head_begin, int head_end) {
  omnibus::attention_detail::attention_chunk_pair_with<Avx512PairKernels>(s, q0, q1, runs, count0, row_stride, scores,
                                                                          out0, out1, head_begin, head_end);
}

}  // namespace omnibus::avx512
