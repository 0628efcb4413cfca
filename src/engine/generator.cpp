#include "engine/generator.h"

#include <algorithm>
#include <chrono>

namespace omnibus {

namespace {

constexpr int kBlockSize = 16;

}  // namespace

Generator::~Generator() = default;

Result<std::unique_ptr<Generator>> Generator::create(std::shared_ptr<const Model> model, Backend& backend, int context,
                                                     int prefill_chunk, KvCacheType kv_type) {
  if (context <= 0) return Status::invalid_argument("context must be positive");
  if (prefill_chunk <= 0) return Status::invalid_argument("prefill chunk must be positive");
  ServingEngineOptions options;
  // One sequence at a time, chunked as the caller asks; the pool holds one
  // full context (cached blocks of earlier calls make way when needed), a
  // window model's window layers only their window.
  options.scheduler.max_seqs = 1;
  options.scheduler.max_batched_tokens = prefill_chunk;
  options.kv_block_size = kBlockSize;
  options.kv_type = kv_type;
  options.kv_cache_tokens = context;
  options.context_length = context;
  options.speculative_max_seqs = 1;
  options.announce = false;
  std::unique_ptr<Generator> g(new Generator());
  OMNIBUS_ASSIGN_OR_RETURN(g->engine_,
                           ServingEngine::create(std::move(model), backend, nullptr, ChatFormat{}, options));
  g->context_ = context;
  return g;
}

Status Generator::set_profiler(Profiler* profiler) { return engine_->set_profiler(profiler); }

Result<GenerationStats> Generator::generate(std::span<const int32_t> prompt, const GenerationOptions& options,
                                            const std::vector<int32_t>& end_of_generation,
                                            const TokenCallback& on_token) {
  OMNIBUS_RETURN_IF_ERROR(validate_speculation_options(options.speculation));
  EngineRequest request;
  request.prompt.assign(prompt.begin(), prompt.end());
  request.max_tokens = options.max_tokens < 0 ? 0 : options.max_tokens;  // 0: until the context is full
  request.sampling = options.sampling;
  request.ignore_eos = options.ignore_eos;
  request.end_of_generation = end_of_generation;
  request.speculation = options.speculation;
  if (options.max_tokens == 0) {
    // Nothing to generate (the engine reads 0 as "until the context is full").
    GenerationStats stats;
    stats.prompt_tokens = static_cast<int>(prompt.size());
    stats.finish_reason = "length";
    return stats;
  }
  OMNIBUS_ASSIGN_OR_RETURN(std::shared_ptr<RequestStream> stream, engine_->submit(std::move(request)));

  GenerationStats stats;
  bool caller_stopped = false;
  std::vector<StreamEvent> events;
  for (;;) {
    events.clear();
    stream->wait(events, std::chrono::milliseconds(100));
    for (StreamEvent& e : events) {
      // Tokens the engine sampled after the caller said stop (it runs
      // ahead until it sees the cancellation) are dropped.
      for (const GeneratedToken& t : e.tokens) {
        if (caller_stopped) break;
        ++stats.generated_tokens;
        if (!on_token(t.token)) {
          caller_stopped = true;
          stream->cancel();
        }
      }
      if (!e.finished) continue;
      if (e.finish_reason == "error") return Status::internal(e.error);
      stats.prompt_tokens = static_cast<int>(e.prompt_tokens);
      stats.prefilled_tokens = static_cast<int>(e.prompt_tokens - e.cached_tokens);
      stats.prefill_seconds = e.timings.ttft_seconds;
      if (e.completion_tokens > 1) stats.decode_seconds = e.timings.tpot_seconds * (e.completion_tokens - 1);
      stats.finish_reason = caller_stopped || e.finish_reason == "cancelled" ? "stop" : e.finish_reason;
      stats.decode_steps = static_cast<int>(e.speculation.decode_steps);
      stats.draft_steps = static_cast<int>(e.speculation.draft_steps);
      stats.drafted_tokens = static_cast<int>(e.speculation.drafted_tokens);
      stats.accepted_tokens = static_cast<int>(e.speculation.accepted_tokens);
      return stats;
    }
  }
}

}  // namespace omnibus
