// Matrix products against weights in any computable dtype:
//   y[r][o] = sum_k x[r][k] * W[o][k]
// W has `rows` output rows of `cols` inputs each, stored in its dtype (ggml
// layout, row-major, row_bytes apart). x and y are f32, row-major. For block
// types, cols must be a multiple of the block size (32, or 256 for K-quants);
// callers check shapes (dtype_bytes) when loading weights.
//
// Numerics: float weights (F32, F16, BF16) multiply x in f32. Quantized
// weights multiply x quantized to int8 per block of 32 (256 for K-quants)
// with one f32 scale per block, as llama.cpp does: integer block sums are
// exact and only the per-block scaling rounds. Against exact float math this
// costs ~0.5-0.7% RMS relative error on random data (under 0.1% of
// sum |x*w| per output), and runs about twice as fast.
//
// Batch invariance: y[r][o] depends only on x[r] and W[o], reduced in one
// fixed order; it is bit-identical whatever the number of x rows, the thread
// count, or which rows are computed together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "base/thread_pool.h"
#include "tensor/dtype.h"

namespace omnibus {

struct KernelTable;  // kernels/kernel_table.h

// How a matrix's blocks are laid out in memory.
//  kRows: as in GGUF, row after row, row_bytes apart.
//  kInterleaved8: rows in groups of eight (the last padded with zero rows),
//    group g at data + g * 8 * row_bytes; within a group, block b of all
//    eight rows side by side, so one 32-byte load holds four codes of each
//    of the eight rows (see kernels/weight_interleave.h). Same bytes in all,
//    only reordered; made at load for the int8 kernels (AVX2 only).
enum class WeightLayout : uint8_t { kRows, kInterleaved8 };

struct WeightMatrix {
  DType dtype = DType::kF32;
  const void* data = nullptr;  // not owned (the model file's mapping, or the model's repacked copy)
  int64_t rows = 0;            // output features
  int64_t cols = 0;            // input features
  size_t row_bytes = 0;        // bytes of one row's blocks (kRows: the distance between rows)
  WeightLayout layout = WeightLayout::kRows;
};

// y (n_x rows of w.rows) = x (n_x rows of w.cols) times w transposed, with
// `table`'s kernels (the caller's: a runner passes its own). pool may be
// null (run on the calling thread).
void matmul(const KernelTable& table, const WeightMatrix& w, const float* x, int64_t n_x, float* y, ThreadPool* pool);
// The same with the process's table (kernels()): tests and tools.
void matmul(const WeightMatrix& w, const float* x, int64_t n_x, float* y, ThreadPool* pool);

// One weight matrix and where its product goes.
struct MatmulTarget {
  const WeightMatrix* w;
  float* y;  // n_x rows of w->rows
};

// The products of one input with several matrices (q/k/v, gate/up). When all
// share dtype and cols, x is quantized once and the rows of all of them are
// split across the pool in one job (one synchronisation instead of one per
// matrix); otherwise they run one by one. Each output is bit-identical to
// what matmul() gives for it alone.
void matmul_shared_input(const KernelTable& table, std::span<const MatmulTarget> targets, const float* x, int64_t n_x,
                         ThreadPool* pool);
// The same with the process's table (kernels()), for tests.
void matmul_shared_input(std::span<const MatmulTarget> targets, const float* x, int64_t n_x, ThreadPool* pool);

namespace matmul_detail {
struct QuantizedX;
}

// One thread's int8 copy of a matmul_share input; keeps its capacity, so
// after the first products of each shape it allocates nothing.
class MatmulScratch {
 public:
  MatmulScratch();
  ~MatmulScratch();
  MatmulScratch(MatmulScratch&&) noexcept;
  MatmulScratch& operator=(MatmulScratch&&) noexcept;
  matmul_detail::QuantizedX& qx() { return *qx_; }
  // Room for inputs of up to n_x rows of `cols`, so that even the first
  // products allocate nothing.
  void reserve(int64_t n_x, int64_t cols);

 private:
  std::unique_ptr<matmul_detail::QuantizedX> qx_;
};

// How matmul_share cuts the output rows among threads.
//  kAcrossTargets: the rows of all targets end to end, one piece each, cut
//    at equal weight bytes where the targets' types differ (as
//    matmul_shared_input does for decode: the best balance).
//  kEachTarget: each target's rows cut alike (matmul_share_rows), so a
//    thread holds the same rows of every target and can apply an
//    elementwise op across them (SwiGLU on gate and up) without a barrier.
enum class ShareSplit : uint8_t { kAcrossTargets, kEachTarget };

// Thread `thread`'s part of matmul_shared_input(table, targets, x, n_x, pool) for
// code that already runs on every thread of a pool (a decode step as one
// pool job): quantizes x itself into `scratch` (every thread makes the same
// bytes, no barrier needed) and computes its share of the output rows. The
// outputs of all `threads` calls together are bit-identical to matmul()'s.
void matmul_share(const KernelTable& table, std::span<const MatmulTarget> targets, const float* x, int64_t n_x,
                  int thread, int threads, ShareSplit split, MatmulScratch* scratch);

// The output rows [begin, end) of a `rows`-row matrix that thread `thread`
// of `threads` computes under ShareSplit::kEachTarget.
std::pair<int64_t, int64_t> matmul_share_rows(int64_t rows, int thread, int threads);

// Same math on the scalar reference path, whatever the CPU (for tests).
void matmul_ref(const WeightMatrix& w, const float* x, int64_t n_x, float* y);

// Name of the path matmul() takes on this CPU: "avx2+fma" or "scalar".
const char* matmul_path_name();

}  // namespace omnibus
