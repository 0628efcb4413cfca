// device_math.cuh on the host: the block decoders, the packed int8 dot and
// the float weight readers against the tensor/ and kernels/ references.
// These run without a GPU (the functions are __host__ __device__ and this
// file is compiled by the C++ compiler); the kernels built on them are
// checked on the device by cuda_kernels_test.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cuda/cuda_test_util.h"
#include "backends/cuda/device_math.cuh"
#include "kernels/matmul_internal.h"

namespace omnibus::cuda {
namespace {

using testing::random_floats;
using testing::random_matrix;

template <int kType>
float host_dot(const uint8_t* row, const matmul_detail::QuantizedX& qx, int64_t r) {
  const int64_t units = qx.cols / 32;
  const int per_scale = units_per_block(kType);
  float sum = 0.0f;
  for (int64_t u = 0; u < units; ++u) {
    int32_t q[8];
    __builtin_memcpy(q, qx.q_row(r) + u * 32, sizeof q);
    sum += unit_dot(decode_unit<kType>(row, u), q, qx.scale[static_cast<size_t>(r * qx.blocks + u / per_scale)]);
  }
  return sum;
}

template <int kType>
void check_decoder() {
  const DType type = static_cast<DType>(kType);
  const int64_t rows = 5, cols = is_k_quant(kType) ? 512 : 96, n_x = 3;
  const testing::HostMatrix m = random_matrix(type, rows, cols, 7 + kType);
  const std::vector<float> x = random_floats(static_cast<size_t>(n_x * cols), 11);
  matmul_detail::QuantizedX qx;
  matmul_detail::quantize_x(type, x.data(), n_x, cols, &qx);
  for (int64_t o = 0; o < rows; ++o) {
    const uint8_t* row = m.bytes.data() + o * m.w.row_bytes;
    // Every weight as the reference dequantizes it.
    for (int64_t k = 0; k < cols; ++k)
      ASSERT_NEAR(unit_value(decode_unit<kType>(row, k / 32), static_cast<int>(k % 32)), m.values[o * cols + k],
                  1e-6f * std::fabs(m.values[o * cols + k]) + 1e-7f)
          << dtype_name(type) << " row " << o << " weight " << k;
    // Every output as the int8 reference computes it (same codes; only the
    // float scaling differs in order).
    for (int64_t r = 0; r < n_x; ++r) {
      double bound = 0;
      for (int64_t k = 0; k < cols; ++k)
        bound += std::fabs(static_cast<double>(m.values[o * cols + k]) * x[r * cols + k]);
      EXPECT_NEAR(host_dot<kType>(row, qx, r), matmul_detail::q8_dot_ref(m.w, o, qx, r), 1e-5 * bound + 1e-6)
          << dtype_name(type) << " row " << o << " x " << r;
    }
  }
}

TEST(CudaDeviceMathOnHost, DecodersMatchTheReferences) {
  check_decoder<kQ4_0>();
  check_decoder<kQ4_1>();
  check_decoder<kQ5_0>();
  check_decoder<kQ5_1>();
  check_decoder<kQ8_0>();
  check_decoder<kQ4_K>();
  check_decoder<kQ5_K>();
  check_decoder<kQ6_K>();
}

template <int kType>
void check_float_weights() {
  const DType type = static_cast<DType>(kType);
  const testing::HostMatrix m = random_matrix(type, 3, 37, 3);
  for (int64_t o = 0; o < 3; ++o)
    for (int64_t k = 0; k < 37; ++k)
      EXPECT_EQ(float_weight<kType>(m.bytes.data() + o * m.w.row_bytes, k), m.values[o * 37 + k]) << dtype_name(type);
}

TEST(CudaDeviceMathOnHost, FloatWeightsMatchTheReference) {
  check_float_weights<kF32>();
  check_float_weights<kF16>();
  check_float_weights<kBF16>();
}

TEST(CudaDeviceMathOnHost, HalfToFloatIsExact) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float a = half_to_float(h), b = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(b)) {
      EXPECT_TRUE(std::isnan(a)) << h;
    } else {
      EXPECT_EQ(a, b) << h;
    }
  }
}

TEST(CudaDeviceMathOnHost, PackedDotIsTheIntegerDot) {
  std::mt19937 rng(5);
  for (int i = 0; i < 1000; ++i) {
    const auto a = static_cast<int32_t>(rng()), b = static_cast<int32_t>(rng());
    int32_t want = 7;
    for (int k = 0; k < 4; ++k)
      want += static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * k)) *
              static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * k));
    EXPECT_EQ(dot_i8x4(a, b, 7), want);
  }
}

TEST(CudaDeviceMathOnHost, QuantizeValueRoundsToNearestEvenAndClamps) {
  EXPECT_EQ(quantize_value(2.5f), 2);
  EXPECT_EQ(quantize_value(3.5f), 4);
  EXPECT_EQ(quantize_value(-2.5f), -2);
  EXPECT_EQ(quantize_value(300.0f), 127);
  EXPECT_EQ(quantize_value(-300.0f), -127);
  EXPECT_EQ(quantize_value(std::nanf("")), -127);
}

}  // namespace
}  // namespace omnibus::cuda
