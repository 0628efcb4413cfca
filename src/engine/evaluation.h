// Teacher-forced evaluation: next-token negative log-likelihood and argmax
// over a token sequence, as perplexity tools and the golden tests use it.
// It reads the logits of every position, which generation never needs, so
// it drives a runner directly instead of the serving engine.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "model/backend.h"
#include "model/model.h"

namespace omnibus {

// Logits for every position of a token sequence, computed from a fresh
// cache in chunks. Not thread-safe.
class LogitsEvaluator {
 public:
  // Sequences of up to `context` tokens, `chunk` rows per forward call. The
  // runner and cache come from `backend`, which must outlive the evaluator.
  // `window_kv`: a model's sliding-window layers keep only the blocks their
  // window and one chunk can touch, as a ring sized by the serving engine's
  // pool planner (engine/kv_pool_plan.h: a backend with window groups, a
  // model that mixes window and full layers; used only when smaller than
  // the whole context); the same logits either way.
  static Result<std::unique_ptr<LogitsEvaluator>> create(std::shared_ptr<const Model> model, Backend& backend,
                                                         int context, int chunk = 256,
                                                         KvCacheType kv_type = KvCacheType::kF16,
                                                         bool window_kv = true);

  // Rows of vocab_size, one per token.
  Result<std::vector<float>> all_logits(std::span<const int32_t> tokens);

  // The same logits a forward call at a time: `consume(first, rows, logits)`
  // gets the rows of tokens [first, first + rows), valid until it returns,
  // so only one call's rows are ever held (a 4,096-token chunk of a
  // 262,144-token vocabulary is 4 GiB of logits whole).
  using LogitsConsumer = std::function<Status(size_t first, size_t rows, const float* logits)>;
  Status for_each_logits(std::span<const int32_t> tokens, const LogitsConsumer& consume);

  int context() const { return context_; }
  int vocab_size() const { return model_->config().vocab_size; }
  // Blocks of the window layers' ring; 0 when they keep the whole context.
  int window_blocks() const { return window_blocks_; }
  // Bytes of K and V the cache holds.
  uint64_t kv_bytes() const { return kv_->bytes(); }

 private:
  LogitsEvaluator() = default;

  std::shared_ptr<const Model> model_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<KvCache> kv_;
  std::vector<int32_t> block_table_;  // blocks 0..n-1: the one sequence owns the whole cache
  // Window layers: block b in window block b % window_blocks_ (a ring).
  std::vector<int32_t> window_block_table_;
  int window_blocks_ = 0;
  std::vector<BatchRow> rows_;
  std::vector<float> logits_;  // one forward call's rows
  int context_ = 0;
  int chunk_ = 0;
  static constexpr int kBlockSize = 16;
};

struct TeacherForcedResult {
  std::vector<int32_t> argmax;  // predicted next token after each position
  std::vector<double> nll;      // -log p(tokens[i+1] | tokens[0..i]), size n-1
  double mean_nll() const;
};

// Runs `tokens` from a fresh cache (log-softmax in double precision).
Result<TeacherForcedResult> evaluate_teacher_forced(LogitsEvaluator& evaluator, std::span<const int32_t> tokens);

}  // namespace omnibus
