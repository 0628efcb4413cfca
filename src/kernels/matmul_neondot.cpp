// The NEON row-layout int8 kernels (matmul_neon_kernels.h) built with the
// dot-product extension (ARMv8.2-A dotprod, FEAT_DotProd: Cortex-A55/A76
// on, Apple M1 on, Graviton 2 on): the integer dots by sdot. Reached only
// through the neon-dotprod kernel table (kernels/kernel_table.h), after a
// run-time check (cpu_features().neon_dotprod). Same bits as rows_neon_q8.
#include "kernels/matmul_neon_kernels.h"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "this file must be compiled with the *_neondot.cpp flags (CMakeLists.txt)"
#endif

namespace omnibus::matmul_detail {

void rows_neondot_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  neon_q8_rows_any(a, row_begin, row_end);
}

}  // namespace omnibus::matmul_detail
