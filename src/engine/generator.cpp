#include "engine/generator.h"

#include <algorithm>

#include "base/timer.h"

namespace omnibus {

Result<std::unique_ptr<Generator>> Generator::create(std::shared_ptr<const Model> model, int threads, int context,
                                                     int prefill_chunk, KvCacheType kv_type) {
  if (context <= 0) return Status::invalid_argument("context must be positive");
  if (prefill_chunk <= 0) return Status::invalid_argument("prefill chunk must be positive");
  std::unique_ptr<Generator> g(new Generator());
  const int blocks = (context + kBlockSize - 1) / kBlockSize;
  OMNIBUS_ASSIGN_OR_RETURN(PagedKvStore kv, PagedKvStore::create(model->config(), blocks, kBlockSize, kv_type));
  g->kv_ = std::make_unique<PagedKvStore>(std::move(kv));
  g->block_table_.resize(blocks);
  for (int b = 0; b < blocks; ++b) g->block_table_[b] = b;
  g->forward_ = std::make_unique<ForwardPass>(model, prefill_chunk, context, threads);
  g->logits_.resize(model->config().vocab_size);
  g->rows_.reserve(prefill_chunk);
  g->context_ = context;
  g->prefill_chunk_ = prefill_chunk;
  g->model_ = std::move(model);
  return g;
}

Status Generator::prefill(std::span<const int32_t> tokens, int begin, float* last_logits) {
  for (int start = begin; start < static_cast<int>(tokens.size()); start += prefill_chunk_) {
    const int end = std::min<int>(static_cast<int>(tokens.size()), start + prefill_chunk_);
    rows_.clear();
    for (int p = start; p < end; ++p)
      rows_.push_back({tokens[p], block_table_, p, p == static_cast<int>(tokens.size()) - 1});
    OMNIBUS_RETURN_IF_ERROR(forward_->run(rows_, *kv_, last_logits));
  }
  return Status::ok();
}

Result<GenerationStats> Generator::generate(std::span<const int32_t> prompt, const GenerationOptions& options,
                                            const std::vector<int32_t>& end_of_generation,
                                            const TokenCallback& on_token) {
  if (prompt.empty()) return Status::invalid_argument("the prompt is empty");
  if (static_cast<int>(prompt.size()) >= context_)
    return Status::invalid_argument("prompt of " + std::to_string(prompt.size()) +
                                    " tokens does not fit the context of " + std::to_string(context_));
  const int vocab = model_->config().vocab_size;
  OMNIBUS_RETURN_IF_ERROR(options.sampling.validate(vocab));
  for (int32_t t : prompt)
    if (t < 0 || t >= vocab) return Status::invalid_argument("token id " + std::to_string(t) + " is outside the vocabulary");

  // Reuse the cached prefix, but always recompute the last prompt token so we
  // have its logits.
  size_t reuse = 0;
  while (reuse < cached_.size() && reuse + 1 < prompt.size() && cached_[reuse] == prompt[reuse]) ++reuse;
  cached_.assign(prompt.begin(), prompt.end());

  GenerationStats stats;
  stats.prompt_tokens = static_cast<int>(prompt.size());
  stats.prefilled_tokens = static_cast<int>(prompt.size() - reuse);
  Stopwatch clock;
  Status s = prefill(prompt, static_cast<int>(reuse), logits_.data());
  if (!s.is_ok()) {
    cached_.clear();
    return s;
  }
  stats.prefill_seconds = clock.seconds();

  Sampler sampler(options.sampling, vocab);
  std::vector<int32_t> generated;
  const int limit = options.max_tokens < 0 ? context_ : options.max_tokens;
  generated.reserve(std::max(0, std::min(limit, context_)));
  Stopwatch decode_clock;
  stats.finish_reason = "length";
  while (static_cast<int>(generated.size()) < limit) {
    const int32_t token = profile_call(forward_->profiler(), ProfileOp::kSampling,
                                       [&] { return sampler.sample(logits_, prompt, generated); });
    if (generated.empty()) decode_clock.reset();
    const bool is_eog = std::find(end_of_generation.begin(), end_of_generation.end(), token) != end_of_generation.end();
    if (is_eog && !options.ignore_eos) {
      stats.finish_reason = "stop";
      break;
    }
    generated.push_back(token);
    if (!on_token(token)) {
      stats.finish_reason = "stop";
      break;
    }
    if (static_cast<int>(generated.size()) >= limit) break;
    const int pos = static_cast<int>(cached_.size());
    if (pos >= context_) break;  // context full
    BatchRow row{token, block_table_, pos, true};
    cached_.push_back(token);
    OMNIBUS_RETURN_IF_ERROR(forward_->run(std::span(&row, 1), *kv_, logits_.data()));
  }
  // The last sampled token is not in the cache yet; cached_ holds only
  // tokens whose K/V were computed.
  stats.generated_tokens = static_cast<int>(generated.size());
  stats.decode_seconds = decode_clock.seconds();
  return stats;
}

Result<std::vector<float>> Generator::all_logits(std::span<const int32_t> tokens, int chunk) {
  if (tokens.empty() || static_cast<int>(tokens.size()) > context_)
    return Status::invalid_argument("evaluation needs 1.." + std::to_string(context_) + " tokens");
  if (chunk <= 0 || chunk > forward_->max_batch()) chunk = forward_->max_batch();
  const int vocab = model_->config().vocab_size;
  std::vector<float> out(tokens.size() * static_cast<size_t>(vocab));
  cached_.clear();
  for (size_t start = 0; start < tokens.size(); start += chunk) {
    const size_t end = std::min(tokens.size(), start + chunk);
    rows_.clear();
    for (size_t p = start; p < end; ++p) rows_.push_back({tokens[p], block_table_, static_cast<int32_t>(p), true});
    OMNIBUS_RETURN_IF_ERROR(forward_->run(rows_, *kv_, out.data() + start * vocab));
  }
  return out;
}

}  // namespace omnibus
