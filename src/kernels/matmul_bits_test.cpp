// Every SIMD table's matmul against a scalar model of the avx2 kernels'
// arithmetic (matmul_q8_kernels.h, matmul_avx2.cpp), bit for bit. On x86
// the avx2 table and those that claim its bits meet the model; on aarch64
// the neon table does. Together: neon gives avx2's bits, checked on each
// machine without the other's instructions. The model is plain C++ with
// std::fma (exact on every target, fused or in libm), so it computes the
// same floats wherever it runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/matmul_internal.h"
#include "kernels/matmul_test_util.h"
#include "tensor/quant.h"

namespace omnibus {
namespace {

using matmul_detail::ActFormat;
using matmul_detail::QuantizedX;
using testing_util::random_floats;
using testing_util::random_weights;

bool has_mins(DType t) { return t == DType::kQ2_K || t == DType::kQ4_K || t == DType::kQ5_K; }

// The neon table has no kernels of its own for these types: its rows_q8
// hands them to the scalar reference (matmul_test.cpp checks it there).
bool neon_takes_scalar(DType t) {
  return t == DType::kQ2_K || t == DType::kQ3_K || t == DType::kIQ4_NL || t == DType::kMXFP4 || t == DType::kIQ4_XS;
}
bool affine(DType t) { return t == DType::kQ4_1 || t == DType::kQ5_1; }

// One output of quantized weights: per block in order,
//   acc = fma(float(S), d_w * d_x, acc), acc_m = fma(m_w, d_x * sum(q_x), acc_m),
//   acc = fma(float(M), -dmin_w * d_x, acc);  y = acc (+ acc_m).
float model_q8(const WeightMatrix& w, int64_t o, const QuantizedX& qx, int64_t r) {
  float acc = 0.0f, acc_m = 0.0f;
  for (int64_t b = 0; b < qx.blocks; ++b) {
    const auto t = matmul_detail::q8_block_terms(w, o, qx, r, b);
    const size_t idx = static_cast<size_t>(r * qx.blocks + b);
    const float dx = qx.scale[idx];
    acc = std::fma(static_cast<float>(t.s), t.d * dx, acc);
    if (affine(w.dtype)) acc_m = std::fma(t.m, qx.scaled_sum[idx], acc_m);
    if (has_mins(w.dtype)) acc = std::fma(static_cast<float>(t.mins), -t.dmin * dx, acc);
  }
  return affine(w.dtype) ? acc + acc_m : acc;
}

// One output of float weights: eight lanes, lane l takes columns k with
// k % 8 == l by fma in column order, then ((a0 + a1) + (a2 + a3)) +
// ((a4 + a5) + (a6 + a7)).
float model_float(const WeightMatrix& w, int64_t o, const float* x) {
  std::vector<float> row(static_cast<size_t>(w.cols));
  dequantize_row_ref(w.dtype, static_cast<const uint8_t*>(w.data) + o * w.row_bytes, row.data(), w.cols);
  float lane[8] = {};
  for (int64_t k = 0; k < w.cols; ++k) lane[k % 8] = std::fma(row[static_cast<size_t>(k)], x[k], lane[k % 8]);
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

class MatmulBits : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulBits, EverySimdTableComputesTheAvx2Arithmetic) {
  const auto tables = testing_util::runnable_simd_tables();  // every SIMD table claims avx2's bits
  if (tables.empty()) GTEST_SKIP() << "this CPU runs no SIMD kernel table";
  const DType t = GetParam();
  const int block = dtype_info(t)->block_size;
  const int64_t cols = block == 256 ? 768 : block == 32 ? 96 : 100;  // 100: a partial last chunk of 8
  for (int64_t rows : {1, 6, 33}) {
    const auto w = random_weights(t, rows, cols, static_cast<uint32_t>(rows * 7 + cols));
    for (int64_t n_x : {1, 2, 5}) {
      auto x = random_floats(n_x * cols, static_cast<uint32_t>(n_x + rows));
      for (size_t i = 0; i < x.size(); i += 29) x[i] *= 30.0f;  // outliers, as in real activations
      QuantizedX qx;
      const bool int8 = matmul_detail::act_format(t) != ActFormat::kFloat;
      if (int8) matmul_detail::quantize_x(t, x.data(), n_x, cols, &qx);
      std::vector<float> want(static_cast<size_t>(n_x * rows));
      for (int64_t r = 0; r < n_x; ++r)
        for (int64_t o = 0; o < rows; ++o)
          want[static_cast<size_t>(r * rows + o)] =
              int8 ? model_q8(w.view, o, qx, r) : model_float(w.view, o, x.data() + r * cols);
      for (const KernelTable* table : tables) {
        if (is_neon(table->isa) && neon_takes_scalar(t)) continue;
        std::vector<float> got(want.size(), NAN);
        testing_util::run_rows(*table, w.view, x.data(), n_x, got.data(), 0, rows);
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
              << table->name << " " << dtype_name(t) << " rows " << rows << " n_x " << n_x << " output " << i
              << ": got " << got[i] << " want " << want[i];
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulBits,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                                           DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K,
                                           DType::kQ6_K, DType::kQ2_K, DType::kQ3_K, DType::kIQ4_NL, DType::kMXFP4,
                                           DType::kIQ4_XS),
                         [](const auto& info) { return dtype_name(info.param); });

}  // namespace
}  // namespace omnibus
