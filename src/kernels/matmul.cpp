// matmul(): picks the SIMD path once and splits the weight rows across the
// thread pool. Splitting by weight rows keeps batch invariance trivial: every
// output is computed whole by one thread, in an order fixed by the kernel.
#include "kernels/matmul.h"

#include <algorithm>

#include "base/cpu_features.h"
#include "kernels/matmul_internal.h"

namespace omnibus {
namespace {

// Rows handed out together: a multiple of every kernel's row tile, so
// threads never break a tile (only for speed; results do not depend on it).
constexpr int64_t kRowUnit = 16;

// Below this many multiply-adds a job is not worth waking the pool for.
constexpr int64_t kMinParallelWork = 1 << 16;

using RowsFn = void (*)(const matmul_detail::MatmulArgs&, int64_t, int64_t);
using QuantizeFn = void (*)(DType, const float*, int64_t, int64_t, matmul_detail::QuantizedX*);

RowsFn pick_rows_fn() { return cpu_features().has_avx2_fma() ? matmul_detail::rows_avx2 : matmul_detail::rows_scalar; }

QuantizeFn pick_quantize_fn() {
  return cpu_features().has_avx2_fma() ? matmul_detail::quantize_x_avx2 : matmul_detail::quantize_x;
}

}  // namespace

const char* matmul_path_name() { return cpu_features().has_avx2_fma() ? "avx2+fma" : "scalar"; }

void matmul(const WeightMatrix& w, const float* x, int64_t n_x, float* y, ThreadPool* pool) {
  if (n_x <= 0 || w.rows <= 0) return;
  static const RowsFn rows_fn = pick_rows_fn();
  static const QuantizeFn quantize_fn = pick_quantize_fn();
  // The int8 form of x, made once here and read by every thread. The
  // buffers belong to the calling thread and keep their capacity.
  thread_local matmul_detail::QuantizedX qx;
  const bool int8 = matmul_detail::act_format(w.dtype) != matmul_detail::ActFormat::kFloat;
  if (int8) quantize_fn(w.dtype, x, n_x, w.cols, &qx);
  const matmul_detail::MatmulArgs args{&w, x, int8 ? &qx : nullptr, n_x, y};
  const int64_t work = n_x * w.rows * w.cols;
  if (pool == nullptr || pool->size() == 1 || work < kMinParallelWork) {
    rows_fn(args, 0, w.rows);
    return;
  }
  const int64_t units = (w.rows + kRowUnit - 1) / kRowUnit;
  pool->run([&](int index, int count) {
    const int64_t begin = std::min(w.rows, units * index / count * kRowUnit);
    const int64_t end = std::min(w.rows, units * (index + 1) / count * kRowUnit);
    if (begin < end) rows_fn(args, begin, end);
  });
}

}  // namespace omnibus
