#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "kernels/attention.h"
#include "kernels/kernel_table_test_util.h"
#include "kernels/ops.h"
#include "kernels/rope.h"
#include "tensor/quant.h"

namespace omnibus {
namespace {

std::vector<float> random_vector(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Every SIMD kernel table this CPU runs, against the scalar reference.
class OpsSimdTablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tables_ = testing_util::runnable_simd_tables();
    if (tables_.empty()) GTEST_SKIP() << "this CPU runs no SIMD kernel table; only the reference runs";
  }
  std::vector<const KernelTable*> tables_;
};

TEST_F(OpsSimdTablesTest, DotAndAxpyMatchReference) {
  for (const KernelTable* t : tables_) {
    SCOPED_TRACE(t->name);
    for (int64_t n : {1, 7, 8, 33, 64, 4097}) {
      auto a = random_vector(n, 1), b = random_vector(n, 2);
      const float want = ref::dot_f32(a.data(), b.data(), n);
      EXPECT_NEAR(t->dot_f32(a.data(), b.data(), n), want, 1e-4f * n) << n;
      auto y1 = random_vector(n, 3), y2 = y1;
      ref::axpy_f32(0.37f, a.data(), y1.data(), n);
      t->axpy_f32(0.37f, a.data(), y2.data(), n);
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y1[i], y2[i], 1e-5f);
    }
  }
}

TEST_F(OpsSimdTablesTest, RmsNormAndSwigluMatchReference) {
  for (const KernelTable* t : tables_) {
    SCOPED_TRACE(t->name);
    for (int64_t n : {1, 7, 33, 576, 4097}) {
      auto x = random_vector(n, 4), w = random_vector(n, 5);
      std::vector<float> y1(n), y2(n);
      ref::rms_norm(x.data(), w.data(), y1.data(), n, 1e-5f);
      t->rms_norm(x.data(), w.data(), y2.data(), n, 1e-5f);
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y1[i], y2[i], 1e-4f * std::fabs(y1[i]) + 1e-6f);
      auto g1 = random_vector(n, 6), g2 = g1, up = random_vector(n, 7);
      ref::swiglu(g1.data(), up.data(), n);
      t->swiglu(g2.data(), up.data(), n);
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(g1[i], g2[i], 1e-5f);
    }
  }
}

// The vector exp inside swiglu, over the whole range a gate value can take:
// within a few ulp of libm, saturating sanely far out, NaN kept.
TEST_F(OpsSimdTablesTest, SwigluIsAccurateOverTheWholeRange) {
  for (const KernelTable* t : tables_) {
    SCOPED_TRACE(t->name);
    std::vector<float> gate, up;
    for (float g = -120.0f; g <= 120.0f; g += 0.01953125f) gate.push_back(g);
    up.assign(gate.size(), 1.0f);
    std::vector<float> expected = gate, got = gate;
    ref::swiglu(expected.data(), up.data(), static_cast<int64_t>(gate.size()));
    t->swiglu(got.data(), up.data(), static_cast<int64_t>(gate.size()));
    for (size_t i = 0; i < gate.size(); ++i)
      EXPECT_NEAR(got[i], expected[i], 4e-7f * std::fabs(expected[i]) + 1e-30f) << "gate " << gate[i];
    float nan_gate[3] = {std::numeric_limits<float>::quiet_NaN(), 1.0f, -1.0f};
    const float ones[3] = {1.0f, 1.0f, 1.0f};
    t->swiglu(nan_gate, ones, 3);
    EXPECT_TRUE(std::isnan(nan_gate[0]));
    EXPECT_NEAR(nan_gate[1], 1.0f / (1.0f + std::exp(-1.0f)), 1e-7f);
  }
}

// GeGLU (Gemma's MLP) against the tanh formula, over the range a gate
// value can take, and an element's value whatever the call's length.
TEST_F(OpsSimdTablesTest, GegluMatchesTheTanhFormulaAndIsLengthInvariant) {
  for (const KernelTable* t : tables_) {
    SCOPED_TRACE(t->name);
    std::vector<float> gate, up;
    for (float g = -60.0f; g <= 60.0f; g += 0.01953125f) gate.push_back(g);
    up.assign(gate.size(), 1.0f);
    std::vector<float> expected = gate, got = gate;
    ref::geglu(expected.data(), up.data(), static_cast<int64_t>(gate.size()));
    t->geglu(got.data(), up.data(), static_cast<int64_t>(gate.size()));
    for (size_t i = 0; i < gate.size(); ++i)
      EXPECT_NEAR(got[i], expected[i], 2e-6f * std::fabs(gate[i]) + 1e-30f) << "gate " << gate[i];
    const auto g = random_vector(37, 12), u = random_vector(37, 13);
    std::vector<float> whole = g;
    t->geglu(whole.data(), u.data(), 37);
    for (int64_t start : {0, 5, 33}) {
      std::vector<float> part(g.begin() + start, g.end());
      t->geglu(part.data(), u.data() + start, 37 - start);
      for (int64_t i = start; i < 37; ++i) EXPECT_EQ(whole[i], part[i - start]);
    }
  }
}

// Batch invariance: an element's value does not depend on the length of the
// call it is in (the tail uses the vector arithmetic too).
TEST_F(OpsSimdTablesTest, SwigluOfAnElementDoesNotDependOnTheCallLength) {
  for (const KernelTable* t : tables_) {
    SCOPED_TRACE(t->name);
    const auto gate = random_vector(37, 9), up = random_vector(37, 10);
    std::vector<float> whole = gate;
    t->swiglu(whole.data(), up.data(), 37);
    for (int64_t start : {0, 3, 29, 36}) {
      std::vector<float> part(gate.begin() + start, gate.end());
      t->swiglu(part.data(), up.data() + start, static_cast<int64_t>(part.size()));
      for (size_t i = 0; i < part.size(); ++i) EXPECT_EQ(part[i], whole[start + i]) << start << " " << i;
    }
  }
}

TEST(RopeTest, RotationKeepsNormAndMatchesFormula) {
  for (RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
    RopeParams p;
    p.style = style;
    p.rot_dims = 8;
    p.freq_base = 10000.0f;
    std::vector<float> c(4), s(4);
    rope_angles(p, 5, c.data(), s.data());
    auto x = random_vector(16, 8);
    auto y = x;
    apply_rope(p, c.data(), s.data(), y.data(), 2, 8);
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < 4; ++i) {
        const int a = style == RopeStyle::kNormal ? 2 * i : i;
        const int b = style == RopeStyle::kNormal ? 2 * i + 1 : i + 4;
        const double theta = 5.0 * std::pow(10000.0, -2.0 * i / 8);
        const double x0 = x[h * 8 + a], x1 = x[h * 8 + b];
        EXPECT_NEAR(y[h * 8 + a], x0 * std::cos(theta) - x1 * std::sin(theta), 1e-5);
        EXPECT_NEAR(y[h * 8 + b], x0 * std::sin(theta) + x1 * std::cos(theta), 1e-5);
      }
    }
  }
}

TEST(F16RowTest, EveryTableRoundsToNearestEvenLikeTheScalarConverter) {
  std::vector<float> x = random_vector(1000, 3);
  for (auto& v : x) v *= 3e4f;  // through the whole f16 range
  const float edges[] = {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, -70000.0f, 6.0e-8f, 2.98e-8f, 3.0e-8f,
                         6.1e-5f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, INFINITY, -INFINITY, 1e-30f};
  x.insert(x.end(), std::begin(edges), std::end(edges));
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> want(n), got(n);
  for (int64_t i = 0; i < n; ++i) want[i] = f32_to_f16(x[i]);
  ref::f32_to_f16_row(x.data(), got.data(), n);
  EXPECT_EQ(want, got);
  for (const KernelTable* t : testing_util::runnable_simd_tables()) {
    t->f32_to_f16_row(x.data(), got.data(), n);
    EXPECT_EQ(want, got) << t->name;
  }
}

TEST(AttentionTest, MatchesNaiveSoftmaxWithGqa) {
  AttentionShape shape{4, 2, 8, 1.0f / std::sqrt(8.0f)};
  const int64_t n_kv = 5, stride = 2 * 8;
  auto q = random_vector(4 * 8, 9), k = random_vector(n_kv * stride, 10), v = random_vector(n_kv * stride, 11);
  // The cache holds f16: the naive sums below use the rounded values.
  std::vector<uint16_t> kh(k.size()), vh(v.size());
  f32_to_f16_row(k.data(), kh.data(), n_kv * stride);
  f32_to_f16_row(v.data(), vh.data(), n_kv * stride);
  for (size_t i = 0; i < k.size(); ++i) k[i] = f16_to_f32(kh[i]), v[i] = f16_to_f32(vh[i]);
  std::vector<float> out(4 * 8), scores(4 * n_kv);
  attention_row(shape, q.data(), kh.data(), vh.data(), stride, n_kv, scores.data(), out.data(), 0, 4);
  for (int h = 0; h < 4; ++h) {
    const int kvh = h / 2;
    std::vector<double> p(n_kv);
    double mx = -1e30, sum = 0;
    for (int j = 0; j < n_kv; ++j) {
      double d = 0;
      // Q rounded to f16, as the kernels do.
      for (int i = 0; i < 8; ++i) d += double(f16_to_f32(f32_to_f16(q[h * 8 + i]))) * k[j * stride + kvh * 8 + i];
      p[j] = d / std::sqrt(8.0);
      mx = std::max(mx, p[j]);
    }
    for (auto& x : p) sum += (x = f16_to_f32(f32_to_f16(static_cast<float>(std::exp(x - mx)))));
    for (int i = 0; i < 8; ++i) {
      double o = 0;
      for (int j = 0; j < n_kv; ++j) o += p[j] / sum * v[j * stride + kvh * 8 + i];
      EXPECT_NEAR(out[h * 8 + i], o, 2e-3);  // numerators may round to neighbouring f16 values
    }
  }
}

}  // namespace
}  // namespace omnibus
