// ChoiceState: what one choice (one engine sequence) of a request has
// produced so far, folded from its StreamEvents. It gives, per event, the
// delta to stream (new text and the new tokens' logprobs), and at the end
// the whole choice for a non-streaming response. Token texts for logprobs
// come from the tokenizer; text_offset counts bytes from the start of the
// choice's text (after any echoed prompt), as OpenAI's completions do.
//
// Not thread-safe: owned by the one HTTP thread that serves the request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/request_stream.h"
#include "server/harmony_splitter.h"
#include "server/openai_response.h"
#include "server/reasoning_splitter.h"
#include "server/tool_call_splitter.h"
#include "tokenizer/tokenizer.h"

namespace omnibus::server {

class ChoiceState {
 public:
  // `tokenizer` must outlive the state. `echo_text` (completions `echo`) is
  // the start of the choice's text; it is not part of any delta.
  // `split_reasoning` (chat with a reasoning model): a leading <think>
  // block goes to ChoiceOutput::reasoning, apart from the text
  // (ReasoningSplitter).
  // `opens_thought`: the prompt ended inside an open <think> block.
  // `harmony` (gpt-oss): the thoughts are the analysis channel's messages
  // instead (HarmonySplitter).
  ChoiceState(int32_t index, const Tokenizer& tokenizer, bool logprobs, std::string echo_text,
              bool split_reasoning = false, bool opens_thought = false, bool harmony = false);

  // Folds in one event and returns what it adds. The delta's finish_reason
  // is "stop" or "length" when the event finished the choice that way, and
  // empty otherwise (also for "error" and "cancelled": see finish_reason()).
  // Events after the finished one are ignored (empty delta).
  ChoiceOutput apply(const StreamEvent& event);

  // Reads the answer's content for calls to these tools (ToolCallSplitter;
  // `id_seed` makes the call ids). Before the first apply().
  void read_tool_calls(std::vector<std::string> tool_names, uint64_t id_seed);

  // Ends the choice without generating (max_tokens 0): reason "length".
  void finish_without_generating();

  int32_t index() const { return index_; }
  bool finished() const { return finished_; }
  // The engine's reason: "stop", "length", "cancelled", "error"; "" while running.
  const std::string& finish_reason() const { return finish_reason_; }
  // The finish_reason the client sees: openai_finish_reason's, and
  // "tool_calls" for a choice that stopped after making calls.
  std::string client_finish_reason() const;
  const std::string& error() const { return error_; }
  // The engine's count once finished; until then, the tokens seen so far.
  int64_t completion_tokens() const { return finished_ ? completion_tokens_ : tokens_seen_; }
  // True once an event carried a generated token.
  bool has_tokens() const { return has_tokens_; }
  // Once finished: the prompt tokens the engine took from its prefix cache
  // instead of computing them; 0 before.
  int64_t cached_tokens() const { return cached_tokens_; }

  // The whole choice: echo + generated text, every token's logprobs (when
  // asked for) and the OpenAI finish_reason.
  ChoiceOutput full_output() const;

 private:
  GeneratedTokenLogprobs token_logprobs(const GeneratedToken& token);

  int32_t index_;
  const Tokenizer& tokenizer_;
  bool logprobs_;
  std::string text_;  // echo + generated (its content, when reasoning is split off)
  std::string reasoning_;
  bool split_reasoning_;
  bool harmony_;
  ReasoningSplitter splitter_;
  HarmonySplitter harmony_splitter_;
  std::optional<ToolCallSplitter> tool_splitter_;
  std::vector<ToolCall> tool_calls_;
  std::vector<GeneratedTokenLogprobs> all_logprobs_;
  int64_t next_offset_ = 0;  // text_offset of the next token
  bool finished_ = false;
  bool has_tokens_ = false;
  std::string finish_reason_;
  std::string error_;
  int64_t completion_tokens_ = 0;
  int64_t tokens_seen_ = 0;
  int64_t cached_tokens_ = 0;
};

// The OpenAI finish_reason for an engine reason: "stop" and "length" pass
// through; anything else (the choice did not end normally) is "".
std::string openai_finish_reason(const std::string& engine_reason);

}  // namespace omnibus::server
