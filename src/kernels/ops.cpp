#include "kernels/ops.h"

#include "base/cpu_features.h"

namespace omnibus {
namespace {

struct OpsTable {
  void (*rms_norm)(const float*, const float*, float*, int64_t, float);
  void (*swiglu)(float*, const float*, int64_t);
  void (*geglu)(float*, const float*, int64_t);
  float (*dot_f32)(const float*, const float*, int64_t);
  void (*axpy_f32)(float, const float*, float*, int64_t);
  void (*f32_to_f16_row)(const float*, uint16_t*, int64_t);
};

// The one process-wide dispatch table (shared/STYLE.md allows exactly this):
// chosen once from the CPU's features, never changed.
const OpsTable& ops_table() {
  static const OpsTable table = cpu_features().has_avx2_fma()
      ? OpsTable{avx2::rms_norm, avx2::swiglu, avx2::geglu, avx2::dot_f32, avx2::axpy_f32, avx2::f32_to_f16_row}
      : OpsTable{ref::rms_norm, ref::swiglu, ref::geglu, ref::dot_f32, ref::axpy_f32, ref::f32_to_f16_row};
  return table;
}

}  // namespace

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  ops_table().rms_norm(x, weight, y, n, eps);
}
void swiglu(float* gate, const float* up, int64_t n) { ops_table().swiglu(gate, up, n); }
void geglu(float* gate, const float* up, int64_t n) { ops_table().geglu(gate, up, n); }
float dot_f32(const float* a, const float* b, int64_t n) { return ops_table().dot_f32(a, b, n); }
void axpy_f32(float alpha, const float* x, float* y, int64_t n) { ops_table().axpy_f32(alpha, x, y, n); }
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) { ops_table().f32_to_f16_row(x, y, n); }

void scale_f32(float alpha, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= alpha;
}
void add_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace omnibus
