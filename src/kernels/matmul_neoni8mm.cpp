// The NEON row-layout int8 kernels (matmul_neon_kernels.h) built with the
// dot-product and int8 matrix-multiply extensions (FEAT_DotProd and
// FEAT_I8MM: Cortex-A510/A710/X2 on, Neoverse V1/N2 on (Graviton 3 on),
// Apple M2 on): batches of four x rows by smmla, single rows by sdot.
// Reached only through the neon-i8mm kernel table (kernels/kernel_table.h),
// after a run-time check (cpu_features().neon_i8mm). Same bits as
// rows_neon_q8.
#include "kernels/matmul_neon_kernels.h"

#if !defined(__ARM_FEATURE_MATMUL_INT8) || !defined(__ARM_FEATURE_DOTPROD)
#error "this file must be compiled with the *_neoni8mm.cpp flags (CMakeLists.txt)"
#endif

namespace omnibus::matmul_detail {

void rows_neoni8mm_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  neon_q8_rows_any(a, row_begin, row_end);
}

}  // namespace omnibus::matmul_detail
