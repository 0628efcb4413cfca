#include "kernels/ops.h"

#include "kernels/kernel_table.h"

namespace omnibus {

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  kernels().rms_norm(x, weight, y, n, eps);
}
void swiglu(float* gate, const float* up, int64_t n) { kernels().swiglu(gate, up, n); }
void geglu(float* gate, const float* up, int64_t n) { kernels().geglu(gate, up, n); }
float dot_f32(const float* a, const float* b, int64_t n) { return kernels().dot_f32(a, b, n); }
void axpy_f32(float alpha, const float* x, float* y, int64_t n) { kernels().axpy_f32(alpha, x, y, n); }
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) { kernels().f32_to_f16_row(x, y, n); }

void scale_f32(float alpha, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= alpha;
}
void add_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace omnibus
