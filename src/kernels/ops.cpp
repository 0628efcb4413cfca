#include "kernels/ops.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernel_table.h"

namespace omnibus {

void rms_norm(const KernelTable& t, const float* x, const float* weight, float* y, int64_t n, float eps) {
  t.rms_norm(x, weight, y, n, eps);
}
void swiglu(const KernelTable& t, float* gate, const float* up, int64_t n) { t.swiglu(gate, up, n); }
void geglu(const KernelTable& t, float* gate, const float* up, int64_t n) { t.geglu(gate, up, n); }
float dot_f32(const KernelTable& t, const float* a, const float* b, int64_t n) { return t.dot_f32(a, b, n); }
void axpy_f32(const KernelTable& t, float alpha, const float* x, float* y, int64_t n) { t.axpy_f32(alpha, x, y, n); }
void f32_to_f16_row(const KernelTable& t, const float* x, uint16_t* y, int64_t n) { t.f32_to_f16_row(x, y, n); }

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  rms_norm(kernels(), x, weight, y, n, eps);
}
void swiglu(float* gate, const float* up, int64_t n) { swiglu(kernels(), gate, up, n); }
void geglu(float* gate, const float* up, int64_t n) { geglu(kernels(), gate, up, n); }
float dot_f32(const float* a, const float* b, int64_t n) { return dot_f32(kernels(), a, b, n); }
void axpy_f32(float alpha, const float* x, float* y, int64_t n) { axpy_f32(kernels(), alpha, x, y, n); }
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) { f32_to_f16_row(kernels(), x, y, n); }

void scale_f32(float alpha, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= alpha;
}
void add_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}
void add_row_bias(const float* bias, float* rows, int64_t n_rows, int64_t width) {
  for (int64_t i = 0; i < n_rows; ++i) add_f32(bias, rows + i * width, width);
}
void swiglu_oai(float* gate, const float* up, int64_t n) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], kLimit);
    const float u = std::clamp(up[i], -kLimit, kLimit);
    gate[i] = g / (1.0f + std::exp(-kAlpha * g)) * (u + 1.0f);
  }
}

}  // namespace omnibus
