// OpenAI request bodies (/v1/completions, /v1/chat/completions) parsed and
// validated into plain structs, with no engine or HTTP in sight. Every way a
// client can get it wrong is a 400 ApiError naming the field (`param`); the
// parsers never throw and never abort, whatever the bytes.
//
// Defaults follow OpenAI's API, not llama.cpp's CLI: temperature 1, top_p 1,
// top_k 0 (off), min_p 0 (off), n 1, completions max_tokens 16, chat
// max_tokens unset (until the context is full). So an omitted field behaves
// as it would against api.openai.com; SamplingParams' own defaults (the CLI
// ones) are overwritten here.
//
// Fields that constrain the output (response_format, grammar, guided_json,
// ...) become one parsed grammar (structured_output.h). Fields that change
// the answer and are not implemented (functions, ...) are refused with a 400
// naming them (unsupported_fields.h); fields that only tune or annotate
// (user, metadata, ...) and unknown ones are ignored.
//
// Checks that need the model (token ids in the vocabulary, prompt + max_tokens
// within the context) are in validate_against_model(), run once the prompt is
// tokenized. Plain data; not tied to any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "sampling/sampling_params.h"
#include "server/api_error.h"
#include "server/tool_request.h"
#include "tokenizer/chat_template.h"

namespace omnibus::server {

struct ApiLimits {
  int32_t max_n = 16;              // most choices per request
  int32_t max_stop = 4;            // OpenAI's limit on stop strings
  size_t max_stop_bytes = 256;     // per stop string
  int32_t max_json_depth = 64;     // arrays/objects nested deeper are refused
  size_t max_body_bytes = 8u << 20;
  int64_t max_tokens_cap = 1 << 20;     // max_tokens above this is refused outright
  int32_t max_completion_logprobs = 5;  // completions `logprobs`: 0..5, OpenAI's range
  // Most choices in one completions request with a list of prompts, all
  // prompts together (prompts x n). The default is --max-seqs' default, so
  // the choices of one request can all run at once.
  int32_t max_choices = 64;
  // Largest GBNF text a request's output constraint may be, given or made
  // from a schema (structured_output.h).
  size_t max_grammar_bytes = size_t{1} << 20;
};

// What both endpoints share: how much to generate, when to stop, how to
// sample, and how to deliver.
struct GenerationOptions {
  std::string model;
  // Unset: generate until a stop or the context is full.
  std::optional<int64_t> max_tokens;
  int32_t n = 1;
  std::vector<std::string> stop;  // empty strings are dropped
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // Extension (vLLM, llama-server): generate past EOS up to max_tokens, so
  // benchmarks get the output lengths they ask for.
  bool ignore_eos = false;
  // Client-given seed; when unset the server picks one (sampling.seed is
  // then meaningless until it does).
  std::optional<uint64_t> seed;
  SamplingParams sampling;
  // Structured output (response_format, grammar, ...): what every choice's
  // text must be a sentence of, parsed once and shared by all the choices
  // (immutable). Null: unconstrained.
  std::shared_ptr<const Grammar> grammar;
};

// The prompt of a completion: either text to tokenize or token ids as given.
struct Prompt {
  bool is_tokens = false;
  std::string text;
  std::vector<int32_t> tokens;
};

struct CompletionRequest {
  // One or more: `prompt` may be a list of prompts (strings or token-id
  // lists), each of which gets its own n choices.
  std::vector<Prompt> prompts;
  bool echo = false;
  GenerationOptions options;
};

struct ChatMessage {
  std::string role;     // system | developer | user | assistant | tool
  std::string content;  // text parts joined without separator
  // An assistant turn's thoughts, sent apart from its content (as this
  // server, llama-server and vLLM return them); null or absent: none.
  std::optional<std::string> reasoning_content;
  // An assistant turn's tool calls (their arguments as the template writes
  // them), and a tool message's tool_call_id (which no template writes).
  std::vector<omnibus::ChatToolCall> tool_calls;
  std::string tool_call_id;
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  GenerationOptions options;
  // chat_template_kwargs: {"enable_thinking": false} asks a reasoning
  // model (Qwen3) to answer without thinking; other keys are refused.
  bool enable_thinking = true;
  // reasoning_effort (OpenAI's field, or chat_template_kwargs's as
  // llama-server takes it): "low", "medium" or "high"; "" when not sent.
  // Only gpt-oss's template reads it (prepare_chat refuses it otherwise).
  std::string reasoning_effort;
  // tools, tool_choice, parallel_tool_calls (tool_request.h).
  ToolRequest tools;
};

ApiResult<CompletionRequest> parse_completion_request(std::string_view body, const ApiLimits& limits);
ApiResult<ChatRequest> parse_chat_request(std::string_view body, const ApiLimits& limits);

struct ModelLimits {
  int32_t vocab_size = 0;
  int64_t context_length = 0;
};

// The checks that need the model: every prompt token id and logit_bias key
// inside the vocabulary, a non-empty prompt that leaves room to generate, and
// prompt + max_tokens within the context. `prompt_tokens` is the tokenized
// prompt (after the chat template, for chat). nullopt when all is well.
std::optional<ApiError> validate_against_model(const GenerationOptions& options,
                                               std::span<const int32_t> prompt_tokens, const ModelLimits& model);

// Refuses, before it is tokenized, a text of `text_bytes` bytes that is at
// least text_bytes / max_bytes_per_token tokens (Tokenizer::
// max_bytes_per_token) and so more than the context could hold: tokenizing
// costs tens of times a text's size in memory and time, and a client could
// otherwise make every worker tokenize megabytes only to be refused.
// nullopt when the text may fit (the token count decides after tokenizing).
std::optional<ApiError> check_text_can_fit(size_t text_bytes, size_t max_bytes_per_token, int64_t context_length,
                                           std::string_view param);

}  // namespace omnibus::server
