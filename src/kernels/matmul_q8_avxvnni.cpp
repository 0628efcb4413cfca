// The row-layout int8 kernels (matmul_q8_kernels.h) built with AVX-VNNI
// (vpdpbusd, vpdpwssd); reached only through the kernel table (kernels/kernel_table.h) when the CPU has
// AVX-VNNI. Same outputs, bit for bit, as rows_avx2_q8.
#include "kernels/matmul_q8_kernels.h"

#if !defined(__AVXVNNI__)
#error "this file must be compiled with -mavxvnni (the *_avxvnni.cpp rule in CMakeLists.txt)"
#endif

namespace omnibus::matmul_detail {

void rows_avxvnni_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end) { q8_rows_any(a, row_begin, row_end); }

}  // namespace omnibus::matmul_detail
