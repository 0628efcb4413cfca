// Internals of matmul() shared by its paths and tests.
//
// Float weights (F32, F16, BF16) multiply float activations directly.
// Quantized weights multiply activations quantized to int8 (as llama.cpp
// does): each x row is cut into blocks with one float scale each, integer dot
// products per block are exact, and only the per-block scaling is floating
// point. The int8 form is computed once per call, shared by all threads.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/matmul.h"

namespace omnibus::matmul_detail {

// Activation blocks: 32 elements for the legacy types, 256 for K-quants.
enum class ActFormat { kFloat, kQ8x32, kQ8x256 };
ActFormat act_format(DType t);

// x rows in int8 form. For row r and block b (block = 32 or 256 elements):
// value[k] ~ scale[b] * q[k], with |q| <= 127.
struct QuantizedX {
  ActFormat format = ActFormat::kFloat;
  int64_t n_x = 0, cols = 0, blocks = 0;  // blocks per row
  std::vector<int8_t> q;                  // n_x * cols
  std::vector<float> scale;               // n_x * blocks
  // kQ8x32 only, per block: scale * sum(q) (for weights with an offset m),
  // and lane sums of q times the weight type's code bias (8 lanes: lane l
  // sums elements 4l..4l+3), to turn unsigned weight codes into signed ones.
  std::vector<float> scaled_sum;
  std::vector<int32_t> block_sum;   // n_x * blocks: sum(q) (the AVX-512 Q8_0 batch kernel's bias)
  std::vector<int32_t> bias_lanes;  // n_x * blocks * 8
  std::vector<int32_t> bias_sum;    // n_x * blocks: the sum of a block's 8 bias lanes
  // kQ8x256 only: sums of q over each 16 elements (16 per block).
  std::vector<int16_t> sums16;

  const int8_t* q_row(int64_t r) const { return q.data() + r * cols; }
};

// Quantizes x (n_x rows of cols) for weights of type t (act_format(t) must
// not be kFloat). Deterministic and row-independent: a row's int8 form does
// not depend on the other rows. Per block: scale = max|x| / 127, q =
// round-to-nearest-even(x * (1 / scale)) clamped to [-127, 127] (NaN -> -127).
void quantize_x(DType t, const float* x, int64_t n_x, int64_t cols, QuantizedX* out);
// The same bytes, computed with AVX2 (only after the CPU check).
void quantize_x_avx2(DType t, const float* x, int64_t n_x, int64_t cols, QuantizedX* out);
// Sizes out's buffers and fields for quantizing n_x rows of cols for type t.
void shape_quantized_x(DType t, int64_t n_x, int64_t cols, QuantizedX* out);
// Rows [begin, end) of x (out->cols columns each) into out, already shaped
// for x by shape_quantized_x: what quantize_x does for those rows, so
// threads can each take a range (matmul_shared_input does for batches).
void quantize_x_rows(DType t, const float* x, int64_t begin, int64_t end, QuantizedX* out);
void quantize_x_rows_avx2(DType t, const float* x, int64_t begin, int64_t end, QuantizedX* out);
// Code offset of unsigned legacy weight codes (value = d * (code - bias)):
// 8 for Q4_0, 16 for Q5_0, else 0.
int legacy_bias(DType t);

// What a row-range worker needs. qx is null for float weights.
struct MatmulArgs {
  const WeightMatrix* w;
  const float* x;
  const QuantizedX* qx;
  int64_t n_x;
  float* y;
};

// Each computes y[r][o] for every x row r and the weight rows o in
// [row_begin, row_end); an output's value never depends on the range it was
// computed in, which is what lets matmul() split rows across threads.
void rows_scalar(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
// AVX2+FMA+F16C for float weights (F32, F16, BF16); only call after
// checking cpu_features().has_avx2_fma().
void rows_avx2_float(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
// The int8 kernels behind rows_avx2 for quantized weights.
void rows_avx2_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
// The same for weights in WeightLayout::kInterleaved8 (Q4_0, Q4_1, Q5_0,
// Q8_0, Q4_K, Q5_K, Q6_K);
// row_begin must be a multiple of 8.
void rows_avx2_interleaved(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
// The same built with AVX-VNNI (bit-identical); only call after checking
// cpu_features().avx_vnni, and only where the compiler could build it.
void rows_avxvnni_interleaved(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
void rows_avxvnni_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
void rows_avx512vnni_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
// The interleaved kernels with AVX-512 VNNI batches (bit-identical); only
// call from the avx512-vnni kernel table.
void rows_avx512vnni_interleaved(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
// NEON (aarch64 builds only): row-layout int8 kernels with the avx2
// kernels' arithmetic per output (same bits), and float weights likewise.
void rows_neon_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
void rows_neon_float(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
// The same int8 kernels with sdot (aarch64 builds with dotprod; only call
// from the neon-dotprod kernel table).
void rows_neondot_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
// With i8mm too: batches by smmla (only call from the neon-i8mm table).
void rows_neoni8mm_q8(const MatmulArgs& a, int64_t row_begin, int64_t row_end);
#if defined(OMNIBUS_NO_AVX512VNNI_BUILD)
inline constexpr bool kAvx512VnniBuilt = false;
#else
inline constexpr bool kAvx512VnniBuilt = true;
#endif
#if defined(OMNIBUS_NO_AVXVNNI_BUILD)
inline constexpr bool kAvxVnniBuilt = false;
#else
inline constexpr bool kAvxVnniBuilt = true;
#endif

// Rows [row_begin, row_end) with `table`'s kernels: its float, row-layout
// int8 or interleaved int8 worker by the weights' type and layout (what
// matmul() runs with kernels(); tests run every table the CPU can).
void run_rows(const KernelTable& table, const MatmulArgs& a, int64_t row_begin, int64_t row_end);

// One output of the int8 math, in double precision: the reference.
double q8_dot_ref(const WeightMatrix& w, int64_t o, const QuantizedX& qx, int64_t r);

// Block b of output (weight row o, x row r) as the SIMD kernels see it: the
// exact integer sum S of code * q_x (codes signed: a legacy type's code
// bias taken off; IQ4_NL's, IQ4_XS's and MXFP4's their code book's levels; K types
// weighted by their sub-block scales, Q6_K's codes - 32, Q3_K's - 4), the
// Q2_K / Q4_K / Q5_K mins term M (sum of sub-block min * x sub-block
// sum), and the weight scales as floats (f16 widens exactly). From the
// reference's decoding of the blocks, for tests that rebuild the SIMD
// kernels' float steps on top (matmul_bits_test.cpp).
struct Q8BlockTerms {
  int64_t s = 0, mins = 0;
  float d = 0, m = 0, dmin = 0;
};
Q8BlockTerms q8_block_terms(const WeightMatrix& w, int64_t o, const QuantizedX& qx, int64_t r, int64_t b);

}  // namespace omnibus::matmul_detail
