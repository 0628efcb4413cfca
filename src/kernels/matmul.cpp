// matmul(): runs the kernel table's row workers (kernels/kernel_table.h)
// and splits the weight rows across the thread pool. Splitting by weight rows keeps batch invariance trivial: every
// output is computed whole by one thread, in an order fixed by the kernel.
#include "kernels/matmul.h"

#include <algorithm>
#include <atomic>

#include "kernels/kernel_table.h"
#include "kernels/matmul_internal.h"

namespace omnibus {
namespace {

// Rows handed out together: a multiple of every kernel's row tile, so
// threads never break a tile (only for speed; results do not depend on it).
constexpr int64_t kRowUnit = 16;

// Below this many multiply-adds a job is not worth waking the pool for.
constexpr int64_t kMinParallelWork = 1 << 16;

// Batches of at least this many x rows are quantized by all threads, each
// a range of rows (one more pool job). In a 512-token prefill, quantizing
// on the calling thread alone took ~3% of the time while the other thread
// waited, the largest serial part of a step.
constexpr int64_t kParallelQuantizeRows = 16;

// Batches of at least this many x rows hand out their row units in chunks
// from a shared counter instead of one fixed share per thread: on a VM the
// other vCPU stalls at random (a 512-token prefill's matmuls spent 8-10% of
// their time with thread 0 waiting for a fixed share to finish). Which
// thread computes a row never changes its value (see the header), so the
// hand-out may depend on timing. Smaller batches keep the fixed split: their
// matmuls last microseconds, and each chunk's atomic costs a line transfer.
constexpr int64_t kDynamicSplitRows = 16;
// Chunks per thread: enough that a stalled thread's last chunk is a small
// part of the whole, few enough that the counter stays off the profile.
constexpr int64_t kChunksPerThread = 8;

}  // namespace

const char* matmul_path_name() { return kernels().name; }

namespace matmul_detail {

void run_rows(const KernelTable& table, const MatmulArgs& a, int64_t row_begin, int64_t row_end) {
  switch (a.w->dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: return table.rows_float(a, row_begin, row_end);
    default: break;
  }
  if (a.qx == nullptr) return rows_scalar(a, row_begin, row_end);  // types without a kernel
  if (a.w->layout == WeightLayout::kInterleaved8) {
    // A table without interleaved kernels never interleaves at load
    // (can_interleave8); the reference reads any layout.
    return (table.rows_interleaved != nullptr ? table.rows_interleaved : rows_scalar)(a, row_begin, row_end);
  }
  table.rows_q8(a, row_begin, row_end);
}

}  // namespace matmul_detail

void matmul(const KernelTable& table, const WeightMatrix& w, const float* x, int64_t n_x, float* y, ThreadPool* pool) {
  const MatmulTarget target{&w, y};
  matmul_shared_input(table, std::span(&target, 1), x, n_x, pool);
}

void matmul(const WeightMatrix& w, const float* x, int64_t n_x, float* y, ThreadPool* pool) {
  matmul(kernels(), w, x, n_x, y, pool);
}

namespace {

// Whether all targets can share one int8 form of x; if so, the type to
// quantize x for. Targets of different types share it when they read the
// same activation format: its int8 values and scales do not depend on the
// weight type, only the code-bias sums do (Q4_0's 8, Q5_0's 16), so x is
// quantized for the biased type and at most one bias may be in play.
// Gemma 3 mixes q5_0 q/k with a q8_0 v this way.
bool shared_quant_type(std::span<const MatmulTarget> targets, DType* quant_type) {
  const WeightMatrix& first = *targets[0].w;
  *quant_type = first.dtype;
  for (const MatmulTarget& t : targets) {
    const int bias = matmul_detail::legacy_bias(t.w->dtype), have = matmul_detail::legacy_bias(*quant_type);
    if (t.w->cols != first.cols || matmul_detail::act_format(t.w->dtype) != matmul_detail::act_format(first.dtype) ||
        (bias != 0 && have != 0 && bias != have))
      return false;
    if (bias != 0) *quant_type = t.w->dtype;
  }
  return true;
}

bool int8_input(const WeightMatrix& w) { return matmul_detail::act_format(w.dtype) != matmul_detail::ActFormat::kFloat; }

int64_t row_units(const WeightMatrix& w) { return (w.rows + kRowUnit - 1) / kRowUnit; }

int64_t total_row_units(std::span<const MatmulTarget> targets) {
  int64_t units = 0;
  for (const MatmulTarget& t : targets) units += row_units(*t.w);
  return units;
}

// Where thread `thread` of `threads` starts in the row units of the targets
// laid end to end, cutting them so each thread reads about the same weight
// bytes. Targets of one type cut as units * thread / threads does; where
// types mix (a Q4_K_M file's Q4_K q and k beside a Q6_K v) an even cut by
// rows gave the thread holding the Q6_K rows the longer part and the other
// thread a wait at every layer. Bytes are the cost that matters for
// decode, which streams the weights from memory.
int64_t balanced_unit_start(std::span<const MatmulTarget> targets, int thread, int threads) {
  if (thread <= 0) return 0;
  const int64_t total_units = total_row_units(targets);
  if (thread >= threads) return total_units;
  bool one_cost = true;
  for (const MatmulTarget& t : targets) one_cost = one_cost && t.w->row_bytes == targets[0].w->row_bytes;
  if (one_cost) return total_units * thread / threads;
  // Unit bytes: a unit is kRowUnit rows (the last one of a target may be
  // short, counted whole: a few rows' error at most).
  int64_t total_bytes = 0;
  for (const MatmulTarget& t : targets) total_bytes += row_units(*t.w) * static_cast<int64_t>(t.w->row_bytes);
  const int64_t goal = total_bytes * thread / threads;
  int64_t offset = 0, bytes = 0;
  for (const MatmulTarget& t : targets) {
    const int64_t units = row_units(*t.w), unit_bytes = static_cast<int64_t>(t.w->row_bytes);
    if (bytes + units * unit_bytes >= goal) return offset + (goal - bytes + unit_bytes / 2) / unit_bytes;
    offset += units, bytes += units * unit_bytes;
  }
  return total_units;
}

// The output rows of row units [unit_begin, unit_end) of the targets laid
// end to end, with `table`'s kernels.
void run_units(const KernelTable& table, std::span<const MatmulTarget> targets, const float* x,
               const matmul_detail::QuantizedX* qx, int64_t n_x, int64_t unit_begin, int64_t unit_end) {
  int64_t offset = 0;
  for (const MatmulTarget& t : targets) {
    const int64_t units = row_units(*t.w);
    const int64_t b = std::max(unit_begin, offset), e = std::min(unit_end, offset + units);
    if (b < e) {
      const matmul_detail::MatmulArgs args{t.w, x, qx, n_x, t.y};
      matmul_detail::run_rows(table, args, (b - offset) * kRowUnit, std::min(t.w->rows, (e - offset) * kRowUnit));
    }
    offset += units;
  }
}

}  // namespace

void matmul_shared_input(std::span<const MatmulTarget> targets, const float* x, int64_t n_x, ThreadPool* pool) {
  matmul_shared_input(kernels(), targets, x, n_x, pool);
}

void matmul_shared_input(const KernelTable& table, std::span<const MatmulTarget> targets, const float* x, int64_t n_x,
                         ThreadPool* pool) {
  if (n_x <= 0 || targets.empty()) return;
  DType quant_type;
  if (!shared_quant_type(targets, &quant_type)) {
    for (const MatmulTarget& one : targets) matmul_shared_input(table, std::span(&one, 1), x, n_x, pool);
    return;
  }
  const WeightMatrix& first = *targets[0].w;
  // The int8 form of x, made once here and read by every thread. The
  // buffers belong to the calling thread and keep their capacity.
  thread_local matmul_detail::QuantizedX qx;
  const bool int8 = int8_input(first);
  if (int8) {
    matmul_detail::shape_quantized_x(quant_type, n_x, first.cols, &qx);
    if (pool != nullptr && pool->size() > 1 && n_x >= kParallelQuantizeRows) {
      matmul_detail::QuantizedX* into = &qx;  // the calling thread's, named here (see below)
      pool->run([&](int index, int count) {
        table.quantize_x_rows(quant_type, x, n_x * index / count, n_x * (index + 1) / count, into);
      });
    } else {
      table.quantize_x_rows(quant_type, x, 0, n_x, &qx);
    }
  }
  // Taken here, on the calling thread: inside the lambda `qx` would name the
  // worker thread's own (empty) thread_local.
  const matmul_detail::QuantizedX* shared_qx = int8 ? &qx : nullptr;
  // Row units of all targets, laid end to end; each thread takes a
  // contiguous share, which may span targets.
  const int64_t total_units = total_row_units(targets);
  int64_t work = 0;
  for (const MatmulTarget& t : targets) work += n_x * t.w->rows * t.w->cols;
  if (pool == nullptr || pool->size() == 1 || work < kMinParallelWork) {
    run_units(table, targets, x, shared_qx, n_x, 0, total_units);
    return;
  }
  if (n_x < kDynamicSplitRows) {
    pool->run([&](int index, int count) {
      run_units(table, targets, x, shared_qx, n_x, balanced_unit_start(targets, index, count),
                balanced_unit_start(targets, index + 1, count));
    });
    return;
  }
  const int64_t chunk = std::max<int64_t>(1, total_units / (pool->size() * kChunksPerThread));
  std::atomic<int64_t> next_unit{0};
  pool->run([&](int, int) {
    for (;;) {
      const int64_t begin = next_unit.fetch_add(chunk, std::memory_order_relaxed);
      if (begin >= total_units) return;
      run_units(table, targets, x, shared_qx, n_x, begin, std::min(total_units, begin + chunk));
    }
  });
}

MatmulScratch::MatmulScratch() : qx_(std::make_unique<matmul_detail::QuantizedX>()) {}
MatmulScratch::~MatmulScratch() = default;

void MatmulScratch::reserve(int64_t n_x, int64_t cols) {
  const auto values = static_cast<size_t>(n_x * cols), blocks32 = values / 32;
  qx_->q.reserve(values);
  qx_->scale.reserve(blocks32);
  qx_->scaled_sum.reserve(blocks32);
  qx_->block_sum.reserve(blocks32);
  qx_->bias_lanes.reserve(blocks32 * 8);
  qx_->bias_sum.reserve(blocks32);
  qx_->sums16.reserve(values / 256 * 16);
}
MatmulScratch::MatmulScratch(MatmulScratch&&) noexcept = default;
MatmulScratch& MatmulScratch::operator=(MatmulScratch&&) noexcept = default;

std::pair<int64_t, int64_t> matmul_share_rows(int64_t rows, int thread, int threads) {
  const int64_t units = (rows + kRowUnit - 1) / kRowUnit;
  return {std::min(rows, units * thread / threads * kRowUnit), std::min(rows, units * (thread + 1) / threads * kRowUnit)};
}

void matmul_share(const KernelTable& table, std::span<const MatmulTarget> targets, const float* x, int64_t n_x,
                  int thread, int threads, ShareSplit split, MatmulScratch* scratch) {
  if (n_x <= 0 || targets.empty()) return;
  DType quant_type;
  if (!shared_quant_type(targets, &quant_type)) {
    for (const MatmulTarget& one : targets)
      matmul_share(table, std::span(&one, 1), x, n_x, thread, threads, split, scratch);
    return;
  }
  const matmul_detail::QuantizedX* qx = nullptr;
  if (int8_input(*targets[0].w)) {
    matmul_detail::QuantizedX& own = scratch->qx();
    matmul_detail::shape_quantized_x(quant_type, n_x, targets[0].w->cols, &own);
    table.quantize_x_rows(quant_type, x, 0, n_x, &own);
    qx = &own;
  }
  if (split == ShareSplit::kAcrossTargets) {
    run_units(table, targets, x, qx, n_x, balanced_unit_start(targets, thread, threads),
              balanced_unit_start(targets, thread + 1, threads));
    return;
  }
  for (const MatmulTarget& t : targets) {
    const auto [begin, end] = matmul_share_rows(t.w->rows, thread, threads);
    if (begin < end) matmul_detail::run_rows(table, matmul_detail::MatmulArgs{t.w, x, qx, n_x, t.y}, begin, end);
  }
}

}  // namespace omnibus
