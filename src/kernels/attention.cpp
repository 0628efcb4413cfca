#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/attention_q4.h"
#include "kernels/kernel_table.h"
#include "tensor/quant.h"

namespace omnibus {

void attention_row(const KernelTable& table, const AttentionShape& s, const float* q, const uint16_t* k,
                   const uint16_t* v, int64_t row_stride, int64_t n_kv, float* scores, float* out, int head_begin,
                   int head_end) {
  const KvRun whole{k, v, n_kv};
  attention_row_paged(table, s, q, std::span(&whole, 1), row_stride, scores, out, head_begin, head_end);
}

void attention_row(const AttentionShape& s, const float* q, const uint16_t* k, const uint16_t* v, int64_t row_stride,
                   int64_t n_kv, float* scores, float* out, int head_begin, int head_end) {
  attention_row(kernels(), s, q, k, v, row_stride, n_kv, scores, out, head_begin, head_end);
}

namespace {

// What a SIMD table's head_dim must be a multiple of: its vectors of
// `lanes` floats, or the quantized caches' groups.
int head_dim_unit(KvCacheType type, int lanes) {
  return type == KvCacheType::kQ8_0 || type == KvCacheType::kQ4_0 ? kKvQ8Group : lanes;
}

// Whether `t`'s own attention kernels take the shape (kernel_table.h).
bool takes(const KernelTable& t, const AttentionShape& s) {
  if (t.attention_lanes == 0) return true;
  if (t.attention_lanes < 0) return false;  // no attention kernels of its own
  // q4_0: only the paged layout (transposed K, KV heads apart), as the store keeps it.
  if (s.kv_type == KvCacheType::kQ4_0 && (s.k_dim_stride == 0 || s.kv_head_stride == 0)) return false;
  return s.head_dim % head_dim_unit(s.kv_type, t.attention_lanes) == 0 && s.head_dim <= kMaxHeadDim;
}

}  // namespace

ResolvedAttention resolve_attention(const KernelTable& table, const AttentionShape& s) {
  const KernelTable* t = &table;
  while (!takes(*t, s)) t = t->attention_fallback;
  const bool q4 = s.kv_type == KvCacheType::kQ4_0;
  // Pairs need transposed K and, for 16-bit caches, whole 16-float value
  // slices; the AVX2 pair kernels' slices would split a q4_0 group's
  // nibble halves, so only tables with attention_pairs_q4 pair q4_0 rows
  // (single rows elsewhere, with the same bits).
  const bool pairs = t->attention_chunk_pair != nullptr && s.k_dim_stride != 0 &&
                     s.head_dim % (s.kv_type == KvCacheType::kQ8_0 || q4 ? kKvQ8Group : 16) == 0 &&
                     (!q4 || t->attention_pairs_q4);
  return {t->name, q4 ? t->attention_chunk_q4 : t->attention_chunk, pairs ? t->attention_chunk_pair : nullptr};
}

const char* attention_path_name(int head_dim, KvCacheType kv_type) {
  AttentionShape s;
  s.head_dim = head_dim;
  s.kv_type = kv_type;
  s.kv_head_stride = s.k_dim_stride = 1;  // the paged store's layout (q4_0 needs it)
  return resolve_attention(kernels(), s).name;
}

void attention_chunk(const KernelTable& table, const AttentionShape& s, const float* q, std::span<const KvRun> runs,
                     int64_t row_stride, float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& ahead) {
  resolve_attention(table, s).chunk(s, q, runs, row_stride, scores, out, head_begin, head_end, ahead);
}

void attention_chunk(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& ahead) {
  attention_chunk(kernels(), s, q, runs, row_stride, scores, out, head_begin, head_end, ahead);
}

void attention_merge(int head_dim, int heads, const AttentionPartial& next, const AttentionPartial& state) {
  for (int i = 0; i < heads; ++i) {
    const float m = std::max(state.max[i], next.max[i]);
    const float keep = std::exp(state.max[i] - m);
    const float add = std::exp(next.max[i] - m);
    float* acc = state.acc + static_cast<int64_t>(i) * head_dim;
    const float* more = next.acc + static_cast<int64_t>(i) * head_dim;
    for (int d = 0; d < head_dim; ++d) {
      const float kept = acc[d] * keep;
      acc[d] = kept + more[d] * add;
    }
    const float kept_sum = state.sum[i] * keep;
    state.sum[i] = kept_sum + next.sum[i] * add;
    state.max[i] = m;
  }
}

void attention_finish(int head_dim, int heads, const AttentionPartial& state, float* out, const float* sinks) {
  for (int i = 0; i < heads; ++i) {
    float inv_sum = 1.0f / state.sum[i];
    if (sinks != nullptr) {
      const float top = std::max(state.max[i], sinks[i]);
      const float keep = std::exp(state.max[i] - top);
      inv_sum = keep / (state.sum[i] * keep + std::exp(sinks[i] - top));
    }
    const float* acc = state.acc + static_cast<int64_t>(i) * head_dim;
    float* o = out + static_cast<int64_t>(i) * head_dim;
    for (int d = 0; d < head_dim; ++d) o[d] = acc[d] * inv_sum;
  }
}

namespace {

// Walks a row's runs chunk after chunk, so cutting a row into chunks is
// linear in its runs (a rescan from run 0 per chunk was quadratic: millions
// of steps per row at block size 1 and long contexts).
class RunCursor {
 public:
  RunCursor(std::span<const KvRun> runs, int64_t k_step, int64_t v_step) : runs_(runs), k_step_(k_step), v_step_(v_step) {}
  // The non-empty runs of positions [first, first + count) into out; first
  // must not be below the previous call's first.
  size_t slice(int64_t first, int64_t count, KvRun* out) {
    // Skip the runs that end at or before first, for good.
    while (next_ < runs_.size() && next_first_ + runs_[next_].count <= first) next_first_ += runs_[next_++].count;
    size_t n = 0;
    const int64_t end = first + count;
    int64_t at = next_first_;  // position of run r's first row
    for (size_t r = next_; r < runs_.size() && at < end; at += runs_[r++].count) {
      const int64_t begin = std::max(first, at), stop = std::min(end, at + runs_[r].count);
      if (begin >= stop) continue;
      const int64_t skip = begin - at;
      const KvRun& run = runs_[r];
      // Every member written: `out` may be uninitialised scratch (KvRunScratch).
      if (run.k_q == nullptr) {
        out[n++] = KvRun{run.k + skip * k_step_, run.v + skip * v_step_, stop - begin};
      } else {
        out[n++] = KvRun{nullptr,
                         nullptr,
                         stop - begin,
                         run.k_q + skip * k_step_,
                         run.v_q + skip * v_step_,
                         run.k_scale + skip,
                         run.v_scale + skip};
      }
    }
    return n;
  }

 private:
  std::span<const KvRun> runs_;
  int64_t k_step_, v_step_;
  size_t next_ = 0;          // first run that may hold positions at or after the last `first`
  int64_t next_first_ = 0;   // position of run next_'s first row
};

}  // namespace

size_t slice_runs(std::span<const KvRun> runs, int64_t first, int64_t count, int64_t k_step, int64_t v_step,
                  KvRun* out) {
  return RunCursor(runs, k_step, v_step).slice(first, count, out);
}

namespace {

// attention_row_paged keeps one chunk's partial on the stack: this many
// floats of it (16 heads of 256), this many heads' maxima and sums.
constexpr int kPassFloats = 16 * kMaxHeadDim;
constexpr int kMaxHeadsPerPass = 16;

// Two rows' softmax state over one pass of heads: each row's running state
// accumulates in its output, the partial of its next chunk on the stack.
struct RowPairState {
  float max[2][kMaxHeadsPerPass], sum[2][kMaxHeadsPerPass];
  float next_max[2][kMaxHeadsPerPass], next_sum[2][kMaxHeadsPerPass];
  alignas(32) float next_acc[2][kPassFloats];
  AttentionPartial state(int row, float* out, int h0, int head_dim) {
    return {out + static_cast<int64_t>(h0) * head_dim, max[row], sum[row]};
  }
  AttentionPartial next(int row) { return {next_acc[row], next_max[row], next_sum[row]}; }
};

// The pair kernel of `table` for the shape (attention_pairs_supported).
AttentionChunkPairFn pair_chunk_fn(const KernelTable& table, const AttentionShape& s) {
  return resolve_attention(table, s).pair;
}

}  // namespace

void attention_row_paged(const KernelTable& table, const AttentionShape& s, const float* q, std::span<const KvRun> runs,
                         int64_t row_stride, float* scores, float* out, int head_begin, int head_end) {
  attention_row_paged_with(resolve_attention(table, s).chunk, s, q, runs, row_stride, scores, out, head_begin,
                           head_end);
}

void attention_row_paged(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                         float* scores, float* out, int head_begin, int head_end) {
  attention_row_paged(kernels(), s, q, runs, row_stride, scores, out, head_begin, head_end);
}

void attention_row_paged_with(AttentionChunkFn chunk, const AttentionShape& s, const float* q,
                              std::span<const KvRun> runs, int64_t row_stride, float* scores, float* out,
                              int head_begin, int head_end) {
  int64_t n_kv = 0;
  for (const KvRun& run : runs) n_kv += run.count;
  if (n_kv == 0) {
    std::fill(out + static_cast<int64_t>(head_begin) * s.head_dim, out + static_cast<int64_t>(head_end) * s.head_dim,
              0.0f);
    return;
  }
  // A chunk of kAttentionChunk positions spans at most that many runs.
  KvRunScratch<kAttentionChunk> chunk_scratch;
  KvRun* chunk_runs = chunk_scratch.data();
  float state_max[kMaxHeadsPerPass], state_sum[kMaxHeadsPerPass], next_max[kMaxHeadsPerPass],
      next_sum[kMaxHeadsPerPass];
  alignas(32) float next_acc_stack[kPassFloats];
  std::vector<float> next_acc_heap;  // only for head_dim > kPassFloats (no such model is known)
  float* next_acc = next_acc_stack;
  if (s.head_dim > kPassFloats) {
    next_acc_heap.resize(s.head_dim);
    next_acc = next_acc_heap.data();
  }
  const int per_pass = std::clamp(kPassFloats / s.head_dim, 1, kMaxHeadsPerPass);
  for (int h0 = head_begin; h0 < head_end; h0 += per_pass) {
    RunCursor cursor(runs, s.k_run_step(row_stride), s.v_run_step(row_stride));
    const int h1 = std::min(head_end, h0 + per_pass);
    const int heads = h1 - h0;
    // The state accumulates in the output itself.
    const AttentionPartial state{out + static_cast<int64_t>(h0) * s.head_dim, state_max, state_sum};
    const AttentionPartial next{next_acc, next_max, next_sum};
    for (int64_t first = 0; first < n_kv; first += kAttentionChunk) {
      const int64_t count = std::min(kAttentionChunk, n_kv - first);
      const size_t n = cursor.slice(first, count, chunk_runs);
      chunk(s, q, std::span(chunk_runs, n), row_stride, scores, first == 0 ? state : next, h0, h1, {});
      if (first > 0) attention_merge(s.head_dim, heads, next, state);
    }
    attention_finish(s.head_dim, heads, state, state.acc, s.sinks_from(h0));
  }
}

bool attention_pairs_supported(const KernelTable& table, const AttentionShape& s) {
  return pair_chunk_fn(table, s) != nullptr;
}
bool attention_pairs_supported(const AttentionShape& s) { return attention_pairs_supported(kernels(), s); }

void attention_row_pair_paged(const AttentionShape& s, const float* q0, const float* q1, std::span<const KvRun> runs,
                              int64_t row_stride, float* scores, float* out0, float* out1, int head_begin,
                              int head_end) {
  attention_row_pair_paged(kernels(), s, q0, q1, runs, row_stride, scores, out0, out1, head_begin, head_end);
}

void attention_row_pair_paged(const KernelTable& table, const AttentionShape& s, const float* q0, const float* q1,
                              std::span<const KvRun> runs, int64_t row_stride, float* scores, float* out0, float* out1,
                              int head_begin, int head_end) {
  int64_t n1 = 0;
  for (const KvRun& run : runs) n1 += run.count;
  const int64_t n0 = n1 - 1;  // >= 1 from real rows: a row sees at least its own position
  if (n0 < 1) {
    // Not a pair of rows (row 0 would see nothing): row 0's heads get zeros,
    // as attention_row_paged gives a row without positions.
    std::fill(out0 + static_cast<int64_t>(head_begin) * s.head_dim, out0 + static_cast<int64_t>(head_end) * s.head_dim,
              0.0f);
    attention_row_paged(table, s, q1, runs, row_stride, scores, out1, head_begin, head_end);
    return;
  }
  KvRunScratch<kAttentionChunk> chunk_scratch;
  KvRun* chunk_runs = chunk_scratch.data();
  RowPairState pair;
  const AttentionChunkPairFn pair_chunk = pair_chunk_fn(table, s);
  const int per_pass = std::clamp(kPassFloats / s.head_dim, 1, kMaxHeadsPerPass);
  for (int h0 = head_begin; h0 < head_end; h0 += per_pass) {
    RunCursor cursor(runs, s.k_run_step(row_stride), s.v_run_step(row_stride));
    const int h1 = std::min(head_end, h0 + per_pass);
    const int heads = h1 - h0;
    const AttentionPartial state0 = pair.state(0, out0, h0, s.head_dim), state1 = pair.state(1, out1, h0, s.head_dim);
    const AttentionPartial next0 = pair.next(0), next1 = pair.next(1);
    for (int64_t first = 0; first < n1; first += kAttentionChunk) {
      const int64_t count1 = std::min(kAttentionChunk, n1 - first);
      const int64_t count0 = std::clamp<int64_t>(n0 - first, 0, kAttentionChunk);
      const size_t n = cursor.slice(first, count1, chunk_runs);
      const AttentionPartial& part0 = first == 0 ? state0 : next0;
      const AttentionPartial& part1 = first == 0 ? state1 : next1;
      if (count0 > 0) {
        pair_chunk(s, q0, q1, std::span(chunk_runs, n), count0, row_stride, scores, part0, part1, h0, h1);
        if (first > 0) attention_merge(s.head_dim, heads, next0, state0);
      } else {
        // Row 0 ended at the previous chunk; row 1's last position opens this one.
        attention_chunk(table, s, q1, std::span(chunk_runs, n), row_stride, scores, part1, h0, h1);
      }
      if (first > 0) attention_merge(s.head_dim, heads, next1, state1);
    }
    attention_finish(s.head_dim, heads, state0, state0.acc, s.sinks_from(h0));
    attention_finish(s.head_dim, heads, state1, state1.acc, s.sinks_from(h0));
  }
}

void attention_chunk_shared(const KernelTable& table, const AttentionShape& s, const float* q0, const float* q1,
                            std::span<const KvRun> runs, int64_t row_stride, float* scores,
                            const AttentionPartial& out0, const AttentionPartial& out1, int head_begin, int head_end) {
  int64_t n = 0;
  for (const KvRun& run : runs) n += run.count;
  // Row 0 over all of the runs' positions: the pair kernel with no tail.
  pair_chunk_fn(table, s)(s, q0, q1, runs, n, row_stride, scores, out0, out1, head_begin, head_end);
}

void attention_chunk_shared(const AttentionShape& s, const float* q0, const float* q1, std::span<const KvRun> runs,
                            int64_t row_stride, float* scores, const AttentionPartial& out0,
                            const AttentionPartial& out1, int head_begin, int head_end) {
  attention_chunk_shared(kernels(), s, q0, q1, runs, row_stride, scores, out0, out1, head_begin, head_end);
}

void attention_rows_shared_prefix(const AttentionShape& s, const float* q0, std::span<const KvRun> runs0,
                                  const float* q1, std::span<const KvRun> runs1, int64_t shared, int64_t row_stride,
                                  float* scores, float* out0, float* out1, int head_begin, int head_end) {
  attention_rows_shared_prefix(kernels(), s, q0, runs0, q1, runs1, shared, row_stride, scores, out0, out1, head_begin,
                               head_end);
}

void attention_rows_shared_prefix(const KernelTable& table, const AttentionShape& s, const float* q0,
                                  std::span<const KvRun> runs0, const float* q1, std::span<const KvRun> runs1,
                                  int64_t shared, int64_t row_stride, float* scores, float* out0, float* out1,
                                  int head_begin, int head_end) {
  int64_t n0 = 0, n1 = 0;
  for (const KvRun& run : runs0) n0 += run.count;
  for (const KvRun& run : runs1) n1 += run.count;
  // Positions in the chunks both rows compute together: whole chunks only,
  // since a row's last chunk may end inside the prefix for one row and not
  // for the other.
  const int64_t together = std::min({shared, n0, n1}) / kAttentionChunk * kAttentionChunk;
  if (together == 0) {
    attention_row_paged(table, s, q0, runs0, row_stride, scores, out0, head_begin, head_end);
    attention_row_paged(table, s, q1, runs1, row_stride, scores, out1, head_begin, head_end);
    return;
  }
  KvRunScratch<kAttentionChunk> chunk_scratch;
  KvRun* chunk_runs = chunk_scratch.data();
  RowPairState pair;
  const int per_pass = std::clamp(kPassFloats / s.head_dim, 1, kMaxHeadsPerPass);
  const int64_t k_step = s.k_run_step(row_stride), v_step = s.v_run_step(row_stride);
  for (int h0 = head_begin; h0 < head_end; h0 += per_pass) {
    RunCursor cursor0(runs0, k_step, v_step), cursor1(runs1, k_step, v_step);
    const int h1 = std::min(head_end, h0 + per_pass);
    const int heads = h1 - h0;
    const AttentionPartial state0 = pair.state(0, out0, h0, s.head_dim), state1 = pair.state(1, out1, h0, s.head_dim);
    const AttentionPartial next0 = pair.next(0), next1 = pair.next(1);
    // Each row's chunks in position order, merged as attention_row_paged
    // merges them; a shared chunk's K and V come from row 1's runs (the
    // same memory as row 0's there).
    for (int64_t first = 0; first < std::max(n0, n1); first += kAttentionChunk) {
      const AttentionPartial& part0 = first == 0 ? state0 : next0;
      const AttentionPartial& part1 = first == 0 ? state1 : next1;
      if (first < together) {
        const size_t n = cursor1.slice(first, kAttentionChunk, chunk_runs);
        attention_chunk_shared(table, s, q0, q1, std::span(chunk_runs, n), row_stride, scores, part0, part1, h0, h1);
        if (first > 0) {
          attention_merge(s.head_dim, heads, next0, state0);
          attention_merge(s.head_dim, heads, next1, state1);
        }
        continue;
      }
      if (first < n0) {
        const size_t n = cursor0.slice(first, std::min(kAttentionChunk, n0 - first), chunk_runs);
        attention_chunk(table, s, q0, std::span(chunk_runs, n), row_stride, scores, part0, h0, h1);
        attention_merge(s.head_dim, heads, next0, state0);  // first >= together > 0
      }
      if (first < n1) {
        const size_t n = cursor1.slice(first, std::min(kAttentionChunk, n1 - first), chunk_runs);
        attention_chunk(table, s, q1, std::span(chunk_runs, n), row_stride, scores, part1, h0, h1);
        attention_merge(s.head_dim, heads, next1, state1);
      }
    }
    attention_finish(s.head_dim, heads, state0, state0.acc, s.sinks_from(h0));
    attention_finish(s.head_dim, heads, state1, state1.acc, s.sinks_from(h0));
  }
}

namespace ref {

// The plain loops: one scalar dot per position, libm exp, one multiply-add
// per position and value element; f16 (bf16) elements widened one at a time (q8_0
// codes: see the loops for the order of the scale multiplies). Q and
// the softmax numerators are rounded to f16 (as llama.cpp's CPU attention
// does).
void attention_chunk(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& /*ahead: a prefetch hint, nothing to fetch here*/) {
  const int group = s.n_head / s.n_head_kv;
  const int64_t k_position_step = s.k_position_step(row_stride);
  const int64_t k_dim_step = s.k_dim_stride != 0 ? s.k_dim_stride : 1;
  // q8_0, q4_0: K transposed, head_dim a multiple of kKvQ8Group (AttentionShape).
  const bool q8 = s.kv_type == KvCacheType::kQ8_0;
  const bool q4 = s.kv_type == KvCacheType::kQ4_0;
  const int groups = s.head_dim / kKvQ8Group;
  // q4_0: Q as q8_0 codes and the per-group terms of the score (quantize_q4_query).
  Q4Query qq;
  // A 16-bit cache's element as f32.
  auto widen = [bf16 = s.kv_type == KvCacheType::kBF16](uint16_t h) { return bf16 ? bf16_to_f32(h) : f16_to_f32(h); };
  for (int h = head_begin; h < head_end; ++h) {
    const int i = h - head_begin;
    const int64_t kv_offset = (h / group) * s.kv_head_step();
    // Q rounded to f16 once per head, into this head's accumulator (free
    // until the value pass below).
    const float* qsrc = q + static_cast<int64_t>(h) * s.head_dim;
    float* acc = out.acc + static_cast<int64_t>(i) * s.head_dim;
    for (int d = 0; d < s.head_dim; ++d) acc[d] = f16_to_f32(f32_to_f16(qsrc[d]));
    const float* qh = acc;
    if (q4) quantize_q4_query(qsrc, s.head_dim, &qq);
    float max_score = -INFINITY;
    int64_t n_kv = 0;
    for (const KvRun& run : runs) {
      for (int64_t j = 0; j < run.count; ++j, ++n_kv) {
        float dot = 0.0f;
        if (q4) {
          const auto* kj = reinterpret_cast<const uint8_t*>(run.k_q) + 4 * j + kv_offset / 2;
          const uint16_t* sj = run.k_scale + j + (h / group) * s.scale_head_stride;
          for (int g = 0; g < groups; ++g) {
            int32_t isum = 0;
            for (int d = g * kKvQ8Group; d < (g + 1) * kKvQ8Group; ++d) {
              const uint8_t byte = kj[d / 8 * 4 * s.k_dim_stride + d % 4];
              isum += (d % 8 < 4 ? byte & 15 : byte >> 4) * qq.codes[d];
            }
            dot = q4_group_step(isum, qq, g, sj[g * s.k_dim_stride], dot);
          }
        } else if (q8) {
          // Per group: the codes' dot in order over d, times the group's
          // scale, added to the running score (the AVX2 path's order).
          const int8_t* kj = run.k_q + j * k_position_step + kv_offset;
          const uint16_t* sj = run.k_scale + j + (h / group) * s.scale_head_stride;
          for (int g = 0; g < groups; ++g) {
            float part = 0.0f;
            for (int d = g * kKvQ8Group; d < (g + 1) * kKvQ8Group; ++d)
              part = std::fma(qh[d], static_cast<float>(kj[d * k_dim_step]), part);
            dot = std::fma(part, f16_to_f32(sj[g * s.k_dim_stride]), dot);
          }
        } else {
          const uint16_t* kj = run.k + j * k_position_step + kv_offset;
          for (int d = 0; d < s.head_dim; ++d) dot += qh[d] * widen(kj[d * k_dim_step]);
        }
        scores[n_kv] = dot * s.scale;
        if (scores[n_kv] > max_score) max_score = scores[n_kv];
      }
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < n_kv; ++j) {
      scores[j] = f16_to_f32(f32_to_f16(std::exp(scores[j] - max_score)));
      sum += scores[j];
    }
    out.max[i] = max_score;
    out.sum[i] = sum;
    std::memset(acc, 0, sizeof(float) * s.head_dim);
    const float* p = scores;
    for (const KvRun& run : runs) {
      for (int64_t j = 0; j < run.count; ++j, ++p) {
        if (q4) {
          const auto* vj = reinterpret_cast<const uint8_t*>(run.v_q) + (j * row_stride + kv_offset) / 2;
          const uint16_t* sj = run.v_scale + j + (h / group) * s.scale_head_stride;
          for (int d = 0; d < s.head_dim; ++d) {
            const uint8_t byte = vj[d / 32 * 16 + d % 16];
            const int code = d % 32 < 16 ? byte & 15 : byte >> 4;
            acc[d] = std::fma(*p * f16_to_f32(sj[d / kKvQ8Group * s.k_dim_stride]), static_cast<float>(code - 8),
                              acc[d]);
          }
        } else if (q8) {
          const int8_t* vj = run.v_q + j * row_stride + kv_offset;
          const uint16_t* sj = run.v_scale + j + (h / group) * s.scale_head_stride;
          for (int d = 0; d < s.head_dim; ++d)
            acc[d] = std::fma(*p * f16_to_f32(sj[d / kKvQ8Group * s.k_dim_stride]), static_cast<float>(vj[d]), acc[d]);
        } else {
          const uint16_t* vj = run.v + j * row_stride + kv_offset;
          for (int d = 0; d < s.head_dim; ++d) acc[d] += *p * widen(vj[d]);
        }
      }
    }
  }
}

}  // namespace ref

}  // namespace omnibus
