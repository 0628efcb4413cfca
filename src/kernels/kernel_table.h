// The kernel table: one struct of function pointers per instruction set,
// one of them chosen once at start from the CPU's features (the single
// process-wide global shared/STYLE.md allows). Code outside the per-ISA
// files calls kernels through it instead of asking the CPU itself.
//
// Tables, best first: avx512-vnni, avx512, avx-vnni, avx2, scalar on
// x86-64; neon-i8mm, neon-dotprod, neon, scalar on aarch64. A table whose files the compiler could
// not build (OMNIBUS_NO_<SET>_BUILD) is not compiled in. Every x86 SIMD
// table gives the same bits as the avx2 table (the kernels fix one
// reduction order); the neon table follows that order too where it has
// kernels of its own (kernel_table.cpp says which); the scalar table is the
// reference, within tolerance of them.
//
// It holds matmul, the small ops, KV-cache quantization, the Hadamard
// rotation and attention (docs/design/backend-seam.md).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "base/cpu_features.h"
#include "base/status.h"
#include "kernels/attention.h"
#include "tensor/dtype.h"

namespace omnibus {

namespace matmul_detail {
struct MatmulArgs;
struct QuantizedX;
}  // namespace matmul_detail

enum class Isa : uint8_t { kScalar, kAvx2, kAvxVnni, kAvx512, kAvx512Vnni, kNeon, kNeonDotprod, kNeonI8mm };
constexpr bool is_neon(Isa isa) { return isa == Isa::kNeon || isa == Isa::kNeonDotprod || isa == Isa::kNeonI8mm; }

struct KernelTable {
  using RowsFn = void (*)(const matmul_detail::MatmulArgs&, int64_t row_begin, int64_t row_end);
  using QuantizeRowsFn = void (*)(DType, const float* x, int64_t begin, int64_t end, matmul_detail::QuantizedX*);

  Isa isa;
  const char* name;  // "scalar", "avx2", "avx-vnni", "avx512", "avx512-vnni", "neon", "neon-dotprod", "neon-i8mm"
  // Whether this CPU has the features the table's files were compiled for.
  bool (*runs_on)(const CpuFeatures&);

  // matmul (kernels/matmul_internal.h): float weights; quantized weights in
  // row layout; quantized weights in WeightLayout::kInterleaved8 (null:
  // this table has no interleaved kernels, so weights keep row layout).
  RowsFn rows_float;
  RowsFn rows_q8;
  RowsFn rows_interleaved;
  QuantizeRowsFn quantize_x_rows;

  // kernels/ops.h
  void (*rms_norm)(const float* x, const float* weight, float* y, int64_t n, float eps);
  void (*swiglu)(float* gate, const float* up, int64_t n);
  void (*geglu)(float* gate, const float* up, int64_t n);
  float (*dot_f32)(const float* a, const float* b, int64_t n);
  void (*axpy_f32)(float alpha, const float* x, float* y, int64_t n);
  void (*f32_to_f16_row)(const float* x, uint16_t* y, int64_t n);

  // kernels/kv_quant.h
  void (*quantize_kv_q8)(const float* x, int64_t n, int8_t* codes, int64_t code_stride, uint16_t* scales,
                         int64_t scale_stride);
  // kernels/hadamard.h; for block sizes n that are a multiple of
  // hadamard_lanes (the wrapper takes the reference for others).
  void (*hadamard_blocks)(float* x, int64_t count, int n);
  int hadamard_lanes;

  // kernels/attention.h, for the shapes this table takes (head_dim a
  // multiple of attention_lanes, or of the quantized caches' groups, and at
  // most kMaxHeadDim; a q4_0 cache in the paged layout); other shapes go to
  // attention_fallback (resolve_attention). attention_lanes 0: every shape
  // (the reference). attention_chunk_q4 serves q4_0 caches, whose scores
  // some tables compute with other instructions (the same bits).
  // attention_chunk_pair null: rows one at a time; attention_pairs_q4: the
  // pair kernel also takes q4_0 caches. attention_lanes -1: the table has
  // no attention kernels, every shape goes to attention_fallback.
  AttentionChunkFn attention_chunk;
  AttentionChunkFn attention_chunk_q4;
  AttentionChunkPairFn attention_chunk_pair;
  bool attention_pairs_q4;
  int attention_lanes;
  const KernelTable* attention_fallback;
};

// The table of this process, chosen at its first call: the one the
// OMNIBUS_KERNELS environment variable names ("scalar", "avx2", ...; A/B
// runs, tests), else the best this CPU runs (cpu_features(), whose
// OMNIBUS_FORCE_SCALAR, OMNIBUS_NO_AVX512 and OMNIBUS_NO_VNNI variables
// hide features and so drop tables from the choice). Never changes after.
// The kernel entry points (matmul, the ops, kv_quant, hadamard, attention)
// take a table; ForwardPass, CpuBackend and WeightRepacker default to this
// one, and the overloads without a table (tests, tools) use it.
// An OMNIBUS_KERNELS this CPU or build cannot honour is reported on stderr
// and ignored here; programs check it first with kernel_choice_status().
const KernelTable& kernels();

// Whether OMNIBUS_KERNELS, if set, names a compiled table this CPU runs:
// an invalid_argument error naming the tables it could take otherwise.
Status kernel_choice_status();

// The table `forced` names (empty: the best for `cpu`), if compiled in and
// runnable on `cpu`.
Result<const KernelTable*> choose_kernel_table(const CpuFeatures& cpu, std::string_view forced);

// Every table compiled into this binary, best first; the CPU may not run
// all of them.
std::span<const KernelTable* const> compiled_kernel_tables();

// The best compiled table that runs on `cpu` (the scalar one at worst).
const KernelTable& select_kernel_table(const CpuFeatures& cpu);

// The compiled table called `name`, or null.
const KernelTable* find_kernel_table(std::string_view name);

}  // namespace omnibus
