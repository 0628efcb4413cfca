// Attention scheduling of ForwardPass: which rows and softmax chunks each
// thread computes (whole rows or row pairs per work item for prompts,
// chunk units for decode steps, pairs of sequences over a shared cached
// prefix), the runs of KV positions they read, and the merge of a row's
// chunks. The kernels are kernels/attention.h; what a layer does around
// attention stays in forward.cpp.
#include <algorithm>
#include <atomic>

#include "backends/cpu/forward.h"
#include "kernels/attention.h"

namespace omnibus {

// The runs of positions [first, first + count) of the row's sequence in
// `layer`, one per KV block touched. Returns their count.
size_t ForwardPass::position_runs(const BatchRow& row, int layer, PagedKvStore& kv, int64_t first, int64_t count,
                                  KvRun* runs) {
  const int bs = kv.block_size();
  const std::span<const int32_t> table = layer_block_table(row, layer, kv);
  size_t n = 0;
  for (int64_t p = first, end = first + count; p < end;) {
    const int block = table[p / bs];
    const int offset = static_cast<int>(p % bs);
    const int64_t here = std::min<int64_t>(bs - offset, end - p);
    if (kv.type() == KvCacheType::kQ8_0) {
      runs[n++] = {nullptr,
                   nullptr,
                   here,
                   kv.key_codes_at(layer, block, offset),
                   kv.value_codes_at(layer, block, offset),
                   kv.key_scales_at(layer, block, offset),
                   kv.value_scales_at(layer, block, offset)};
    } else if (kv.type() == KvCacheType::kQ4_0) {
      runs[n++] = {nullptr,
                   nullptr,
                   here,
                   reinterpret_cast<const int8_t*>(kv.key_q4_at(layer, block, offset)),
                   reinterpret_cast<const int8_t*>(kv.value_q4_at(layer, block, offset)),
                   kv.key_scales_at(layer, block, offset),
                   kv.value_scales_at(layer, block, offset)};
    } else {
      runs[n++] = {kv.key_at(layer, block, offset), kv.value_at(layer, block, offset), here};
    }
    p += here;
  }
  return n;
}

namespace {

AttentionShape attention_shape(const Model& m, const PagedKvStore& kv, int layer) {
  const ModelConfig& c = m.config();
  AttentionShape shape{c.n_head,
                       c.n_head_kv,
                       c.head_dim,
                       c.attention_scale,
                       kv.head_stride(layer),
                       kv.key_dim_stride(),
                       kv.type(),
                       kv.scale_head_stride(layer)};
  shape.sinks = m.weights().layers[layer].attn_sinks;
  return shape;
}

// attend_chunks' cost of a unit: its chunk's positions plus this.
constexpr int64_t kChunkUnitOverhead = 16;

// How many positions a row attends to in `layer` (its window or all).
int64_t visible_positions(const ModelConfig& c, int layer, const BatchRow& row) {
  return row.pos + 1 - c.first_visible(layer, row.pos);
}

// Positions that rows a and b, of two sequences, may attend to together in
// `layer`: from their first visible position on, those they read from the
// same KV blocks (a prefix both took from the prefix cache), up to the
// shorter row's end; 0 for rows of one sequence, rows whose first visible
// positions differ (a window layer), or fewer than one whole softmax chunk.
int64_t shared_prefix_positions(const ModelConfig& c, int layer, const BatchRow& a, const BatchRow& b,
                                const PagedKvStore& kv) {
  const int64_t first = c.first_visible(layer, a.pos);
  if (a.block_table.data() == b.block_table.data() || c.first_visible(layer, b.pos) != first) return 0;
  const int block_size = kv.block_size();
  const std::span<const int32_t> table_a = layer_block_table(a, layer, kv);
  const std::span<const int32_t> table_b = layer_block_table(b, layer, kv);
  const int64_t end = std::min(a.pos, b.pos) + 1;
  int64_t block = first / block_size;
  const int64_t last_block = (end - 1) / block_size;
  while (block <= last_block && table_a[block] == table_b[block]) ++block;
  const int64_t shared = std::min(end, block * block_size) - first;
  return shared >= kAttentionChunk ? shared : 0;
}

// What every attention pool job reads; each job adds its own split state.
// A job is passed by pointer so the callable keeps two captures (no heap
// allocation per call, tests/decode_alloc_test.cpp).
struct AttentionJob {
  const ModelConfig& c;
  AttentionShape shape;
  std::span<const BatchRow> rows;
  int layer;
  PagedKvStore& kv;
};

}  // namespace

// Chunk partial `chunk` (attend_chunks' numbering) from head h on.
AttentionPartial ForwardPass::chunk_partial(int64_t chunk, int h) {
  const ModelConfig& c = model_->config();
  return {partial_acc_.data() + chunk * c.q_dim() + static_cast<int64_t>(h) * c.head_dim,
          partial_max_.data() + chunk * c.n_head + h, partial_sum_.data() + chunk * c.n_head + h};
}

bool ForwardPass::plan_chunks(int layer, std::span<const BatchRow> rows, const PagedKvStore& kv) {
  const ModelConfig& c = model_->config();
  ChunkPlan& plan = chunk_plan(layer);
  plan_shared_chunks(layer, rows, kv, plan);
  // A unit costs its chunk's positions plus a fixed overhead (attend_chunks);
  // a shared chunk costs both rows' positions and is the leading row's unit.
  int64_t chunks = 0, total = 0;
  plan.multi_chunk = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    plan.first_chunk[i] = chunks;
    const int64_t positions = visible_positions(c, layer, rows[i]);
    const int64_t n_chunks = (positions + kAttentionChunk - 1) / kAttentionChunk;
    chunks += n_chunks;
    total += (positions + kChunkUnitOverhead * n_chunks) * c.n_head;
    if (plan.led[i]) total -= (kAttentionChunk + kChunkUnitOverhead) * plan.shared_chunks[i] * c.n_head;
    if (plan.partner[i] >= 0 && !plan.led[i]) total += kAttentionChunk * plan.shared_chunks[i] * c.n_head;
    plan.multi_chunk |= n_chunks > 1;
  }
  plan.first_chunk[rows.size()] = chunks;
  plan.total_cost = total;
  return chunks <= max_chunk_partials_;
}

void ForwardPass::plan_shared_chunks(int layer, std::span<const BatchRow> rows, const PagedKvStore& kv,
                                     ChunkPlan& plan) {
  const ModelConfig& c = model_->config();
  const int n = static_cast<int>(rows.size());
  std::fill_n(plan.partner.begin(), n, -1);
  std::fill_n(plan.led.begin(), n, uint8_t{0});
  plan.pairs = 0;
  // Here each thread computes a few rows' chunks in turn, and the
  // single-row kernels fetch its next chunk's K and V ahead (ChunkAhead);
  // the pair kernel does not. Pairing pays only where a thread would
  // otherwise read the shared K/V twice from beyond its L2: two rows or
  // more per thread, and a layer's prefix K/V larger than the L2 (decode
  // steps on SmolLM2, 2 threads, tests/shared_prefix_bench_test.cpp: 4
  // sequences sharing 1,024 positions, 768 KB a layer, 8% slower paired;
  // sharing 2,048, 1.5 MB, 8-16% faster; 2 sequences 3-7% slower).
  if (!shared_prefix_attention_ || n < 2 * pool_.size() ||
      !attention_pairs_supported(kernels_, attention_shape(*model_, kv, layer)))
    return;
  const int64_t bytes_per_position = kv_bytes_per_token(c, kv.type()) / c.n_layer;
  // As pair_shared_prefixes: a row takes the first later free row it shares
  // a whole chunk with. A row's shared positions are fewer than its own
  // (its last position is its own), so a paired row has a chunk after them
  // and is merged after the job.
  for (int a = 0; a < n; ++a) {
    if (plan.partner[a] >= 0) continue;
    for (int b = a + 1; b < n; ++b) {
      if (plan.partner[b] >= 0) continue;
      const int64_t positions = shared_prefix_positions(c, layer, rows[a], rows[b], kv);
      if (positions == 0 || positions * bytes_per_position <= shared_prefix_min_bytes_) continue;
      const int64_t shared = positions / kAttentionChunk;
      plan.partner[a] = b, plan.partner[b] = a;
      plan.shared_chunks[a] = plan.shared_chunks[b] = shared;
      plan.led[b] = 1;
      ++plan.pairs;
      break;
    }
  }
}

void ForwardPass::attend(int layer, std::span<const BatchRow> rows, PagedKvStore& kv) {
  ProfileScope scope(profiler_, ProfileOp::kAttention);
  // Few rows (decode): each row's softmax chunks are shared out over the
  // threads, when their partials fit. Many rows (prefill), or rows too long
  // for the partial buffers: whole rows per work item. Both give each row
  // the same bits (attention.h), so which path a row takes changes nothing.
  if (static_cast<int64_t>(rows.size()) < 4 * pool_.size() && plan_chunks(layer, rows, kv)) {
    shared_prefix_units_ += static_cast<uint64_t>(chunk_plan(layer).pairs);
    attend_chunks(layer, rows, kv);
    return;
  }
  attend_rows(layer, rows, kv);
}

// Work items are (unit, GQA group) pairs, a unit being one row or two
// consecutive rows of a sequence, whose heads share each KV block's reads,
// taken from a shared counter latest rows first: a causal row's cost
// grows with its position, so a fixed split of a prompt chunk left the
// thread with the early rows idle (thread wait was 38% of a 771-token
// prefill; now 3%).
void ForwardPass::attend_rows(int layer, std::span<const BatchRow> rows, PagedKvStore& kv) {
  const ModelConfig& c = model_->config();
  const AttentionShape shape = attention_shape(*model_, kv, layer);
  const int heads_per_item = std::min(c.n_head / c.n_head_kv, kHeadsPerCall);
  struct Job : AttentionJob {
    int heads_per_item;
    int64_t items_per_row, items;
    std::atomic<int64_t> next{0};
  };
  // Units: consecutive rows of one sequence go in pairs where the pair
  // kernel applies (each widened K and V vector then serves both rows),
  // other rows alone.
  row_units_.clear();
  const bool pairs = attention_pairs_supported(kernels_, shape);
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    // A pair shares its first position: both rows see the same positions
    // but row i + 1's last (in a window layer, only while the window has
    // not started to slide).
    const bool pair = pairs && i + 1 < static_cast<int>(rows.size()) && rows[i + 1].pos == rows[i].pos + 1 &&
                      rows[i + 1].block_table.data() == rows[i].block_table.data() &&
                      c.first_visible(layer, rows[i].pos) == c.first_visible(layer, rows[i + 1].pos);
    row_units_.push_back({pair ? i + 1 : i, pair});
    if (pair) ++i;
  }
  if (pairs && shared_prefix_attention_) pair_shared_prefixes(layer, rows, kv);
  // A unit's last item may hold fewer heads (when kHeadsPerCall cuts a group).
  Job job{{c, shape, rows, layer, kv}, heads_per_item, (c.n_head + heads_per_item - 1) / heads_per_item, 0};
  job.items = static_cast<int64_t>(row_units_.size()) * job.items_per_row;
  pool_.run([this, &job](int t, int) {
    float* scores = scores_.data() + t * 2 * kHeadsPerCall * scores_stride_;
    KvRun* runs = runs_.data() + t * runs_stride_;
    for (;;) {
      const int64_t taken = job.next.fetch_add(1, std::memory_order_relaxed);
      if (taken >= job.items) break;
      const int64_t item = job.items - 1 - taken;
      const RowUnit unit = row_units_[item / job.items_per_row];
      const int h = static_cast<int>(item % job.items_per_row) * job.heads_per_item;
      const int h_end = std::min(job.c.n_head, h + job.heads_per_item);
      const int i = unit.last_row;  // the unit's longest row
      const BatchRow& row = job.rows[i];
      const int64_t first = job.c.first_visible(job.layer, row.pos);
      const size_t n_runs = position_runs(row, job.layer, job.kv, first, row.pos + 1 - first, runs);
      float* q = q_.data() + static_cast<int64_t>(i) * job.c.q_dim();
      float* out = attn_.data() + static_cast<int64_t>(i) * job.c.q_dim();
      if (unit.other >= 0) {
        const BatchRow& row0 = job.rows[unit.other];
        KvRun* runs0 = runs + runs_stride_ / 2;
        const size_t n_runs0 = position_runs(row0, job.layer, job.kv, first, row0.pos + 1 - first, runs0);
        const int64_t q0 = static_cast<int64_t>(unit.other) * job.c.q_dim();
        attention_rows_shared_prefix(kernels_, job.shape, q_.data() + q0, std::span(runs0, n_runs0), q,
                                     std::span(runs, n_runs), unit.shared, job.kv.position_stride(), scores,
                                     attn_.data() + q0, out, h, h_end);
      } else if (unit.pair) {
        attention_row_pair_paged(kernels_, job.shape, q - job.c.q_dim(), q, std::span(runs, n_runs),
                                 job.kv.position_stride(), scores, out - job.c.q_dim(), out, h, h_end);
      } else {
        attention_row_paged(kernels_, job.shape, q, std::span(runs, n_runs), job.kv.position_stride(), scores, out, h,
                            h_end);
      }
    }
  });
}

// Joins single-row units of different sequences whose rows share at least
// one whole softmax chunk of cached prefix (same KV blocks, same first
// visible position) into one unit each: the two rows' chunks inside the
// prefix then read each K and V vector once (attention_rows_shared_prefix).
// In a batched decode step of requests with a common system prompt, each
// pair halves the prefix's KV reads, the largest part of such a step's
// attention. Each row keeps its own bits, so the pairing may depend on the
// batch. A row takes the first later single row it shares a chunk with.
void ForwardPass::pair_shared_prefixes(int layer, std::span<const BatchRow> rows, const PagedKvStore& kv) {
  const ModelConfig& c = model_->config();
  const int n_units = static_cast<int>(row_units_.size());
  bool joined = false;
  for (int a = 0; a < n_units; ++a) {
    RowUnit& ua = row_units_[a];
    if (ua.pair || ua.last_row < 0 || ua.other >= 0) continue;
    for (int b = a + 1; b < n_units; ++b) {
      RowUnit& ub = row_units_[b];
      if (ub.pair || ub.last_row < 0 || ub.other >= 0) continue;
      const int64_t shared = shared_prefix_positions(c, layer, rows[ua.last_row], rows[ub.last_row], kv);
      if (shared == 0) continue;
      ua.other = ub.last_row;
      ua.shared = shared;
      ub.last_row = -1;  // taken into unit a
      joined = true;
      ++shared_prefix_units_;
      break;
    }
  }
  if (joined)
    row_units_.erase(
        std::remove_if(row_units_.begin(), row_units_.end(), [](const RowUnit& u) { return u.last_row < 0; }),
        row_units_.end());
}

// Work units are (row, chunk, head), cut into one contiguous range per
// thread, balanced by the positions each unit reads; a thread's heads of
// one chunk go into one call, so the heads of a GQA group share their KV
// reads. Each unit writes its chunk's partial; a row of one chunk is
// finished on the spot, longer rows are merged in position order after the
// job. At 2,048 positions this splits one row's KV reads evenly between the
// threads (a head split left each thread reading two of SmolLM2's three KV
// heads). Each call is told the thread's next one (ChunkAhead), whose first
// K and V the kernels may fetch meanwhile. Needs plan_chunks(layer, rows)
// first.
void ForwardPass::attend_chunks(int layer, std::span<const BatchRow> rows, PagedKvStore& kv) {
  struct Job {
    ForwardPass* pass;
    int layer;
    std::span<const BatchRow> rows;
    PagedKvStore& kv;
  };
  Job job{this, layer, rows, kv};
  // Two captures: no heap allocation per call (tests/decode_alloc_test.cpp).
  pool_.run([&job](int t, int count) { job.pass->attend_chunk_share(job.layer, job.rows, job.kv, t, count); });
  if (chunk_plan(layer).multi_chunk) merge_chunks(layer, rows, 0, model_->config().n_head);
}

void ForwardPass::attend_chunk_share(int layer, std::span<const BatchRow> rows, PagedKvStore& kv, int t, int count) {
  const ModelConfig& c = model_->config();
  const AttentionShape shape = attention_shape(*model_, kv, layer);
  const ChunkPlan& plan = chunk_plan(layer);
  const int group = c.n_head / c.n_head_kv;
  // Room for two rows' scores (shared chunks).
  float* scores = scores_.data() + t * 2 * kHeadsPerCall * scores_stride_;
  // Two run buffers: the current call's chunk and the next one's, which the
  // current call fetches ahead (ChunkAhead).
  KvRun* const buffers[2] = {runs_.data() + t * runs_stride_, runs_.data() + t * runs_stride_ + kAttentionChunk};
  // This thread's units start in [lo, hi) of the cost line.
  const int64_t lo = plan.total_cost * t / count, hi = plan.total_cost * (t + 1) / count;
  // This thread's chunks in order: (row, chunk, heads whose units start in
  // [lo, hi)), walked one ahead.
  struct Call {
    size_t row = 0;
    int64_t chunk = 0, first = 0, positions = 0;
    int h_begin = 0, h_end = 0;
    int partner = -1;  // the row computed together with `row` (a shared chunk)
  };
  size_t walk_row = 0;
  int64_t walk_chunk = 0, at = 0;  // at: cost before the walk's chunk
  auto next_call = [&](Call& call) {
    for (; walk_row < rows.size() && at < hi; ++walk_row, walk_chunk = 0) {
      const BatchRow& row = rows[walk_row];
      const int64_t n_chunks = plan.first_chunk[walk_row + 1] - plan.first_chunk[walk_row];
      // Chunks count from the row's first visible position, as in attend_rows.
      const int64_t first = c.first_visible(layer, row.pos);
      // A row led by its partner skips its shared chunks (the partner
      // computes them); the partner's units of those chunks cost both rows'.
      const bool shares = plan.partner[walk_row] >= 0;
      if (shares && plan.led[walk_row] && walk_chunk < plan.shared_chunks[walk_row])
        walk_chunk = plan.shared_chunks[walk_row];
      while (walk_chunk < n_chunks && at < hi) {
        const int64_t ch = walk_chunk++;
        const int64_t positions = std::min(kAttentionChunk, row.pos + 1 - first - ch * kAttentionChunk);
        const bool together = shares && !plan.led[walk_row] && ch < plan.shared_chunks[walk_row];
        const int64_t unit = (together ? 2 * positions : positions) + kChunkUnitOverhead;
        // Heads h whose units start in [lo, hi): at + h * unit in range.
        const int h_begin = static_cast<int>(std::clamp<int64_t>((lo - at + unit - 1) / unit, 0, c.n_head));
        const int h_end = static_cast<int>(std::clamp<int64_t>((hi - at + unit - 1) / unit, 0, c.n_head));
        at += unit * c.n_head;
        if (h_begin < h_end) {
          call = {walk_row, ch,    first + ch * kAttentionChunk,          positions,
                  h_begin,  h_end, together ? plan.partner[walk_row] : -1};
          return true;
        }
      }
    }
    return false;
  };
  auto runs_of = [&](const Call& call, KvRun* out) {
    return std::span<const KvRun>(out, position_runs(rows[call.row], layer, kv, call.first, call.positions, out));
  };
  Call call, next;
  if (!next_call(call)) return;
  int buffer = 0;
  std::span<const KvRun> runs = runs_of(call, buffers[buffer]);
  for (;;) {
    const bool more = next_call(next);
    const std::span<const KvRun> next_runs = more ? runs_of(next, buffers[1 - buffer]) : std::span<const KvRun>{};
    const size_t i = call.row;
    const int64_t partial = plan.first_chunk[i] + call.chunk;
    const bool whole_row = plan.first_chunk[i + 1] - plan.first_chunk[i] == 1;
    for (int h = call.h_begin; h < call.h_end; h += kHeadsPerCall) {
      const int h1 = std::min(call.h_end, h + kHeadsPerCall);
      // What this thread computes next: the same chunk's next heads, or its next chunk.
      const ChunkAhead ahead = h1 < call.h_end ? ChunkAhead{runs, h1 / group}
                               : more          ? ChunkAhead{next_runs, next.h_begin / group}
                                               : ChunkAhead{};
      const AttentionPartial part = chunk_partial(partial, h);
      const float* q = q_.data() + static_cast<int64_t>(i) * c.q_dim();
      if (call.partner >= 0) {
        const int64_t j = call.partner;
        attention_chunk_shared(kernels_, shape, q, q_.data() + j * c.q_dim(), runs, kv.position_stride(), scores, part,
                               chunk_partial(plan.first_chunk[j] + call.chunk, h), h, h1);
        continue;  // rows sharing chunks have more than one: merged after the job
      }
      attention_chunk(kernels_, shape, q, runs, kv.position_stride(), scores, part, h, h1, ahead);
      if (whole_row)
        attention_finish(c.head_dim, h1 - h, part,
                         attn_.data() + static_cast<int64_t>(i) * c.q_dim() + static_cast<int64_t>(h) * c.head_dim,
                         shape.sinks_from(h));
    }
    if (!more) break;
    call = next;
    runs = next_runs;
    buffer = 1 - buffer;
  }
}

void ForwardPass::merge_chunks(int layer, std::span<const BatchRow> rows, int head_begin, int head_end) {
  const ModelConfig& c = model_->config();
  const ChunkPlan& plan = chunk_plan(layer);
  if (head_begin >= head_end) return;
  const float* sinks = model_->weights().layers[layer].attn_sinks;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t first = plan.first_chunk[i], n_chunks = plan.first_chunk[i + 1] - first;
    if (n_chunks == 1) continue;
    const AttentionPartial state = chunk_partial(first, head_begin);
    for (int64_t ch = 1; ch < n_chunks; ++ch)
      attention_merge(c.head_dim, head_end - head_begin, chunk_partial(first + ch, head_begin), state);
    attention_finish(c.head_dim, head_end - head_begin, state,
                     attn_.data() + static_cast<int64_t>(i) * c.q_dim() + static_cast<int64_t>(head_begin) * c.head_dim,
                     sinks != nullptr ? sinks + head_begin : nullptr);
  }
}

}  // namespace omnibus
