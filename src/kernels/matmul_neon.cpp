// The NEON row-layout int8 kernels (matmul_neon_kernels.h) for plain
// ARMv8-A: the neon kernel table's (kernels/kernel_table.h). A build whose
// own flags already target a CPU with dotprod (-mcpu=native) compiles sdot
// here too: the same integers, and such a binary needs that CPU anyway.
#include "kernels/matmul_neon_kernels.h"

namespace omnibus::matmul_detail {

void rows_neon_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end) { neon_q8_rows_any(a, row_begin, row_end); }

}  // namespace omnibus::matmul_detail
