#include "backends/cpu/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/forward_internal.h"
#include "base/cpu_features.h"
#include "kernels/attention.h"
#include "kernels/ops.h"
#include "kernels/weight_interleave.h"
#include "tensor/quant.h"

namespace omnibus {

using forward_internal::rotates_kv;

ForwardPass::ForwardPass(std::shared_ptr<const Model> model, ThreadPool& pool, int max_batch, int64_t max_positions,
                         const KernelTable& table)
    : model_(std::move(model)),
      kernels_(table),
      max_batch_(max_batch),
      pool_(pool),
      decode_as_one_job_(decode_as_one_job_by_default()),
      shared_prefix_min_bytes_(l2_cache_bytes()) {
  const ModelConfig& c = model_->config();
  for (int rotated = 0; rotated < 2; ++rotated)
    for (int layer = 0; layer < c.n_layer; ++layer) blocks_[rotated].push_back(resolve_block(c, layer, rotated == 1));
  const size_t b = static_cast<size_t>(max_batch);
  x_.resize(b * c.n_embd);
  xn_.resize(b * c.n_embd);
  embed_row_.resize(model_->weights().token_embd.row_bytes);
  q_.resize(b * c.q_dim());
  k_.resize(b * c.kv_dim());
  v_.resize(b * c.kv_dim());
  attn_.resize(b * c.q_dim());
  proj_.resize(b * c.n_embd);
  gate_.resize(b * std::max({c.n_ff, c.n_ff_expert, c.n_ff_shared_expert}));
  up_.resize(b * std::max({c.n_ff, c.n_ff_expert, c.n_ff_shared_expert}));
  if (c.is_moe()) {
    const size_t k = static_cast<size_t>(c.n_expert_used);
    router_logits_.resize(b * c.n_expert);
    router_exp_.resize(c.n_expert);
    moe_x_.resize(b * c.n_embd);
    moe_y_.resize(b * c.n_embd);
    moe_gate_.resize(b * c.n_ff_expert);
    chosen_expert_.resize(b * k);
    chosen_weight_.resize(b * k);
    slot_row_.resize(b * k);
    slot_weight_.resize(b * k);
    expert_rows_.resize(c.n_expert);
    expert_begin_.resize(c.n_expert + 1);
    expert_tokens_.assign(c.n_expert, 0);
  }
  // Faulted in now, not by the first prompt: on a VM a page's first touch
  // can cost ~3 ms a MiB (the host backs it), which the first forward call
  // would otherwise pay inside its TTFT.
  for (AlignedBuffer<float>* buffer :
       {&x_, &xn_, &q_, &k_, &v_, &attn_, &proj_, &gate_, &up_, &router_logits_, &moe_x_, &moe_y_, &moe_gate_})
    buffer->zero_fill();
  // Two sets of angles when window layers rotate with their own base.
  const size_t angle_sets = c.sliding_window > 0 ? 2 : 1;
  rope_cos_.resize(angle_sets * b * (c.rope.rot_dims / 2 + 1));
  rope_sin_.resize(angle_sets * b * (c.rope.rot_dims / 2 + 1));
  max_positions_ = max_positions;
  rope_ = c.rope_for_context(max_positions);
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
      if (c.is_moe()) s.expert_rows.resize(static_cast<size_t>(decode_step_rows_max_) * c.n_embd);
      s.matmul.reserve(decode_step_rows_max_, std::max({c.n_embd, c.q_dim(), c.n_ff, c.n_ff_expert}));
    }
  }
}

Status ForwardPass::check(std::span<const BatchRow> rows, const PagedKvStore& kv) const {
  const ModelConfig& c = model_->config();
  if (kv.n_layer() != c.n_layer || kv.n_head_kv() != c.n_head_kv || kv.head_dim() != c.head_dim)
    return Status::invalid_argument("the KV cache was made for another model (" + std::to_string(kv.n_layer()) +
                                    " layers of " + std::to_string(kv.n_head_kv()) + " x " +
                                    std::to_string(kv.head_dim()) + ")");
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
    if (kv.window_blocks() > 0) {
      // The window layers' table: the blocks from the row's window on.
      if (last_block >= r.window_block_table.size())
        return Status::out_of_range("position " + std::to_string(r.pos) + " is past its window block table of " +
                                    std::to_string(r.window_block_table.size()) + " blocks");
      const int window_layer = c.layer_has_window(0) ? 0 : 1;  // the pattern's full layer comes last
      for (size_t b = static_cast<size_t>(c.first_visible(window_layer, r.pos) / kv.block_size()); b <= last_block; ++b)
        if (r.window_block_table[b] < 0 || r.window_block_table[b] >= kv.window_blocks())
          return Status::invalid_argument("window KV block id " + std::to_string(r.window_block_table[b]) +
                                          " is outside [0, " + std::to_string(kv.window_blocks()) + ")");
    }
  }
  return Status::ok();
}

ForwardPass::~ForwardPass() {
  if (profiler_ == nullptr) return;
  // The profiler may outlive this runner but not its counter's meaning.
  profiler_->set_wait_counter(nullptr);
  pool_.set_wait_counting(false);
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
  matmul(kernels_, w, x, n, y, &pool_);
}

namespace {

// Steps with at least this many rows run the per-row ops (norms, residual
// adds, Q/K norms, RoPE, the KV store) on the pool; smaller ones on the
// calling thread, where a hand-off costs more than the work (decode steps
// on two or more threads take forward_decode_step.cpp instead). In a
// 728-token prefill these ops were 7% of the time on one thread while the
// other waited (`omnibus run --profile`; docs/findings/prefill-scales-with-cores.md); on the pool the
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
  for_rows(pool_, n, [=, &table = kernels_](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) rms_norm(table, from + i * d, weight, to + i * d, d, eps);
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
    // (WeightRepacker, weight_repack.h), whose file pages are released.
    gather_row_blocks(e, rows[i].token, embed_row_.data());
    dequantize_row_ref(e.dtype, embed_row_.data(), x_.data() + i * c.n_embd, c.n_embd);
    if (c.spec->embedding_scaled)
      scale_f32(std::sqrt(static_cast<float>(c.n_embd)), x_.data() + i * c.n_embd, c.n_embd);
  }
}

const std::vector<BlockSpec>& ForwardPass::blocks_for(const PagedKvStore& kv) const {
  return blocks_[rotates_kv(kv) ? 1 : 0];
}

void ForwardPass::run_block(int layer, const BlockSpec& spec, std::span<const BatchRow> rows, PagedKvStore& kv) {
  const ModelConfig& c = model_->config();
  const LayerWeights& l = model_->weights().layers[layer];
  const int n = static_cast<int>(rows.size());
  for (const BlockStage stage : spec.stages) {
    switch (stage) {
      case BlockStage::kAttnNorm: norm_rows(l.attn_norm, n); break;
      case BlockStage::kFfnNorm: norm_rows(l.ffn_norm, n); break;
      case BlockStage::kPostAttnNorm: norm_rows(l.post_attn_norm, proj_.data(), proj_.data(), n); break;
      case BlockStage::kPostFfnNorm: norm_rows(l.post_ffn_norm, proj_.data(), proj_.data(), n); break;
      case BlockStage::kQkv: {
        ProfileScope scope(profiler_, ProfileOp::kAttnQkv);
        const MatmulTarget qkv[] = {{&l.wq, q_.data()}, {&l.wk, k_.data()}, {&l.wv, v_.data()}};
        matmul_shared_input(kernels_, qkv, xn_.data(), n, &pool_);
        break;
      }
      case BlockStage::kQkvBias:
      case BlockStage::kQkNorm:
      case BlockStage::kRope:
      case BlockStage::kRotateQkv:
      case BlockStage::kKvStore: {
        ProfileScope scope(profiler_, profile_op(stage));
        for_rows(pool_, n, [&](int64_t begin, int64_t end) {
          head_stage(stage, spec, layer, rows, kv, {begin, end, 0, c.n_head, 0, c.n_head_kv});
        });
        break;
      }
      case BlockStage::kAttention: attend(layer, rows, kv); break;
      case BlockStage::kRotateOutput: {
        ProfileScope scope(profiler_, ProfileOp::kAttention);
        for_rows(pool_, n, [&](int64_t begin, int64_t end) {
          rotate_output_back(attn_.data() + begin * c.q_dim(), end - begin);
        });
        break;
      }
      case BlockStage::kAttnOutput:
        project(ProfileOp::kAttnOutput, l.wo, attn_.data(), n, proj_.data());
        if (l.bo != nullptr) add_row_bias(l.bo, proj_.data(), n, c.n_embd);
        break;
      case BlockStage::kAttnResidual:
      case BlockStage::kFfnResidual: add_residual(n); break;
      case BlockStage::kGateUp: {
        ProfileScope scope(profiler_, ProfileOp::kFfnGateUp);
        const MatmulTarget gate_up[] = {{&l.w_gate, gate_.data()}, {&l.w_up, up_.data()}};
        matmul_shared_input(kernels_, gate_up, xn_.data(), n, &pool_);
        break;
      }
      case BlockStage::kActivation: {
        ProfileScope scope(profiler_, ProfileOp::kFfnActivation);
        // Prompt chunks: each thread takes a range of rows (about 1 ms of a
        // 512-row step otherwise runs on one thread while the other waits).
        // A decode row is too small to be worth a pool job.
        if (n >= kParallelElementwiseRows && pool_.size() > 1) {
          // Two captures: a third would not fit std::function's inline
          // buffer and cost a heap allocation per call.
          const std::pair<const BlockSpec*, int> job{&spec, n};
          pool_.run([this, &job](int t, int count) {
            const int64_t r0 = int64_t{job.second} * t / count, r1 = int64_t{job.second} * (t + 1) / count;
            activate(*job.first, r0, r1, 0, model_->config().n_ff);
          });
        } else {
          activate(spec, 0, n, 0, c.n_ff);
        }
        break;
      }
      case BlockStage::kDown: project(ProfileOp::kFfnDown, l.w_down, gate_.data(), n, proj_.data()); break;
      case BlockStage::kMoe:
        route_rows(layer, n);
        run_experts(layer, n);
        break;
    }
  }
}

// The rows' rope angles (each set) and embeddings, before the layers.
void ForwardPass::start_rows(std::span<const BatchRow> rows) {
  const ModelConfig& c = model_->config();
  const int n = static_cast<int>(rows.size());
  const int half = c.rope.rot_dims / 2 + 1;
  {
    ProfileScope scope(profiler_, ProfileOp::kRope);
    for (int i = 0; i < n; ++i)
      rope_angles(rope_, rows[i].pos, rope_cos_.data() + i * half, rope_sin_.data() + i * half);
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
  const std::vector<BlockSpec>& blocks = blocks_for(kv);
  for (int layer = 0; layer < c.n_layer; ++layer) run_block(layer, blocks[layer], rows, kv);
  // Final norm only for the rows that want logits, packed together.
  int out = 0;
  {
    ProfileScope scope(profiler_, ProfileOp::kRmsNorm);
    for (int i = 0; i < n; ++i) {
      if (!rows[i].want_logits) continue;
      rms_norm(kernels_, x_.data() + i * c.n_embd, model_->weights().output_norm, xn_.data() + out * c.n_embd, c.n_embd,
               c.rms_eps);
      ++out;
    }
  }
  if (out > 0) project(ProfileOp::kOutput, model_->weights().output, xn_.data(), out, logits);
}

Status ForwardPass::run(std::span<const BatchRow> rows, KvCache& cache, float* logits) {
  // One check per step: the seam's only cost on the hot path.
  auto* store = dynamic_cast<PagedKvStore*>(&cache);
  if (store == nullptr) return Status::invalid_argument("the CPU runner needs a cache of the CPU backend");
  PagedKvStore& kv = *store;
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
