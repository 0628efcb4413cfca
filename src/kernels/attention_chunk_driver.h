// The driver of one chunk of one query row (attention.h, attention_chunk),
// ISA-neutral: which KV head and run is computed when, and what is
// prefetched meanwhile. `Kernels` supplies the inner loops (scores, softmax
// numerators, value sums) and every ISA helper the driver calls (Q's
// rounding to f16, prefetches, the 16-bit element formats), so this header
// includes no ISA header; the AVX2 and AVX-512 paths instantiate it
// (Avx2Kernels in attention_avx2_kernels.h, Avx512Kernels), a test with
// plain flags a scalar one (attention_driver_test.cpp). Every SIMD
// implementation gives the same bits per float, so the path a CPU takes
// never changes a result. Internal linkage, like the headers it builds on:
// each file has its own copy for its own instructions.
//
// What a Kernels struct has: kHeadsPerBatch (heads per score and value
// call in the paged layout, at most kMaxHeadsPerBatch), kHeadsPerKernel
// (per score call in the other layouts; the pair driver's slots are twice
// it), kFetchesAhead (its loops step a LineCursor); with_16bit_elements,
// prefetch_rows, round_q_to_f16; score_runs, score_runs_q8, score_runs_q4
// (all of a chunk's runs of one KV head, the paged layout), score_heads_q8,
// score_heads_transposed, score_heads4 (one run, other layouts);
// softmax_numerators; value_width and accumulate_values. Avx2Kernels
// documents each.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>

#include "kernels/attention.h"
#include "kernels/attention_driver_common.h"
#include "kernels/attention_q4.h"
#include "kernels/line_cursor.h"

namespace omnibus::attention_detail {
namespace {

template <class Kernels>
void attend_heads(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                  float* scores, const AttentionPartial& out, int head_begin, int head_end, const ChunkAhead& ahead) {
  const int group = s.n_head / s.n_head_kv;
  const int heads = head_end - head_begin;
  // Heads per score call in the layouts other than the paged store's (the
  // calls below take 1..3).
  constexpr int kPerCall = Kernels::kHeadsPerKernel;
  static_assert(kPerCall >= 1 && kPerCall <= 3);
  int64_t n_kv = 0;
  for (const KvRun& run : runs) n_kv += run.count;
  alignas(32) float qbuf[kMaxHeadsPerPass][kMaxHeadDim];
  Kernels::round_q_to_f16(q, head_begin, heads, s.head_dim, qbuf);
  // The heads of the call that share a KV head (GQA) go through the kernels
  // together, up to Kernels::kHeadsPerBatch at a time (the scores of other
  // layouts than the store's: Kernels::kHeadsPerKernel),
  // so each K and V vector is widened from f16 once for all of them.
  const int kv_first = head_begin / group, kv_last = (head_end - 1) / group;
  // At long context K and V come from DRAM: fetch the next run (a KV block)
  // while this one is computed.
  const bool q8 = s.kv_type == KvCacheType::kQ8_0;
  // q4_0: packed bytes, two elements a byte (AttentionShape); always
  // transposed K in the paged layout (the spread path below).
  const bool q4 = s.kv_type == KvCacheType::kQ4_0;
  const int64_t element_bytes = q8 ? 1 : 2;
  auto bytes_of = [&](int64_t elements) { return q4 ? elements / 2 : elements * element_bytes; };
  auto prefetch = [&](const void* from, int64_t elements) {
    Kernels::prefetch_rows(from, (bytes_of(elements) + 63) / 64, 64);  // every line of the span
  };
  // Where KV head kv's K (codes, for q8_0 and q4_0) and V rows of a run start.
  auto key_bytes = [&](const KvRun& run, int kv) {
    return q8 || q4 ? reinterpret_cast<const char*>(run.k_q) + bytes_of(kv * s.kv_head_stride)
                    : reinterpret_cast<const char*>(run.k + kv * s.kv_head_stride);
  };
  auto value_bytes = [&](const KvRun& run, int kv) {
    return q8 || q4 ? reinterpret_cast<const char*>(run.v_q) + bytes_of(kv * s.kv_head_stride)
                    : reinterpret_cast<const char*>(run.v + kv * s.kv_head_stride);
  };
  // The bytes from there that one KV head's transposed K (head_dim rows of
  // k_dim_stride, the last cut at the run's end; q4_0: head_dim / 8 octet
  // rows of four bytes a position) and V rows of a run span.
  auto key_span = [&](const KvRun& run) {
    return q4 ? (s.head_dim / 8 - 1) * 4 * s.k_dim_stride + 4 * run.count
              : ((s.head_dim - 1) * s.k_dim_stride + run.count) * element_bytes;
  };
  auto value_span = [&](const KvRun& run) { return bytes_of(run.count * row_stride); };
  // q4_0 scores take Q as q8_0 codes, quantized once per head and call.
  Q4Query q4buf[kMaxHeadsPerPass];
  if (q4) quantize_q4_queries(q, head_begin, heads, s.head_dim, q4buf);
  // K of run r (the value kernels prefetch V themselves).
  auto prefetch_keys = [&](size_t r) {
    if (r >= runs.size()) return;
    // One head's positions (or whole rows); transposed K: one head's block.
    const int64_t span = s.k_dim_stride != 0 ? s.head_dim * s.k_dim_stride : runs[r].count * row_stride;
    if (s.kv_head_stride == 0) return prefetch(key_bytes(runs[r], 0), span);
    for (int kv = kv_first; kv <= kv_last; ++kv) prefetch(key_bytes(runs[r], kv), span);
  };
  // V of run r, during the scores: the value pass after the softmax then
  // finds the chunk's V (96 KB at SmolLM2's shape) in cache instead of
  // waiting on DRAM one block ahead.
  auto prefetch_values = [&](size_t r) {
    const int64_t span = runs[r].count * row_stride;
    if (s.kv_head_stride == 0) return prefetch(value_bytes(runs[r], 0), span);
    for (int kv = kv_first; kv <= kv_last; ++kv) prefetch(value_bytes(runs[r], kv), span);
  };
  // Transposed K in the paged layout (any cache type): the score kernels
  // spread their prefetches over the d loop (spread_prefetch) instead of
  // the bursts above, and a chunk runs KV head by KV head (below).
  const bool spread = s.k_dim_stride != 0 && s.kv_head_stride != 0;
  // Run k_run's K of the head (its positions' rows of the block: head_dim
  // rows of k_dim_stride, the last one cut at the run's end; none past the
  // last run) and run v_run's V rows of the head, over the head_dim steps of
  // the d loop (the kernels ask for K one group of runs ahead of the runs
  // they score, and for those runs' V) (one line of
  // each per step at SmolLM2's shape and blocks of 16: 32 lines each, 16
  // for q8_0 codes; q8_0's scales, 64 bytes a block, are left to the
  // hardware prefetcher).
  auto spread_prefetch = [&](size_t k_run, size_t v_run, int kv) {
    const char* next_k = nullptr;
    int64_t k_bytes = 0;
    if (k_run < runs.size()) {
      next_k = key_bytes(runs[k_run], kv);
      k_bytes = key_span(runs[k_run]);
    }
    SpreadPrefetch pf{next_k, value_bytes(runs[v_run], kv), static_cast<int>((k_bytes + 63) / 64),
                      static_cast<int>((value_span(runs[v_run]) + 63) / 64)};
    // Lines past the loop's head_dim steps (blocks of more than 32
    // positions at head_dim 64) go in a burst now.
    if (pf.a_lines > s.head_dim) Kernels::prefetch_rows(pf.a + 64 * s.head_dim, pf.a_lines - s.head_dim, 64);
    if (pf.b_lines > s.head_dim) Kernels::prefetch_rows(pf.b + 64 * s.head_dim, pf.b_lines - s.head_dim, 64);
    return pf;
  };
  // The call's heads that share KV head kv, counted from head_begin.
  auto heads_of_kv = [&](int kv) {
    return std::pair{std::max(head_begin, kv * group) - head_begin, std::min(head_end, (kv + 1) * group) - head_begin};
  };
  // For each run r (positions first .. first + count) and each batch of at
  // most Kernels::kHeadsPerKernel heads sharing a KV head (the AVX2 score
  // kernels of these layouts take three): fn(run, first, i0, n, kv),
  // i0 counted from head_begin; the bursts of prefetches.
  auto for_runs_and_head_batches = [&](auto&& fn) {
    int64_t first = 0;
    for (size_t r = 0; r < runs.size(); ++r) {
      prefetch_keys(r + 1);
      prefetch_values(r);
      for (int kv = kv_first; kv <= kv_last; ++kv) {
        const auto [i_begin, i_end] = heads_of_kv(kv);
        for (int i0 = i_begin; i0 < i_end; i0 += kPerCall) fn(runs[r], first, i0, std::min(kPerCall, i_end - i0), kv);
      }
      first += runs[r].count;
    }
  };
  // Head i's scores go to scores[i * n_kv ...]. The softmax of heads
  // [i_begin, i_end), and the values of the batches of heads sharing KV head
  // kv: for each value_width floats of their outputs, one kernel call over all the
  // chunk's runs (each output float's sum in position order), fetching KV
  // head kv_next's K meanwhile when kv_next >= 0.
  auto softmax_heads = [&](int i_begin, int i_end) {
    for (int i = i_begin; i < i_end; ++i) {
      float* oh = out.acc + static_cast<int64_t>(i) * s.head_dim;
      std::fill(oh, oh + s.head_dim, 0.0f);
      out.max[i] = -INFINITY;  // an empty chunk (no caller sends one): max -inf, sum 0
      out.sum[i] = n_kv == 0 ? 0.0f : Kernels::softmax_numerators(scores + i * n_kv, n_kv, &out.max[i]);
    }
  };
  static_assert(Kernels::kHeadsPerBatch <= kMaxHeadsPerBatch);
  constexpr int kBatch = Kernels::kHeadsPerBatch;
  // A quantized cache's value weights: up to two groups' per head (the
  // AVX-512 kernels' 64-float passes).
  alignas(32) float weight_scratch[2 * kBatch * kAttentionChunk];
  // The AVX-512 kernels with a 16-bit cache in the paged layout fetch the
  // next unit's K and V into L2 over each unit's loops (LineCursor): KV
  // head kv + 1's, or for the last KV head the caller's next chunk's
  // (`ahead`). They then leave out the driver's own fetch of the next KV
  // head's K during the values.
  const bool fetch_ahead = Kernels::kFetchesAhead && spread && !q8 && !q4;
  LineCursor cursor;
  // A unit's steps: its score steps (runs x head_dim) and its value steps
  // (positions x value passes), the latter weighted.
  const int64_t value_passes = (s.head_dim + Kernels::value_width(s) - 1) / Kernels::value_width(s);
  const int64_t unit_weight = static_cast<int64_t>(runs.size()) * s.head_dim + kValueStepWeight * n_kv * value_passes;
  auto start_unit = [&](int kv) {
    cursor.clear();
    const auto add_unit = [&](std::span<const KvRun> of, int unit_kv) {
      for (const KvRun& run : of) cursor.add(key_bytes(run, unit_kv), key_span(run));
      for (const KvRun& run : of) cursor.add(value_bytes(run, unit_kv), value_span(run));
    };
    if (kv < kv_last) add_unit(runs, kv + 1);
    else if (ahead.kv >= 0) add_unit(ahead.runs, ahead.kv);
    cursor.pace(unit_weight);
  };
  auto values_of_kv_head = [&](int kv, int kv_next) {
    const auto [i_begin, i_end] = heads_of_kv(kv);
    for (int i0 = i_begin; i0 < i_end; i0 += kBatch) {
      const int n = std::min(kBatch, i_end - i0);
      const float* ps[kBatch];
      float* outs[kBatch];
      const int width = Kernels::value_width(s);
      for (int d = 0; d < s.head_dim; d += width) {
        for (int g = 0; g < n; ++g) {
          ps[g] = scores + (i0 + g) * n_kv;
          outs[g] = out.acc + static_cast<int64_t>(i0 + g) * s.head_dim + d;
        }
        // The first batch fetches KV head kv_next's K: each pass over the
        // runs (a `width`-float slice of the outputs) takes its share of a
        // block's head_dim * B * element_bytes / 64 lines, the head_dim /
        // width passes taking them all (the value kernels issue them over
        // the block's positions).
        NextKeys nk;
        if (fetch_ahead) {
          if (i0 == i_begin && cursor.lines() > 0) nk.ahead = &cursor;
        } else if (kv_next >= 0 && i0 == i_begin) {
          const int64_t lines = (bytes_of(s.head_dim * s.k_dim_stride) + 63) / 64;
          nk = {runs, bytes_of(kv_next * s.kv_head_stride), q8 || q4, d / width * (lines / value_passes),
                lines / value_passes};
        }
        Kernels::accumulate_values(s, n, ps, runs, kv, d, row_stride, weight_scratch, outs, nk);
      }
    }
  };
  if (spread) {
    // KV head by KV head: its scores, over all the runs in one kernel call
    // per batch of query heads, fetching its V; its heads' softmax; its
    // values, fetching the next KV head's K. Each pass then pulls one
    // stream from DRAM while it computes (fetching the next run's K and this
    // run's V during the scores, and nothing during the values, asked for
    // twice the bytes per second of either pass and left the values pass's
    // time unused: a two-thread decode row at 2,048 positions from DRAM,
    // `*DecodeRowColdCacheTwoThreads*`, went 3-9% faster, one thread 5-8%;
    // docs/profiling.md). Each head's arithmetic is unchanged.
    prefetch_keys(0);  // run 0's K: nothing computes before it
    for (int kv = kv_first; kv <= kv_last; ++kv) {
      if (fetch_ahead) start_unit(kv);
      const auto [i_begin, i_end] = heads_of_kv(kv);
      for (int i0 = i_begin; i0 < i_end; i0 += kBatch) {
        const int n = std::min(kBatch, i_end - i0);
        const float* qs[kBatch];
        float* outs[kBatch];
        for (int g = 0; g < n; ++g) {
          qs[g] = qbuf[i0 + g];
          outs[g] = scores + (i0 + g) * n_kv;
        }
        // The first batch of the KV head's query heads prefetches for all:
        // this run's V and, for the first KV head only (the others' K came
        // during the previous values pass), the next run's K.
        auto prefetch_of = [&, first_batch = i0 == i_begin](size_t k_run, size_t v_run) {
          if (!first_batch) return SpreadPrefetch{};
          SpreadPrefetch pf = spread_prefetch(k_run, v_run, kv);
          if (kv != kv_first) pf.a = nullptr, pf.a_lines = 0;
          if (cursor.lines() > 0) pf.ahead = &cursor;
          return pf;
        };
        const int64_t head_offset = kv * s.kv_head_step();
        if (q4) {
          const Q4Query* q4s[kBatch];
          for (int g = 0; g < n; ++g) q4s[g] = &q4buf[i0 + g];
          const int64_t scale_offset = kv * s.scale_head_stride, octets = 4 * s.k_dim_stride;
          const int64_t head_bytes = bytes_of(head_offset);
          switch (n) {
            case 4: if constexpr (kBatch >= 4) { Kernels::template score_runs_q4<4>(q4s, runs, head_bytes, scale_offset, octets, s.k_dim_stride, s.head_dim, s.scale, outs, prefetch_of); break; }
              [[fallthrough]];
            case 3: Kernels::template score_runs_q4<3>(q4s, runs, head_bytes, scale_offset, octets, s.k_dim_stride, s.head_dim, s.scale, outs, prefetch_of); break;
            case 2: Kernels::template score_runs_q4<2>(q4s, runs, head_bytes, scale_offset, octets, s.k_dim_stride, s.head_dim, s.scale, outs, prefetch_of); break;
            default: Kernels::template score_runs_q4<1>(q4s, runs, head_bytes, scale_offset, octets, s.k_dim_stride, s.head_dim, s.scale, outs, prefetch_of); break;
          }
          continue;
        }
        if (q8) {
          const int64_t scale_offset = kv * s.scale_head_stride;
          switch (n) {
            case 4: if constexpr (kBatch >= 4) { Kernels::template score_runs_q8<4>(qs, runs, head_offset, scale_offset, s.k_dim_stride, s.head_dim, s.scale, outs, prefetch_of); break; }
              [[fallthrough]];
            case 3: Kernels::template score_runs_q8<3>(qs, runs, head_offset, scale_offset, s.k_dim_stride, s.head_dim, s.scale, outs, prefetch_of); break;
            case 2: Kernels::template score_runs_q8<2>(qs, runs, head_offset, scale_offset, s.k_dim_stride, s.head_dim, s.scale, outs, prefetch_of); break;
            default: Kernels::template score_runs_q8<1>(qs, runs, head_offset, scale_offset, s.k_dim_stride, s.head_dim, s.scale, outs, prefetch_of); break;
          }
          continue;
        }
        Kernels::with_16bit_elements(s.kv_type, [&](auto fmt) {
          using Fmt = decltype(fmt);
          switch (n) {
            case 4:
              if constexpr (kBatch >= 4) {
                Kernels::template score_runs<Fmt, 4>(qs, runs, head_offset, s.k_dim_stride, s.head_dim, s.scale, outs,
                                                     prefetch_of);
                break;
              }
              [[fallthrough]];
            case 3:
              Kernels::template score_runs<Fmt, 3>(qs, runs, head_offset, s.k_dim_stride, s.head_dim, s.scale, outs,
                                                   prefetch_of);
              break;
            case 2:
              Kernels::template score_runs<Fmt, 2>(qs, runs, head_offset, s.k_dim_stride, s.head_dim, s.scale, outs,
                                                   prefetch_of);
              break;
            default:
              Kernels::template score_runs<Fmt, 1>(qs, runs, head_offset, s.k_dim_stride, s.head_dim, s.scale, outs,
                                                   prefetch_of);
              break;
          }
        });
      }
      softmax_heads(i_begin, i_end);
      if (n_kv > 0) values_of_kv_head(kv, kv < kv_last ? kv + 1 : -1);
    }
    return;
  }
  // Other layouts: every KV head's scores run by run, then the softmax,
  // then the values.
  for_runs_and_head_batches([&](const KvRun& run, int64_t first, int i0, int n, int kv) {
    const float* qs[kPerCall];
    float* outs[kPerCall];
    if (q8) {
      for (int g = 0; g < n; ++g) {
        qs[g] = qbuf[i0 + g];
        outs[g] = scores + (i0 + g) * n_kv + first;
      }
      const int8_t* k = run.k_q + kv * s.kv_head_step();
      const uint16_t* ks = run.k_scale + kv * s.scale_head_stride;
      switch (n) {
        case 3:
          Kernels::template score_heads_q8<3>(qs, k, ks, s.k_dim_stride, run.count, s.head_dim, s.scale, outs);
          break;
        case 2:
          Kernels::template score_heads_q8<2>(qs, k, ks, s.k_dim_stride, run.count, s.head_dim, s.scale, outs);
          break;
        default:
          Kernels::template score_heads_q8<1>(qs, k, ks, s.k_dim_stride, run.count, s.head_dim, s.scale, outs);
          break;
      }
      return;
    }
    if (s.k_dim_stride != 0) {
      for (int g = 0; g < n; ++g) {
        qs[g] = qbuf[i0 + g];
        outs[g] = scores + (i0 + g) * n_kv + first;
      }
      const uint16_t* k = run.k + kv * s.kv_head_step();
      Kernels::with_16bit_elements(s.kv_type, [&](auto fmt) {
        using Fmt = decltype(fmt);
        switch (n) {
          case 3:
            Kernels::template score_heads_transposed<Fmt, 3>(qs, k, s.k_dim_stride, run.count, s.head_dim, s.scale,
                                                             outs);
            break;
          case 2:
            Kernels::template score_heads_transposed<Fmt, 2>(qs, k, s.k_dim_stride, run.count, s.head_dim, s.scale,
                                                             outs);
            break;
          default:
            Kernels::template score_heads_transposed<Fmt, 1>(qs, k, s.k_dim_stride, run.count, s.head_dim, s.scale,
                                                             outs);
            break;
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
      Kernels::with_16bit_elements(s.kv_type, [&](auto fmt) {
        using Fmt = decltype(fmt);
        switch (n) {
          case 3: Kernels::template score_heads4<Fmt, 3>(qs, k, row_stride, count, s.head_dim, s.scale, outs); break;
          case 2: Kernels::template score_heads4<Fmt, 2>(qs, k, row_stride, count, s.head_dim, s.scale, outs); break;
          default: Kernels::template score_heads4<Fmt, 1>(qs, k, row_stride, count, s.head_dim, s.scale, outs); break;
        }
      });
    }
  });
  softmax_heads(0, heads);
  if (n_kv == 0) return;
  for (int kv = kv_first; kv <= kv_last; ++kv) values_of_kv_head(kv, -1);
}

// attention_chunk (attention.h) with Kernels' inner loops: at most
// kMaxHeadsPerPass heads per pass.
template <class Kernels>
void attention_chunk_with(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                          float* scores, const AttentionPartial& out, int head_begin, int head_end,
                          const ChunkAhead& ahead) {
  const int group = s.n_head / s.n_head_kv;
  for (int h = head_begin; h < head_end; h += kMaxHeadsPerPass) {
    const int i = h - head_begin;
    const AttentionPartial part{out.acc + static_cast<int64_t>(i) * s.head_dim, out.max + i, out.sum + i};
    const int h_end = std::min(head_end, h + kMaxHeadsPerPass);
    // Another pass follows: its first KV head is this pass's next unit.
    const ChunkAhead next = h_end < head_end ? ChunkAhead{runs, h_end / group} : ahead;
    attend_heads<Kernels>(s, q, runs, row_stride, scores, part, h, h_end, next);
  }
}

}  // namespace
}  // namespace omnibus::attention_detail
