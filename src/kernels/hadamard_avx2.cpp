// The AVX2 hadamard_blocks (kernels/hadamard.h): the scalar transform's
// adds and subtracts, eight lanes at a time, so the same bits. Stages 1, 2
// and 4 pair lanes inside a vector (a permute, an add, a subtract, a blend);
// stages from 8 pair whole vectors.
#include <immintrin.h>

#include <cmath>

#include "kernels/hadamard.h"

namespace omnibus::avx2 {

void hadamard_blocks(float* x, int64_t count, int n) {
  const __m256 scale = _mm256_set1_ps(1.0f / std::sqrt(static_cast<float>(n)));
  for (int64_t b = 0; b < count; ++b) {
    float* v = x + b * n;
    for (int i = 0; i < n; i += 8) {
      __m256 a = _mm256_loadu_ps(v + i);
      // Lane i gets a_i + a_partner when i is the lower of the pair,
      // a_partner - a_i (= lower - upper) when it is the upper, as the
      // scalar (a + c, a - c).
      __m256 p = _mm256_permute_ps(a, 0xB1);
      a = _mm256_blend_ps(_mm256_add_ps(a, p), _mm256_sub_ps(p, a), 0xAA);
      p = _mm256_permute_ps(a, 0x4E);
      a = _mm256_blend_ps(_mm256_add_ps(a, p), _mm256_sub_ps(p, a), 0xCC);
      p = _mm256_permute2f128_ps(a, a, 1);
      a = _mm256_blend_ps(_mm256_add_ps(a, p), _mm256_sub_ps(p, a), 0xF0);
      _mm256_storeu_ps(v + i, a);
    }
    for (int s = 8; s < n; s *= 2)
      for (int i0 = 0; i0 < n; i0 += 2 * s)
        for (int i = i0; i < i0 + s; i += 8) {
          const __m256 a = _mm256_loadu_ps(v + i), c = _mm256_loadu_ps(v + i + s);
          _mm256_storeu_ps(v + i, _mm256_add_ps(a, c));
          _mm256_storeu_ps(v + i + s, _mm256_sub_ps(a, c));
        }
    for (int i = 0; i < n; i += 8) _mm256_storeu_ps(v + i, _mm256_mul_ps(_mm256_loadu_ps(v + i), scale));
  }
}

}  // namespace omnibus::avx2
