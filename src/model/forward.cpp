#include "model/forward.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "base/cpu_features.h"
#include "kernels/attention.h"
#include "kernels/hadamard.h"
#include "kernels/kv_quant.h"
#include "kernels/ops.h"
#include "kernels/weight_interleave.h"
#include "model/forward_internal.h"
#include "tensor/quant.h"

namespace omnibus {

using forward_internal::gated_activation;
using forward_internal::rotates_kv;

ForwardPass::ForwardPass(std::shared_ptr<const Model> model, int max_batch, int64_t max_positions, int threads)
    : model_(std::move(model)), max_batch_(max_batch), pool_(threads), shared_prefix_min_bytes_(l2_cache_bytes()) {
  const ModelConfig& c = model_->config();
  const size_t b = static_cast<size_t>(max_batch);
  x_.resize(b * c.n_embd);
  xn_.resize(b * c.n_embd);
  embed_row_.resize(model_->weights().token_embd.row_bytes);
  q_.resize(b * c.q_dim());
  k_.resize(b * c.kv_dim());
  v_.resize(b * c.kv_dim());
  attn_.resize(b * c.q_dim());
  proj_.resize(b * c.n_embd);
  gate_.resize(b * c.n_ff);
  up_.resize(b * c.n_ff);
  // Faulted in now, not by the first prompt: on a VM a page's first touch
  // can cost ~3 ms a MiB (the host backs it), which the first forward call
  // would otherwise pay inside its TTFT.
  for (AlignedBuffer<float>* buffer : {&x_, &xn_, &q_, &k_, &v_, &attn_, &proj_, &gate_, &up_}) buffer->zero_fill();
  // Two sets of angles when window layers rotate with their own base.
  const size_t angle_sets = c.sliding_window > 0 ? 2 : 1;
  rope_cos_.resize(angle_sets * b * (c.rope.rot_dims / 2 + 1));
  rope_sin_.resize(angle_sets * b * (c.rope.rot_dims / 2 + 1));
  max_positions_ = max_positions;
  // Per thread: scores of one softmax chunk of up to kHeadsPerCall heads,
  // for two rows (attention_row_pair_paged).
  scores_stride_ = (std::min(max_positions, kAttentionChunk) + 15) / 16 * 16;
  scores_.resize(static_cast<size_t>(pool_.size()) * 2 * kHeadsPerCall * scores_stride_);
  row_units_.reserve(b);
  // A row attends to at most max_positions positions, so at most that many
  // runs even with block_size 1; attend_chunk_share holds two chunks' runs
  // (the current and the next), attend_rows' shared-prefix pairs two rows'.
  runs_stride_ = 2 * std::max<int64_t>(max_positions, kAttentionChunk);
  runs_.resize(static_cast<size_t>(pool_.size()) * runs_stride_);
  // Chunk partials of decode rows: room for two rows at full context, and
  // at least 16 chunks per thread.
  const int64_t chunks_per_row = (max_positions + kAttentionChunk - 1) / kAttentionChunk;
  max_chunk_partials_ = std::max<int64_t>(2 * chunks_per_row, 16 * pool_.size());
  partial_acc_.resize(static_cast<size_t>(max_chunk_partials_) * c.q_dim());
  partial_max_.resize(static_cast<size_t>(max_chunk_partials_) * c.n_head);
  partial_sum_.resize(static_cast<size_t>(max_chunk_partials_) * c.n_head);
  for (ChunkPlan& plan : chunk_plans_) {
    plan.first_chunk.resize(b + 1);
    plan.partner.resize(b);
    plan.shared_chunks.resize(b);
    plan.led.resize(b);
  }
  // run_decode_step takes steps whose attention runs attend_chunks (fewer
  // than 4 rows per thread): each thread a private copy of those rows.
  if (pool_.size() > 1) {
    decode_step_rows_max_ = std::min(max_batch, 4 * pool_.size() - 1);
    thread_scratch_.resize(pool_.size());
    for (ThreadScratch& s : thread_scratch_) {
      s.rows.resize(static_cast<size_t>(decode_step_rows_max_) * std::max(c.n_embd, c.q_dim()));
      s.matmul.reserve(decode_step_rows_max_, std::max({c.n_embd, c.q_dim(), c.n_ff}));
    }
  }
}

Status ForwardPass::check(std::span<const BatchRow> rows, const PagedKvStore& kv) const {
  if (rows.size() > static_cast<size_t>(max_batch_))
    return Status::invalid_argument("batch of " + std::to_string(rows.size()) + " rows exceeds max " +
                                    std::to_string(max_batch_));
  const int vocab = model_->config().vocab_size;
  for (const BatchRow& r : rows) {
    if (r.token < 0 || r.token >= vocab)
      return Status::invalid_argument("token id " + std::to_string(r.token) + " is outside the vocabulary [0, " +
                                      std::to_string(vocab) + ")");
    if (r.pos < 0 || r.pos >= max_positions_)
      return Status::out_of_range("position " + std::to_string(r.pos) + " is past the context of " +
                                  std::to_string(max_positions_));
    const size_t last_block = static_cast<size_t>(r.pos / kv.block_size());
    if (last_block >= r.block_table.size())
      return Status::out_of_range("position " + std::to_string(r.pos) + " is past its block table of " +
                                  std::to_string(r.block_table.size()) + " blocks");
    // Only the blocks this row reads or writes; entries past them are unused.
    for (size_t b = 0; b <= last_block; ++b)
      if (r.block_table[b] < 0 || r.block_table[b] >= kv.num_blocks())
        return Status::invalid_argument("KV block id " + std::to_string(r.block_table[b]) + " is outside [0, " +
                                        std::to_string(kv.num_blocks()) + ")");
  }
  return Status::ok();
}

ForwardPass::~ForwardPass() {
  if (profiler_ != nullptr) profiler_->set_wait_counter(nullptr);  // the counter dies with pool_
}

void ForwardPass::set_profiler(Profiler* profiler) {
  if (profiler_ != nullptr) profiler_->set_wait_counter(nullptr);
  profiler_ = profiler;
  pool_.set_wait_counting(profiler != nullptr);
  // Each op's scope reads the pool's wait total: the table then shows how
  // much of every op thread 0 spent waiting for the other workers.
  if (profiler != nullptr) profiler->set_wait_counter(pool_.wait_ns_counter());
}

void ForwardPass::project(ProfileOp op, const WeightMatrix& w, const float* x, int n, float* y) {
  ProfileScope scope(profiler_, op);
  matmul(w, x, n, y, &pool_);
}

namespace {

// Steps with at least this many rows run the per-row ops (norms, residual
// adds, Q/K norms, RoPE, the KV store) on the pool; smaller ones on the
// calling thread, where a hand-off costs more than the work (decode steps
// on two or more threads take forward_decode_step.cpp instead). In a
// 728-token prefill these ops were 7% of the time on one thread while the
// other waited (`omnibus run --profile`, 2026-12-03); on the pool the
// prefill went 1851-1944 -> 1958-2017 tok/s (four alternating pairs).
constexpr int kPoolRowsMin = 16;

// fn(begin, end) over rows [0, n): split over the pool for prompt-sized
// steps. Each row's arithmetic is its own, so the split changes no bit.
template <class Fn>
void for_rows(ThreadPool& pool, int64_t n, Fn&& fn) {
  if (n < kPoolRowsMin || pool.size() == 1) return fn(int64_t{0}, n);
  pool.parallel_for(n, fn);
}

}  // namespace

// Where a set of rope angles starts in rope_cos_ / rope_sin_: the model's,
// then (models with window layers) the window layers' own, each max_batch
// rows of rot_dims / 2 + 1.
int64_t ForwardPass::rope_set_offset(bool window_layers) const {
  return window_layers ? int64_t{max_batch_} * (model_->config().rope.rot_dims / 2 + 1) : 0;
}

void ForwardPass::norm_rows(const float* weight, int n) { norm_rows(weight, x_.data(), xn_.data(), n); }

void ForwardPass::norm_rows(const float* weight, const float* from, float* to, int n) {
  ProfileScope scope(profiler_, ProfileOp::kRmsNorm);
  const int64_t d = model_->config().n_embd;
  const float eps = model_->config().rms_eps;
  for_rows(pool_, n, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) rms_norm(from + i * d, weight, to + i * d, d, eps);
  });
}

// x += proj, the residual connection after attention and after the MLP.
void ForwardPass::add_residual(int n) {
  ProfileScope scope(profiler_, ProfileOp::kResidual);
  const int64_t d = model_->config().n_embd;
  const float* proj = proj_.data();
  float* x = x_.data();
  for_rows(pool_, n, [=](int64_t begin, int64_t end) { add_f32(proj + begin * d, x + begin * d, (end - begin) * d); });
}

void ForwardPass::embed(std::span<const BatchRow> rows) {
  ProfileScope scope(profiler_, ProfileOp::kEmbed);
  const ModelConfig& c = model_->config();
  const WeightMatrix& e = model_->weights().token_embd;
  for (size_t i = 0; i < rows.size(); ++i) {
    // A tied embedding is read from the output projection's repacked copy
    // (Model::interleave_matrices), whose file pages are released.
    gather_row_blocks(e, rows[i].token, embed_row_.data());
    dequantize_row_ref(e.dtype, embed_row_.data(), x_.data() + i * c.n_embd, c.n_embd);
    if (c.spec->embedding_scaled) scale_f32(std::sqrt(static_cast<float>(c.n_embd)), x_.data() + i * c.n_embd, c.n_embd);
  }
}

// Projects the normed rows to q, k, v (plus biases), rotates q and k, and
// stores this step's k and v in the cache.
void ForwardPass::qkv_rope_store(int layer, std::span<const BatchRow> rows, PagedKvStore& kv) {
  const ModelConfig& c = model_->config();
  const LayerWeights& l = model_->weights().layers[layer];
  const int n = static_cast<int>(rows.size());
  {
    ProfileScope scope(profiler_, ProfileOp::kAttnQkv);
    const MatmulTarget qkv[] = {{&l.wq, q_.data()}, {&l.wk, k_.data()}, {&l.wv, v_.data()}};
    matmul_shared_input(qkv, xn_.data(), n, &pool_);
  }
  if (l.bq != nullptr) {
    ProfileScope scope(profiler_, ProfileOp::kBias);
    for (int i = 0; i < n; ++i) {
      add_f32(l.bq, q_.data() + static_cast<int64_t>(i) * c.q_dim(), c.q_dim());
      add_f32(l.bk, k_.data() + static_cast<int64_t>(i) * c.kv_dim(), c.kv_dim());
      add_f32(l.bv, v_.data() + static_cast<int64_t>(i) * c.kv_dim(), c.kv_dim());
    }
  }
  if (l.q_norm != nullptr) {
    ProfileScope scope(profiler_, ProfileOp::kRmsNorm);
    for_rows(pool_, n, [&](int64_t begin, int64_t end) {
      for (int64_t h = begin * c.n_head; h < end * c.n_head; ++h)
        rms_norm(q_.data() + h * c.head_dim, l.q_norm, q_.data() + h * c.head_dim, c.head_dim, c.rms_eps);
      for (int64_t h = begin * c.n_head_kv; h < end * c.n_head_kv; ++h)
        rms_norm(k_.data() + h * c.head_dim, l.k_norm, k_.data() + h * c.head_dim, c.head_dim, c.rms_eps);
    });
  }
  const int half = c.rope.rot_dims / 2 + 1;
  {
    ProfileScope scope(profiler_, ProfileOp::kRope);
    const RopeParams& rope = c.layer_rope(layer);
    const int64_t set = rope_set_offset(c.layer_has_window(layer));
    for_rows(pool_, n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float* cos = rope_cos_.data() + set + i * half;
        const float* sin = rope_sin_.data() + set + i * half;
        apply_rope(rope, cos, sin, q_.data() + i * c.q_dim(), c.n_head, c.head_dim);
        apply_rope(rope, cos, sin, k_.data() + i * c.kv_dim(), c.n_head_kv, c.head_dim);
      }
    });
  }
  if (rotates_kv(kv)) {
    // A q4_0 cache stores rotated K and V (kernels/hadamard.h); Q turns with
    // K so the scores stay the same.
    ProfileScope scope(profiler_, ProfileOp::kRope);
    const int nk = hadamard_key_block(c.head_dim), nv = hadamard_value_block(c.head_dim);
    for_rows(pool_, n, [&](int64_t begin, int64_t end) {
      hadamard_blocks(q_.data() + begin * c.q_dim(), (end - begin) * c.q_dim() / nk, nk);
      hadamard_blocks(k_.data() + begin * c.kv_dim(), (end - begin) * c.kv_dim() / nk, nk);
      hadamard_blocks(v_.data() + begin * c.kv_dim(), (end - begin) * c.kv_dim() / nv, nv);
    });
  }
  ProfileScope scope(profiler_, ProfileOp::kKvStore);
  // Rows write distinct positions, so threads never write the same bytes.
  for_rows(pool_, n, [&](int64_t begin, int64_t end) { store_kv_rows(layer, rows, kv, begin, end, 0, c.n_head_kv); });
}

// K and V of rows [begin, end) of this step into the cache at their
// positions (qkv_rope_store).
void ForwardPass::store_kv_rows(int layer, std::span<const BatchRow> rows, PagedKvStore& kv, int64_t begin,
                                int64_t end, int head_begin, int head_end) {
  const ModelConfig& c = model_->config();
  const int bs = kv.block_size();
  for (int64_t i = begin; i < end; ++i) {
    const int block = rows[i].block_table[rows[i].pos / bs];
    const int offset = rows[i].pos % bs;
    if (kv.type() == KvCacheType::kQ8_0) {
      // K's codes transposed (one element per dimension row of the block),
      // V's in order; both K's and V's scales one per group row.
      for (int h = head_begin; h < head_end; ++h) {
        const int64_t from = i * c.kv_dim() + static_cast<int64_t>(h) * c.head_dim;
        quantize_kv_q8(k_.data() + from, c.head_dim, kv.key_codes_at(layer, block, offset) + h * kv.head_stride(),
                       kv.key_dim_stride(), kv.key_scales_at(layer, block, offset) + h * kv.scale_head_stride(),
                       kv.key_dim_stride());
        quantize_kv_q8(v_.data() + from, c.head_dim, kv.value_codes_at(layer, block, offset) + h * kv.head_stride(),
                       1, kv.value_scales_at(layer, block, offset) + h * kv.scale_head_stride(),
                       kv.key_dim_stride());
      }
      continue;
    }
    if (kv.type() == KvCacheType::kQ4_0) {
      // Codes one per byte on the stack, then packed into the two layouts;
      // scales as q8_0's.
      uint8_t codes[kMaxHeadDim];
      for (int h = head_begin; h < head_end; ++h) {
        const int64_t from = i * c.kv_dim() + static_cast<int64_t>(h) * c.head_dim;
        const int64_t bytes = static_cast<int64_t>(h) * (kv.head_stride() / 2);
        quantize_kv_q4(k_.data() + from, c.head_dim, codes,
                       kv.key_scales_at(layer, block, offset) + h * kv.scale_head_stride(), kv.key_dim_stride());
        pack_key_q4(codes, c.head_dim, kv.key_octet_stride(), kv.key_q4_at(layer, block, offset) + bytes);
        quantize_kv_q4(v_.data() + from, c.head_dim, codes,
                       kv.value_scales_at(layer, block, offset) + h * kv.scale_head_stride(), kv.key_dim_stride());
        pack_value_q4(codes, c.head_dim, kv.value_q4_at(layer, block, offset) + bytes);
      }
      continue;
    }
    uint16_t* key = kv.key_at(layer, block, offset);
    uint16_t* value = kv.value_at(layer, block, offset);
    // f16 or bf16 (both round to nearest even).
    auto to_16bit = [bf16 = kv.type() == KvCacheType::kBF16](const float* x, uint16_t* y, int64_t n) {
      if (!bf16) return f32_to_f16_row(x, y, n);
      for (int64_t d = 0; d < n; ++d) y[d] = f32_to_bf16(x[d]);
    };
    for (int h = head_begin; h < head_end; ++h) {
      const int64_t from = i * c.kv_dim() + static_cast<int64_t>(h) * c.head_dim;
      // K is stored transposed: one element per dimension row of the block,
      // converted a chunk at a time (a stack buffer per thread).
      uint16_t* key_head = key + h * kv.head_stride();
      constexpr int kChunk = 64;
      uint16_t key_half[kChunk];
      for (int d0 = 0; d0 < c.head_dim; d0 += kChunk) {
        const int m = std::min(kChunk, c.head_dim - d0);
        to_16bit(k_.data() + from + d0, key_half, m);
        for (int d = 0; d < m; ++d) key_head[(d0 + d) * kv.key_dim_stride()] = key_half[d];
      }
      to_16bit(v_.data() + from, value + h * kv.head_stride(), c.head_dim);
    }
  }
}

// The runs of positions [first, first + count) of the row's sequence in
// `layer`, one per KV block touched. Returns their count.
size_t ForwardPass::position_runs(const BatchRow& row, int layer, PagedKvStore& kv, int64_t first, int64_t count,
                                  KvRun* runs) {
  const int bs = kv.block_size();
  size_t n = 0;
  for (int64_t p = first, end = first + count; p < end;) {
    const int block = row.block_table[p / bs];
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

AttentionShape attention_shape(const ModelConfig& c, const PagedKvStore& kv) {
  return {c.n_head,          c.n_head_kv,           c.head_dim, c.attention_scale,
          kv.head_stride(),  kv.key_dim_stride(), kv.type(), kv.scale_head_stride()};
}

// attend_chunks' cost of a unit: its chunk's positions plus this.
constexpr int64_t kChunkUnitOverhead = 16;

// How many positions a row attends to in `layer` (its window or all).
int64_t visible_positions(const ModelConfig& c, int layer, const BatchRow& row) {
  return row.pos + 1 - c.first_visible(layer, row.pos);
}

// Positions from `first` on that rows a and b, of two sequences, read from
// the same KV blocks (a prefix both took from the prefix cache), up to the
// shorter row's end.
int64_t shared_prefix_positions(const BatchRow& a, const BatchRow& b, int64_t first, int block_size) {
  const int64_t end = std::min(a.pos, b.pos) + 1;
  int64_t block = first / block_size;
  const int64_t last_block = (end - 1) / block_size;
  while (block <= last_block && a.block_table[block] == b.block_table[block]) ++block;
  return std::max<int64_t>(0, std::min(end, block * block_size) - first);
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
  if (!shared_prefix_attention_ || n < 2 * pool_.size() || !attention_pairs_supported(attention_shape(c, kv)))
    return;
  const int64_t bytes_per_position = kv.bytes_per_token(c, kv.type()) / c.n_layer;
  // As pair_shared_prefixes: a row takes the first later free row it shares
  // a whole chunk with. A row's shared positions are fewer than its own
  // (its last position is its own), so a paired row has a chunk after them.
  for (int a = 0; a < n; ++a) {
    if (plan.partner[a] >= 0) continue;
    const int64_t first = c.first_visible(layer, rows[a].pos);
    if (rows[a].pos + 1 - first <= kAttentionChunk) continue;
    for (int b = a + 1; b < n; ++b) {
      if (plan.partner[b] >= 0 || rows[b].block_table.data() == rows[a].block_table.data() ||
          c.first_visible(layer, rows[b].pos) != first)
        continue;
      const int64_t positions = shared_prefix_positions(rows[a], rows[b], first, kv.block_size());
      const int64_t shared = positions / kAttentionChunk;
      if (shared == 0 || positions * bytes_per_position <= shared_prefix_min_bytes_) continue;
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
  const AttentionShape shape = attention_shape(c, kv);
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
  const bool pairs = attention_pairs_supported(shape);
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
        attention_rows_shared_prefix(job.shape, q_.data() + q0, std::span(runs0, n_runs0), q,
                                     std::span(runs, n_runs), unit.shared, job.kv.position_stride(), scores,
                                     attn_.data() + q0, out, h, h_end);
      } else if (unit.pair) {
        attention_row_pair_paged(job.shape, q - job.c.q_dim(), q, std::span(runs, n_runs), job.kv.position_stride(),
                                 scores, out - job.c.q_dim(), out, h, h_end);
      } else {
        attention_row_paged(job.shape, q, std::span(runs, n_runs), job.kv.position_stride(), scores, out, h, h_end);
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
    const BatchRow& ra = rows[ua.last_row];
    const int64_t first = c.first_visible(layer, ra.pos);
    if (ra.pos + 1 - first < kAttentionChunk) continue;
    for (int b = a + 1; b < n_units; ++b) {
      RowUnit& ub = row_units_[b];
      if (ub.pair || ub.last_row < 0 || ub.other >= 0) continue;
      const BatchRow& rb = rows[ub.last_row];
      if (rb.block_table.data() == ra.block_table.data() || c.first_visible(layer, rb.pos) != first) continue;
      const int64_t shared = shared_prefix_positions(ra, rb, first, kv.block_size());
      if (shared < kAttentionChunk) continue;
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
  const AttentionShape shape = attention_shape(c, kv);
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
          call = {walk_row, ch, first + ch * kAttentionChunk, positions, h_begin, h_end,
                  together ? plan.partner[walk_row] : -1};
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
                               : more         ? ChunkAhead{next_runs, next.h_begin / group}
                                              : ChunkAhead{};
      const AttentionPartial part = chunk_partial(partial, h);
      const float* q = q_.data() + static_cast<int64_t>(i) * c.q_dim();
      if (call.partner >= 0) {
        const int64_t j = call.partner;
        attention_chunk_shared(shape, q, q_.data() + j * c.q_dim(), runs, kv.position_stride(), scores, part,
                               chunk_partial(plan.first_chunk[j] + call.chunk, h), h, h1);
        continue;  // rows sharing chunks have more than one: merged after the job
      }
      attention_chunk(shape, q, runs, kv.position_stride(), scores, part, h, h1, ahead);
      if (whole_row)
        attention_finish(c.head_dim, h1 - h, part,
                         attn_.data() + static_cast<int64_t>(i) * c.q_dim() + static_cast<int64_t>(h) * c.head_dim);
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
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t first = plan.first_chunk[i], n_chunks = plan.first_chunk[i + 1] - first;
    if (n_chunks == 1) continue;
    const AttentionPartial state = chunk_partial(first, head_begin);
    for (int64_t ch = 1; ch < n_chunks; ++ch)
      attention_merge(c.head_dim, head_end - head_begin, chunk_partial(first + ch, head_begin), state);
    attention_finish(c.head_dim, head_end - head_begin, state,
                     attn_.data() + static_cast<int64_t>(i) * c.q_dim() + static_cast<int64_t>(head_begin) * c.head_dim);
  }
}

void ForwardPass::attention_block(int layer, std::span<const BatchRow> rows, PagedKvStore& kv) {
  const int n = static_cast<int>(rows.size());
  const LayerWeights& l = model_->weights().layers[layer];
  norm_rows(l.attn_norm, n);
  qkv_rope_store(layer, rows, kv);
  attend(layer, rows, kv);
  if (rotates_kv(kv)) {
    // The values were stored rotated: rotate the weighted sums back.
    ProfileScope scope(profiler_, ProfileOp::kAttention);
    const ModelConfig& c = model_->config();
    const int nv = hadamard_value_block(c.head_dim);
    for_rows(pool_, n, [&](int64_t begin, int64_t end) {
      hadamard_blocks(attn_.data() + begin * c.q_dim(), (end - begin) * c.q_dim() / nv, nv);
    });
  }
  project(ProfileOp::kAttnOutput, l.wo, attn_.data(), n, proj_.data());
  if (l.post_attn_norm != nullptr) norm_rows(l.post_attn_norm, proj_.data(), proj_.data(), n);
  add_residual(n);
}

void ForwardPass::mlp_block(int layer, int n) {
  const ModelConfig& c = model_->config();
  const LayerWeights& l = model_->weights().layers[layer];
  norm_rows(l.ffn_norm, n);
  {
    ProfileScope scope(profiler_, ProfileOp::kFfnGateUp);
    const MatmulTarget gate_up[] = {{&l.w_gate, gate_.data()}, {&l.w_up, up_.data()}};
    matmul_shared_input(gate_up, xn_.data(), n, &pool_);
  }
  {
    ProfileScope scope(profiler_, ProfileOp::kFfnActivation);
    // Prompt chunks: each thread takes a range of rows (about 1 ms of a
    // 512-row step otherwise runs on one thread while the other waits).
    // A decode row is too small to be worth a pool job.
    if (n >= kParallelElementwiseRows && pool_.size() > 1) {
      // Two captures: a third would not fit std::function's inline buffer
      // and cost a heap allocation per call.
      pool_.run([this, n](int t, int count) {
        const ModelConfig& c = model_->config();
        const int64_t r0 = int64_t{n} * t / count, r1 = int64_t{n} * (t + 1) / count;
        gated_activation(c, gate_.data() + r0 * c.n_ff, up_.data() + r0 * c.n_ff, (r1 - r0) * c.n_ff);
      });
    } else {
      gated_activation(c, gate_.data(), up_.data(), static_cast<int64_t>(n) * c.n_ff);
    }
  }
  project(ProfileOp::kFfnDown, l.w_down, gate_.data(), n, proj_.data());
  if (l.post_ffn_norm != nullptr) norm_rows(l.post_ffn_norm, proj_.data(), proj_.data(), n);
  add_residual(n);
}

// The rows' rope angles (each set) and embeddings, before the layers.
void ForwardPass::start_rows(std::span<const BatchRow> rows) {
  const ModelConfig& c = model_->config();
  const int n = static_cast<int>(rows.size());
  const int half = c.rope.rot_dims / 2 + 1;
  {
    ProfileScope scope(profiler_, ProfileOp::kRope);
    for (int i = 0; i < n; ++i) rope_angles(c.rope, rows[i].pos, rope_cos_.data() + i * half, rope_sin_.data() + i * half);
    if (c.sliding_window > 0) {
      const int64_t set = rope_set_offset(true);
      for (int i = 0; i < n; ++i)
        rope_angles(c.window_rope, rows[i].pos, rope_cos_.data() + set + i * half, rope_sin_.data() + set + i * half);
    }
  }
  embed(rows);
}

void ForwardPass::run_layers(std::span<const BatchRow> rows, PagedKvStore& kv, float* logits) {
  if (run_decode_step(rows, kv, logits)) return;
  const ModelConfig& c = model_->config();
  const int n = static_cast<int>(rows.size());
  start_rows(rows);
  for (int layer = 0; layer < c.n_layer; ++layer) {
    attention_block(layer, rows, kv);
    mlp_block(layer, n);
  }
  // Final norm only for the rows that want logits, packed together.
  int out = 0;
  {
    ProfileScope scope(profiler_, ProfileOp::kRmsNorm);
    for (int i = 0; i < n; ++i) {
      if (!rows[i].want_logits) continue;
      rms_norm(x_.data() + i * c.n_embd, model_->weights().output_norm, xn_.data() + out * c.n_embd, c.n_embd,
               c.rms_eps);
      ++out;
    }
  }
  if (out > 0) project(ProfileOp::kOutput, model_->weights().output, xn_.data(), out, logits);
}

Status ForwardPass::run(std::span<const BatchRow> rows, PagedKvStore& kv, float* logits) {
  OMNIBUS_RETURN_IF_ERROR(check(rows, kv));
  if (rows.empty()) return Status::ok();
  if (profiler_ == nullptr || !profiler_->enabled()) {
    run_layers(rows, kv, logits);
    return Status::ok();
  }
  const ProfilePhase phase = rows.size() > 1 ? ProfilePhase::kPrefill : ProfilePhase::kDecode;
  profiler_->set_phase(phase);
  const uint64_t wait_before = pool_.wait_ns();
  const uint64_t jobs_before = pool_.jobs_run();
  const uint64_t busy_before = pool_.workers_busy_ns();
  const int64_t forward_before = profiler_->stats(phase, ProfileOp::kForward).total_ns;
  {
    ProfileScope scope(profiler_, ProfileOp::kForward);
    run_layers(rows, kv, logits);
  }
  // This call's wall time, as its scope recorded it.
  const int64_t wall_ns = profiler_->stats(phase, ProfileOp::kForward).total_ns - forward_before;
  profiler_->add_time(ProfileOp::kThreadWait, static_cast<int64_t>(pool_.wait_ns() - wait_before),
                      static_cast<int64_t>(pool_.jobs_run() - jobs_before));
  if (const int workers = pool_.size() - 1; workers > 0) {
    // Per worker: the call's wall time less its time inside jobs.
    const int64_t busy = static_cast<int64_t>(pool_.workers_busy_ns() - busy_before) / workers;
    profiler_->add_time(ProfileOp::kWorkerIdle, std::max<int64_t>(0, wall_ns - busy), 1);
  }
  return Status::ok();
}

}  // namespace omnibus
