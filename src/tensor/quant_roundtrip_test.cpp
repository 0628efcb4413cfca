// quantize_row_ref then dequantize_row_ref on random data: the error stays
// within what each format's step size allows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "tensor/quant.h"

namespace omnibus {
namespace {

std::vector<float> random_row(int64_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = dist(rng);
  // A few outliers, as real weights have.
  for (int64_t i = 5; i < n; i += 97) x[static_cast<size_t>(i)] *= 6.0f;
  return x;
}

std::vector<float> round_trip(DType t, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> packed(dtype_bytes(t, n).value());
  std::vector<float> back(x.size(), NAN);
  quantize_row_ref(t, x.data(), packed.data(), n);
  dequantize_row_ref(t, packed.data(), back.data(), n);
  return back;
}

// Root-mean-square error over root-mean-square value.
double relative_rms_error(const std::vector<float>& x, const std::vector<float>& y) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    ref += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(err / ref);
}

struct Bound {
  DType type;
  double max_rms;  // relative RMS error allowed
};

class RoundTrip : public ::testing::TestWithParam<Bound> {};

TEST_P(RoundTrip, ErrorWithinFormatResolution) {
  const Bound b = GetParam();
  for (uint32_t seed : {1u, 2u, 3u}) {
    for (float scale : {0.02f, 1.0f, 300.0f}) {
      const auto x = random_row(768, seed, scale);
      const auto y = round_trip(b.type, x);
      const double rms = relative_rms_error(x, y);
      EXPECT_LT(rms, b.max_rms) << dtype_name(b.type) << " seed " << seed << " scale " << scale;
      EXPECT_GT(rms, 0.0) << "lossy formats must lose something on random data";
    }
  }
}

// Bounds: about 1.3x the worst error measured for these quantizers on this
// data (outliers make some blocks coarse); a broken codec lands near 1.
INSTANTIATE_TEST_SUITE_P(
    AllQuantTypes, RoundTrip,
    ::testing::Values(Bound{DType::kQ8_0, 0.012}, Bound{DType::kQ4_0, 0.20}, Bound{DType::kQ4_1, 0.14},
                      Bound{DType::kQ5_0, 0.09}, Bound{DType::kQ5_1, 0.065}, Bound{DType::kQ4_K, 0.13},
                      Bound{DType::kQ5_K, 0.065}, Bound{DType::kQ6_K, 0.037}, Bound{DType::kQ2_K, 0.44},
                      Bound{DType::kQ3_K, 0.25}, Bound{DType::kIQ4_NL, 0.14}, Bound{DType::kIQ4_XS, 0.145},
                      Bound{DType::kMXFP4, 0.22}, Bound{DType::kF16, 0.0004}, Bound{DType::kBF16, 0.003}),
    [](const auto& info) { return dtype_name(info.param.type); });

// Per-element bound for the 32-element types: no value may be off by more
// than one step (the clamp at the top code can cost up to a whole step).
TEST(RoundTrip, LegacyBlocksStayWithinOneStep) {
  const auto x = random_row(32 * 40, 7, 1.0f);
  const struct {
    DType type;
    bool affine;
    int levels;
  } kinds[] = {{DType::kQ4_0, false, 16},
               {DType::kQ5_0, false, 32},
               {DType::kQ8_0, false, 254},
               {DType::kQ4_1, true, 15},
               {DType::kQ5_1, true, 31}};
  for (const auto& k : kinds) {
    const auto y = round_trip(k.type, x);
    for (size_t b = 0; b < x.size() / 32; ++b) {
      const auto first = x.begin() + static_cast<long>(32 * b);
      const auto [lo, hi] = std::minmax_element(first, first + 32);
      const float amax = std::max(std::fabs(*lo), std::fabs(*hi));
      const float step = k.affine ? (*hi - *lo) / k.levels : 2 * amax / k.levels;
      for (size_t j = 32 * b; j < 32 * b + 32; ++j)
        ASSERT_LE(std::fabs(x[j] - y[j]), 1.01f * step + 1e-3f * amax) << dtype_name(k.type) << " at " << j;
    }
  }
}

TEST(RoundTrip, ConstantAndZeroBlocksAreExact) {
  std::vector<float> x(512, 0.0f);
  for (size_t i = 256; i < 512; ++i) x[i] = 0.5f;  // one zero block, one constant block (K types)
  for (DType t : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0, DType::kQ4_K, DType::kQ5_K,
                  DType::kQ6_K, DType::kQ2_K, DType::kQ3_K, DType::kIQ4_NL, DType::kIQ4_XS, DType::kMXFP4}) {
    const auto y = round_trip(t, x);
    for (size_t i = 0; i < 256; ++i) ASSERT_EQ(y[i], 0.0f) << dtype_name(t);
    for (size_t i = 256; i < 512; ++i) ASSERT_NEAR(y[i], 0.5f, 1e-3f) << dtype_name(t);
  }
}

}  // namespace
}  // namespace omnibus
