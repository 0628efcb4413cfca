// The int8 dot-product probe with AVX-VNNI (VEX vpdpbusd on ymm); compiled
// with its flags (CMakeLists.txt, *_avxvnni.cpp), called only after a CPU
// check.
#include <immintrin.h>

#include "bench/machine_limits.h"

namespace omnibus::bench::detail {

double int8_dot_loop_avxvnni(long iterations) {
  // 32 u8 x s8 products a vpdpbusd, summed into int32; 10 chains.
  __m256i acc[10];
  for (int i = 0; i < 10; ++i) acc[i] = _mm256_set1_epi32(i);
  __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-5);
  for (long it = 0; it < iterations; ++it) {
    asm volatile("" : "+x"(u), "+x"(s));  // opaque operands: nothing to fold
#pragma GCC unroll 10
    for (int i = 0; i < 10; ++i) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], u, s);
  }
  __m256i sum = acc[0];
  for (int i = 1; i < 10; ++i) sum = _mm256_add_epi32(sum, acc[i]);
  volatile int sink = _mm256_extract_epi32(sum, 0);
  (void)sink;
  return static_cast<double>(iterations) * 10 * 32 * 2;
}

}  // namespace omnibus::bench::detail
