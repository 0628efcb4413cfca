// OpenAI-shaped response bodies, streaming chunks and errors, built as JSON
// strings from plain data. No engine or HTTP here: the server fills these
// structs from engine events and writes the strings out.
//
// Strings from the model may hold broken UTF-8 (a token can end mid
// character); they are written with U+FFFD in place of bad bytes, never a
// throw. The chat logprobs `bytes` field carries the raw bytes. A logprob of
// -inf (or NaN) is written as kMinLogprob, since JSON cannot carry -inf.
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/tool_call_splitter.h"

namespace omnibus::server {

inline constexpr double kMinLogprob = -9999.0;

// One alternative (or the chosen token) with its text and log-probability.
struct TokenLogprobText {
  std::string token;  // the token's text piece (raw bytes)
  float logprob = 0.0f;
};

// Logprobs for one generated token: the chosen token and its alternatives.
struct GeneratedTokenLogprobs {
  TokenLogprobText chosen;
  std::vector<TokenLogprobText> top;  // most likely first
  // Byte offset of this token in the choice's text (completions only).
  int64_t text_offset = 0;
};

struct ChoiceOutput {
  int32_t index = 0;
  std::string text;
  // "stop", "length", "tool_calls" or empty (still running, in a chunk). Empty → null.
  std::string finish_reason;
  // Absent → "logprobs": null.
  std::optional<std::vector<GeneratedTokenLogprobs>> logprobs;
  // A reasoning model's thoughts (chat: message.reasoning_content, or
  // delta.reasoning_content in a chunk); left out when empty.
  std::string reasoning;
  // Chat with tools: the calls the model made (message.tool_calls; in a
  // chunk, the calls completed since the last one, written as tool_calls
  // deltas). A response with calls and no other text has content null.
  std::vector<ToolCall> tool_calls = {};
  // In a chunk: the index (among the choice's calls) of tool_calls[0].
  int32_t first_tool_call = 0;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  // Of prompt_tokens, those served from the prefix cache (written as
  // usage.prompt_tokens_details.cached_tokens, as OpenAI does).
  int64_t cached_tokens = 0;
};

// What every response and chunk of one request carries.
struct ResponseMeta {
  std::string id;        // "cmpl-…" or "chatcmpl-…" (make_response_id)
  int64_t created = 0;   // Unix seconds
  std::string model;
  // stream_options.include_usage: every chunk carries "usage": null and the
  // last one (build_usage_chunk) the totals, as OpenAI does.
  bool include_usage = false;
};

// "<prefix>-" followed by 24 hex digits of `entropy` mixed; callers pass a
// counter or random value. prefix: "cmpl" or "chatcmpl".
std::string make_response_id(const std::string& prefix, uint64_t entropy);

// Non-streaming bodies.
std::string build_completion_response(const ResponseMeta& meta, std::span<const ChoiceOutput> choices,
                                      const Usage& usage);
std::string build_chat_response(const ResponseMeta& meta, std::span<const ChoiceOutput> choices, const Usage& usage);

// Streaming chunks (JSON only; wrap with format_sse). A completion chunk
// carries new text in choices[0].text; a chat chunk's delta is {"role":
// "assistant"} for the first chunk of a choice (role_chunk true) and
// {"content": text} after (and {"reasoning_content": thoughts} while a
// reasoning model thinks), with {} when only finish_reason is sent. As
// OpenAI does, a choice's finish_reason comes alone in its last chunk
// (text "" or delta {}), after the chunks with its text (GenerationSession).
std::string build_completion_chunk(const ResponseMeta& meta, const ChoiceOutput& delta);
std::string build_chat_chunk(const ResponseMeta& meta, const ChoiceOutput& delta, bool role_chunk);
// Final chunk for include_usage: "choices": [] and the usage totals.
// `chat` picks the object name ("chat.completion.chunk" / "text_completion").
std::string build_usage_chunk(const ResponseMeta& meta, const Usage& usage, bool chat);

// {"error": {"message", "type", "param", "code"}}; empty param/code → null.
std::string build_error_body(const ApiError& error);

// "data: <json>\n\n".
std::string format_sse(const std::string& json);
// "data: [DONE]\n\n".
std::string sse_done();
// An error inside an open stream: "data: {"error": {...}}\n\n".
std::string format_sse_error(const ApiError& error);

}  // namespace omnibus::server
