// The row-layout int8 kernels (matmul_q8_kernels.h) built with AVX-512 BW,
// VL and VNNI: the 256-bit kernels with the EVEX forms of vpdpbusd and
// vpdpwssd (Ice Lake and Zen 4 have AVX-512 VNNI but not AVX-VNNI) and 32
// vector registers. Reached only through the avx512-vnni kernel table
// (kernels/kernel_table.h). Same outputs, bit for bit, as rows_avx2_q8.
#include "kernels/matmul_q8_kernels.h"

#if !defined(__AVX512VNNI__) || !defined(__AVX512BW__) || !defined(__AVX512VL__)
#error "this file must be compiled with the *_avx512vnni.cpp flags (CMakeLists.txt)"
#endif

namespace omnibus::matmul_detail {

void rows_avx512vnni_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end) { q8_rows_any(a, row_begin, row_end); }

}  // namespace omnibus::matmul_detail
