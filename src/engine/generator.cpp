#include "engine/generator.h"

#include <algorithm>

#include "base/timer.h"

namespace omnibus {

Result<std::unique_ptr<Generator>> Generator::create(std::shared_ptr<const Model> model, Backend& backend, int context,
                                                     int prefill_chunk, KvCacheType kv_type) {
  if (context <= 0) return Status::invalid_argument("context must be positive");
  if (prefill_chunk <= 0) return Status::invalid_argument("prefill chunk must be positive");
  std::unique_ptr<Generator> g(new Generator());
  const int blocks = (context + kBlockSize - 1) / kBlockSize;
  OMNIBUS_ASSIGN_OR_RETURN(g->kv_, backend.create_kv_cache(model->config(), blocks, kBlockSize, kv_type));
  g->block_table_.resize(blocks);
  for (int b = 0; b < blocks; ++b) g->block_table_[b] = b;
  OMNIBUS_ASSIGN_OR_RETURN(g->runner_, backend.create_runner(model, prefill_chunk, context));
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
    OMNIBUS_RETURN_IF_ERROR(runner_->run(rows_, *kv_, last_logits));
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
  OMNIBUS_RETURN_IF_ERROR(validate_speculation_options(options.speculation));
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

  const int max_draft = options.speculation.enabled() ? options.speculation.max_draft : 0;
  const size_t logits_rows = 1 + static_cast<size_t>(std::min(max_draft, runner_->max_batch() - 1));
  if (logits_.size() < logits_rows * vocab) logits_.resize(logits_rows * vocab);
  draft_.reserve(logits_rows);
  Sampler sampler(options.sampling, vocab);
  AcceptanceEstimate acceptance;
  std::vector<int32_t> generated;
  const int limit = options.max_tokens < 0 ? context_ : options.max_tokens;
  generated.reserve(std::max(0, std::min(limit, context_)));
  Stopwatch decode_clock;
  stats.finish_reason = "length";
  // Samples the token after logits row `row`; false once generation ends
  // (the token that ends it by EOS is not kept).
  int32_t token = -1;
  auto sample_and_emit = [&](size_t row) {
    std::span<float> logits(logits_.data() + row * vocab, vocab);
    token = profile_call(runner_->profiler(), ProfileOp::kSampling,
                         [&] { return sampler.sample(logits, prompt, generated); });
    if (generated.empty()) decode_clock.reset();
    const bool is_eog = std::find(end_of_generation.begin(), end_of_generation.end(), token) != end_of_generation.end();
    if (is_eog && !options.ignore_eos) {
      stats.finish_reason = "stop";
      return false;
    }
    generated.push_back(token);
    if (!on_token(token)) {
      stats.finish_reason = "stop";
      return false;
    }
    return static_cast<int>(generated.size()) < limit;
  };
  auto finish = [&] {
    // The last sampled token is not in the cache; cached_ holds only tokens
    // whose K/V were computed (accepted guesses included, rejected ones not).
    stats.generated_tokens = static_cast<int>(generated.size());
    stats.decode_seconds = decode_clock.seconds();
    return stats;
  };
  if (!sample_and_emit(0)) return finish();
  for (;;) {
    // `token` was sampled and is not in the cache yet: run it, with the
    // draft's guesses of what follows it as further rows.
    const int pos = static_cast<int>(cached_.size());
    if (pos >= context_) break;  // context full
    cached_.push_back(token);
    // Guesses past max_tokens or the context would never be used. Without
    // speculation the draft comes back empty.
    propose_draft(options.speculation, cached_,
                  std::min({limit - static_cast<int>(generated.size()), context_ - pos, runner_->max_batch()}) - 1,
                  vocab, draft_);
    const int ran = guesses_to_run(options.speculation, static_cast<int>(draft_.size()), acceptance, step_cost_);
    rows_.clear();
    rows_.push_back({token, block_table_, pos, true});
    for (int i = 0; i < ran; ++i) rows_.push_back({draft_[i], block_table_, pos + 1 + i, true});
    Stopwatch step_clock;
    OMNIBUS_RETURN_IF_ERROR(runner_->run(rows_, *kv_, logits_.data()));
    step_cost_.observe(static_cast<int64_t>(rows_.size()), step_clock.seconds());
    ++stats.decode_steps;
    if (ran > 0) {
      ++stats.draft_steps;
      stats.drafted_tokens += ran;
    }
    // Row i's logits follow the guesses before it; they count only while
    // every guess so far was what the target sampled.
    int accepted = 0;
    for (int row = 0;; ++row) {
      if (!sample_and_emit(row)) return finish();
      if (row == ran || token != draft_[row]) break;
      ++accepted;
      ++stats.accepted_tokens;
      cached_.push_back(token);  // its K/V were computed by row + 1
    }
    const GuessOutcome outcome = guess_outcome(draft_, ran, accepted, token);
    acceptance.observe(outcome.tested, outcome.matched);
  }
  return finish();
}

Result<std::vector<float>> Generator::all_logits(std::span<const int32_t> tokens, int chunk) {
  if (tokens.empty() || static_cast<int>(tokens.size()) > context_)
    return Status::invalid_argument("evaluation needs 1.." + std::to_string(context_) + " tokens");
  if (chunk <= 0 || chunk > runner_->max_batch()) chunk = runner_->max_batch();
  const int vocab = model_->config().vocab_size;
  std::vector<float> out(tokens.size() * static_cast<size_t>(vocab));
  cached_.clear();
  for (size_t start = 0; start < tokens.size(); start += chunk) {
    const size_t end = std::min(tokens.size(), start + chunk);
    rows_.clear();
    for (size_t p = start; p < end; ++p) rows_.push_back({tokens[p], block_table_, static_cast<int32_t>(p), true});
    OMNIBUS_RETURN_IF_ERROR(runner_->run(rows_, *kv_, out.data() + start * vocab));
  }
  return out;
}

}  // namespace omnibus
