// Teacher-forced evaluation: next-token negative log-likelihood and argmax
// over a token sequence, as perplexity tools and the golden tests use it.
// It reads the logits of every position, which generation never needs, so
// it drives a runner directly instead of the serving engine.
#pragma once

#include <cstdint>
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
  static Result<std::unique_ptr<LogitsEvaluator>> create(std::shared_ptr<const Model> model, Backend& backend,
                                                         int context, int chunk = 256,
                                                         KvCacheType kv_type = KvCacheType::kF16);

  // Rows of vocab_size, one per token.
  Result<std::vector<float>> all_logits(std::span<const int32_t> tokens);

  int context() const { return context_; }

 private:
  LogitsEvaluator() = default;

  std::shared_ptr<const Model> model_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<KvCache> kv_;
  std::vector<int32_t> block_table_;  // blocks 0..n-1: the one sequence owns the whole cache
  std::vector<BatchRow> rows_;
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
