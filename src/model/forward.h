// The transformer forward pass over a batch of tokens from one or more
// sequences. Each token row names its sequence slot and position; a row sees
// the cached keys of its own sequence at positions <= its own (rows of the
// same sequence in one batch must come in position order).
//
// Batch invariance: a row's logits depend only on its sequence's tokens, not
// on what else is in the batch or how a prompt is chunked (tested).
// Scratch is sized once for `max_batch` rows: run() does not allocate.
// Not thread-safe; one ForwardPass per engine thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "base/aligned_buffer.h"
#include "base/profiler.h"
#include "base/thread_pool.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace omnibus {

struct BatchRow {
  int32_t token = 0;
  int32_t slot = 0;       // KV cache slot of the sequence
  int32_t pos = 0;        // position in the sequence
  bool want_logits = false;
};

class ForwardPass {
 public:
  ForwardPass(std::shared_ptr<const Model> model, int max_batch, int64_t max_positions, int threads);

  // Runs the rows; writes one vocab-sized logits row per row with
  // want_logits, in batch order, to `logits`. Errors on bad token ids,
  // positions past the cache, or a batch larger than max_batch.
  Status run(std::span<const BatchRow> rows, KvCache& kv, float* logits);

  // Times each op of run() into `profiler` (null: off, the default). The
  // profiler must outlive this pass or be detached with nullptr first.
  void set_profiler(Profiler* profiler);
  Profiler* profiler() const { return profiler_; }

  const Model& model() const { return *model_; }
  ThreadPool& pool() { return pool_; }
  int max_batch() const { return max_batch_; }

 private:
  Status check(std::span<const BatchRow> rows, const KvCache& kv) const;
  void embed(std::span<const BatchRow> rows);
  void run_layers(std::span<const BatchRow> rows, KvCache& kv, float* logits);
  void attention_block(int layer, std::span<const BatchRow> rows, KvCache& kv);
  void qkv_rope_store(int layer, std::span<const BatchRow> rows, KvCache& kv);
  void attend(int layer, std::span<const BatchRow> rows, KvCache& kv);
  void mlp_block(int layer, int n);
  void norm_rows(const float* weight, int n);
  void project(ProfileOp op, const WeightMatrix& w, const float* x, int n, float* y);
  void add_residual(int n);

  std::shared_ptr<const Model> model_;
  int max_batch_;
  ThreadPool pool_;
  Profiler* profiler_ = nullptr;
  AlignedBuffer<float> x_, xn_, q_, k_, v_, attn_, proj_, gate_, up_;
  AlignedBuffer<float> rope_cos_, rope_sin_, scores_;
  int64_t scores_stride_;
};

}  // namespace omnibus
