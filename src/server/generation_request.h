// From a parsed OpenAI request to engine work: the prompt tokenized (chat
// template for chat), checked against the model, max_tokens and the seed
// resolved, and one EngineRequest per choice submitted. Also the mapping
// from a refused submit() to the HTTP error the client sees.
//
// Pure functions over a const InferenceService (except submit_choices);
// safe from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/inference_service.h"
#include "server/api_error.h"
#include "server/openai_request.h"

namespace omnibus::server {

// One prompt of a request, tokenized.
struct PreparedPrompt {
  std::vector<int32_t> tokens;
  // Completions `echo`: the text each of this prompt's choices starts with.
  std::string echo_text;
};

struct PreparedGeneration {
  bool chat = false;
  // max_tokens always set (unset by the client: what the longest prompt
  // leaves of the context); sampling.seed is the base seed.
  GenerationOptions options;
  // In request order; chat has exactly one. Each prompt gets options.n
  // choices: prompt p's choice i has index p * n + i, as OpenAI numbers them.
  std::vector<PreparedPrompt> prompts;
  bool echo = false;  // completions `echo`
  // Chat with a reasoning model (ChatFormat::extract_reasoning): its
  // <think> block is returned as reasoning_content.
  bool split_reasoning = false;
  bool opens_thought = false;  // the prompt ends inside an open <think> block
  // gpt-oss's harmony format: the answer's special tokens are rendered as
  // text (its channel markers), and a split takes the analysis channel as
  // the thoughts (HarmonySplitter).
  bool harmony = false;
  // Chat with tools offered: the tools' names; each choice's answer is read
  // for calls to them (ToolCallSplitter). Empty: no tools.
  std::vector<std::string> tool_names;

  // All prompts' tokens together (usage.prompt_tokens counts each prompt once,
  // whatever n).
  int64_t prompt_tokens() const;
  size_t num_choices() const { return prompts.size() * static_cast<size_t>(options.n); }
};

// The "model" field of a request names this server's model when it is
// empty (OpenAI requires it; many clients send ""), equals the model id or
// one of `aliases` (e.g. the model file's name), or is a path whose last
// component is one of those (with or without ".gguf"). Otherwise: 404
// model_not_found, as OpenAI answers for a model it does not serve.
std::optional<ApiError> check_model_name(std::string_view requested, const std::string& model_id,
                                         const std::vector<std::string>& aliases);

// `fallback_seed` is used when the client sent no seed.
ApiResult<PreparedGeneration> prepare_completion(CompletionRequest request, const InferenceService& service,
                                                 uint64_t fallback_seed);
ApiResult<PreparedGeneration> prepare_chat(ChatRequest request, const InferenceService& service,
                                           uint64_t fallback_seed);

// One request per choice, in choice-index order. Choice i of each prompt
// samples with seed + i, so a prompt's choices in a list of prompts are the
// ones it gets alone.
std::vector<EngineRequest> make_engine_requests(const PreparedGeneration& generation, const std::string& request_id);

// Submits every request in order. When one is refused the ones already
// queued are cancelled and the refusal comes back as an ApiError.
ApiResult<std::vector<std::shared_ptr<RequestStream>>> submit_choices(InferenceService& service,
                                                                     std::vector<EngineRequest> requests);

// invalid_argument → 400, resource_exhausted → 429, unsupported → 503,
// anything else → 500. The caller adds Retry-After to 429 and 503.
ApiError error_from_submit_status(const Status& status);

}  // namespace omnibus::server
