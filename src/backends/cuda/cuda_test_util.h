// Shared by the CUDA backend's tests: the skip when no GPU is present,
// device copies of host vectors, and random weights of any type.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_buffer.h"
#include "kernels/matmul.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"

// Every test that needs a GPU starts with this: where none is present it
// skips, saying why ("no CUDA device: ..."), so no run reports a pass it
// did not check.
#define OMNIBUS_SKIP_WITHOUT_CUDA_DEVICE()                                             \
  do {                                                                                 \
    const ::omnibus::Status cuda_device_ = ::omnibus::CudaBackend::device_available(); \
    if (!cuda_device_.is_ok()) GTEST_SKIP() << cuda_device_.message();                 \
  } while (0)

namespace omnibus::cuda::testing {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A device copy of `host` (the test fails on a CUDA error).
template <class T>
DeviceBuffer to_device(const std::vector<T>& host) {
  auto buffer = DeviceBuffer::allocate(host.size() * sizeof(T), "test data");
  EXPECT_TRUE(buffer.is_ok()) << buffer.status().to_string();
  if (!buffer.is_ok()) return DeviceBuffer();
  EXPECT_EQ(
      cudaMemcpy(buffer.value().template as<void>(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
      cudaSuccess);
  return std::move(buffer).value();
}

template <class T>
DeviceBuffer zeros_on_device(size_t n) {
  return to_device(std::vector<T>(n));
}

// n elements of the device buffer, after the device has finished.
template <class T>
std::vector<T> to_host(const DeviceBuffer& buffer, size_t n) {
  std::vector<T> host(n);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), buffer.as<void>(), n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

// rows x cols random weights stored as `type` (GGUF's row layout).
struct HostMatrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;             // over `bytes`
  std::vector<float> values;  // the stored weights dequantized (dequantize_row_ref)
};

inline HostMatrix random_matrix(DType type, int64_t rows, int64_t cols, uint32_t seed) {
  HostMatrix m;
  const size_t row_bytes = static_cast<size_t>(dtype_bytes(type, cols).value());
  m.bytes.resize(row_bytes * static_cast<size_t>(rows));
  const std::vector<float> source = random_floats(static_cast<size_t>(rows * cols), seed, 0.5f);
  m.values.resize(source.size());
  for (int64_t o = 0; o < rows; ++o) {
    quantize_row_ref(type, source.data() + o * cols, m.bytes.data() + o * row_bytes, cols);
    dequantize_row_ref(type, m.bytes.data() + o * row_bytes, m.values.data() + o * cols, cols);
  }
  m.w = WeightMatrix{.dtype = type, .data = m.bytes.data(), .rows = rows, .cols = cols, .row_bytes = row_bytes};
  return m;
}

inline const DType kAllWeightTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0,
                                        DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0,
                                        DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

inline bool is_k_type(DType t) { return t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ6_K; }

}  // namespace omnibus::cuda::testing
