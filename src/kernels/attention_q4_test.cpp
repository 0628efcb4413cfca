// The q4_0 KV cache (kernels/kv_quant.h): its quantizer against ggml's
// rule on known values, and its attention: bits independent of block
// layout and head split, and close to double-precision attention over the
// values the cache holds with Q as the q8_0 codes the scores use.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/cpu_features.h"
#include "kernels/attention.h"
#include "kernels/attention_q4.h"
#include "kernels/attention_test_util.h"
#include "kernels/kv_quant.h"
#include "tensor/quant.h"

namespace omnibus {
namespace {

using namespace attention_test_util;

TEST(KvQuantQ4Test, FollowsGgmlRule) {
  std::vector<float> x(64, 0.0f);
  // Group 0: the largest magnitude is -4, so d = -4 / -8 = 0.5, and codes
  // are trunc(x / 0.5 + 8.5) capped at 15.
  x[0] = 1.0f;    // 10.5 -> 10
  x[1] = 0.3f;    // 9.1 -> 9
  x[2] = -4.0f;   // 0.5 -> 0
  x[3] = 3.9f;    // 16.3 -> 15 (capped)
  x[4] = -0.25f;  // 8.0 -> 8
  x[5] = 0.25f;   // 9.0 -> 9 (a tie goes up: + 8.5 then truncation)
  // Group 1 all zero: scale 0, codes 8.
  std::vector<uint8_t> codes(64, 99);
  uint16_t scales[2] = {1, 1};
  quantize_kv_q4(x.data(), 64, codes.data(), scales, 1);
  EXPECT_EQ(f32_to_f16(0.5f), scales[0]);
  EXPECT_EQ(10, codes[0]);
  EXPECT_EQ(9, codes[1]);
  EXPECT_EQ(0, codes[2]);
  EXPECT_EQ(15, codes[3]);
  EXPECT_EQ(8, codes[4]);
  EXPECT_EQ(9, codes[5]);
  EXPECT_EQ(8, codes[6]);
  EXPECT_EQ(0.0f, f16_to_f32(scales[1]));
  for (int i = 32; i < 64; ++i) EXPECT_EQ(8, codes[i]) << i;
  // A positive extreme gives a negative scale: 4 -> d = -0.5, code 0.
  x[2] = 4.0f;
  quantize_kv_q4(x.data(), 32, codes.data(), scales, 1);
  EXPECT_EQ(f32_to_f16(-0.5f), scales[0]);
  EXPECT_EQ(0, codes[2]);
  EXPECT_EQ(6, codes[0]);  // 1 / -0.5 + 8.5 = 6.5 -> 6
}

TEST(KvQuantQ4Test, RoundTripsWithinHalfAStepAndNonFiniteStaysInRange) {
  auto x = random_floats(256, 5);
  std::vector<uint8_t> codes(256);
  std::vector<uint16_t> scales(8);
  quantize_kv_q4(x.data(), 256, codes.data(), scales.data(), 1);
  for (int i = 0; i < 256; ++i) {
    const float d = f16_to_f32(scales[i / 32]);
    ASSERT_LE(codes[i], 15);
    // Half a step, plus the f16 rounding of the scale times the code; a
    // whole step at code 15, where values up to -m (m the extreme, at
    // code 0) are capped at 7d (q4_0's range is -8d .. 7d).
    const float steps = codes[i] == 15 ? 1.0f : 0.5f;
    EXPECT_NEAR((codes[i] - 8) * d, x[i], std::fabs(d) * (steps + 8.0f / 1024) + 1e-6f) << i;
  }
  x[3] = NAN;
  x[40] = INFINITY;
  quantize_kv_q4(x.data(), 64, codes.data(), scales.data(), 1);  // no UB (checked under UBSan)
  for (int i = 0; i < 64; ++i) EXPECT_LE(codes[i], 15) << i;
}

TEST(KvQuantQ4Test, PacksBothLayouts) {
  std::vector<uint8_t> codes(64);
  for (int d = 0; d < 64; ++d) codes[d] = static_cast<uint8_t>((d * 7) % 16);
  std::vector<uint8_t> key(8 * 12, 0xEE), value(32, 0xEE);
  pack_key_q4(codes.data(), 64, 12, key.data());
  for (int o = 0; o < 8; ++o) {
    for (int b = 0; b < 4; ++b) {
      EXPECT_EQ(codes[8 * o + b], key[o * 12 + b] & 15) << o << " " << b;
      EXPECT_EQ(codes[8 * o + 4 + b], key[o * 12 + b] >> 4) << o << " " << b;
    }
    EXPECT_EQ(0xEE, key[o * 12 + 4]) << "wrote past a position's four bytes";
  }
  pack_value_q4(codes.data(), 64, value.data());
  for (int d = 0; d < 64; ++d) {
    const uint8_t byte = value[d / 32 * 16 + d % 16];
    EXPECT_EQ(codes[d], d % 32 < 16 ? byte & 15 : byte >> 4) << d;
  }
}

// However positions are cut into blocks and heads into calls, a q4_0 row
// gives the same bits, on every path.
TEST(AttentionQ4Test, BitIdenticalAcrossBlockLayouts) {
  expect_bits_independent_of_blocks(attention_paths(), q4_blocks, 501);
}

// The SIMD paths give the same bits as each other (exact integer group sums,
// then the same float steps per position), whatever the heads per call and
// block sizes; the reference (libm exp, a sequential sum) stays close.
TEST(AttentionQ4Test, SimdPathsAgreeBitForBitAndWithTheReference) {
  const auto p = attention_paths();
  if (p.size() < 2) GTEST_SKIP() << "no SIMD path for q4_0 on this CPU";
  for (int head_dim : {32, 64, 96, 128, 256}) {
    for (int64_t n_kv : {1, 7, 16, 33, 255, 256, 700}) {
      for (int64_t block_size : {5, 16, 32}) {
        const AttentionShape base{8, 2, head_dim, 1.0f / std::sqrt(static_cast<float>(head_dim))};
        const auto q = random_floats(8 * head_dim, 701 + n_kv);
        const auto k = random_halves(n_kv * 2 * head_dim, 702 + n_kv);
        const auto v = random_halves(n_kv * 2 * head_dim, 703 + n_kv);
        AttentionShape shape = base;
        Q8Store store;
        const auto runs = q4_blocks(k, v, shape, n_kv, block_size, store);
        std::vector<float> scores(8 * n_kv), want(8 * head_dim);
        p[0].second(shape, q.data(), runs, head_dim, scores.data(), want.data(), 0, 8);
        std::vector<float> first;
        for (size_t i = 1; i < p.size(); ++i) {
          std::vector<float> got(8 * head_dim, NAN);
          p[i].second(shape, q.data(), runs, head_dim, scores.data(), got.data(), 0, 3);
          p[i].second(shape, q.data(), runs, head_dim, scores.data(), got.data(), 3, 8);
          for (size_t e = 0; e < got.size(); ++e)
            ASSERT_NEAR(got[e], want[e], 2e-3f) << p[i].first << " head_dim " << head_dim << " n_kv " << n_kv << " at " << e;
          if (first.empty()) first = got;
          EXPECT_EQ(0, std::memcmp(first.data(), got.data(), sizeof(float) * got.size()))
              << p[i].first << " vs " << p[1].first << " head_dim " << head_dim << " n_kv " << n_kv << " block "
              << block_size;
        }
      }
    }
  }
}

// Q as the scores see it: each head's q8_0 codes times their scales.
std::vector<float> q_as_q8(const std::vector<float>& q, int head_dim) {
  std::vector<float> out(q.size());
  Q4Query qq;
  for (size_t at = 0; at < q.size(); at += head_dim) {
    quantize_q4_query(q.data() + at, head_dim, &qq);
    for (int d = 0; d < head_dim; ++d) out[at + d] = qq.codes[d] * qq.scale[d / kKvQ8Group];
  }
  return out;
}

// Against double precision over the cached values and Q's q8_0 codes, the
// differences are the float rounding of the score steps, the f16 rounding
// of the softmax numerators and of Q in the double reference.
TEST(AttentionQ4Test, ExactOnTheCachedValues) {
  for (const auto& [name, fn] : attention_paths()) {
    for (float spread : {0.05f, 1.0f, 4.0f}) {
      for (int64_t n_kv : {1, 33, 700}) {
        const AttentionShape base{9, 3, 64, 0.125f};
        auto q = random_floats(9 * 64, 601 + n_kv);
        for (float& x : q) x *= spread;
        const auto k = random_halves(n_kv * 192, 602 + n_kv), v = random_halves(n_kv * 192, 603 + n_kv);
        const auto want = attention_in_double(base, q_as_q8(q, 64), q4_roundtrip(k, 64), q4_roundtrip(v, 64), n_kv);
        AttentionShape shape = base;
        Q8Store store;
        const auto runs = q4_blocks(k, v, shape, n_kv, 16, store);
        std::vector<float> got(9 * 64), scores(9 * n_kv);
        fn(shape, q.data(), runs, 64, scores.data(), got.data(), 0, 9);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 4e-3f) << name << " spread " << spread << " n_kv " << n_kv << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace omnibus
