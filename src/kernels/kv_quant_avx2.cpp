// AVX2 quantize_kv_q8: the same codes and scales as the scalar loop
// (x * (1 / d), rounded to nearest even), eight values per instruction.
#include <immintrin.h>

#include <cmath>

#include "kernels/kv_quant.h"
#include "tensor/quant.h"

namespace omnibus::avx2 {

void quantize_kv_q8(const float* x, int64_t n, int8_t* codes, int64_t code_stride, uint16_t* scales,
                    int64_t scale_stride) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t g = 0; g * kKvQ8Group < n; ++g) {
    const float* xg = x + g * kKvQ8Group;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int c = 0; c < 4; ++c) {
      v[c] = _mm256_loadu_ps(xg + 8 * c);
      // |v| first: vmaxps returns its second operand when either is NaN, so
      // a NaN input is skipped, as the scalar loop's fmax does.
      amax = _mm256_max_ps(_mm256_andnot_ps(sign, v[c]), amax);
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const float d = _mm_cvtss_f32(m) / 127.0f;
    const __m256 inv = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    scales[g * scale_stride] = f32_to_f16(d);
    __m256i q[4];
    for (int c = 0; c < 4; ++c) {
      // Clamped like the scalar loop (a NaN becomes -127 there and here).
      const __m256 r = _mm256_round_ps(_mm256_mul_ps(v[c], inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q[c] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f)));
    }
    // int32 -> int16 -> int8 packs interleave 128-bit lanes; fix the order.
    const __m256i w01 = _mm256_packs_epi32(q[0], q[1]), w23 = _mm256_packs_epi32(q[2], q[3]);
    const __m256i b = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    int8_t* out = codes + g * kKvQ8Group * code_stride;
    if (code_stride == 1) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), b);
    } else {
      alignas(32) int8_t tmp[kKvQ8Group];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), b);
      for (int i = 0; i < kKvQ8Group; ++i) out[i * code_stride] = tmp[i];
    }
  }
}

}  // namespace omnibus::avx2
