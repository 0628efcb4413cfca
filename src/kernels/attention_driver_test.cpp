// The ISA-neutral attention drivers (attention_chunk_driver.h,
// attention_pair_driver.h) built with plain flags, as a port without the
// x86 kernels builds them: instantiated with ScalarKernels, inner loops in
// plain C++ with the reference's arithmetic per score and output float
// (one fused multiply-add per step where the SIMD kernels have one), the
// way a NEON Kernels would plug in. Each driver against the scalar
// reference (ref::attention_chunk) within f16 rounding of the softmax
// numerators, and the pair driver's rows against the single-row driver's
// bit for bit, on the store's layouts (every cache type), per-block
// transposed K (MQA, heads side by side), row-major rows, blocks cut
// anywhere and heads split across a GQA group.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "kernels/attention.h"
#include "kernels/attention_chunk_driver.h"
#include "kernels/attention_pair_driver.h"
#include "kernels/attention_q4.h"
#include "kernels/attention_test_util.h"
#include "tensor/quant.h"

namespace omnibus {
namespace {

using namespace attention_test_util;
using attention_detail::NextKeys;
using attention_detail::SpreadPrefetch;

// A 16-bit cache's element formats, as with_16bit_elements hands them over.
struct F16Format {
  static float load(uint16_t h) { return f16_to_f32(h); }
};
struct BF16Format {
  static float load(uint16_t h) { return bf16_to_f32(h); }
};

struct ScalarKernels {
  // Four heads per call in the paged layout (the AVX-512 batch, so the
  // driver's four-head cases run), three elsewhere and per pair row.
  static constexpr int kHeadsPerBatch = 4;
  static constexpr int kHeadsPerKernel = 3;
  static constexpr bool kFetchesAhead = false;

  template <class Fn>
  static void with_16bit_elements(KvCacheType type, Fn&& fn) {
    if (type == KvCacheType::kBF16) return fn(BF16Format{});
    fn(F16Format{});
  }
  static void prefetch_rows(const void*, int64_t, int64_t) {}
  static void round_q_to_f16(const float* q, int head_begin, int heads, int head_dim, float (*qbuf)[kMaxHeadDim]) {
    for (int i = 0; i < heads; ++i)
      for (int d = 0; d < head_dim; ++d)
        qbuf[i][d] = f16_to_f32(f32_to_f16(q[static_cast<int64_t>(head_begin + i) * head_dim + d]));
  }

  // One score from transposed 16-bit K (dimension d at k + d * dim_stride).
  template <class Fmt>
  static float dot_transposed(const float* q, const uint16_t* k, int64_t dim_stride, int head_dim,
                              const SpreadPrefetch& pf) {
    float dot = 0.0f;
    for (int d = 0; d < head_dim; ++d) {
      pf.at(d);
      dot = std::fma(q[d], Fmt::load(k[d * dim_stride]), dot);
    }
    return dot;
  }
  // From transposed q8_0 codes: each group's chain, then times its scale.
  static float dot_q8(const float* q, const int8_t* k, const uint16_t* k_scale, int64_t dim_stride, int head_dim,
                      const SpreadPrefetch& pf) {
    float dot = 0.0f;
    for (int g = 0; g < head_dim / kKvQ8Group; ++g) {
      float part = 0.0f;
      for (int d = g * kKvQ8Group; d < (g + 1) * kKvQ8Group; ++d) {
        pf.at(d);
        part = std::fma(q[d], static_cast<float>(k[d * dim_stride]), part);
      }
      dot = std::fma(part, f16_to_f32(k_scale[g * dim_stride]), dot);
    }
    return dot;
  }
  // From q4_0 K (octet o of the position at k + o * octet_stride).
  static float dot_q4(const Q4Query& q, const uint8_t* k, const uint16_t* k_scale, int64_t octet_stride,
                      int64_t scale_stride, int head_dim) {
    float dot = 0.0f;
    for (int g = 0; g < head_dim / kKvQ8Group; ++g) {
      int32_t isum = 0;
      for (int o = 4 * g; o < 4 * g + 4; ++o)
        for (int b = 0; b < 4; ++b) {
          const uint8_t byte = k[o * octet_stride + b];
          isum += (byte & 0x0F) * q.codes[8 * o + b] + (byte >> 4) * q.codes[8 * o + 4 + b];
        }
      dot = q4_group_step(isum, q, g, k_scale[g * scale_stride], dot);
    }
    return dot;
  }

  template <class Fmt, int G, class PrefetchOf>
  static void score_runs(const float* const* q, std::span<const KvRun> runs, int64_t head_offset, int64_t dim_stride,
                         int head_dim, float scale, float* const* out, PrefetchOf&& prefetch_of) {
    int64_t at = 0;
    for (size_t r = 0; r < runs.size(); at += runs[r++].count) {
      const SpreadPrefetch pf = prefetch_of(r + 1, r);
      for (int g = 0; g < G; ++g)
        for (int64_t j = 0; j < runs[r].count; ++j)
          out[g][at + j] = dot_transposed<Fmt>(q[g], runs[r].k + head_offset + j, dim_stride, head_dim, pf) * scale;
    }
  }
  template <int G, class PrefetchOf>
  static void score_runs_q8(const float* const* q, std::span<const KvRun> runs, int64_t head_offset,
                            int64_t scale_offset, int64_t dim_stride, int head_dim, float scale, float* const* out,
                            PrefetchOf&& prefetch_of) {
    int64_t at = 0;
    for (size_t r = 0; r < runs.size(); at += runs[r++].count) {
      const SpreadPrefetch pf = prefetch_of(r + 1, r);
      for (int g = 0; g < G; ++g)
        for (int64_t j = 0; j < runs[r].count; ++j)
          out[g][at + j] = dot_q8(q[g], runs[r].k_q + head_offset + j, runs[r].k_scale + scale_offset + j, dim_stride,
                                  head_dim, pf) *
                           scale;
    }
  }
  template <int G, class PrefetchOf>
  static void score_runs_q4(const Q4Query* const* q, std::span<const KvRun> runs, int64_t head_bytes,
                            int64_t scale_offset, int64_t octet_stride, int64_t scale_stride, int head_dim, float scale,
                            float* const* out, PrefetchOf&& prefetch_of) {
    int64_t at = 0;
    for (size_t r = 0; r < runs.size(); at += runs[r++].count) {
      prefetch_of(r + 1, r);
      const auto* k = reinterpret_cast<const uint8_t*>(runs[r].k_q) + head_bytes;
      for (int g = 0; g < G; ++g)
        for (int64_t j = 0; j < runs[r].count; ++j)
          out[g][at + j] =
              dot_q4(*q[g], k + 4 * j, runs[r].k_scale + scale_offset + j, octet_stride, scale_stride, head_dim) *
              scale;
    }
  }
  template <int G>
  static void score_heads_q8(const float* const* q, const int8_t* k, const uint16_t* k_scale, int64_t dim_stride,
                             int64_t count, int head_dim, float scale, float* const* out) {
    for (int g = 0; g < G; ++g)
      for (int64_t j = 0; j < count; ++j)
        out[g][j] = dot_q8(q[g], k + j, k_scale + j, dim_stride, head_dim, SpreadPrefetch{}) * scale;
  }
  template <class Fmt, int G>
  static void score_heads_transposed(const float* const* q, const uint16_t* k, int64_t dim_stride, int64_t count,
                                     int head_dim, float scale, float* const* out) {
    for (int g = 0; g < G; ++g)
      for (int64_t j = 0; j < count; ++j)
        out[g][j] = dot_transposed<Fmt>(q[g], k + j, dim_stride, head_dim, SpreadPrefetch{}) * scale;
  }
  template <class Fmt, int G>
  static void score_heads4(const float* const* q, const uint16_t* k, int64_t stride, int count, int head_dim,
                           float scale, float* const* out) {
    EXPECT_LE(count, 4);
    for (int g = 0; g < G; ++g)
      for (int j = 0; j < count; ++j)
        out[g][j] = dot_transposed<Fmt>(q[g], k + j * stride, 1, head_dim, SpreadPrefetch{}) * scale;
  }

  // The reference's softmax numerators: e^(s - max) rounded to f16, summed
  // in position order.
  static float softmax_numerators(float* scores, int64_t n, float* max_out) {
    float max = -INFINITY;
    for (int64_t j = 0; j < n; ++j) max = std::max(max, scores[j]);
    *max_out = max;
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      scores[j] = f16_to_f32(f32_to_f16(std::exp(scores[j] - max)));
      sum += scores[j];
    }
    return sum;
  }

  // out[g][c] += p[g][j] * V_j[d + c] for c < width (cut at head_dim) over
  // the runs' positions in order, one fused multiply-add per position; a
  // quantized cache's weight is p times the position's scale (one rounding).
  static void values(const AttentionShape& s, int n, int width, const float* const* p, std::span<const KvRun> runs,
                     int kv, int d, int64_t row_stride, float* const* out) {
    const int64_t offset = kv * s.kv_head_step();
    const int w = std::min(width, s.head_dim - d);
    for (int g = 0; g < n; ++g)
      for (int c = 0; c < w; ++c) {
        const int dim = d + c;
        float acc = out[g][c];
        int64_t at = 0;
        for (const KvRun& run : runs) {
          for (int64_t j = 0; j < run.count; ++j) {
            const int64_t row = offset + j * row_stride;
            float weight = p[g][at + j], element;
            if (s.kv_type == KvCacheType::kQ8_0 || s.kv_type == KvCacheType::kQ4_0)
              weight *= f16_to_f32(run.v_scale[kv * s.scale_head_stride + dim / kKvQ8Group * s.k_dim_stride + j]);
            if (s.kv_type == KvCacheType::kQ8_0) {
              element = static_cast<float>(run.v_q[row + dim]);
            } else if (s.kv_type == KvCacheType::kQ4_0) {
              const uint8_t byte = reinterpret_cast<const uint8_t*>(run.v_q)[row / 2 + dim / 32 * 16 + dim % 16];
              element = static_cast<float>((dim % 32 < 16 ? byte & 15 : byte >> 4) - 8);
            } else if (s.kv_type == KvCacheType::kBF16) {
              element = bf16_to_f32(run.v[row + dim]);
            } else {
              element = f16_to_f32(run.v[row + dim]);
            }
            acc = std::fma(weight, element, acc);
          }
          at += run.count;
        }
        out[g][c] = acc;
      }
  }
  static int value_width(const AttentionShape&) { return 32; }
  static void accumulate_values(const AttentionShape& s, int n, const float* const* p, std::span<const KvRun> runs,
                                int kv, int d, int64_t row_stride, float*, float* const* out, const NextKeys&) {
    values(s, n, 32, p, runs, kv, d, row_stride, out);
  }

  // The pair driver's: both rows' (row, head) slots of each head batch,
  // every position (row 0 uses the first count0).
  template <class ForHeadBatches, class ScoreRow>
  static void pair_scores(const AttentionShape& s, std::span<const KvRun> runs, int, int,
                          ForHeadBatches&& for_head_batches,
                          const float (*qbuf)[attention_detail::kMaxHeadsPerPass][kMaxHeadDim],
                          const Q4Query (*q4buf)[attention_detail::kMaxHeadsPerPass], ScoreRow&& score_row) {
    auto none = [](size_t, size_t) { return SpreadPrefetch{}; };
    for_head_batches([&](int kv, int i0, int n) {
      const int64_t head_offset = kv * s.kv_head_step(), scale_offset = kv * s.scale_head_stride;
      for (int row = 0; row < 2; ++row)
        for (int i = i0; i < i0 + n; ++i) {
          const float* q[1] = {qbuf[row][i]};
          float* out[1] = {score_row(row, i)};
          if (s.kv_type == KvCacheType::kQ4_0) {
            const Q4Query* q4[1] = {&q4buf[row][i]};
            score_runs_q4<1>(q4, runs, head_offset / 2, scale_offset, 4 * s.k_dim_stride, s.k_dim_stride, s.head_dim,
                             s.scale, out, none);
          } else if (s.kv_type == KvCacheType::kQ8_0) {
            score_runs_q8<1>(q, runs, head_offset, scale_offset, s.k_dim_stride, s.head_dim, s.scale, out, none);
          } else {
            with_16bit_elements(s.kv_type, [&](auto fmt) {
              score_runs<decltype(fmt), 1>(q, runs, head_offset, s.k_dim_stride, s.head_dim, s.scale, out, none);
            });
          }
        }
    });
  }
  static int slot_width(const AttentionShape&) { return 16; }
  static void accumulate_slots(const AttentionShape& s, int slots, const float* const* ps, std::span<const KvRun> runs,
                               int kv, int d, int64_t row_stride, float*, float* const* outs) {
    values(s, slots, 16, ps, runs, kv, d, row_stride, outs);
  }
};

void scalar_chunk(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                  float* scores, const AttentionPartial& out, int head_begin, int head_end, const ChunkAhead& ahead) {
  attention_detail::attention_chunk_with<ScalarKernels>(s, q, runs, row_stride, scores, out, head_begin, head_end,
                                                        ahead);
}

// One layout of a case's K and V.
struct Layout {
  const char* name;
  AttentionShape shape;
  std::vector<KvRun> runs;
  int64_t row_stride;
  std::vector<uint16_t> k, v;
  Q8Store q8;
};

// The layouts the drivers take: the paged store's for every cache type
// (the spread path, and the pair driver's), row-major rows (score_heads4)
// and, with one KV head, transposed K with the heads side by side
// (kv_head_stride 0: score_heads_transposed, score_heads_q8).
std::vector<Layout> layouts(const AttentionShape& base, const std::vector<uint16_t>& keys,
                            const std::vector<uint16_t>& values, int64_t n_kv, int64_t block_size) {
  std::vector<Layout> out;
  out.reserve(8);  // the references below stay valid
  auto add = [&](const char* name) -> Layout& {
    out.push_back(Layout{name, base, {}, base.head_dim, {}, {}, {}});
    return out.back();
  };
  {
    Layout& l = add("store f16");
    l.runs = transposed_blocks(keys, values, l.shape, n_kv, block_size, l.k, l.v, true);
  }
  {
    Layout& l = add("store bf16");
    l.shape.kv_type = KvCacheType::kBF16;
    l.runs = transposed_blocks(as_bf16(keys), as_bf16(values), l.shape, n_kv, block_size, l.k, l.v, true);
  }
  if (base.head_dim % kKvQ8Group == 0) {
    Layout& q8 = add("blocks q8_0");
    q8.runs = q8_blocks(keys, values, q8.shape, n_kv, block_size, q8.q8);
    Layout& q4 = add("blocks q4_0");
    q4.runs = q4_blocks(keys, values, q4.shape, n_kv, block_size, q4.q8);
  }
  {
    Layout& l = add("rows f16");
    l.row_stride = int64_t{base.n_head_kv} * base.head_dim;
    for (int64_t p = 0; p < n_kv; p += block_size)
      l.runs.push_back(
          {keys.data() + p * l.row_stride, values.data() + p * l.row_stride, std::min(block_size, n_kv - p)});
  }
  if (base.n_head_kv == 1) {
    Layout& f16 = add("heads side by side f16");
    f16.runs = transposed_blocks(keys, values, f16.shape, n_kv, block_size, f16.k, f16.v, false);
    f16.shape.kv_head_stride = 0;
    if (base.head_dim % kKvQ8Group == 0) {
      Layout& q8 = add("heads side by side q8_0");
      q8.runs = q8_blocks(keys, values, q8.shape, n_kv, block_size, q8.q8);
      q8.shape.kv_head_stride = 0;
    }
  }
  return out;
}

struct Case {
  int n_head, n_head_kv, head_dim;
};

// SmolLM2's heads (9 of 64 over 3 KV heads), Gemma 3 270M's (4 of 256 over
// one), and a few more head sizes and GQA groups.
constexpr Case kCases[] = {{9, 3, 64}, {4, 1, 256}, {8, 2, 128}, {6, 1, 32}, {5, 5, 40}};

TEST(AttentionDriverTest, ScalarKernelsMatchTheReference) {
  for (const Case& c : kCases) {
    const AttentionShape base{c.n_head, c.n_head_kv, c.head_dim, 1.0f / std::sqrt(static_cast<float>(c.head_dim))};
    const int64_t kv_dim = int64_t{c.n_head_kv} * c.head_dim;
    for (int64_t n_kv : {1, 17, 300}) {
      auto q = random_floats(int64_t{c.n_head} * c.head_dim, 700 + n_kv);
      for (float& x : q) x *= 4.0f;  // scores over a few units: numerators over many binades
      const auto k = random_halves(n_kv * kv_dim, 701 + n_kv), v = random_halves(n_kv * kv_dim, 702 + n_kv);
      for (int64_t block_size : {5, 16}) {
        for (Layout& l : layouts(base, k, v, n_kv, block_size)) {
          const int64_t out_size = int64_t{c.n_head} * c.head_dim;
          std::vector<float> want(out_size), got(out_size, NAN), scores(int64_t{c.n_head} * n_kv);
          attention_row_paged_with(ref::attention_chunk, l.shape, q.data(), l.runs, l.row_stride, scores.data(),
                                   want.data(), 0, c.n_head);
          // Heads in two calls, cut inside a GQA group.
          const int cut = c.n_head / 2 + 1;
          attention_row_paged_with(scalar_chunk, l.shape, q.data(), l.runs, l.row_stride, scores.data(), got.data(), 0,
                                   cut);
          attention_row_paged_with(scalar_chunk, l.shape, q.data(), l.runs, l.row_stride, scores.data(), got.data(),
                                   cut, c.n_head);
          for (int64_t i = 0; i < out_size; ++i) {
            // Both round each numerator to f16; a score one rounding apart
            // may land on the neighbouring f16 value (2^-11 apart), and
            // outputs (|v| <= 2) then differ by about 2 * 2^-11.
            ASSERT_NEAR(got[i], want[i], 2e-3f)
                << l.name << " heads " << c.n_head << "/" << c.n_head_kv << " head_dim " << c.head_dim << " n_kv "
                << n_kv << " block_size " << block_size << " at " << i;
          }
        }
      }
    }
  }
}

TEST(AttentionDriverTest, PairRowsAreBitIdenticalToSingleRows) {
  for (const Case& c : kCases) {
    if (c.head_dim % 16 != 0) continue;  // the pair driver's 16-float slot passes
    const AttentionShape base{c.n_head, c.n_head_kv, c.head_dim, 1.0f / std::sqrt(static_cast<float>(c.head_dim))};
    const int64_t kv_dim = int64_t{c.n_head_kv} * c.head_dim;
    for (int64_t n_kv : {2, 17, 256}) {  // one chunk: row 1 over n_kv positions, row 0 over n_kv - 1
      const int64_t q_size = int64_t{c.n_head} * c.head_dim;
      const auto q0 = random_floats(q_size, 710 + n_kv), q1 = random_floats(q_size, 711 + n_kv);
      const auto k = random_halves(n_kv * kv_dim, 712 + n_kv), v = random_halves(n_kv * kv_dim, 713 + n_kv);
      for (int64_t block_size : {5, 16}) {
        for (Layout& l : layouts(base, k, v, n_kv, block_size)) {
          if (l.shape.k_dim_stride == 0) continue;  // pairs need transposed K
          const AttentionShape& s = l.shape;
          std::vector<KvRun> runs0(l.runs.size());
          runs0.resize(
              slice_runs(l.runs, 0, n_kv - 1, s.k_run_step(l.row_stride), s.v_run_step(l.row_stride), runs0.data()));
          std::vector<float> scores(2 * q_size / c.head_dim * n_kv);
          // Partials of the whole head range: acc, then max and sum per head.
          auto partial = [&] { return std::vector<float>(q_size + 2 * c.n_head, NAN); };
          auto view = [&](std::vector<float>& p, int h0) {
            return AttentionPartial{p.data() + int64_t{h0} * c.head_dim, p.data() + q_size + h0,
                                    p.data() + q_size + c.n_head + h0};
          };
          auto want0 = partial(), want1 = partial(), got0 = partial(), got1 = partial();
          const int cut = c.n_head / 2 + 1;
          for (auto [h0, h1] : {std::pair{0, cut}, std::pair{cut, c.n_head}}) {
            attention_detail::attention_chunk_with<ScalarKernels>(s, q0.data(), runs0, l.row_stride, scores.data(),
                                                                  view(want0, h0), h0, h1, ChunkAhead{});
            attention_detail::attention_chunk_with<ScalarKernels>(s, q1.data(), l.runs, l.row_stride, scores.data(),
                                                                  view(want1, h0), h0, h1, ChunkAhead{});
            attention_detail::attention_chunk_pair_with<ScalarKernels>(s, q0.data(), q1.data(), l.runs, n_kv - 1,
                                                                       l.row_stride, scores.data(), view(got0, h0),
                                                                       view(got1, h0), h0, h1);
          }
          EXPECT_EQ(0, std::memcmp(want0.data(), got0.data(), sizeof(float) * want0.size()))
              << l.name << " row 0, heads " << c.n_head << "/" << c.n_head_kv << " n_kv " << n_kv << " block_size "
              << block_size;
          EXPECT_EQ(0, std::memcmp(want1.data(), got1.data(), sizeof(float) * want1.size()))
              << l.name << " row 1, heads " << c.n_head << "/" << c.n_head_kv << " n_kv " << n_kv << " block_size "
              << block_size;
        }
      }
    }
  }
}

}  // namespace
}  // namespace omnibus
