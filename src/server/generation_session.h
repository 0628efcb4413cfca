// GenerationSession: one completion or chat request in flight. It holds the
// request's engine streams (one per choice: n per prompt, numbered prompt by
// prompt as OpenAI does with a list of prompts), folds their events into
// ChoiceStates, and turns them into either SSE text (streaming) or one JSON
// body (non-streaming).
//
// Streaming, in order: a role chunk per choice (chat) or the echoed prompt
// per choice (completions with echo); then a chunk per event with new text
// or logprobs, with the choice's index and finish_reason null; when a
// choice ends, a chunk of its own with the finish_reason and nothing else
// (chat: "delta": {}; completions: "text": ""), as OpenAI sends it; once
// every choice ended, the usage chunk (stream_options.include_usage) and
// "data: [DONE]". A choice that ends in
// "error" (or "cancelled" that the server did not ask for) sends an error
// event, cancels the other choices and ends the stream with [DONE].
//
// Not thread-safe: used by one HTTP thread at a time. The destructor
// cancels every stream that has not finished, so an abandoned session
// never leaves work in the engine.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/request_stream.h"
#include "server/api_error.h"
#include "server/choice_state.h"
#include "server/generation_request.h"
#include "server/openai_response.h"
#include "tokenizer/tokenizer.h"

namespace omnibus::server {

class GenerationSession {
 public:
  using Clock = std::chrono::steady_clock;
  // Writes bytes to the client; false when the client is gone.
  using Writer = std::function<bool(std::string_view)>;

  // `streams` holds one stream per choice, in make_engine_requests' order
  // (prompt p's choice i at p * n + i), or none when max_tokens is 0
  // (every choice then ends at once with "length"). `tokenizer` must
  // outlive the session. `arrival` is when the HTTP request came in (TTFT).
  GenerationSession(const PreparedGeneration& generation, ResponseMeta meta,
                    std::vector<std::shared_ptr<RequestStream>> streams, const Tokenizer& tokenizer,
                    Clock::time_point arrival);
  ~GenerationSession();
  GenerationSession(const GenerationSession&) = delete;
  GenerationSession& operator=(const GenerationSession&) = delete;

  // Streaming: waits up to `wait` for events and writes what they add.
  // Returns false when a write failed; every stream is then cancelled.
  bool pump(const Writer& write, std::chrono::milliseconds wait);
  // [DONE] has been written.
  bool done() const { return done_; }

  // Non-streaming: waits until every choice finished. `give_up` is asked
  // between waits; when it says true, every stream is cancelled and the
  // call returns false.
  bool wait_all(const std::function<bool()>& give_up);
  // The response body, or why there is none: a choice ended in "error"
  // (500) or was cancelled by the server (503).
  ApiResult<std::string> response_body() const;

  void cancel_all();

  // For the request's log line and metrics.
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t completion_tokens() const;
  // Of prompt_tokens(), those the engine served from its prefix cache: per
  // prompt, the fewest any of its choices got (each prompt counts once, as
  // in prompt_tokens()).
  int64_t cached_tokens() const;
  double ttft_ms() const { return ttft_ms_; }  // < 0: no token yet
  // The stream ended with an error event (streaming) or a choice failed.
  bool failed() const;

 private:
  struct Arrived {
    size_t choice;
    StreamEvent event;
  };
  void collect(std::chrono::milliseconds wait, std::vector<Arrived>& out);
  bool write_preamble(const Writer& write);
  std::string chunk_for(const ChoiceOutput& delta) const;
  // The last chunk of a finished choice: its finish_reason alone.
  std::string finish_chunk_for(const ChoiceState& choice) const;
  Usage usage() const;
  bool finish_stream(const Writer& write);
  // The error a choice that did not end normally gives; nullopt when fine.
  std::optional<ApiError> choice_error(const ChoiceState& choice) const;
  bool all_finished() const;
  void note_tokens(const StreamEvent& event);

  bool chat_;
  bool include_usage_;
  bool logprobs_;
  int64_t prompt_tokens_;  // all prompts together
  size_t choices_per_prompt_;  // n
  ResponseMeta meta_;
  std::vector<std::shared_ptr<RequestStream>> streams_;
  std::vector<ChoiceState> choices_;
  Clock::time_point arrival_;
  double ttft_ms_ = -1;
  bool started_ = false;
  bool done_ = false;
  bool stream_failed_ = false;
  bool cancel_requested_ = false;
};

}  // namespace omnibus::server
