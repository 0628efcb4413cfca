// The int8 dot-product probe with AVX-512 VNNI; compiled with its flags
// (CMakeLists.txt, *_avx512vnni.cpp), called only after a CPU check.
#include <immintrin.h>

#include "bench/machine_limits.h"

namespace omnibus::bench::detail {

double int8_dot_loop_avx512vnni(long iterations) {
  // vpdpbusd on zmm: 64 u8 x s8 products a lane group, summed into int32;
  // 10 chains cover its latency at the issue rate of the quantized kernels'
  // batch tiles.
  __m512i acc[10];
  for (int i = 0; i < 10; ++i) acc[i] = _mm512_set1_epi32(i);
  __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-5);
  for (long it = 0; it < iterations; ++it) {
    asm volatile("" : "+v"(u), "+v"(s));  // opaque operands: nothing to fold
#pragma GCC unroll 10
    for (int i = 0; i < 10; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], u, s);
  }
  __m512i sum = acc[0];
  for (int i = 1; i < 10; ++i) sum = _mm512_add_epi32(sum, acc[i]);
  alignas(64) int lanes[16];
  _mm512_store_si512(lanes, sum);
  volatile int sink = lanes[0] + lanes[15];
  (void)sink;
  return static_cast<double>(iterations) * 10 * 64 * 2;
}

}  // namespace omnibus::bench::detail
