// The NEON row-layout int8 kernels (matmul_neon_kernels.h) for plain
// ARMv8-A: the neon kernel table's (kernels/kernel_table.h).
#include "kernels/matmul_neon_kernels.h"

#if defined(__ARM_FEATURE_DOTPROD)
#error "this file is the kernels without dotprod; matmul_neondot.cpp is the build with it"
#endif

namespace omnibus::matmul_detail {

void rows_neon_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end) { neon_q8_rows_any(a, row_begin, row_end); }

}  // namespace omnibus::matmul_detail
