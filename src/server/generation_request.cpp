#include "server/generation_request.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "server/unsupported_fields.h"

namespace omnibus::server {
namespace {

std::string_view last_path_component(std::string_view name) {
  const size_t slash = name.find_last_of("/\\");
  return slash == std::string_view::npos ? name : name.substr(slash + 1);
}

bool names_match(std::string_view requested, const std::string& known) {
  if (known.empty()) return false;
  if (requested == known) return true;
  std::string_view base = last_path_component(requested);
  if (base == known) return true;
  if (base.size() > 5 && base.substr(base.size() - 5) == ".gguf") base.remove_suffix(5);
  return base == known || base == last_path_component(known);
}

// validate_against_model's error for prompt `index` of several: its param
// and message say which prompt.
ApiError for_prompt(ApiError e, size_t index) {
  if (e.param.rfind("prompt", 0) == 0) e.param = fmt::format("prompt[{}]{}", index, e.param.substr(6));
  e.message = fmt::format("prompt[{}]: {}", index, e.message);
  return e;
}

// Resolves what validate_against_model left open: max_tokens (unset: the
// rest of the context) and the seed (unset: the server's pick).
ApiResult<PreparedGeneration> finish_preparing(PreparedGeneration g, const InferenceService& service,
                                               uint64_t fallback_seed) {
  const ServiceInfo info = service.info();
  ModelLimits limits{info.vocab_size, info.context_length};
  int64_t longest = 0;
  for (size_t p = 0; p < g.prompts.size(); ++p) {
    if (std::optional<ApiError> e = validate_against_model(g.options, g.prompts[p].tokens, limits)) {
      return g.prompts.size() == 1 ? *e : for_prompt(std::move(*e), p);
    }
    longest = std::max(longest, static_cast<int64_t>(g.prompts[p].tokens.size()));
  }
  if (!g.options.max_tokens) g.options.max_tokens = info.context_length - longest;
  g.options.sampling.seed = g.options.seed ? *g.options.seed : fallback_seed;
  return g;
}

}  // namespace

std::optional<ApiError> check_model_name(std::string_view requested, const std::string& model_id,
                                         const std::vector<std::string>& aliases) {
  if (requested.empty() || names_match(requested, model_id)) return std::nullopt;
  for (const std::string& alias : aliases) {
    if (names_match(requested, alias)) return std::nullopt;
  }
  ApiError e = ApiError::invalid("model", fmt::format("the model '{}' does not exist; this server serves '{}'",
                                                      requested, model_id), "model_not_found");
  e.http_status = 404;
  return e;
}

int64_t PreparedGeneration::prompt_tokens() const {
  int64_t total = 0;
  for (const PreparedPrompt& p : prompts) total += static_cast<int64_t>(p.tokens.size());
  return total;
}

ApiResult<PreparedGeneration> prepare_completion(CompletionRequest request, const InferenceService& service,
                                                 uint64_t fallback_seed) {
  if (request.echo && request.options.sampling.wants_logprobs()) {
    // OpenAI then returns the prompt's own logprobs too, which the engine
    // does not compute; refusing is clearer than answering half of it.
    return ApiError::invalid("echo", "'echo' together with 'logprobs' is not supported", "unsupported_value");
  }
  const Tokenizer& tokenizer = service.tokenizer();
  const ServiceInfo info = service.info();
  const int32_t vocab = info.vocab_size;
  PreparedGeneration g;
  g.options = std::move(request.options);
  g.echo = request.echo;
  g.prompts.reserve(request.prompts.size());
  for (Prompt& prompt : request.prompts) {
    PreparedPrompt& out = g.prompts.emplace_back();
    if (prompt.is_tokens) {
      out.tokens = std::move(prompt.tokens);
      // Checked before decoding: the ids come from the client.
      bool valid = true;
      for (int32_t id : out.tokens) valid = valid && id >= 0 && id < vocab;
      if (g.echo && valid) out.echo_text = tokenizer.decode(out.tokens);
    } else {
      if (auto e =
              check_text_can_fit(prompt.text.size(), tokenizer.max_bytes_per_token(), info.context_length, "prompt")) {
        return request.prompts.size() == 1 ? *e : for_prompt(std::move(*e), g.prompts.size() - 1);
      }
      out.tokens = tokenizer.encode(prompt.text, /*add_special=*/tokenizer.add_bos(), /*parse_special=*/true);
      if (g.echo) out.echo_text = std::move(prompt.text);
    }
  }
  return finish_preparing(std::move(g), service, fallback_seed);
}

namespace {

// The family must have a tool format for tools to be offered or earlier
// calls to be written; otherwise the request is refused, never answered
// as if there were no tools.
MaybeError check_tool_format(const ChatRequest& request, ChatTemplateKind kind) {
  if (chat_template_has_tools(kind)) return std::nullopt;
  const std::string why = std::string("this model's chat template (") + chat_template_name(kind) +
                          ") has no tool format; tools are implemented for the ChatML family (Qwen2.5, Hermes, "
                          "SmolLM2)";
  if (request.tools.active()) return unsupported_field("tools", why);
  for (size_t i = 0; i < request.messages.size(); ++i) {
    if (!request.messages[i].tool_calls.empty())
      return unsupported_field(fmt::format("messages[{}].tool_calls", i), why);
  }
  return std::nullopt;
}

}  // namespace

ApiResult<PreparedGeneration> prepare_chat(ChatRequest request, const InferenceService& service,
                                           uint64_t fallback_seed) {
  const ChatFormat& format = service.chat_format();
  OMNIBUS_API_RETURN_IF_ERROR(check_tool_format(request, format.kind));
  std::vector<omnibus::ChatMessage> messages;
  messages.reserve(request.messages.size());
  for (ChatMessage& m : request.messages) {
    // "developer" is OpenAI's newer name for the system message; templates
    // only know "system".
    std::string role = m.role == "developer" ? "system" : std::move(m.role);
    messages.push_back(omnibus::ChatMessage{std::move(role), std::move(m.content), std::move(m.reasoning_content),
                                            std::move(m.tool_calls)});
  }
  if (!request.reasoning_effort.empty() && format.kind != ChatTemplateKind::kHarmony) {
    return unsupported_field("reasoning_effort", std::string("this model's chat template (") +
                                                     chat_template_name(format.kind) +
                                                     ") has no reasoning effort; gpt-oss's has");
  }
  std::vector<std::string> tools_json;
  std::vector<std::string> tool_names;
  if (request.tools.active()) {
    for (const ToolDefinition& t : request.tools.tools) {
      tools_json.push_back(t.template_json);
      tool_names.push_back(t.name);
    }
  }
  const std::string text = render_chat(format, messages, /*add_generation_prompt=*/true,
                                       {.enable_thinking = request.enable_thinking,
                                        .reasoning_effort = request.reasoning_effort,
                                        .tools_json = std::move(tools_json)});
  if (auto e = check_text_can_fit(text.size(), service.tokenizer().max_bytes_per_token(), service.info().context_length,
                                  "messages")) {
    return *e;
  }
  PreparedGeneration g;
  g.chat = true;
  // Without thinking the template closes the block itself: the answer is
  // all content. Harmony's template has no such switch (gpt-oss always
  // writes its analysis channel; reasoning_effort low makes it short), so
  // its answer is split whatever enable_thinking says.
  g.harmony = format.kind == ChatTemplateKind::kHarmony;
  g.split_reasoning =
      format.extract_reasoning && (request.enable_thinking || g.harmony || chat_template_opens_thought(format.kind));
  g.opens_thought = g.split_reasoning && chat_template_opens_thought(format.kind);
  g.tool_names = std::move(tool_names);
  g.options = std::move(request.options);
  g.prompts.push_back({service.tokenizer().encode(text, /*add_special=*/false, /*parse_special=*/true), {}});
  return finish_preparing(std::move(g), service, fallback_seed);
}

std::vector<EngineRequest> make_engine_requests(const PreparedGeneration& generation, const std::string& request_id) {
  const GenerationOptions& o = generation.options;
  const size_t total = generation.num_choices();
  std::vector<EngineRequest> out;
  out.reserve(total);
  for (const PreparedPrompt& prompt : generation.prompts) {
    for (int32_t i = 0; i < o.n; ++i) {
      EngineRequest r;
      r.prompt = prompt.tokens;
      r.max_tokens = o.max_tokens.value_or(0);
      r.sampling = o.sampling;
      r.ignore_eos = o.ignore_eos;
      r.sampling.seed = o.sampling.seed + static_cast<uint64_t>(i);
      r.stop = o.stop;
      r.grammar = o.grammar;  // one parsed grammar for all the choices
      r.render_special_text = generation.harmony;
      r.request_id = total == 1 ? request_id : fmt::format("{}/{}", request_id, out.size());
      out.push_back(std::move(r));
    }
  }
  return out;
}

ApiResult<std::vector<std::shared_ptr<RequestStream>>> submit_choices(InferenceService& service,
                                                                     std::vector<EngineRequest> requests) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  streams.reserve(requests.size());
  for (EngineRequest& r : requests) {
    Result<std::shared_ptr<RequestStream>> s = service.submit(std::move(r));
    if (!s.is_ok() || !s.value()) {
      for (auto& queued : streams) queued->cancel();
      return error_from_submit_status(s.is_ok() ? Status::internal("the engine returned no stream") : s.status());
    }
    streams.push_back(std::move(s).value());
  }
  return streams;
}

ApiError error_from_submit_status(const Status& status) {
  ApiError e;
  e.message = status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      e.http_status = 400;
      e.type = "invalid_request_error";
      e.code = "invalid_value";
      break;
    case StatusCode::kResourceExhausted:
      e.http_status = 429;
      e.type = "rate_limit_error";
      e.code = "rate_limit_exceeded";
      break;
    case StatusCode::kUnsupported:
      e.http_status = 503;
      e.type = "service_unavailable_error";
      e.code = "service_unavailable";
      break;
    default:
      e.http_status = 500;
      e.type = "server_error";
      e.code = "internal_error";
      break;
  }
  if (e.message.empty()) e.message = status.to_string();
  return e;
}

}  // namespace omnibus::server
