// The bf16 KV cache's attention (--kv-type bf16): the f16 cache's
// invariances (bits independent of block layout and head split, on the
// transposed-K and row-major paths, and with odd head sizes that leave a
// lone vector next to the split-lane pairs), exact arithmetic on the cached
// values up to the f16 softmax numerators, and the AVX2 path against the
// reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/cpu_features.h"
#include "kernels/attention.h"
#include "kernels/attention_test_util.h"
#include "kernels/kv_quant.h"
#include "tensor/quant.h"

namespace omnibus {
namespace {

using namespace attention_test_util;

std::vector<uint16_t> random_bf16(int64_t n, uint32_t seed) { return as_bf16(random_halves(n, seed)); }

std::vector<float> widen_bf16(const std::vector<uint16_t>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = bf16_to_f32(x[i]);
  return out;
}

AttentionShape bf16_shape(int n_head, int n_head_kv, int head_dim) {
  AttentionShape s{n_head, n_head_kv, head_dim, 1.0f / std::sqrt(static_cast<float>(head_dim))};
  s.kv_type = KvCacheType::kBF16;
  return s;
}

// head_dim 24 and 40: a split-lane pair plus a lone vector in order; 72: two
// full 32-float calls and a lone vector.
TEST(AttentionBf16Test, BitIdenticalAcrossBlockLayoutsAndHeadSplits) {
  for (const auto& [name, fn] : attention_paths()) {
    for (int head_dim : {24, 40, 64, 72, 128}) {
      for (int64_t n_kv : {1, 9, 17, 300, 600}) {
        const AttentionShape base = bf16_shape(9, 3, head_dim);
        const int64_t stride = 3 * head_dim;
        const auto q = random_floats(9 * head_dim, 601 + n_kv);
        const auto k = random_bf16(n_kv * stride, 602 + n_kv), v = random_bf16(n_kv * stride, 603 + n_kv);
        std::vector<float> want(9 * head_dim), scores(9 * n_kv);
        AttentionShape one = base;
        std::vector<uint16_t> one_k, one_v;
        const auto one_block = transposed_blocks(k, v, one, n_kv, n_kv, one_k, one_v);
        fn(one, q.data(), one_block, head_dim, scores.data(), want.data(), 0, 9);
        for (bool across : {false, true})  // each head's blocks in a row: the store's layout
          for (int64_t block_size : {1, 5, 16, 100}) {
            AttentionShape shape = base;
            std::vector<uint16_t> ks, vs;
            const auto runs = transposed_blocks(k, v, shape, n_kv, block_size, ks, vs, across);
            std::vector<float> got(9 * head_dim, NAN);
            fn(shape, q.data(), runs, head_dim, scores.data(), got.data(), 0, 4);  // heads cut across a GQA group
            fn(shape, q.data(), runs, head_dim, scores.data(), got.data(), 4, 9);
            EXPECT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * want.size()))
                << name << " head_dim " << head_dim << " n_kv " << n_kv << " block_size " << block_size
                << " across " << across;
          }
      }
    }
  }
}

// Attention in double on the values the cache holds (q rounded to f16 as
// the kernels do): the only difference left is the f16 rounding of the
// softmax numerators. Both K layouts (transposed, the store's; row-major).
TEST(AttentionBf16Test, ExactOnTheCachedValues) {
  for (const auto& [name, fn] : attention_paths()) {
    for (float spread : {0.05f, 1.0f, 4.0f}) {
      for (int64_t n_kv : {1, 33, 700}) {
        const AttentionShape rows = bf16_shape(9, 3, 64);
        auto q = random_floats(9 * 64, 701 + n_kv);
        for (float& x : q) x *= spread;
        const auto k = random_bf16(n_kv * 192, 702 + n_kv), v = random_bf16(n_kv * 192, 703 + n_kv);
        const auto want = attention_in_double(rows, q, widen_bf16(k), widen_bf16(v), n_kv);
        std::vector<float> scores(9 * n_kv);
        AttentionShape transposed = rows;
        std::vector<uint16_t> ks, vs;
        const auto t_runs = transposed_blocks(k, v, transposed, n_kv, 16, ks, vs);
        const KvRun whole{k.data(), v.data(), n_kv};
        for (bool row_major : {false, true}) {
          std::vector<float> got(9 * 64);
          if (row_major) {
            fn(rows, q.data(), std::span(&whole, 1), 192, scores.data(), got.data(), 0, 9);
          } else {
            fn(transposed, q.data(), t_runs, 64, scores.data(), got.data(), 0, 9);
          }
          for (size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 3e-3f)
                << name << (row_major ? " row-major" : " transposed") << " spread " << spread << " n_kv " << n_kv
                << " at " << i;
        }
      }
    }
  }
}

TEST(AttentionBf16Test, EveryTableMatchesReference) {
  const auto tables = testing_util::runnable_simd_tables();
  if (tables.empty()) GTEST_SKIP() << "this CPU runs no SIMD kernel table";
  for (const KernelTable* t : tables) {
    SCOPED_TRACE(t->name);
    for (int head_dim : {24, 64, 128}) {
      for (int64_t n_kv : {1, 16, 33, 1000}) {
        AttentionShape shape = bf16_shape(9, 3, head_dim);
        const auto q = random_floats(9 * head_dim, 801 + n_kv);
        const auto k = random_bf16(n_kv * 3 * head_dim, 802 + n_kv), v = random_bf16(n_kv * 3 * head_dim, 803 + n_kv);
        std::vector<uint16_t> ks, vs;
        const auto runs = transposed_blocks(k, v, shape, n_kv, 16, ks, vs);
        std::vector<float> want(9 * head_dim), got(9 * head_dim), scores(9 * n_kv);
        ref_row(shape, q.data(), runs, head_dim, scores.data(), want.data(), 0, 9);
        table_row(t)(shape, q.data(), runs, head_dim, scores.data(), got.data(), 0, 9);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 2e-3f) << "head_dim " << head_dim << " n_kv " << n_kv << " at " << i;
      }
    }
  }
}

// Names and parsing, as --kv-type spells them.
TEST(KvCacheTypeTest, NamesRoundTrip) {
  for (KvCacheType t : {KvCacheType::kF16, KvCacheType::kQ8_0, KvCacheType::kBF16}) {
    KvCacheType parsed = KvCacheType::kF16;
    ASSERT_TRUE(parse_kv_cache_type(kv_cache_type_name(t), &parsed)) << kv_cache_type_name(t);
    EXPECT_EQ(t, parsed);
  }
  KvCacheType untouched = KvCacheType::kQ8_0;
  EXPECT_FALSE(parse_kv_cache_type("f32", &untouched));
  EXPECT_EQ(KvCacheType::kQ8_0, untouched);
}

}  // namespace
}  // namespace omnibus
