// NEON attention_chunk (attention.h), compiled only for aarch64: one chunk
// of one query row over an f16, bf16, q8_0 or q4_0 cache, in any layout the
// avx2 kernels take (K transposed in the paged store's layout or per block,
// or row-major), with the avx2 kernels' arithmetic per float, so the neon
// table gives the avx2 table's bits (attention_bits_test.cpp checks both
// against one model):
//  * Q rounded to f16 (q4_0: quantized to q8_0 codes, attention_q4.h);
//  * a score from transposed K: one fused multiply-add chain over d in
//    order, then times scale; q8_0: each group's chain, then added to the
//    score as fma(part, k_scale, score), groups in order; q4_0: each
//    group's exact integer dot, then q4_group_step; from row-major K: eight
//    lanes (lane l takes d % 8 == l), reduced ((l0+l1)+(l2+l3)) +
//    ((l4+l5)+(l6+l7)), then times scale;
//  * the softmax numerators: avx2's exp polynomial (exp_nonpositive, FMAs
//    where it has FMAs, a separate multiply where it has one) rounded to
//    f16, summed in eight lanes by position (j % 8), then avx2's hsum;
//  * each output float: one fused multiply-add per position in order, the
//    weight p (q8_0, q4_0: p times the position's V scale, one rounding).
// An AVX2 vector of eight floats is two NEON vectors here (lanes 0-3, 4-7).
// What it leaves out is speed only: no GQA sharing of K and V reads (each
// query head reads its KV head's block), no prefetches, q4_0 score dots in
// scalar integer code, and no pair kernel (attention_chunk_pair: rows go
// one at a time, with the same bits).
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

#include "kernels/attention.h"
#include "kernels/attention_q4.h"
#include "tensor/quant.h"

namespace omnibus::neon {
namespace {

// An AVX2 register's eight floats.
struct F8 {
  float32x4_t lo, hi;
};

inline F8 load_f16x8(const uint16_t* p) {
  const uint16x8_t h = vld1q_u16(p);
  return {vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h))), vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h)))};
}
inline F8 load_bf16x8(const uint16_t* p) {
  const uint16x8_t h = vld1q_u16(p);
  return {vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16)), vreinterpretq_f32_u32(vshll_high_n_u16(h, 16))};
}
inline F8 widen_i8x8(int8x8_t codes) {
  const int16x8_t w = vmovl_s8(codes);
  return {vcvtq_f32_s32(vmovl_s16(vget_low_s16(w))), vcvtq_f32_s32(vmovl_high_s16(w))};
}
inline F8 load_i8x8(const int8_t* p) { return widen_i8x8(vld1_s8(p)); }

// How the value sums read a cache's rows: Element, the row pointer of a
// run, and vector c (eight floats from dimension 8c) of a row.
struct F16Rows {
  using Element = uint16_t;
  static const Element* rows(const KvRun& run) { return run.v; }
  static F8 load(const Element* v, int c) { return load_f16x8(v + 8 * c); }
};
struct BF16Rows {
  using Element = uint16_t;
  static const Element* rows(const KvRun& run) { return run.v; }
  static F8 load(const Element* v, int c) { return load_bf16x8(v + 8 * c); }
};
struct Q8Rows {
  using Element = int8_t;
  static const Element* rows(const KvRun& run) { return run.v_q; }
  static F8 load(const Element* v, int c) { return load_i8x8(v + 8 * c); }
};
// q4_0 V (kv_quant.h): a position's 16 bytes of one 32-value group; vector
// c is the low nibbles (c < 2) or high ones of bytes 8(c % 2) .. +7, each
// code - 8.
struct Q4Rows {
  using Element = uint8_t;
  static const Element* rows(const KvRun& run) { return reinterpret_cast<const uint8_t*>(run.v_q); }
  static F8 load(const Element* v, int c) {
    uint8x8_t bytes = vld1_u8(v + 8 * (c & 1));
    bytes = c >= 2 ? vshr_n_u8(bytes, 4) : vand_u8(bytes, vdup_n_u8(0x0F));
    return widen_i8x8(vsub_s8(vreinterpret_s8_u8(bytes), vdup_n_s8(8)));
  }
};

// avx2's exp_nonpositive (attention_avx2_common.h) step for step: the
// same constants, vfmsq for its fnmadd (c - a * b, one rounding), vfmaq for
// its fmadd, a plain multiply where it multiplies, ties-to-even rounding.
inline float32x4_t exp_nonpositive(float32x4_t x) {
  x = vmaxq_f32(x, vdupq_n_f32(-87.33654f));
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
  p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
  p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
  const float32x4_t r2 = vmulq_f32(r, r);
  const float32x4_t y = vaddq_f32(vfmaq_f32(r, p, r2), vdupq_n_f32(1.0f));
  const int32x4_t bits = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(y, vreinterpretq_f32_s32(bits));
}

inline float32x4_t round_f16(float32x4_t x) { return vcvt_f32_f16(vcvt_f16_f32(x)); }

// scores[j] = e^(scores[j] - max) rounded to f16; returns their sum as
// avx2's numerators_from and hsum make it: lane l of eight sums positions
// j % 8 == l in order (a short last eight adds zeros in its empty lanes),
// then ((v0+v4)+(v2+v6)) + ((v1+v5)+(v3+v7)).
float softmax_numerators(float* scores, int64_t n, float* max_out) {
  float m = -INFINITY;
  for (int64_t j = 0; j < n; ++j) m = std::max(m, scores[j]);  // exact in any order
  *max_out = m;
  const float32x4_t mv = vdupq_n_f32(m);
  float32x4_t lo = vdupq_n_f32(0.0f), hi = lo;
  auto numerators8 = [&](float* s) {
    const float32x4_t e0 = round_f16(exp_nonpositive(vsubq_f32(vld1q_f32(s), mv)));
    const float32x4_t e1 = round_f16(exp_nonpositive(vsubq_f32(vld1q_f32(s + 4), mv)));
    vst1q_f32(s, e0);
    vst1q_f32(s + 4, e1);
  };
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    numerators8(scores + j);
    lo = vaddq_f32(lo, vld1q_f32(scores + j));
    hi = vaddq_f32(hi, vld1q_f32(scores + j + 4));
  }
  if (j < n) {
    const int64_t rest = n - j;
    float tail[8];
    for (int i = 0; i < 8; ++i) tail[i] = i < rest ? scores[j + i] : m;
    numerators8(tail);
    for (int i = 0; i < 8; ++i) {
      if (i < rest)
        scores[j + i] = tail[i];
      else
        tail[i] = 0.0f;  // avx2 masks its empty lanes to +0
    }
    lo = vaddq_f32(lo, vld1q_f32(tail));
    hi = vaddq_f32(hi, vld1q_f32(tail + 4));
  }
  const float32x4_t s = vaddq_f32(lo, hi);
  return (vgetq_lane_f32(s, 0) + vgetq_lane_f32(s, 2)) + (vgetq_lane_f32(s, 1) + vgetq_lane_f32(s, 3));
}

// Eight scores (a0: positions 0-3, a1: 4-7) times scale, the first `left`.
inline void store_scores8(float32x4_t a0, float32x4_t a1, float scale, int64_t left, float* out) {
  float tmp[8];
  vst1q_f32(tmp, vmulq_n_f32(a0, scale));
  vst1q_f32(tmp + 4, vmulq_n_f32(a1, scale));
  std::copy(tmp, tmp + std::min<int64_t>(left, 8), out);
}

// Scores from transposed 16-bit K (dimension d of position j at k + d *
// dim_stride + j), eight positions at a time; reads up to 7 elements past
// the last position (kTransposedKeyOverread allows 16).
template <F8 (*Load)(const uint16_t*)>
void scores_transposed(const float* q, const uint16_t* k, int64_t dim_stride, int64_t count, int head_dim, float scale,
                       float* out) {
  for (int64_t j = 0; j < count; j += 8) {
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0;
    const uint16_t* kj = k + j;
    for (int d = 0; d < head_dim; ++d, kj += dim_stride) {
      const F8 kv = Load(kj);
      a0 = vfmaq_n_f32(a0, kv.lo, q[d]);
      a1 = vfmaq_n_f32(a1, kv.hi, q[d]);
    }
    store_scores8(a0, a1, scale, count - j, out + j);
  }
}

// Scores from transposed q8_0 K: codes as f16 K, group g's scales of the
// positions at k_scale + g * dim_stride.
void scores_q8(const float* q, const int8_t* k, const uint16_t* k_scale, int64_t dim_stride, int64_t count,
               int head_dim, float scale, float* out) {
  for (int64_t j = 0; j < count; j += 8) {
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0;
    const int8_t* kj = k + j;
    const uint16_t* sj = k_scale + j;
    for (int d0 = 0; d0 < head_dim; d0 += kKvQ8Group, sj += dim_stride) {
      float32x4_t p0 = vdupq_n_f32(0.0f), p1 = p0;
      for (int d = d0; d < d0 + kKvQ8Group; ++d, kj += dim_stride) {
        const F8 kv = load_i8x8(kj);
        p0 = vfmaq_n_f32(p0, kv.lo, q[d]);
        p1 = vfmaq_n_f32(p1, kv.hi, q[d]);
      }
      const F8 s = load_f16x8(sj);
      a0 = vfmaq_f32(a0, p0, s.lo);
      a1 = vfmaq_f32(a1, p1, s.hi);
    }
    store_scores8(a0, a1, scale, count - j, out + j);
  }
}

// Scores from q4_0 K (kv_quant.h: octet o of position j at k + o *
// octet_stride + 4j, byte b holding dimension 8o + b low, 8o + 4 + b high;
// group g's scales at k_scale + g * scale_stride). The integer dot of a
// group is exact in any order.
void scores_q4(const Q4Query& q, const uint8_t* k, const uint16_t* k_scale, int64_t octet_stride, int64_t scale_stride,
               int64_t count, int head_dim, float scale, float* out) {
  for (int64_t j = 0; j < count; ++j) {
    float acc = 0.0f;
    for (int g = 0; g < head_dim / kKvQ8Group; ++g) {
      int32_t isum = 0;
      for (int o = 4 * g; o < 4 * g + 4; ++o) {
        const uint8_t* bytes = k + o * octet_stride + 4 * j;
        for (int b = 0; b < 4; ++b)
          isum += (bytes[b] & 0x0F) * q.codes[8 * o + b] + (bytes[b] >> 4) * q.codes[8 * o + 4 + b];
      }
      acc = q4_group_step(isum, q, g, k_scale[g * scale_stride + j], acc);
    }
    out[j] = acc * scale;
  }
}

// Scores from row-major 16-bit K (position j's vector at k + j * stride):
// avx2's score_heads4 per position.
template <F8 (*Load)(const uint16_t*)>
void scores_rows(const float* q, const uint16_t* k, int64_t stride, int64_t count, int head_dim, float scale,
                 float* out) {
  for (int64_t j = 0; j < count; ++j, k += stride) {
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0;
    for (int d = 0; d < head_dim; d += 8) {
      const F8 kv = Load(k + d);
      a0 = vfmaq_f32(a0, vld1q_f32(q + d), kv.lo);
      a1 = vfmaq_f32(a1, vld1q_f32(q + d + 4), kv.hi);
    }
    const float32x4_t pairs = vpaddq_f32(a0, a1);  // l0+l1, l2+l3, l4+l5, l6+l7
    const float32x4_t quads = vpaddq_f32(pairs, pairs);
    out[j] = (vgetq_lane_f32(quads, 0) + vgetq_lane_f32(quads, 1)) * scale;
  }
}

// out[0 .. 8V) += w[j] * row_j[0 .. 8V) over a run's `count` positions in
// order (rows at v, `stride` elements apart): one fused multiply-add per
// output float and position. The sums pass through out between runs, which
// changes no bit.
template <class Fmt, int V>
void accumulate_run(const float* w, const typename Fmt::Element* v, int64_t stride, int64_t count, float* out) {
  F8 acc[V];
  for (int c = 0; c < V; ++c) acc[c] = {vld1q_f32(out + 8 * c), vld1q_f32(out + 8 * c + 4)};
  for (int64_t j = 0; j < count; ++j, v += stride) {
    for (int c = 0; c < V; ++c) {
      const F8 x = Fmt::load(v, c);
      acc[c].lo = vfmaq_n_f32(acc[c].lo, x.lo, w[j]);
      acc[c].hi = vfmaq_n_f32(acc[c].hi, x.hi, w[j]);
    }
  }
  for (int c = 0; c < V; ++c) {
    vst1q_f32(out + 8 * c, acc[c].lo);
    vst1q_f32(out + 8 * c + 4, acc[c].hi);
  }
}

// One head's unnormalised value sums (out: head_dim floats, zeroed) from
// its numerators p over the runs, KV head kv.
void head_values(const AttentionShape& s, const float* p, std::span<const KvRun> runs, int kv, int64_t row_stride,
                 float* out) {
  const bool q8 = s.kv_type == KvCacheType::kQ8_0, q4 = s.kv_type == KvCacheType::kQ4_0;
  float weights[kAttentionChunk];  // a quantized cache's p * scale of one run
  int64_t at = 0;                  // the run's first position, counted from runs[0]'s
  for (const KvRun& run : runs) {
    const float* pr = p + at;
    const int64_t offset = kv * s.kv_head_step();
    if (q8 || q4) {
      for (int d = 0; d < s.head_dim; d += kKvQ8Group) {
        const uint16_t* vs = run.v_scale + kv * s.scale_head_stride + d / kKvQ8Group * s.k_dim_stride;
        for (int64_t j = 0; j < run.count; ++j) weights[j] = pr[j] * f16_to_f32(vs[j]);
        if (q8)
          accumulate_run<Q8Rows, 4>(weights, run.v_q + offset + d, row_stride, run.count, out + d);
        else
          accumulate_run<Q4Rows, 4>(weights, Q4Rows::rows(run) + (offset + d) / 2, row_stride / 2, run.count, out + d);
      }
    } else {
      auto sums = [&](auto fmt) {
        using Fmt = decltype(fmt);
        const uint16_t* v = run.v + offset;
        int d = 0;
        for (; d + 16 <= s.head_dim; d += 16) accumulate_run<Fmt, 2>(pr, v + d, row_stride, run.count, out + d);
        if (d < s.head_dim) accumulate_run<Fmt, 1>(pr, v + d, row_stride, run.count, out + d);
      };
      if (s.kv_type == KvCacheType::kBF16)
        sums(BF16Rows{});
      else
        sums(F16Rows{});
    }
    at += run.count;
  }
}

// One head's scores over the runs into out (q: rounded to f16; q4: the
// head's q8_0 query).
void head_scores(const AttentionShape& s, const float* q, const Q4Query& q4, std::span<const KvRun> runs, int kv,
                 int64_t row_stride, float* out) {
  const bool bf16 = s.kv_type == KvCacheType::kBF16;
  for (const KvRun& run : runs) {
    const int64_t offset = kv * s.kv_head_step();
    if (s.kv_type == KvCacheType::kQ4_0) {
      scores_q4(q4, reinterpret_cast<const uint8_t*>(run.k_q) + offset / 2, run.k_scale + kv * s.scale_head_stride,
                4 * s.k_dim_stride, s.k_dim_stride, run.count, s.head_dim, s.scale, out);
    } else if (s.kv_type == KvCacheType::kQ8_0) {
      scores_q8(q, run.k_q + offset, run.k_scale + kv * s.scale_head_stride, s.k_dim_stride, run.count, s.head_dim,
                s.scale, out);
    } else if (s.k_dim_stride != 0) {
      (bf16 ? scores_transposed<load_bf16x8> : scores_transposed<load_f16x8>)(q, run.k + offset, s.k_dim_stride,
                                                                              run.count, s.head_dim, s.scale, out);
    } else {
      (bf16 ? scores_rows<load_bf16x8> : scores_rows<load_f16x8>)(q, run.k + offset, row_stride, run.count, s.head_dim,
                                                                  s.scale, out);
    }
    out += run.count;
  }
}

}  // namespace

// Head by head: each head's arithmetic is the same whichever heads a call
// covers, as on avx2. Needs head_dim % 8 == 0 (q8_0, q4_0: % 32) and
// head_dim <= kMaxHeadDim (resolve_attention sends other shapes on).
void attention_chunk(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& /*ahead: a prefetch hint; nothing is prefetched here*/) {
  const int group = s.n_head / s.n_head_kv;
  int64_t n_kv = 0;
  for (const KvRun& run : runs) n_kv += run.count;
  float qh[kMaxHeadDim];
  Q4Query q4{};
  for (int h = head_begin; h < head_end; ++h) {
    const int i = h - head_begin, kv = h / group;
    const float* qsrc = q + static_cast<int64_t>(h) * s.head_dim;
    float* acc = out.acc + static_cast<int64_t>(i) * s.head_dim;
    std::fill(acc, acc + s.head_dim, 0.0f);
    out.max[i] = -INFINITY;  // an empty chunk (no caller sends one): max -inf, sum 0
    out.sum[i] = 0.0f;
    if (n_kv == 0) continue;
    if (s.kv_type == KvCacheType::kQ4_0) {
      quantize_q4_query(qsrc, s.head_dim, &q4);  // from q itself, as avx2's
    } else {
      for (int d = 0; d < s.head_dim; d += 4) vst1q_f32(qh + d, round_f16(vld1q_f32(qsrc + d)));
    }
    float* sc = scores + i * n_kv;
    head_scores(s, qh, q4, runs, kv, row_stride, sc);
    out.sum[i] = softmax_numerators(sc, n_kv, &out.max[i]);
    head_values(s, sc, runs, kv, row_stride, acc);
  }
}

}  // namespace omnibus::neon
