#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/ops.h"

namespace omnibus::avx2 {
namespace {

float horizontal_sum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  __m128 shuf = _mm_movehdup_ps(lo);
  __m128 sums = _mm_add_ps(lo, shuf);
  shuf = _mm_movehl_ps(shuf, sums);
  sums = _mm_add_ss(sums, shuf);
  return _mm_cvtss_f32(sums);
}

}  // namespace

float dot_f32(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  float sum = horizontal_sum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  for (; i < n; ++i) y[i] = static_cast<uint16_t>(_cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

void axpy_f32(float alpha, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += alpha * x[i];
}

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  const float mean_square = dot_f32(x, x, n) / static_cast<float>(n);
  const __m256 scale = _mm256_set1_ps(1.0f / std::sqrt(mean_square + eps));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), scale);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, _mm256_loadu_ps(weight + i)));
  }
  const float s = _mm256_cvtss_f32(scale);
  for (; i < n; ++i) y[i] = x[i] * s * weight[i];
}

// e^x for x in about [-87, 88] (inputs outside are clamped), within 2 ulp:
// x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two for an exact-enough
// r), e^r from a degree-7 polynomial (Taylor terms, fine at |r| <= 0.35),
// times 2^n built in the exponent bits.
inline __m256 exp_ps(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i scale = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
}

inline __m256 swiglu8(__m256 g, __m256 up) {
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), up);
}

// gelu(g) * up with gelu's tanh form rewritten as g * sigmoid(2u):
// 0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u)).
inline __m256 geglu8(__m256 g, __m256 up) {
  const __m256 g3 = _mm256_mul_ps(_mm256_mul_ps(g, g), g);
  const __m256 u2 = _mm256_mul_ps(_mm256_fmadd_ps(g3, _mm256_set1_ps(0.044715f), g),
                                  _mm256_set1_ps(2.0f * 0.7978845608028654f));
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), u2));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), up);
}

// gate[i] = f(gate[i], up[i]) eight at a time. The tail goes through the
// same 8-lane arithmetic, so an element's value never depends on where the
// row sits in a batch (batch invariance).
template <class F>
void gated(float* gate, const float* up, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(gate + i, f(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  if (i == n) return;
  alignas(32) float g[8] = {}, u[8] = {};
  std::copy(gate + i, gate + n, g);
  std::copy(up + i, up + n, u);
  _mm256_store_ps(g, f(_mm256_load_ps(g), _mm256_load_ps(u)));
  std::copy(g, g + (n - i), gate + i);
}

void swiglu(float* gate, const float* up, int64_t n) { gated(gate, up, n, swiglu8); }
void geglu(float* gate, const float* up, int64_t n) { gated(gate, up, n, geglu8); }

}  // namespace omnibus::avx2
