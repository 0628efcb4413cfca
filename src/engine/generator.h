// Single-sequence generation for the command line: a one-request use of
// the ServingEngine (as vLLM's LLM class wraps its engine), so decoding,
// speculation and the end-of-generation rule exist once, in the engine.
// generate() submits the prompt, hands each token to the caller as the
// engine streams it, and cancels the request when the caller says stop.
// The engine's prefix cache keeps earlier prompts and replies, so a chat
// session does not recompute its history (whole KV blocks; exact, by batch
// invariance).
//
// Speculative decoding (options.speculation, engine/speculation.h): each
// decode step also runs guessed next tokens as extra rows; the output is
// exactly plain decoding's, in fewer steps.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/serving_engine.h"
#include "engine/speculation.h"
#include "model/backend.h"
#include "model/model.h"
#include "sampling/sampler.h"

namespace omnibus {

struct GenerationOptions {
  int max_tokens = 128;        // < 0: until the context is full
  bool ignore_eos = false;
  SamplingParams sampling;
  SpeculationOptions speculation;
};

struct GenerationStats {
  int prompt_tokens = 0;       // tokens in the prompt
  int prefilled_tokens = 0;    // of those, computed now (not reused from cache)
  int generated_tokens = 0;
  double prefill_seconds = 0;  // start → first logits
  double decode_seconds = 0;   // first token → last token
  std::string finish_reason;   // "stop" (EOS / caller), "length"
  // Speculative decoding: steps that carried a draft, tokens guessed, and
  // guesses that matched the sampled token (each saved a step).
  int decode_steps = 0;  // forward calls after the prompt
  int draft_steps = 0;
  int drafted_tokens = 0;
  int accepted_tokens = 0;
  double acceptance_rate() const { return drafted_tokens > 0 ? static_cast<double>(accepted_tokens) / drafted_tokens : 0; }
  double prefill_tokens_per_second() const { return prefill_seconds > 0 ? prefilled_tokens / prefill_seconds : 0; }
  double decode_tokens_per_second() const {
    return decode_seconds > 0 && generated_tokens > 1 ? (generated_tokens - 1) / decode_seconds : 0;
  }
};

class Generator {
 public:
  // Returns false to stop generating (e.g. a stop string matched).
  using TokenCallback = std::function<bool(int32_t token)>;

  // `context` positions per sequence; prefill_chunk tokens per step at most
  // (it also caps the rows of a speculative step: 1 + draft). The runner
  // and cache come from `backend`, which must outlive the generator.
  static Result<std::unique_ptr<Generator>> create(std::shared_ptr<const Model> model, Backend& backend, int context,
                                                   int prefill_chunk = 256, KvCacheType kv_type = KvCacheType::kF16);
  ~Generator();

  // Generates after `prompt`. The end-of-generation ids stop generation
  // unless options.ignore_eos. The token that ends generation by EOS is not
  // passed to on_token.
  Result<GenerationStats> generate(std::span<const int32_t> prompt, const GenerationOptions& options,
                                   const std::vector<int32_t>& end_of_generation, const TokenCallback& on_token);

  // Times the runner's ops into `profiler` (null: stop).
  Status set_profiler(Profiler* profiler);

  int context() const { return context_; }

 private:
  Generator() = default;

  std::unique_ptr<ServingEngine> engine_;
  int context_ = 0;
};

}  // namespace omnibus
