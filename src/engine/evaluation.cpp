#include "engine/evaluation.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace omnibus {

Result<std::unique_ptr<LogitsEvaluator>> LogitsEvaluator::create(std::shared_ptr<const Model> model, Backend& backend,
                                                                 int context, int chunk, KvCacheType kv_type) {
  if (context <= 0) return Status::invalid_argument("context must be positive");
  if (chunk <= 0) return Status::invalid_argument("chunk must be positive");
  std::unique_ptr<LogitsEvaluator> e(new LogitsEvaluator());
  const int blocks = (context + kBlockSize - 1) / kBlockSize;
  OMNIBUS_ASSIGN_OR_RETURN(e->kv_, backend.create_kv_cache(model->config(), blocks, kBlockSize, kv_type, 0));
  e->block_table_.resize(blocks);
  for (int b = 0; b < blocks; ++b) e->block_table_[b] = b;
  OMNIBUS_ASSIGN_OR_RETURN(e->runner_, backend.create_runner(model, chunk, context));
  e->rows_.reserve(chunk);
  e->context_ = context;
  e->chunk_ = chunk;
  e->model_ = std::move(model);
  return e;
}

Result<std::vector<float>> LogitsEvaluator::all_logits(std::span<const int32_t> tokens) {
  if (tokens.empty() || static_cast<int>(tokens.size()) > context_)
    return Status::invalid_argument("evaluation needs 1.." + std::to_string(context_) + " tokens");
  const int vocab = model_->config().vocab_size;
  std::vector<float> out(tokens.size() * static_cast<size_t>(vocab));
  for (size_t start = 0; start < tokens.size(); start += chunk_) {
    const size_t end = std::min(tokens.size(), start + chunk_);
    rows_.clear();
    for (size_t p = start; p < end; ++p) rows_.push_back({tokens[p], block_table_, static_cast<int32_t>(p), true});
    OMNIBUS_RETURN_IF_ERROR(runner_->run(rows_, *kv_, out.data() + start * vocab));
  }
  return out;
}

double TeacherForcedResult::mean_nll() const {
  if (nll.empty()) return 0.0;
  double sum = 0.0;
  for (double v : nll) sum += v;
  return sum / static_cast<double>(nll.size());
}

Result<TeacherForcedResult> evaluate_teacher_forced(LogitsEvaluator& evaluator, std::span<const int32_t> tokens) {
  OMNIBUS_ASSIGN_OR_RETURN(std::vector<float> logits, evaluator.all_logits(tokens));
  const size_t vocab = logits.size() / tokens.size();
  TeacherForcedResult r;
  r.argmax.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const float* row = logits.data() + i * vocab;
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
  return r;
}

}  // namespace omnibus
