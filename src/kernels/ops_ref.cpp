#include <cmath>

#include "kernels/ops.h"
#include "tensor/quant.h"

namespace omnibus::ref {

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  double sum = 0.0;  // double: the mean of squares is the one place precision is cheap
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * weight[i];
}

void swiglu(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void geglu(float* gate, const float* up, int64_t n) {
  constexpr float kC = 0.7978845608028654f;  // sqrt(2 / pi)
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = 0.5f * g * (1.0f + std::tanh(kC * (g + 0.044715f * g * g * g))) * up[i];
  }
}

float dot_f32(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void axpy_f32(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16(x[i]);
}

}  // namespace omnibus::ref
