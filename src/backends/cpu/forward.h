// The transformer forward pass over a batch of tokens from one or more
// sequences. Each token row carries its sequence's block table and its
// position; a row sees the cached keys of its own sequence at positions <= its
// own, read through the table (rows of the same sequence in one batch must
// come in position order and share one table).
//
// Batch invariance: a row's logits depend only on its sequence's tokens, not
// on what else is in the batch or how a prompt is chunked (tested).
// Scratch is sized once for `max_batch` rows: run() does not allocate.
// Not thread-safe; one ForwardPass per engine thread (several may share a pool).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/cpu/paged_kv_store.h"
#include "base/aligned_buffer.h"
#include "base/profiler.h"
#include "base/thread_pool.h"
#include "kernels/attention.h"
#include "kernels/kernel_table.h"
#include "kernels/matmul.h"
#include "model/block_spec.h"
#include "model/model.h"
#include "model/model_runner.h"

namespace omnibus {

// The block table `layer`'s K/V are found through: the row's window table
// for a window layer of a store with a window group, else its block table.
inline std::span<const int32_t> layer_block_table(const BatchRow& row, int layer, const PagedKvStore& kv) {
  return kv.in_window_group(layer) ? row.window_block_table : row.block_table;
}

// The CPU backend's ModelRunner, over a PagedKvStore.
class ForwardPass final : public ModelRunner {
 public:
  // Computes on `pool`, which the backend lends and which must outlive the
  // runner; runners sharing a pool take turns job by job. Every kernel runs
  // from `table` (the process's by default; tests run each table the CPU
  // can), which must be one the CPU runs.
  ForwardPass(std::shared_ptr<const Model> model, ThreadPool& pool, int max_batch, int64_t max_positions,
              const KernelTable& table = kernels());
  ~ForwardPass() override;
  ForwardPass(const ForwardPass&) = delete;
  ForwardPass& operator=(const ForwardPass&) = delete;

  // ModelRunner::run; `kv` must be a PagedKvStore made for this model
  // (invalid_argument otherwise).
  Status run(std::span<const BatchRow> rows, KvCache& kv, float* logits) override;

  void set_profiler(Profiler* profiler) override;
  RunnerStats stats() const override {
    return {.shared_prefix_units = shared_prefix_units_, .expert_tokens = expert_tokens_, .expert_runs = expert_runs_};
  }

  // On by default; off computes every row alone (same bits; for A/B runs).
  void set_shared_prefix_attention(bool on) { shared_prefix_attention_ = on; }
  // Decode steps of few rows pair two rows only when their shared prefix's
  // K/V in one layer exceeds this many bytes (default: the L2 size; see
  // plan_shared_chunks). Tests on tiny models lower it.
  void set_shared_prefix_min_bytes(int64_t bytes) { shared_prefix_min_bytes_ = bytes; }
  Profiler* profiler() const override { return profiler_; }
  // Decode steps of a few rows on two or more threads run as one pool job
  // (forward_decode_step.cpp) unless this is off; either schedule gives
  // the same bits. Default: on, unless OMNIBUS_DECODE_PER_OP=1 (A/B runs).
  void set_decode_as_one_job(bool on) { decode_as_one_job_ = on; }

  const Model& model() const { return *model_; }
  const KernelTable& kernel_table() const { return kernels_; }
  ThreadPool& pool() { return pool_; }
  int max_batch() const override { return max_batch_; }

 private:
  // attend_chunks' split of a layer's rows into softmax chunks: row i's
  // chunk partials are [first_chunk[i], first_chunk[i + 1]); the cost line
  // the threads cut is total_cost long. One per layer kind (window or
  // global), since a window layer's rows see fewer positions.
  struct ChunkPlan {
    std::vector<int64_t> first_chunk;
    // Rows of different sequences sharing whole chunks of a cached prefix:
    // row i computes its first shared_chunks[i] chunks together with row
    // partner[i] (> i), whose entry points back with led = true; -1 alone.
    std::vector<int32_t> partner;
    std::vector<int64_t> shared_chunks;
    std::vector<uint8_t> led;
    int64_t pairs = 0;
    int64_t total_cost = 0;
    bool multi_chunk = false;  // some row has more than one chunk (merged after)
  };
  struct DecodeStep;

  Status check(std::span<const BatchRow> rows, const PagedKvStore& kv) const;
  void embed(std::span<const BatchRow> rows);
  void start_rows(std::span<const BatchRow> rows);
  void run_layers(std::span<const BatchRow> rows, PagedKvStore& kv, float* logits);
  // Every layer's block (model/block_spec.h) for this cache.
  const std::vector<BlockSpec>& blocks_for(const PagedKvStore& kv) const;
  // One layer's stages, each as one op over all rows (the per-op schedule).
  void run_block(int layer, const BlockSpec& spec, std::span<const BatchRow> rows, PagedKvStore& kv);

  // The stages both schedules share (block_stages.cpp), over a slice.
  struct HeadSlice {
    int64_t row_begin, row_end;
    int q_begin, q_end;    // query heads
    int kv_begin, kv_end;  // key/value heads
  };
  // A head stage (is_head_stage) over the slice's rows and heads.
  void head_stage(BlockStage stage, const BlockSpec& block, int layer, std::span<const BatchRow> rows, PagedKvStore& kv,
                  const HeadSlice& slice);
  // KV heads [head_begin, head_end) of rows [begin, end) into the cache.
  void store_kv_rows(int layer, std::span<const BatchRow> rows, PagedKvStore& kv, int64_t begin, int64_t end,
                     int head_begin, int head_end);
  // The weighted sums of `count` rows rotated back in place (a rotated cache).
  void rotate_output_back(float* attn_rows, int64_t count) const;
  // gate = act(gate) * up over rows [row_begin, row_end), columns [col_begin, col_end).
  void activate(const BlockSpec& block, int64_t row_begin, int64_t row_end, int64_t col_begin, int64_t col_end);
  // Mixture of experts (forward_moe.cpp): each row's experts and weights
  // from the router, grouped by expert; then proj_ = the weighted sum of
  // the chosen experts' MLPs of xn_.
  void route_rows(int layer, int n);
  // route_rows after the router's logits: softmax, top-k, the rows by expert.
  void choose_experts(int layer, int n);
  void run_experts(int layer, int n);
  void run_shared_expert(int layer, int n);
  // Thread t of `count`'s part of route_rows and run_experts in a decode
  // step run as one pool job (forward_moe.cpp): `normed` is the thread's
  // copy of the n normed rows; each thread ends with its columns of proj_.
  void moe_share(int layer, const float* normed, int n, int t, int count);
  static size_t position_runs(const BatchRow& row, int layer, PagedKvStore& kv, int64_t first, int64_t count,
                              KvRun* runs);
  void attend(int layer, std::span<const BatchRow> rows, PagedKvStore& kv);
  void attend_rows(int layer, std::span<const BatchRow> rows, PagedKvStore& kv);
  void pair_shared_prefixes(int layer, std::span<const BatchRow> rows, const PagedKvStore& kv);
  // Plans the rows' chunks for `layer` into its kind's plan; false when the
  // partials would not fit.
  bool plan_chunks(int layer, std::span<const BatchRow> rows, const PagedKvStore& kv);
  // plan_chunks' pairing of rows over shared cached prefixes.
  void plan_shared_chunks(int layer, std::span<const BatchRow> rows, const PagedKvStore& kv, ChunkPlan& plan);
  ChunkPlan& chunk_plan(int layer) { return chunk_plans_[model_->config().layer_has_window(layer) ? 1 : 0]; }
  void attend_chunks(int layer, std::span<const BatchRow> rows, PagedKvStore& kv);
  // Thread t of `count`'s units of attend_chunks (one call per thread).
  void attend_chunk_share(int layer, std::span<const BatchRow> rows, PagedKvStore& kv, int t, int count);
  // Merges the chunks of the rows with more than one and finishes them,
  // heads [head_begin, head_end).
  void merge_chunks(int layer, std::span<const BatchRow> rows, int head_begin, int head_end);
  AttentionPartial chunk_partial(int64_t chunk, int h);
  // Decode steps of a few rows on a pool of several threads run as one pool
  // job, the threads meeting at barriers (forward_decode_step.cpp); false
  // when this step does not qualify.
  bool run_decode_step(std::span<const BatchRow> rows, PagedKvStore& kv, float* logits);
  void decode_step_share(const DecodeStep& step, int t, int count);
  int64_t rope_set_offset(bool window_layers) const;
  void norm_rows(const float* weight, int n);                                // x_ -> xn_
  void norm_rows(const float* weight, const float* from, float* to, int n);  // n_embd-wide rows; to may be from
  void project(ProfileOp op, const WeightMatrix& w, const float* x, int n, float* y);
  void add_residual(int n);

  std::shared_ptr<const Model> model_;
  const KernelTable& kernels_;  // every kernel call's table
  // Each layer's block, resolved once: [0] for a plain cache, [1] for a
  // rotated one (forward_internal::rotates_kv).
  std::vector<BlockSpec> blocks_[2];
  int max_batch_;
  ThreadPool& pool_;
  Profiler* profiler_ = nullptr;
  AlignedBuffer<float> x_, xn_, q_, k_, v_, attn_, proj_, gate_, up_;
  // Mixture of experts: router outputs (then probabilities), each row's
  // chosen experts and weights, the rows each expert takes (slots
  // expert_begin_[e] .. expert_begin_[e + 1]), and one expert's input and
  // output rows.
  AlignedBuffer<float> router_logits_, moe_x_, moe_y_;
  // moe_share's second gate buffer: consecutive experts alternate, so one
  // expert's gate/up need not wait for every thread to have read the
  // previous one's gate rows.
  AlignedBuffer<float> moe_gate_;
  std::vector<int32_t> chosen_expert_, slot_row_;
  std::vector<float> chosen_weight_, slot_weight_;
  std::vector<double> router_exp_;  // one row's exp(logit - max), n_expert
  std::vector<int64_t> expert_rows_, expert_begin_;
  std::vector<uint64_t> expert_tokens_;  // RunnerStats
  uint64_t expert_runs_ = 0;
  AlignedBuffer<float> rope_cos_, rope_sin_, scores_;
  std::vector<KvRun> runs_;  // per thread, runs_stride_ each: one run per block
  // attend_chunks: chunk partials (acc: q_dim floats, max and sum: n_head
  // each) of the rows' chunks in row order, as the layer's plan numbers them.
  AlignedBuffer<float> partial_acc_, partial_max_, partial_sum_;
  ChunkPlan chunk_plans_[2];  // global layers, window layers
  // run_decode_step: each thread's private copy of the normed rows (or of
  // the attention output), and its int8 form for the matrix products.
  struct ThreadScratch {
    AlignedBuffer<float> rows;
    AlignedBuffer<float> expert_rows;  // moe_share: the rows an expert takes, gathered
    MatmulScratch matmul;
  };
  std::vector<ThreadScratch> thread_scratch_;
  int decode_step_rows_max_ = 0;  // steps of at most this many rows may run as one job (0: never)
  bool decode_as_one_job_;
  // attend_rows: one row, or two consecutive rows of one sequence ending at
  // last_row (attention_row_pair_paged), or last_row and `other`, a row of
  // another sequence whose first `shared` visible positions are in the same
  // KV blocks (attention_rows_shared_prefix). Reserved for max_batch rows.
  struct RowUnit {
    int last_row;
    bool pair;
    int other = -1;
    int64_t shared = 0;
  };
  std::vector<RowUnit> row_units_;
  uint64_t shared_prefix_units_ = 0;
  bool shared_prefix_attention_ = true;
  int64_t shared_prefix_min_bytes_;
  std::vector<uint8_t> embed_row_;  // one token's embedding row in GGUF's layout (embed)
  int64_t max_chunk_partials_;
  int64_t max_positions_;
  RopeParams rope_;  // the full layers' RoPE for max_positions_ (longrope's factors chosen by it)
  int64_t scores_stride_;
  int64_t runs_stride_;
  static constexpr int kParallelElementwiseRows = 16;  // rows from which swiglu is split over the pool
  static constexpr int kHeadsPerCall = 16;             // heads per attention call (scratch: this many score rows)
};

}  // namespace omnibus
