// The interleaved-layout int8 kernels built with AVX-512 BW, VL and VNNI:
// batches of every interleaved type use the zmm pair tiles
// (matmul_interleaved_pair_tiles.h), decode the 256-bit kernels with
// the EVEX form of vpdpbusd (so CPUs with AVX-512 VNNI but no AVX-VNNI,
// Ice Lake and Zen 4, take it too). Compiled with the *_avx512vnni.cpp flags
// (CMakeLists.txt); reached only through the avx512-vnni kernel table
// (kernels/kernel_table.h). Same outputs, bit for bit, as the other builds.
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off
// source and warn that it "may be used uninitialized" (a known false
// positive, as in attention_avx512_kernels.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/matmul_interleaved_kernels.h"

#if !defined(__AVX512VNNI__) || !defined(__AVX512BW__) || !defined(__AVX512VL__)
#error "this file must be compiled with the *_avx512vnni.cpp flags (CMakeLists.txt)"
#endif

namespace omnibus::matmul_detail {

void rows_avx512vnni_interleaved(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  interleaved_rows_any(a, row_begin, row_end);
}

}  // namespace omnibus::matmul_detail
