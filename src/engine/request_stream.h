// What a server hands the engine for one sequence (EngineRequest), and the
// channel the engine streams that sequence's output back through
// (RequestStream).
//
// Threads: the HTTP thread that submitted a request waits on its stream; the
// engine thread pushes events into it. RequestStream is the only object both
// touch, and it is thread-safe. A client that hangs up calls cancel(); the
// engine sees the flag at its next step and frees the sequence.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "engine/speculation.h"
#include "grammar/grammar.h"
#include "sampling/logprobs.h"  // TokenLogprob
#include "sampling/sampling_params.h"

namespace omnibus {

struct EngineRequest {
  std::vector<int32_t> prompt;  // token ids, already checked against the vocabulary
  // Most tokens to generate; <= 0 means until the context is full.
  int64_t max_tokens = 0;
  SamplingParams sampling;  // seed already chosen
  std::vector<std::string> stop;
  bool ignore_eos = false;
  // The text renders special (control) tokens as their text: gpt-oss's
  // harmony markers, which the server parses (server/harmony_splitter.h).
  bool render_special_text = false;
  // Prefix-cache namespace: sequences only share cached blocks when equal.
  uint64_t cache_salt = 0;
  std::string request_id;  // for logs
  // The ids that end generation; unset: the tokenizer's.
  std::optional<std::vector<int32_t>> end_of_generation;
  // Speculative decoding for this sequence; unset: the engine's
  // (ServingEngineOptions::speculation).
  std::optional<SpeculationOptions> speculation;
  // Constrained decoding: every sampled token keeps the output a prefix of a
  // sentence of this grammar, and an end token comes only once the output is
  // a whole one (grammar/token_mask.h). Null: unconstrained.
  std::shared_ptr<const Grammar> grammar;
};

// One sequence's decode steps and guesses (engine/speculation.h).
struct SpeculationCounts {
  int64_t decode_steps = 0;     // steps after the prompt that sampled it
  int64_t draft_steps = 0;      // of those, steps that ran guesses
  int64_t drafted_tokens = 0;   // guesses run
  int64_t accepted_tokens = 0;  // guesses that matched the sampled token (each saved a step)
};

// One sampled token; the logprob fields are filled only when the request's
// sampling params asked for them.
struct GeneratedToken {
  int32_t token = -1;
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;  // most likely first, top_logprobs entries
};

// Timings of one finished sequence, in seconds on the engine's clock.
struct RequestTimings {
  double queue_seconds = 0;  // submit → first scheduled
  double ttft_seconds = 0;   // submit → first token sampled
  double e2e_seconds = 0;    // submit → finished
  double tpot_seconds = 0;   // (e2e − ttft) / (tokens − 1); 0 with < 2 tokens
};

struct StreamEvent {
  // New text, safe to send: stop strings are cut out and never half-sent,
  // and it never ends inside a UTF-8 character (except at the very end).
  std::string text;
  // The tokens sampled since the previous event. Their pieces may not join
  // to `text` exactly (text can be held back for stop matching, and a stop
  // string cuts it), but every token's text is in or before this event's.
  std::vector<GeneratedToken> tokens;

  bool finished = false;  // last event of the stream
  // When finished: "stop" (EOS or stop string), "length" (max_tokens or the
  // context), "cancelled", or "error" (then `error` says what went wrong).
  std::string finish_reason;
  std::string error;
  int64_t prompt_tokens = 0;      // when finished
  // When finished: tokens generated, including one that completed a stop
  // string but not an end-of-generation token (it has no text).
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;      // when finished: prompt tokens served by the prefix cache
  RequestTimings timings;         // when finished
  SpeculationCounts speculation;  // when finished
};

class RequestStream {
 public:
  // Engine side: appends an event and wakes the waiter.
  void push(StreamEvent event);

  // Server side: waits up to `timeout` for events, then moves every pending
  // one into `out` (appending). Returns false if none came in time.
  bool wait(std::vector<StreamEvent>& out, std::chrono::milliseconds timeout);

  // Either side, any thread: asks the engine to stop this sequence. The
  // engine then pushes a final event with finish_reason "cancelled" (unless
  // it had already finished).
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  Mutex mu_;
  CondVar cv_;
  std::deque<StreamEvent> events_ GUARDED_BY(mu_);
  std::atomic<bool> cancelled_{false};
};

}  // namespace omnibus
