// The row-layout int8 kernels (matmul_q8_kernels.h) built for AVX2+FMA+F16C;
// reached only through the kernel table (kernels/kernel_table.h) after a run-time CPU check.
#include "kernels/matmul_q8_kernels.h"

namespace omnibus::matmul_detail {

void rows_avx2_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end) { q8_rows_any(a, row_begin, row_end); }

}  // namespace omnibus::matmul_detail
