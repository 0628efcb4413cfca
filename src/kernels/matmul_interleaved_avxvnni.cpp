// The interleaved-layout int8 kernels built with AVX-VNNI (vpdpbusd); the
// kernels are in matmul_interleaved_kernels.h. Compiled with -mavx2 -mfma
// -mf16c -mavxvnni; reached only through the kernel table (kernels/kernel_table.h) when the CPU has
// AVX-VNNI (cpu_features().avx_vnni). Same outputs, bit for bit, as
// rows_avx2_interleaved.
#include "kernels/matmul_interleaved_kernels.h"

#if !defined(__AVXVNNI__)
#error "this file must be compiled with -mavxvnni (the *_avxvnni.cpp rule in CMakeLists.txt)"
#endif

namespace omnibus::matmul_detail {

void rows_avxvnni_interleaved(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  interleaved_rows_any(a, row_begin, row_end);
}

}  // namespace omnibus::matmul_detail
