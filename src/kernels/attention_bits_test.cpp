// Every SIMD table's attention chunk against a plain C++ model of the avx2
// kernels' arithmetic (attention_avx2_common.h, attention_avx2_kernels.h),
// bit for bit, as matmul_bits_test.cpp does for matmul: on x86 the avx2
// table and those that claim its bits meet the model, on aarch64 (under
// qemu) the neon table does, so neon's attention gives avx2's bits without
// either machine running the other's instructions. Every cache type (f16,
// bf16, q8_0, q4_0) and K layout (the paged store's, transposed per block,
// row-major). The model fuses only where it says std::fma (this build does
// not contract a * b + c: no FMA on baseline x86-64, -ffp-contract=off on
// aarch64), so it computes the same floats on both machines.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/attention_q4.h"
#include "kernels/attention_test_util.h"
#include "kernels/kernel_table_test_util.h"
#include "kernels/kv_quant.h"
#include "tensor/quant.h"

namespace omnibus {
namespace {

using namespace attention_test_util;

float round_f16(float x) { return f16_to_f32(f32_to_f16(x)); }

// avx2's exp_nonpositive: range reduction by n = round(x log2 e) with ln 2
// in two parts, a degree-5 polynomial by fused steps, times 2^n.
float model_exp(float x) {
  x = std::max(x, -87.33654f);
  const float n = std::nearbyint(x * 1.44269504088896341f);  // ties to even, as _mm256_round_ps
  float r = std::fma(-n, 0.693359375f, x);
  r = std::fma(-n, -2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = std::fma(p, r, c);
  const float r2 = r * r;
  const float y = std::fma(p, r2, r) + 1.0f;
  return y * std::ldexp(1.0f, static_cast<int>(n));  // n >= -126: a normal power of two
}

// A cache's content as the kernels read it, position j, KV head h,
// dimension d: the element's value (f16, bf16), its code (q8_0) or code -
// 8 (q4_0), and for the quantized caches each group's f16 scale.
struct Content {
  KvCacheType type;
  int n_head_kv, head_dim;
  std::vector<float> k, v;
  std::vector<uint16_t> k_scale, v_scale;
  int64_t at(int64_t j, int h, int d) const { return (j * n_head_kv + h) * head_dim + d; }
  int64_t group_at(int64_t j, int h, int d) const { return at(j, h, d) / kKvQ8Group; }
};

Content content(KvCacheType type, const std::vector<uint16_t>& keys, const std::vector<uint16_t>& values, int n_head_kv,
                int head_dim) {
  Content c{type, n_head_kv, head_dim, {}, {}, {}, {}};
  auto fill = [&](const std::vector<uint16_t>& in, std::vector<float>& out, std::vector<uint16_t>& scales) {
    out.resize(in.size());
    scales.resize(in.size() / kKvQ8Group);
    std::vector<float> head(head_dim);
    std::vector<int8_t> codes8(head_dim);
    std::vector<uint8_t> codes4(head_dim);
    for (size_t at = 0; at < in.size(); at += head_dim) {
      for (int d = 0; d < head_dim; ++d) head[d] = f16_to_f32(in[at + d]);
      uint16_t* sc = scales.data() + at / kKvQ8Group;
      for (int d = 0; d < head_dim; ++d) {
        if (type == KvCacheType::kF16) out[at + d] = head[d];
        if (type == KvCacheType::kBF16) out[at + d] = bf16_to_f32(f32_to_bf16(head[d]));
      }
      if (type == KvCacheType::kQ8_0) {
        quantize_kv_q8(head.data(), head_dim, codes8.data(), 1, sc, 1);
        for (int d = 0; d < head_dim; ++d) out[at + d] = codes8[d];
      }
      if (type == KvCacheType::kQ4_0) {
        quantize_kv_q4(head.data(), head_dim, codes4.data(), sc, 1);
        for (int d = 0; d < head_dim; ++d) out[at + d] = static_cast<float>(codes4[d] - 8);
      }
    }
  };
  fill(keys, c.k, c.k_scale);
  fill(values, c.v, c.v_scale);
  return c;
}

// One head's scores as avx2 computes them: from transposed K one fused
// chain over d; from row-major K eight lanes and a fixed tree; q8_0 a chain
// per group scaled by fma; q4_0 exact group dots, q4_group_step.
std::vector<float> model_scores(const Content& c, bool rows, const float* q_head, int kv, int64_t n_kv, float scale) {
  const int head_dim = c.head_dim;
  float q[kMaxHeadDim];
  for (int d = 0; d < head_dim; ++d) q[d] = round_f16(q_head[d]);
  Q4Query q4{};
  if (c.type == KvCacheType::kQ4_0) quantize_q4_query(q_head, head_dim, &q4);
  std::vector<float> s(n_kv);
  for (int64_t j = 0; j < n_kv; ++j) {
    float acc = 0.0f;
    if (c.type == KvCacheType::kQ4_0) {
      for (int g = 0; g < head_dim / kKvQ8Group; ++g) {
        int32_t isum = 0;  // sum of (code - 8) * q code = avx2's isum - bias
        for (int d = g * kKvQ8Group; d < (g + 1) * kKvQ8Group; ++d)
          isum += static_cast<int32_t>(c.k[c.at(j, kv, d)]) * q4.codes[d];
        acc = std::fma(static_cast<float>(isum), f16_to_f32(c.k_scale[c.group_at(j, kv, g * kKvQ8Group)]) * q4.scale[g],
                       acc);
      }
    } else if (c.type == KvCacheType::kQ8_0) {
      for (int d0 = 0; d0 < head_dim; d0 += kKvQ8Group) {
        float part = 0.0f;
        for (int d = d0; d < d0 + kKvQ8Group; ++d) part = std::fma(q[d], c.k[c.at(j, kv, d)], part);
        acc = std::fma(part, f16_to_f32(c.k_scale[c.group_at(j, kv, d0)]), acc);
      }
    } else if (rows) {
      float l[8] = {};
      for (int d = 0; d < head_dim; ++d) l[d % 8] = std::fma(q[d], c.k[c.at(j, kv, d)], l[d % 8]);
      acc = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    } else {
      for (int d = 0; d < head_dim; ++d) acc = std::fma(q[d], c.k[c.at(j, kv, d)], acc);
    }
    s[j] = acc * scale;
  }
  return s;
}

// One head's chunk partial (acc: head_dim floats, max, sum) as avx2's
// attention_chunk computes it.
void model_head(const Content& c, bool rows, const float* q_head, int kv, int64_t n_kv, float scale, float* acc,
                float* max_out, float* sum_out) {
  std::vector<float> p = model_scores(c, rows, q_head, kv, n_kv, scale);
  float m = -INFINITY;
  for (float x : p) m = std::max(m, x);
  float lane[8] = {};  // the numerators by position % 8, in order
  for (int64_t j = 0; j < n_kv; ++j) {
    p[j] = round_f16(model_exp(p[j] - m));
    lane[j % 8] += p[j];
  }
  *max_out = m;
  *sum_out = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
  const bool quantized = c.type == KvCacheType::kQ8_0 || c.type == KvCacheType::kQ4_0;
  for (int d = 0; d < c.head_dim; ++d) {
    float a = 0.0f;
    for (int64_t j = 0; j < n_kv; ++j) {
      const float w = quantized ? p[j] * f16_to_f32(c.v_scale[c.group_at(j, kv, d)]) : p[j];
      a = std::fma(w, c.v[c.at(j, kv, d)], a);
    }
    acc[d] = a;
  }
}

// One layout of a cache's content: the shape, runs and buffers the kernels read.
struct Layout {
  std::string name;
  AttentionShape shape;
  bool rows = false;
  int64_t row_stride = 0;
  std::vector<KvRun> runs;
  std::vector<uint16_t> k, v;
  Q8Store quantized;
};

std::vector<Layout> layouts(const AttentionShape& base, KvCacheType type, const std::vector<uint16_t>& keys,
                            const std::vector<uint16_t>& values, int64_t n_kv, int64_t block) {
  std::vector<Layout> out;
  auto add = [&](const char* name) -> Layout& {
    Layout& l = out.emplace_back();
    l.name = name;
    l.shape = base;
    l.shape.kv_type = type;
    l.row_stride = base.head_dim;
    return l;
  };
  if (type == KvCacheType::kQ8_0 || type == KvCacheType::kQ4_0) {
    Layout& l = add(type == KvCacheType::kQ8_0 ? "q8_0 blocks" : "q4_0 blocks");
    l.runs = (type == KvCacheType::kQ8_0 ? q8_blocks : q4_blocks)(keys, values, l.shape, n_kv, block, l.quantized);
    return out;
  }
  const bool bf16 = type == KvCacheType::kBF16;
  const std::vector<uint16_t> k = bf16 ? as_bf16(keys) : keys, v = bf16 ? as_bf16(values) : values;
  for (bool paged : {true, false}) {
    Layout& l = add(paged ? "store" : "transposed blocks");
    l.runs = transposed_blocks(k, v, l.shape, n_kv, block, l.k, l.v, paged);
  }
  Layout& l = add("rows");
  l.rows = true;
  l.k = k, l.v = v;
  l.row_stride = int64_t{base.n_head_kv} * base.head_dim;
  for (int64_t p = 0; p < n_kv; p += block)
    l.runs.push_back({l.k.data() + p * l.row_stride, l.v.data() + p * l.row_stride, std::min(block, n_kv - p)});
  return out;
}

struct Case {
  int n_head, n_head_kv, head_dim;
};

TEST(AttentionBits, EverySimdTableComputesTheAvx2Arithmetic) {
  const auto tables = testing_util::runnable_simd_tables();
  if (tables.empty()) GTEST_SKIP() << "this CPU runs no SIMD kernel table";
  // SmolLM2's 9:3 x 64, Gemma 3's 4:1 x 256, a head_dim of 8s but not 32s
  // (16-bit caches only), three q8_0 groups.
  for (const Case& c : {Case{9, 3, 64}, Case{4, 1, 256}, Case{6, 2, 48}, Case{4, 2, 96}}) {
    const AttentionShape base{c.n_head, c.n_head_kv, c.head_dim, 1.0f / std::sqrt(static_cast<float>(c.head_dim))};
    const int group = c.n_head / c.n_head_kv;
    for (int64_t n_kv : {1, 13, 70, 256}) {
      const int64_t stride = int64_t{c.n_head_kv} * c.head_dim;
      auto q = random_floats(int64_t{c.n_head} * c.head_dim, 41 + static_cast<uint32_t>(n_kv));
      for (float& x : q) x *= 12.0f;  // scores over tens of units: numerators over many binades
      const auto keys = random_halves(n_kv * stride, 42 + n_kv), values = random_halves(n_kv * stride, 43 + n_kv);
      for (KvCacheType type : {KvCacheType::kF16, KvCacheType::kBF16, KvCacheType::kQ8_0, KvCacheType::kQ4_0}) {
        const bool quantized = type == KvCacheType::kQ8_0 || type == KvCacheType::kQ4_0;
        if (quantized && c.head_dim % kKvQ8Group != 0) continue;  // whole groups only
        const Content cont = content(type, keys, values, c.n_head_kv, c.head_dim);
        for (int64_t block : {7, 16}) {
          for (Layout& l : layouts(base, type, keys, values, n_kv, block)) {
            // All heads, then a range cut through a GQA group.
            for (auto [h0, h1] : {std::pair{0, c.n_head}, std::pair{1, c.n_head - 1}}) {
              const int heads = h1 - h0;
              std::vector<float> want_acc(static_cast<size_t>(heads) * c.head_dim), want_max(heads), want_sum(heads);
              for (int i = 0; i < heads; ++i)
                model_head(cont, l.rows, q.data() + (h0 + i) * c.head_dim, (h0 + i) / group, n_kv, base.scale,
                           want_acc.data() + i * c.head_dim, &want_max[i], &want_sum[i]);
              for (const KernelTable* table : tables) {
                const ResolvedAttention r = resolve_attention(*table, l.shape);
                const std::string where = std::string(table->name) + " (" + r.name + ") " + l.name + " " +
                                          std::to_string(c.n_head) + ":" + std::to_string(c.n_head_kv) + "x" +
                                          std::to_string(c.head_dim) + " n_kv " + std::to_string(n_kv) + " block " +
                                          std::to_string(block) + " heads [" + std::to_string(h0) + "," +
                                          std::to_string(h1) + ")";
                ASSERT_STRNE(r.name, "scalar") << where;  // every table takes these shapes itself
                std::vector<float> scores(static_cast<size_t>(heads) * n_kv), acc(want_acc.size(), NAN), mx(heads, NAN),
                    sm(heads, NAN);
                r.chunk(l.shape, q.data(), l.runs, l.row_stride, scores.data(),
                        AttentionPartial{acc.data(), mx.data(), sm.data()}, h0, h1, {});
                ASSERT_EQ(0, std::memcmp(want_max.data(), mx.data(), mx.size() * sizeof(float))) << where << " max";
                ASSERT_EQ(0, std::memcmp(want_sum.data(), sm.data(), sm.size() * sizeof(float)))
                    << where << " sum: got " << sm[0] << " want " << want_sum[0];
                for (size_t i = 0; i < acc.size(); ++i)
                  ASSERT_EQ(0, std::memcmp(&want_acc[i], &acc[i], sizeof(float)))
                      << where << " acc[" << i << "]: got " << acc[i] << " want " << want_acc[i];
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace omnibus
