// The q8_0 KV cache's attention (kernels/kv_quant.h): the same invariances
// as the f16 cache (bits independent of block layout and head split), exact
// arithmetic on the dequantized values up to the f16 softmax numerators, the
// AVX2 path against the reference, and the quantizer itself.
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

// What the cache holds for f16 rows of n_head_kv vectors of head_dim: each
// vector quantized and widened back.
std::vector<float> q8_roundtrip(const std::vector<uint16_t>& rows, int head_dim) {
  std::vector<float> out(rows.size()), vec(head_dim);
  std::vector<int8_t> codes(head_dim);
  std::vector<uint16_t> scales(head_dim / kKvQ8Group);
  for (size_t at = 0; at < rows.size(); at += head_dim) {
    for (int d = 0; d < head_dim; ++d) vec[d] = f16_to_f32(rows[at + d]);
    quantize_kv_q8(vec.data(), head_dim, codes.data(), 1, scales.data(), 1);
    for (int d = 0; d < head_dim; ++d) out[at + d] = codes[d] * f16_to_f32(scales[d / kKvQ8Group]);
  }
  return out;
}

// However positions are cut into blocks and heads into calls, a q8_0 row
// gives the same bits, on every path.
TEST(AttentionQ8Test, BitIdenticalAcrossBlockLayouts) {
  expect_bits_independent_of_blocks(attention_paths(), q8_blocks, 201);
}

// The kernels compute attention over exactly the values the cache holds:
// against double precision on the widened codes the only difference is the
// f16 rounding of the softmax numerators (outputs |v| <= 2, so about
// 2 * 2^-11). And the quantization itself stays small next to f16's.
TEST(AttentionQ8Test, ExactOnTheCachedValuesAndCloseToF16) {
  for (const auto& [name, fn] : attention_paths()) {
    for (float spread : {0.05f, 1.0f, 4.0f}) {
      for (int64_t n_kv : {1, 33, 700}) {
        const AttentionShape base{9, 3, 64, 0.125f};
        auto q = random_floats(9 * 64, 301 + n_kv);
        for (float& x : q) x *= spread;
        const auto k = random_halves(n_kv * 192, 302 + n_kv), v = random_halves(n_kv * 192, 303 + n_kv);
        const auto want = attention_in_double(base, q, q8_roundtrip(k, 64), q8_roundtrip(v, 64), n_kv);
        AttentionShape shape = base;
        Q8Store store;
        const auto runs = q8_blocks(k, v, shape, n_kv, 16, store);
        std::vector<float> got(9 * 64), f16_out(9 * 64), scores(9 * n_kv);
        fn(shape, q.data(), runs, 64, scores.data(), got.data(), 0, 9);
        AttentionShape f16_shape = base;
        std::vector<uint16_t> ks, vs;
        const auto f16_runs = transposed_blocks(k, v, f16_shape, n_kv, 16, ks, vs);
        fn(f16_shape, q.data(), f16_runs, 64, scores.data(), f16_out.data(), 0, 9);
        double worst = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_NEAR(got[i], want[i], 3e-3f) << name << " spread " << spread << " n_kv " << n_kv << " at " << i;
          worst = std::max(worst, static_cast<double>(std::fabs(got[i] - f16_out[i])));
        }
        // Each cached value is within 2/254 of f16's (|x| <= 2); outputs are
        // weighted means of them, with scores moved a little.
        EXPECT_LT(worst, 0.05) << name << " spread " << spread << " n_kv " << n_kv;
      }
    }
  }
}

TEST(AttentionQ8Test, EveryTableMatchesReference) {
  const auto tables = testing_util::runnable_simd_tables();
  if (tables.empty()) GTEST_SKIP() << "this CPU runs no SIMD kernel table";
  for (const KernelTable* t : tables) {
    SCOPED_TRACE(t->name);
    for (int head_dim : {32, 64, 96, 128}) {
      for (int64_t n_kv : {1, 16, 33, 1000}) {
        AttentionShape shape{9, 3, head_dim, 1.0f / std::sqrt(static_cast<float>(head_dim))};
        const auto q = random_floats(9 * head_dim, 401 + n_kv);
        const auto k = random_halves(n_kv * 3 * head_dim, 402 + n_kv),
                   v = random_halves(n_kv * 3 * head_dim, 403 + n_kv);
        Q8Store store;
        const auto runs = q8_blocks(k, v, shape, n_kv, 16, store);
        std::vector<float> want(9 * head_dim), got(9 * head_dim), scores(9 * n_kv);
        ref_row(shape, q.data(), runs, head_dim, scores.data(), want.data(), 0, 9);
        table_row(t)(shape, q.data(), runs, head_dim, scores.data(), got.data(), 0, 9);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 2e-3f) << "head_dim " << head_dim << " n_kv " << n_kv << " at " << i;
      }
    }
  }
}

TEST(KvQuantTest, GroupsRoundTripWithinHalfAStep) {
  std::vector<float> x = random_floats(128, 7);
  x[40] = 0;  // a group's max may sit anywhere
  for (int i = 64; i < 96; ++i) x[i] = 0;  // an all-zero group
  std::vector<int8_t> codes(128 * 3, 99);
  std::vector<uint16_t> scales(4 * 2, 0xFFFF);
  quantize_kv_q8(x.data(), 128, codes.data(), 3, scales.data(), 2);
  for (int g = 0; g < 4; ++g) {
    float amax = 0;
    for (int i = 0; i < kKvQ8Group; ++i) amax = std::max(amax, std::fabs(x[g * kKvQ8Group + i]));
    const float d = f16_to_f32(scales[g * 2]);
    EXPECT_NEAR(d, amax / 127, amax / 127 / 1024) << g;
    EXPECT_EQ(0xFFFF, scales[g * 2 + 1]) << "wrote between strided scales";
    for (int i = 0; i < kKvQ8Group; ++i) {
      const int at = g * kKvQ8Group + i;
      EXPECT_LE(std::abs(codes[at * 3]), 127);
      // Half a step, plus the f16 rounding of the scale times the code.
      EXPECT_NEAR(codes[at * 3] * d, x[at], d / 2 + 127 * d / 1024 + 1e-7f) << at;
      EXPECT_EQ(99, codes[at * 3 + 1]) << "wrote between strided codes";
    }
  }
  EXPECT_EQ(0, f16_to_f32(scales[4]));
}

TEST(KvQuantTest, NonFiniteInputGivesDefinedCodes) {
  std::vector<float> x(32, 1.0f);
  x[3] = NAN;
  x[5] = INFINITY;
  std::vector<int8_t> codes(32);
  uint16_t scale = 0;
  quantize_kv_q8(x.data(), 32, codes.data(), 1, &scale, 1);  // no UB (checked under UBSan)
  for (int8_t c : codes) EXPECT_LE(std::abs(c), 127);
  // A NaN is skipped by the max on both paths (the last lane included), so
  // the scalar and AVX2 bytes still agree.
  x[5] = 1.0f;
  x[31] = NAN;
  std::vector<int8_t> ref_codes(32), avx2_codes(32);
  uint16_t ref_scale = 0, avx2_scale = 0;
  ref::quantize_kv_q8(x.data(), 32, ref_codes.data(), 1, &ref_scale, 1);
  EXPECT_EQ(f32_to_f16(1.0f / 127), ref_scale);
  for (const KernelTable* t : testing_util::runnable_simd_tables()) {
    t->quantize_kv_q8(x.data(), 32, avx2_codes.data(), 1, &avx2_scale, 1);
    EXPECT_EQ(ref_scale, avx2_scale) << t->name;
    EXPECT_EQ(ref_codes, avx2_codes) << t->name;
  }
}

// Every SIMD table's quantizer writes the scalar one's bytes (so the
// cache's contents do not depend on the CPU), contiguous and strided.
TEST(KvQuantTest, EveryTableMatchesScalarBytes) {
  const auto tables = testing_util::runnable_simd_tables();
  if (tables.empty()) GTEST_SKIP() << "this CPU runs no SIMD kernel table";
  for (const KernelTable* t : tables) {
    SCOPED_TRACE(t->name);
    for (float spread : {1e-3f, 1.0f, 300.0f}) {
      auto x = random_floats(256, 11);
      for (float& v : x) v *= spread;
      // Group 0 gets scale 1 * spread: at spread 1, 2.5 and -3.5 are exact
      // ties (nearest even: 2 and -4).
      for (int i = 0; i < kKvQ8Group; ++i) x[i] = std::fmod(x[i], 2.0f);
      x[0] = 127 * spread;
      x[1] = 2.5f * spread;
      x[2] = -3.5f * spread;
      for (int64_t stride : {1, 7}) {
        std::vector<int8_t> want(256 * stride, 3), got(256 * stride, 3);
        std::vector<uint16_t> want_scales(8 * stride, 1), got_scales(8 * stride, 1);
        ref::quantize_kv_q8(x.data(), 256, want.data(), stride, want_scales.data(), stride);
        t->quantize_kv_q8(x.data(), 256, got.data(), stride, got_scales.data(), stride);
        EXPECT_EQ(want, got) << "spread " << spread << " stride " << stride;
        EXPECT_EQ(want_scales, got_scales) << "spread " << spread << " stride " << stride;
        if (spread == 1.0f) {
          EXPECT_EQ(2, got[1 * stride]) << "stride " << stride;
          EXPECT_EQ(-4, got[2 * stride]) << "stride " << stride;
        }
      }
    }
  }
}

}  // namespace
}  // namespace omnibus
