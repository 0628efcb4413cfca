// Test helpers shared by the attention tests: random Q/K/V, each
// implementation of attention_chunk behind attention_row_paged, and the
// paged store's block layout built from rows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "kernels/attention.h"
#include "kernels/kernel_table_test_util.h"
#include "kernels/kv_quant.h"
#include "tensor/quant.h"

namespace omnibus::attention_test_util {

inline std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Random K or V rows in the cache's f16 format.
inline std::vector<uint16_t> random_halves(int64_t n, uint32_t seed) {
  std::vector<uint16_t> h(n);
  const auto f = random_floats(n, seed);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_f16(f[i]);
  return h;
}

// f16 rows re-encoded as bf16 (the bf16 cache's format): each value
// widened, then rounded to bf16.
inline std::vector<uint16_t> as_bf16(const std::vector<uint16_t>& halves) {
  std::vector<uint16_t> out(halves.size());
  for (size_t i = 0; i < halves.size(); ++i) out[i] = f32_to_bf16(f16_to_f32(halves[i]));
  return out;
}

// attention_row_paged on one implementation of attention_chunk.
using PagedFn =
    std::function<void(const AttentionShape&, const float*, std::span<const KvRun>, int64_t, float*, float*, int, int)>;

// attention_row_paged on the scalar reference.
inline void ref_row(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t stride, float* scores,
                    float* out, int h0, int h1) {
  attention_row_paged_with(ref::attention_chunk, s, q, runs, stride, scores, out, h0, h1);
}

// attention_row_paged on `table`'s kernels for the shape at hand
// (resolve_attention: a shape the table cannot take runs its fallback's).
inline PagedFn table_row(const KernelTable* table) {
  return [table](const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t stride, float* scores,
                 float* out, int h0, int h1) {
    attention_row_paged_with(resolve_attention(*table, s).chunk, s, q, runs, stride, scores, out, h0, h1);
  };
}

// The reference ("ref"), then every SIMD table this CPU runs, by name.
inline std::vector<std::pair<const char*, PagedFn>> attention_paths() {
  std::vector<std::pair<const char*, PagedFn>> p = {{"ref", ref_row}};
  for (const KernelTable* t : testing_util::runnable_simd_tables()) p.push_back({t->name, table_row(t)});
  return p;
}

// Attention in double over f32 K and V rows (q rounded to f16, as the kernels
// do), one softmax over all positions.
inline std::vector<float> attention_in_double(const AttentionShape& s, const std::vector<float>& q,
                                       const std::vector<float>& k, const std::vector<float>& v, int64_t n_kv) {
  const int group = s.n_head / s.n_head_kv;
  const int64_t stride = int64_t{s.n_head_kv} * s.head_dim;
  std::vector<float> out(q.size());
  std::vector<double> scores(n_kv);
  for (int h = 0; h < s.n_head; ++h) {
    const int64_t kv = int64_t{h / group} * s.head_dim;
    double max_score = -INFINITY;
    for (int64_t j = 0; j < n_kv; ++j) {
      double dot = 0;
      for (int d = 0; d < s.head_dim; ++d)
        dot += static_cast<double>(f16_to_f32(f32_to_f16(q[h * s.head_dim + d]))) * k[j * stride + kv + d];
      scores[j] = dot * s.scale;
      max_score = std::max(max_score, scores[j]);
    }
    double sum = 0;
    for (double& x : scores) sum += (x = std::exp(x - max_score));
    for (int d = 0; d < s.head_dim; ++d) {
      double acc = 0;
      for (int64_t j = 0; j < n_kv; ++j) acc += scores[j] * v[j * stride + kv + d];
      out[h * s.head_dim + d] = static_cast<float>(acc / sum);
    }
  }
  return out;
}

// The paged store's layout: blocks of `block_size` positions, V as
// [kv_head][offset][head_dim] and K transposed, [kv_head][head_dim][offset]
// (plus kTransposedKeyOverread readable elements after the last block).
// The elements are copied as they are: f16, or bf16 when shape.kv_type says
// so. Unwritten slots hold NaN. Sets shape's strides; returns one run per
// block.
inline std::vector<KvRun> transposed_blocks(const std::vector<uint16_t>& keys, const std::vector<uint16_t>& values,
                                     AttentionShape& shape, int64_t n_kv, int64_t block_size,
                                     std::vector<uint16_t>& key_store, std::vector<uint16_t>& value_store,
                                     bool heads_across_blocks = false) {
  const int n_head_kv = shape.n_head_kv, head_dim = shape.head_dim;
  const int64_t blocks = (n_kv + block_size - 1) / block_size, kv_dim = int64_t{n_head_kv} * head_dim;
  const uint16_t nan = shape.kv_type == KvCacheType::kBF16 ? 0x7FC0 : 0x7E00;  // unread slots
  key_store.assign(blocks * block_size * kv_dim + kTransposedKeyOverread, nan);
  value_store.assign(blocks * block_size * kv_dim, nan);
  // heads_across_blocks: [kv_head][block][...], each head's blocks in a row
  // (PagedKvStore's layout); otherwise [block][kv_head][...].
  auto head_base = [&](int64_t b, int h) { return (h * blocks + b) * block_size * head_dim; };
  std::vector<KvRun> runs;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t count = std::min(block_size, n_kv - b * block_size), base = b * block_size * kv_dim;
    for (int64_t o = 0; o < count; ++o)
      for (int h = 0; h < n_head_kv; ++h)
        for (int d = 0; d < head_dim; ++d) {
          const int64_t from = (b * block_size + o) * kv_dim + h * head_dim + d;
          const int64_t head = heads_across_blocks ? head_base(b, h) : base + h * block_size * head_dim;
          key_store[head + d * block_size + o] = keys[from];
          value_store[head + o * head_dim + d] = values[from];
        }
    const int64_t first = heads_across_blocks ? head_base(b, 0) : base;
    runs.push_back({key_store.data() + first, value_store.data() + first, count});
  }
  shape.kv_head_stride = heads_across_blocks ? blocks * block_size * head_dim : block_size * head_dim;
  shape.k_dim_stride = block_size;
  return runs;
}

// A q8_0 cache's buffers (kernels/kv_quant.h) for q8_blocks.
struct Q8Store {
  std::vector<int8_t> key_codes, value_codes;
  std::vector<uint16_t> key_scales, value_scales;
};

// q8_0 version of transposed_blocks: each head's vector of `keys` and
// `values` (f16 rows of n_head_kv * head_dim) widened and quantized, codes
// in the f16 layout, K's and V's scales [kv_head][group][offset] per block. Unwritten scale slots hold f16 NaN.
// Sets shape's type and strides; returns one run per block.
inline std::vector<KvRun> q8_blocks(const std::vector<uint16_t>& keys, const std::vector<uint16_t>& values,
                                    AttentionShape& shape, int64_t n_kv, int64_t block_size, Q8Store& store) {
  const int n_head_kv = shape.n_head_kv, head_dim = shape.head_dim, groups = head_dim / kKvQ8Group;
  const int64_t blocks = (n_kv + block_size - 1) / block_size, kv_dim = int64_t{n_head_kv} * head_dim;
  const int64_t elements = blocks * block_size * kv_dim, scales = elements / kKvQ8Group;
  store.key_codes.assign(elements + kTransposedKeyOverread, -128);
  store.value_codes.assign(elements, -128);
  store.key_scales.assign(scales + kTransposedKeyOverread, 0x7E00);
  store.value_scales.assign(scales, 0x7E00);
  std::vector<float> head(head_dim);
  std::vector<KvRun> runs;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t count = std::min(block_size, n_kv - b * block_size);
    const int64_t base = b * block_size * kv_dim, scale_base = base / kKvQ8Group;
    for (int64_t o = 0; o < count; ++o)
      for (int h = 0; h < n_head_kv; ++h) {
        const int64_t from = (b * block_size + o) * kv_dim + int64_t{h} * head_dim;
        for (int d = 0; d < head_dim; ++d) head[d] = f16_to_f32(keys[from + d]);
        quantize_kv_q8(head.data(), head_dim, store.key_codes.data() + base + int64_t{h} * head_dim * block_size + o,
                       block_size, store.key_scales.data() + scale_base + int64_t{h} * groups * block_size + o,
                       block_size);
        for (int d = 0; d < head_dim; ++d) head[d] = f16_to_f32(values[from + d]);
        quantize_kv_q8(head.data(), head_dim, store.value_codes.data() + base + (h * block_size + o) * head_dim, 1,
                       store.value_scales.data() + scale_base + int64_t{h} * groups * block_size + o,
                       block_size);
      }
    KvRun run;
    run.count = count;
    run.k_q = store.key_codes.data() + base;
    run.v_q = store.value_codes.data() + base;
    run.k_scale = store.key_scales.data() + scale_base;
    run.v_scale = store.value_scales.data() + scale_base;
    runs.push_back(run);
  }
  shape.kv_type = KvCacheType::kQ8_0;
  shape.kv_head_stride = block_size * head_dim;
  shape.k_dim_stride = block_size;
  shape.scale_head_stride = block_size * groups;
  return runs;
}

// q4_0 version of q8_blocks (the same store struct: packed bytes in the
// code vectors): each head's vector quantized by quantize_kv_q4 and packed
// as the paged store packs it, blocks as [block][kv_head] (K: head_dim / 8
// octet rows of 4 * block_size bytes; V: head_dim / 2 bytes a position),
// plus 64 readable bytes after the last block. Unwritten bytes hold 0xEE,
// unwritten scales f16 NaN. Sets shape's type and strides.
inline std::vector<KvRun> q4_blocks(const std::vector<uint16_t>& keys, const std::vector<uint16_t>& values,
                                    AttentionShape& shape, int64_t n_kv, int64_t block_size, Q8Store& store) {
  const int n_head_kv = shape.n_head_kv, head_dim = shape.head_dim, groups = head_dim / kKvQ8Group;
  const int64_t blocks = (n_kv + block_size - 1) / block_size, kv_dim = int64_t{n_head_kv} * head_dim;
  const int64_t elements = blocks * block_size * kv_dim, scales = elements / kKvQ8Group;
  store.key_codes.assign(elements / 2 + 64, static_cast<int8_t>(0xEE));
  store.value_codes.assign(elements / 2, static_cast<int8_t>(0xEE));
  store.key_scales.assign(scales + kTransposedKeyOverread, 0x7E00);
  store.value_scales.assign(scales, 0x7E00);
  std::vector<float> head(head_dim);
  std::vector<uint8_t> codes(head_dim);
  auto* key_bytes = reinterpret_cast<uint8_t*>(store.key_codes.data());
  auto* value_bytes = reinterpret_cast<uint8_t*>(store.value_codes.data());
  std::vector<KvRun> runs;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t count = std::min(block_size, n_kv - b * block_size);
    const int64_t base = b * block_size * kv_dim, scale_base = base / kKvQ8Group;
    for (int64_t o = 0; o < count; ++o)
      for (int h = 0; h < n_head_kv; ++h) {
        const int64_t from = (b * block_size + o) * kv_dim + int64_t{h} * head_dim;
        const int64_t head_bytes = (base + int64_t{h} * head_dim * block_size) / 2;
        for (int d = 0; d < head_dim; ++d) head[d] = f16_to_f32(keys[from + d]);
        quantize_kv_q4(head.data(), head_dim, codes.data(),
                       store.key_scales.data() + scale_base + int64_t{h} * groups * block_size + o, block_size);
        pack_key_q4(codes.data(), head_dim, 4 * block_size, key_bytes + head_bytes + 4 * o);
        for (int d = 0; d < head_dim; ++d) head[d] = f16_to_f32(values[from + d]);
        quantize_kv_q4(head.data(), head_dim, codes.data(),
                       store.value_scales.data() + scale_base + int64_t{h} * groups * block_size + o, block_size);
        pack_value_q4(codes.data(), head_dim, value_bytes + head_bytes + o * head_dim / 2);
      }
    KvRun run;
    run.count = count;
    run.k_q = store.key_codes.data() + base / 2;
    run.v_q = store.value_codes.data() + base / 2;
    run.k_scale = store.key_scales.data() + scale_base;
    run.v_scale = store.value_scales.data() + scale_base;
    runs.push_back(run);
  }
  shape.kv_type = KvCacheType::kQ4_0;
  shape.kv_head_stride = block_size * head_dim;
  shape.k_dim_stride = block_size;
  shape.scale_head_stride = block_size * groups;
  return runs;
}

// What a q4_0 cache holds for f16 rows of head_dim vectors: each vector
// quantized and widened back, d * (code - 8).
inline std::vector<float> q4_roundtrip(const std::vector<uint16_t>& rows, int head_dim) {
  std::vector<float> out(rows.size()), vec(head_dim);
  std::vector<uint8_t> codes(head_dim);
  std::vector<uint16_t> scales(head_dim / kKvQ8Group);
  for (size_t at = 0; at < rows.size(); at += head_dim) {
    for (int d = 0; d < head_dim; ++d) vec[d] = f16_to_f32(rows[at + d]);
    quantize_kv_q4(vec.data(), head_dim, codes.data(), scales.data(), 1);
    for (int d = 0; d < head_dim; ++d) out[at + d] = (codes[d] - 8) * f16_to_f32(scales[d / kKvQ8Group]);
  }
  return out;
}

// However positions are cut into blocks (1, 5, 16, 100 positions) and heads
// into calls (across a GQA group), a row over the blocks `blocks(k, v,
// shape, n_kv, block_size, store)` lays out (q8_blocks, q4_blocks) gives
// the bits of the same row over one block, on each path. seed: the random
// data's.
template <class Blocks>
void expect_bits_independent_of_blocks(const std::vector<std::pair<const char*, PagedFn>>& paths, Blocks&& blocks,
                                       uint32_t seed) {
  for (const auto& [name, fn] : paths) {
    for (int head_dim : {32, 64, 128}) {
      for (int64_t n_kv : {1, 9, 17, 300, 600}) {
        const AttentionShape base{9, 3, head_dim, 1.0f / std::sqrt(static_cast<float>(head_dim))};
        const int64_t stride = 3 * head_dim;
        const auto q = random_floats(9 * head_dim, seed + n_kv);
        const auto k = random_halves(n_kv * stride, seed + 1 + n_kv), v = random_halves(n_kv * stride, seed + 2 + n_kv);
        std::vector<float> want(9 * head_dim), scores(9 * n_kv);
        AttentionShape one = base;
        Q8Store one_store;
        const auto one_block = blocks(k, v, one, n_kv, n_kv, one_store);
        fn(one, q.data(), one_block, head_dim, scores.data(), want.data(), 0, 9);
        for (int64_t block_size : {1, 5, 16, 100}) {
          AttentionShape shape = base;
          Q8Store store;
          const auto runs = blocks(k, v, shape, n_kv, block_size, store);
          std::vector<float> got(9 * head_dim, NAN);
          fn(shape, q.data(), runs, head_dim, scores.data(), got.data(), 0, 4);
          fn(shape, q.data(), runs, head_dim, scores.data(), got.data(), 4, 9);
          EXPECT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * want.size()))
              << name << " head_dim " << head_dim << " n_kv " << n_kv << " block_size " << block_size;
        }
      }
    }
  }
}

}  // namespace omnibus::attention_test_util
