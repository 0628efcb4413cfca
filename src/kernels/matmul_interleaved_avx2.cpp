// AVX2 int8 kernels for weights in the interleaved layout; the kernels are
// in matmul_interleaved_kernels.h. Compiled with -mavx2 -mfma -mf16c;
// reached only through the kernel table (kernels/kernel_table.h) after a run-time CPU check.
#include "kernels/matmul_interleaved_kernels.h"

namespace omnibus::matmul_detail {

void rows_avx2_interleaved(const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  interleaved_rows_any(a, row_begin, row_end);
}

}  // namespace omnibus::matmul_detail
