// AVX2+FMA probes; compiled with -mavx2 -mfma, called only after a CPU check.
#include <immintrin.h>

#include "bench/machine_limits.h"

namespace omnibus::bench::detail {

double fma_loop_avx2(long iterations) {
  // 12 independent chains cover FMA latency (4-5 cycles) times two FMA ports.
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iterations; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm256_add_ps(sum, acc[i]);
  volatile float sink = _mm256_cvtss_f32(sum);
  (void)sink;
  return static_cast<double>(iterations) * 12 * 8 * 2;
}

double int8_dot_loop_avx2(long iterations) {
  // What the kernels without VNNI do for 32 u8 x s8 products: vpmaddubsw
  // into int16 pair sums, added up in int16 (they widen a sum to int32
  // only every few products, a cost left out here). Eight distinct
  // products a round from operands the compiler cannot see through (or it
  // would hoist them out of the loop), eight chains.
  __m256i acc[8], u[4];
  for (int i = 0; i < 8; ++i) acc[i] = _mm256_set1_epi16(static_cast<int16_t>(i));
  for (int i = 0; i < 4; ++i) u[i] = _mm256_set1_epi8(static_cast<char>(3 + i));
  __m256i s0 = _mm256_set1_epi8(-5), s1 = _mm256_set1_epi8(7);
  for (long it = 0; it < iterations; ++it) {
    asm volatile("" : "+x"(u[0]), "+x"(u[1]), "+x"(u[2]), "+x"(u[3]), "+x"(s0), "+x"(s1));
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) acc[i] = _mm256_add_epi16(acc[i], _mm256_maddubs_epi16(u[i % 4], i < 4 ? s0 : s1));
  }
  __m256i sum = acc[0];
  for (int i = 1; i < 8; ++i) sum = _mm256_add_epi16(sum, acc[i]);
  volatile int sink = _mm256_extract_epi16(sum, 0);
  (void)sink;
  return static_cast<double>(iterations) * 8 * 32 * 2;
}

float read_sum_avx2(const float* data, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_add_ps(s0, _mm256_load_ps(data + i));
    s1 = _mm256_add_ps(s1, _mm256_load_ps(data + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_load_ps(data + i + 16));
    s3 = _mm256_add_ps(s3, _mm256_load_ps(data + i + 24));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  float total = 0;
  for (float v : lanes) total += v;
  for (; i < n; ++i) total += data[i];
  return total;
}

}  // namespace omnibus::bench::detail
