// Every SIMD table's small ops against a scalar model of the avx2 ops'
// arithmetic (ops_avx2.cpp as GCC compiles it: where it fused a multiply
// and an add of its own accord, the model fuses too), bit for bit, as
// matmul_bits_test.cpp does for matmul: on x86 the avx2 table meets the
// model, on aarch64 the neon table, so neon's ops give avx2's bits.
// dot_f32 (and rms_norm, which sums squares with it) is checked for
// lengths with n % 8 < 4 only: avx2's tail of 4 to 7 elements rounds four
// products before adding them, neon's fuses every one (ops_neon.cpp).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernel_table_test_util.h"

namespace omnibus {
namespace {

std::vector<float> random_vector(int64_t n, uint32_t seed, float range) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-range, range);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// avx2::dot_f32: two 8-lane accumulators over 16s, the first over a last 8,
// lanes added, s_l = v_l + v_(l+4), (s0 + s1) + (s2 + s3), then the tail
// fused (n % 8 < 4).
float model_dot(const float* a, const float* b, int64_t n) {
  float acc0[8] = {}, acc1[8] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 8; ++l) {
      acc0[l] = std::fma(a[i + l], b[i + l], acc0[l]);
      acc1[l] = std::fma(a[i + 8 + l], b[i + 8 + l], acc1[l]);
    }
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) acc0[l] = std::fma(a[i + l], b[i + l], acc0[l]);
  float s[4];
  for (int l = 0; l < 4; ++l) s[l] = (acc0[l] + acc1[l]) + (acc0[l + 4] + acc1[l + 4]);
  float sum = (s[0] + s[1]) + (s[2] + s[3]);
  for (; i < n; ++i) sum = std::fma(a[i], b[i], sum);
  return sum;
}

// exp_ps's pieces: e^x ~ p * 2^n.
float model_exp_p(float x, float* two_n) {
  x = std::fmin(std::fmax(x, -87.0f), 88.0f);
  const float n = std::nearbyint(x * 1.44269504088896341f);
  float r = std::fma(-n, 0.693359375f, x);
  r = std::fma(-n, -2.12194440e-4f, r);
  float p = 1.0f / 5040.0f;
  for (float c : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f}) p = std::fma(p, r, c);
  *two_n = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  return p;
}

// g / (1 + e^(minus_t)) * up, the 1 + p * 2^n fused.
float model_gate(float g, float minus_t, float up) {
  float two_n;
  const float p = model_exp_p(minus_t, &two_n);
  return g / std::fma(p, two_n, 1.0f) * up;
}

float model_swiglu(float g, float up) { return model_gate(g, 0.0f - g, up); }

float model_geglu(float g, float up) {
  const float inner = std::fma((g * g) * g, 0.044715f, g);
  return model_gate(g, std::fma(-inner, 2.0f * 0.7978845608028654f, 0.0f), up);
}

class OpsBits : public ::testing::Test {
 protected:
  void SetUp() override {
    tables_ = testing_util::runnable_simd_tables();
    if (tables_.empty()) GTEST_SKIP() << "this CPU runs no SIMD kernel table";
  }
  std::vector<const KernelTable*> tables_;
};

TEST_F(OpsBits, DotAndRmsNormFollowTheAvx2Order) {
  for (const KernelTable* t : tables_) {
    SCOPED_TRACE(t->name);
    for (int64_t n : {1, 3, 8, 16, 35, 576, 4097}) {
      const auto a = random_vector(n, 1, 2.0f), b = random_vector(n, 2, 2.0f), w = random_vector(n, 3, 2.0f);
      EXPECT_TRUE(same_bits(t->dot_f32(a.data(), b.data(), n), model_dot(a.data(), b.data(), n))) << n;
      std::vector<float> y(static_cast<size_t>(n));
      t->rms_norm(a.data(), w.data(), y.data(), n, 1e-5f);
      const float scale = 1.0f / std::sqrt(model_dot(a.data(), a.data(), n) / static_cast<float>(n) + 1e-5f);
      for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same_bits(y[i], a[i] * scale * w[i])) << n << " " << i;
    }
  }
}

TEST_F(OpsBits, AxpyIsOneFmaPerElement) {
  for (const KernelTable* t : tables_) {
    SCOPED_TRACE(t->name);
    for (int64_t n : {1, 7, 8, 37}) {
      const auto x = random_vector(n, 4, 2.0f);
      auto y = random_vector(n, 5, 2.0f);
      const auto before = y;
      t->axpy_f32(0.37f, x.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same_bits(y[i], std::fma(0.37f, x[i], before[i]))) << n << " " << i;
    }
  }
}

TEST_F(OpsBits, SwigluAndGegluFollowTheAvx2Polynomial) {
  std::vector<float> gate;
  for (float g = -100.0f; g <= 100.0f; g += 0.0390625f) gate.push_back(g);
  const auto extra = random_vector(1001, 6, 8.0f);  // odd length: the zero-padded tail
  gate.insert(gate.end(), extra.begin(), extra.end());
  const auto up = random_vector(static_cast<int64_t>(gate.size()), 7, 3.0f);
  const auto n = static_cast<int64_t>(gate.size());
  for (const KernelTable* t : tables_) {
    SCOPED_TRACE(t->name);
    std::vector<float> s = gate, g = gate;
    t->swiglu(s.data(), up.data(), n);
    t->geglu(g.data(), up.data(), n);
    for (size_t i = 0; i < gate.size(); ++i) {
      ASSERT_TRUE(same_bits(s[i], model_swiglu(gate[i], up[i]))) << "swiglu gate " << gate[i];
      ASSERT_TRUE(same_bits(g[i], model_geglu(gate[i], up[i]))) << "geglu gate " << gate[i];
    }
  }
}

}  // namespace
}  // namespace omnibus
