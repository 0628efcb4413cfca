#include "engine/evaluation.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/kv_pool_plan.h"

namespace omnibus {

Result<std::unique_ptr<LogitsEvaluator>> LogitsEvaluator::create(std::shared_ptr<const Model> model, Backend& backend,
                                                                 int context, int chunk, KvCacheType kv_type,
                                                                 bool window_kv) {
  if (context <= 0) return Status::invalid_argument("context must be positive");
  if (chunk <= 0) return Status::invalid_argument("chunk must be positive");
  std::unique_ptr<LogitsEvaluator> e(new LogitsEvaluator());
  const int blocks = (context + kBlockSize - 1) / kBlockSize;
  const ModelConfig& c = model->config();
  // The serving engine's pool planner, for one sequence whose forward calls
  // take `chunk` positions: its window pool holds every block those calls
  // write or see ([start - window + 1, start + chunk)), so block b can live
  // in window block b % window_blocks_ with no two live ones sharing one.
  OMNIBUS_ASSIGN_OR_RETURN(KvPoolPlan plan, plan_kv_pools(c, {.context_tokens = context,
                                                              .block_size = kBlockSize,
                                                              .type = kv_type,
                                                              .window_group = window_kv && backend.window_kv(),
                                                              .max_seqs = 1,
                                                              .max_batched_tokens = chunk}));
  if (plan.window_blocks < blocks) e->window_blocks_ = static_cast<int>(plan.window_blocks);  // else no saving
  OMNIBUS_ASSIGN_OR_RETURN(e->kv_, backend.create_kv_cache(c, blocks, kBlockSize, kv_type, e->window_blocks_));
  e->block_table_.resize(blocks);
  for (int b = 0; b < blocks; ++b) e->block_table_[b] = b;
  if (e->window_blocks_ > 0) {
    e->window_block_table_.resize(blocks);
    for (int b = 0; b < blocks; ++b) e->window_block_table_[b] = b % e->window_blocks_;
  }
  OMNIBUS_ASSIGN_OR_RETURN(e->runner_, backend.create_runner(model, chunk, context));
  e->rows_.reserve(chunk);
  e->context_ = context;
  e->chunk_ = chunk;
  e->model_ = std::move(model);
  return e;
}

Status LogitsEvaluator::for_each_logits(std::span<const int32_t> tokens, const LogitsConsumer& consume) {
  if (tokens.empty() || static_cast<int>(tokens.size()) > context_)
    return Status::invalid_argument("evaluation needs 1.." + std::to_string(context_) + " tokens");
  const size_t vocab = static_cast<size_t>(model_->config().vocab_size);
  logits_.resize(static_cast<size_t>(chunk_) * vocab);
  for (size_t start = 0; start < tokens.size(); start += chunk_) {
    const size_t end = std::min(tokens.size(), start + chunk_);
    rows_.clear();
    for (size_t p = start; p < end; ++p)
      rows_.push_back({tokens[p], block_table_, static_cast<int32_t>(p), true, window_block_table_});
    OMNIBUS_RETURN_IF_ERROR(runner_->run(rows_, *kv_, logits_.data()));
    OMNIBUS_RETURN_IF_ERROR(consume(start, end - start, logits_.data()));
  }
  return Status::ok();
}

Result<std::vector<float>> LogitsEvaluator::all_logits(std::span<const int32_t> tokens) {
  const size_t vocab = static_cast<size_t>(model_->config().vocab_size);
  std::vector<float> out(tokens.size() * vocab);
  OMNIBUS_RETURN_IF_ERROR(for_each_logits(tokens, [&](size_t first, size_t rows, const float* logits) {
    std::copy(logits, logits + rows * vocab, out.data() + first * vocab);
    return Status::ok();
  }));
  return out;
}

double TeacherForcedResult::mean_nll() const {
  if (nll.empty()) return 0.0;
  double sum = 0.0;
  for (double v : nll) sum += v;
  return sum / static_cast<double>(nll.size());
}

Result<TeacherForcedResult> evaluate_teacher_forced(LogitsEvaluator& evaluator, std::span<const int32_t> tokens) {
  TeacherForcedResult r;
  r.argmax.reserve(tokens.size());
  OMNIBUS_RETURN_IF_ERROR(evaluator.for_each_logits(tokens, [&](size_t first, size_t rows, const float* logits) {
    const size_t vocab = static_cast<size_t>(evaluator.vocab_size());
    for (size_t k = 0; k < rows; ++k) {
      const size_t i = first + k;
      const float* row = logits + k * vocab;
      size_t best = 0;
      double max_logit = row[0];
      for (size_t v = 1; v < vocab; ++v)
        if (row[v] > max_logit) max_logit = row[v], best = v;
      r.argmax.push_back(static_cast<int32_t>(best));
      if (i + 1 == tokens.size()) break;
      double sum = 0.0;
      for (size_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max_logit);
      const double log_z = max_logit + std::log(sum);
      r.nll.push_back(log_z - row[tokens[i + 1]]);
    }
    return Status::ok();
  }));
  return r;
}

}  // namespace omnibus
