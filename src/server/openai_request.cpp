#include "server/openai_request.h"

#include <charconv>
#include <limits>

#include <fmt/format.h>

#include "server/json_fields.h"
#include "server/structured_output.h"
#include "server/unsupported_fields.h"
#include "tokenizer/chat_harmony.h"

namespace omnibus::server {
namespace {

constexpr int64_t kMaxTokenId = std::numeric_limits<int32_t>::max();

MaybeError parse_sampling(const Json& obj, SamplingParams& s) {
  // OpenAI defaults, not the CLI ones SamplingParams starts with.
  s.temperature = 1.0f;
  s.top_p = 1.0f;
  s.top_k = 0;
  s.min_p = 0.0f;
  OMNIBUS_API_RETURN_IF_ERROR(read_float(obj, "temperature", 0.0, 2.0, s.temperature));
  OMNIBUS_API_RETURN_IF_ERROR(read_float(obj, "top_p", 0.0, 1.0, s.top_p));
  OMNIBUS_API_RETURN_IF_ERROR(read_float(obj, "min_p", 0.0, 1.0, s.min_p));
  int64_t top_k = 0;
  // -1 is vLLM's spelling of "off"; accept it as 0.
  OMNIBUS_API_RETURN_IF_ERROR(read_int(obj, "top_k", -1, kMaxTokenId, top_k));
  s.top_k = top_k < 0 ? 0 : static_cast<int32_t>(top_k);
  if (s.top_p == 0.0f) {
    // OpenAI accepts top_p = 0; the nucleus is then the single likeliest
    // token, which is top_k = 1 (SamplingParams wants top_p in (0, 1]).
    s.top_p = 1.0f;
    s.top_k = 1;
  }
  OMNIBUS_API_RETURN_IF_ERROR(read_float(obj, "presence_penalty", -2.0, 2.0, s.presence_penalty));
  OMNIBUS_API_RETURN_IF_ERROR(read_float(obj, "frequency_penalty", -2.0, 2.0, s.frequency_penalty));
  OMNIBUS_API_RETURN_IF_ERROR(read_float(obj, "repetition_penalty", 0.0, 100.0, s.repetition_penalty));
  if (s.repetition_penalty <= 0.0f) {
    return ApiError::invalid("repetition_penalty", "'repetition_penalty' must be in (0, 100] (1 = off), got 0");
  }
  return std::nullopt;
}

MaybeError parse_seed(const Json& obj, std::optional<uint64_t>& seed) {
  if (!has_field(obj, "seed")) return std::nullopt;
  const Json& v = obj.at("seed");
  if (v.is_number_unsigned()) {
    seed = v.get<uint64_t>();
    return std::nullopt;
  }
  int64_t s = 0;
  OMNIBUS_API_RETURN_IF_ERROR(
      as_int(v, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), s));
  seed = static_cast<uint64_t>(s);  // negative seeds wrap: still a fixed seed
  return std::nullopt;
}

MaybeError parse_stop(const Json& obj, const ApiLimits& limits, std::vector<std::string>& out) {
  if (!has_field(obj, "stop")) return std::nullopt;
  const Json& v = obj.at("stop");
  std::vector<const Json*> items;
  if (v.is_string()) {
    items.push_back(&v);
  } else if (v.is_array()) {
    if (v.size() > static_cast<size_t>(limits.max_stop)) {
      return ApiError::invalid("stop", fmt::format("'stop' holds {} strings; at most {} are allowed", v.size(),
                                                   limits.max_stop));
    }
    for (const Json& item : v) items.push_back(&item);
  } else {
    return wrong_type("stop", "a string or an array of strings", v);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    std::string param = v.is_array() ? fmt::format("stop[{}]", i) : "stop";
    if (!items[i]->is_string()) return wrong_type(param, "a string", *items[i]);
    std::string text = items[i]->get<std::string>();
    if (text.size() > limits.max_stop_bytes) {
      return ApiError::invalid(param, fmt::format("'{}' is {} bytes; the limit is {}", param, text.size(),
                                                  limits.max_stop_bytes));
    }
    if (!text.empty()) out.push_back(std::move(text));
  }
  return std::nullopt;
}

MaybeError parse_logit_bias(const Json& obj, std::map<int32_t, float>& out) {
  if (!has_field(obj, "logit_bias")) return std::nullopt;
  const Json& v = obj.at("logit_bias");
  if (!v.is_object()) return wrong_type("logit_bias", "an object mapping token ids to numbers", v);
  for (const auto& [key, value] : v.items()) {
    int64_t id = -1;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id > kMaxTokenId) {
      return ApiError::invalid("logit_bias", fmt::format("'logit_bias' keys must be token ids (non-negative "
                                                         "integers), got \"{}\"", key));
    }
    float bias = 0.0f;
    const double limit = SamplingParams::kMaxLogitBias;
    OMNIBUS_API_RETURN_IF_ERROR(as_float(value, fmt::format("logit_bias.{}", key), -limit, limit, bias));
    out[static_cast<int32_t>(id)] = bias;
  }
  return std::nullopt;
}

// Completions: `logprobs` is an integer 0..5 (how many alternatives).
// Chat: `logprobs` is a boolean and `top_logprobs` 0..20 needs it true.
MaybeError parse_logprobs(const Json& obj, const ApiLimits& limits, bool is_chat, SamplingParams& s) {
  if (!is_chat) {
    if (!has_field(obj, "logprobs")) return std::nullopt;
    int64_t count = 0;
    OMNIBUS_API_RETURN_IF_ERROR(read_int(obj, "logprobs", 0, limits.max_completion_logprobs, count));
    s.logprobs = true;
    s.top_logprobs = static_cast<int32_t>(count);
    return std::nullopt;
  }
  OMNIBUS_API_RETURN_IF_ERROR(read_bool(obj, "logprobs", s.logprobs));
  int64_t top = 0;
  OMNIBUS_API_RETURN_IF_ERROR(read_int(obj, "top_logprobs", 0, SamplingParams::kMaxTopLogprobs, top));
  if (top > 0 && !s.logprobs) {
    return ApiError::invalid("top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
  }
  s.top_logprobs = static_cast<int32_t>(top);
  return std::nullopt;
}

MaybeError parse_delivery(const Json& obj, const ApiLimits& limits, bool is_chat, GenerationOptions& o) {
  OMNIBUS_API_RETURN_IF_ERROR(read_string(obj, "model", o.model));
  // Completions default to 16 tokens as OpenAI's legacy endpoint does; 0 is
  // allowed there (echo + max_tokens 0 scores a prompt).
  int64_t max_tokens = is_chat ? -1 : 16;
  const int64_t min_tokens = is_chat ? 1 : 0;
  OMNIBUS_API_RETURN_IF_ERROR(read_int(obj, "max_tokens", min_tokens, limits.max_tokens_cap, max_tokens));
  if (is_chat) {
    OMNIBUS_API_RETURN_IF_ERROR(read_int(obj, "max_completion_tokens", 1, limits.max_tokens_cap, max_tokens));
  }
  if (max_tokens >= 0) o.max_tokens = max_tokens;
  int64_t n = 1;
  OMNIBUS_API_RETURN_IF_ERROR(read_int(obj, "n", 1, limits.max_n, n));
  o.n = static_cast<int32_t>(n);
  OMNIBUS_API_RETURN_IF_ERROR(read_bool(obj, "stream", o.stream));
  if (has_field(obj, "stream_options")) {
    const Json& so = obj.at("stream_options");
    if (!so.is_object()) return wrong_type("stream_options", "an object", so);
    if (!o.stream) return ApiError::invalid("stream_options", "'stream_options' is only allowed when 'stream' is true");
    if (has_field(so, "include_usage") && !so.at("include_usage").is_boolean()) {
      return wrong_type("stream_options.include_usage", "a boolean", so.at("include_usage"));
    }
    OMNIBUS_API_RETURN_IF_ERROR(read_bool(so, "include_usage", o.include_usage));
  }
  OMNIBUS_API_RETURN_IF_ERROR(read_bool(obj, "ignore_eos", o.ignore_eos));
  if (has_field(obj, "user") && !obj.at("user").is_string()) return wrong_type("user", "a string", obj.at("user"));
  return std::nullopt;
}

MaybeError parse_options(const Json& obj, const ApiLimits& limits, bool is_chat, GenerationOptions& o) {
  OMNIBUS_API_RETURN_IF_ERROR(parse_delivery(obj, limits, is_chat, o));
  OMNIBUS_API_RETURN_IF_ERROR(parse_sampling(obj, o.sampling));
  OMNIBUS_API_RETURN_IF_ERROR(parse_seed(obj, o.seed));
  if (o.seed) o.sampling.seed = *o.seed;
  OMNIBUS_API_RETURN_IF_ERROR(parse_stop(obj, limits, o.stop));
  OMNIBUS_API_RETURN_IF_ERROR(parse_logit_bias(obj, o.sampling.logit_bias));
  OMNIBUS_API_RETURN_IF_ERROR(parse_logprobs(obj, limits, is_chat, o.sampling));
  return std::nullopt;
}

MaybeError parse_token_array(const Json& arr, const std::string& param, std::vector<int32_t>& out) {
  if (arr.empty()) return ApiError::invalid(param, fmt::format("'{}' must not be empty", param), "empty_prompt");
  out.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    int64_t id = 0;
    OMNIBUS_API_RETURN_IF_ERROR(as_int(arr[i], fmt::format("{}[{}]", param, i), 0, kMaxTokenId, id));
    out.push_back(static_cast<int32_t>(id));
  }
  return std::nullopt;
}

MaybeError parse_one_prompt(const Json& v, const std::string& param, Prompt& out) {
  if (v.is_string()) {
    out.text = v.get<std::string>();
    if (out.text.empty()) return ApiError::invalid(param, fmt::format("'{}' must not be empty", param), "empty_prompt");
    return std::nullopt;
  }
  if (v.is_array()) {
    out.is_tokens = true;
    return parse_token_array(v, param, out.tokens);
  }
  return wrong_type(param, "a string or an array of token ids", v);
}

// A string, an array of token ids, or a list of either (one prompt each, as
// OpenAI takes them: every prompt gets its own n choices).
MaybeError parse_prompts(const Json& obj, std::vector<Prompt>& out) {
  if (!has_field(obj, "prompt"))
    return ApiError::invalid("prompt", "'prompt' is required", "missing_required_parameter");
  const Json& v = obj.at("prompt");
  if (!v.is_string() && !v.is_array()) {
    return wrong_type("prompt", "a string, an array of token ids, or an array of these", v);
  }
  const bool list = v.is_array() && !v.empty() && (v[0].is_string() || v[0].is_array());
  if (!list) {
    out.emplace_back();
    return parse_one_prompt(v, "prompt", out.back());
  }
  out.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    OMNIBUS_API_RETURN_IF_ERROR(parse_one_prompt(v[i], fmt::format("prompt[{}]", i), out[i]));
  }
  return std::nullopt;
}

MaybeError check_choice_count(size_t prompts, int32_t n, const ApiLimits& limits) {
  const int64_t choices = static_cast<int64_t>(prompts) * n;
  if (choices <= limits.max_choices) return std::nullopt;
  return ApiError::invalid("prompt",
                           fmt::format("{} prompts with n = {} make {} choices; at most {} are allowed in one "
                                       "request (send several requests)",
                                       prompts, n, choices, limits.max_choices));
}

MaybeError parse_content(const Json& msg, const std::string& param, const std::string& role, std::string& out) {
  if (!has_field(msg, "content")) {
    if (role == "assistant") return std::nullopt;  // e.g. a tool-call turn with no text
    return ApiError::invalid(param, fmt::format("'{}' is required", param), "missing_required_parameter");
  }
  const Json& c = msg.at("content");
  if (c.is_string()) {
    out = c.get<std::string>();
    return std::nullopt;
  }
  if (!c.is_array()) return wrong_type(param, "a string or an array of content parts", c);
  for (size_t j = 0; j < c.size(); ++j) {
    std::string part_param = fmt::format("{}[{}]", param, j);
    const Json& part = c[j];
    if (!part.is_object()) return wrong_type(part_param, "an object", part);
    std::string type;
    if (has_field(part, "type") && part.at("type").is_string()) type = part.at("type").get<std::string>();
    if (type != "text") {
      return ApiError::invalid(part_param + ".type", fmt::format("'{}.type' must be \"text\" (only text content is "
                                                                 "supported)", part_param), "unsupported_value");
    }
    if (!has_field(part, "text") || !part.at("text").is_string()) {
      return ApiError::invalid(part_param + ".text", fmt::format("'{}.text' must be a string", part_param),
                               "invalid_type");
    }
    out += part.at("text").get<std::string>();
  }
  return std::nullopt;
}

// An assistant message's tool_calls: [{"id", "type": "function", "function":
// {"name", "arguments"}}], arguments a JSON object as a string (OpenAI's
// form) or as an object. The template writes them back as the model would.
MaybeError parse_tool_calls(const Json& m, const std::string& param, const ApiLimits& limits,
                            std::vector<omnibus::ChatToolCall>& out) {
  const Json& calls = m.at("tool_calls");
  if (!calls.is_array()) return wrong_type(param, "an array of tool calls", calls);
  for (size_t j = 0; j < calls.size(); ++j) {
    const std::string cparam = fmt::format("{}[{}]", param, j);
    const Json& call = calls[j];
    if (!call.is_object()) return wrong_type(cparam, "an object", call);
    if (has_field(call, "type") && call.at("type") != "function") {
      return ApiError::invalid(cparam + ".type", fmt::format("'{}.type' must be \"function\"", cparam),
                               "unsupported_value");
    }
    if (!has_field(call, "function") || !call.at("function").is_object()) {
      return ApiError::invalid(cparam + ".function", fmt::format("'{}.function' must be an object", cparam),
                               "missing_required_parameter");
    }
    const Json& function = call.at("function");
    omnibus::ChatToolCall parsed;
    if (!has_field(function, "name") || !function.at("name").is_string() || function.at("name").empty()) {
      return ApiError::invalid(cparam + ".function.name",
                               fmt::format("'{}.function.name' must be a non-empty string", cparam),
                               "missing_required_parameter");
    }
    parsed.name = function.at("name").get<std::string>();
    const std::string aparam = cparam + ".function.arguments";
    const Json arguments = has_field(function, "arguments") ? function.at("arguments") : Json("{}");
    if (arguments.is_string()) {
      ApiResult<OrderedJson> value = parse_ordered_json_object(
          arguments.get_ref<const std::string&>(), limits.max_json_depth, limits.max_body_bytes, "'" + aparam + "'");
      if (!value) return ApiError::invalid(aparam, value.error().message, value.error().code);
      parsed.arguments_json = python_json_dumps(value.value());
    } else if (arguments.is_object()) {
      parsed.arguments_json = python_json_dumps(OrderedJson::parse(arguments.dump()));
    } else {
      return wrong_type(aparam, "a string holding a JSON object", arguments);
    }
    out.push_back(std::move(parsed));
  }
  return std::nullopt;
}

MaybeError parse_messages(const Json& obj, const ApiLimits& limits, std::vector<ChatMessage>& out) {
  if (!has_field(obj, "messages")) {
    return ApiError::invalid("messages", "'messages' is required", "missing_required_parameter");
  }
  const Json& arr = obj.at("messages");
  if (!arr.is_array()) return wrong_type("messages", "an array of messages", arr);
  if (arr.empty()) return ApiError::invalid("messages", "'messages' must not be empty", "empty_messages");
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string param = fmt::format("messages[{}]", i);
    const Json& m = arr[i];
    if (!m.is_object()) return wrong_type(param, "an object", m);
    if (!has_field(m, "role")) {
      return ApiError::invalid(param + ".role", fmt::format("'{}.role' is required", param),
                               "missing_required_parameter");
    }
    const Json& role = m.at("role");
    if (!role.is_string()) return wrong_type(param + ".role", "a string", role);
    ChatMessage msg;
    msg.role = role.get<std::string>();
    if (msg.role != "system" && msg.role != "developer" && msg.role != "user" && msg.role != "assistant" &&
        msg.role != "tool") {
      return ApiError::invalid(param + ".role",
                               fmt::format("'{}.role' must be one of system, developer, user, assistant, tool; got "
                                           "\"{}\"", param, msg.role));
    }
    OMNIBUS_API_RETURN_IF_ERROR(parse_content(m, param + ".content", msg.role, msg.content));
    if (has_field(m, "reasoning_content") && !m.at("reasoning_content").is_null()) {
      const Json& r = m.at("reasoning_content");
      if (!r.is_string()) return wrong_type(param + ".reasoning_content", "a string or null", r);
      msg.reasoning_content = r.get<std::string>();
    }
    OMNIBUS_API_RETURN_IF_ERROR(check_unsupported_message_fields(m, param));
    const bool no_calls = !has_field(m, "tool_calls") || (m.at("tool_calls").is_array() && m.at("tool_calls").empty());
    if (!no_calls) {
      if (msg.role != "assistant") {
        return ApiError::invalid(param + ".tool_calls",
                                 fmt::format("'{}.tool_calls' is only for assistant messages", param));
      }
      OMNIBUS_API_RETURN_IF_ERROR(parse_tool_calls(m, param + ".tool_calls", limits, msg.tool_calls));
    }
    if (msg.role == "tool" && has_field(m, "tool_call_id")) {
      if (!m.at("tool_call_id").is_string())
        return wrong_type(param + ".tool_call_id", "a string", m.at("tool_call_id"));
      msg.tool_call_id = m.at("tool_call_id").get<std::string>();
    }
    out.push_back(std::move(msg));
  }
  return std::nullopt;
}

MaybeError check_reasoning_effort(const std::string& param, const Json& value) {
  if (!value.is_string()) return wrong_type(param, "a string", value);
  if (!valid_reasoning_effort(value.get<std::string>()))
    return ApiError::invalid(param, "'" + param + "' must be \"low\", \"medium\" or \"high\"");
  return std::nullopt;
}

// chat_template_kwargs (vLLM's and llama-server's): enable_thinking, which
// the reasoning templates read, and reasoning_effort, gpt-oss's; any other
// key would change the prompt in a way this server does not implement.
// The top-level reasoning_effort (OpenAI's) wins over the kwargs' one.
MaybeError parse_template_kwargs(const Json& obj, ChatRequest& req) {
  if (has_field(obj, "chat_template_kwargs")) {
    const Json& kwargs = obj.at("chat_template_kwargs");
    if (!kwargs.is_object()) return wrong_type("chat_template_kwargs", "an object", kwargs);
    for (const auto& [key, value] : kwargs.items()) {
      const std::string param = "chat_template_kwargs." + key;
      if (key == "reasoning_effort") {
        OMNIBUS_API_RETURN_IF_ERROR(check_reasoning_effort(param, value));
        req.reasoning_effort = value.get<std::string>();
        continue;
      }
      if (key != "enable_thinking")
        return unsupported_field(param, "the chat template takes only 'enable_thinking' and 'reasoning_effort'");
      if (!value.is_boolean()) return wrong_type(param, "a boolean", value);
      req.enable_thinking = value.get<bool>();
    }
  }
  if (has_field(obj, "reasoning_effort")) {
    OMNIBUS_API_RETURN_IF_ERROR(check_reasoning_effort("reasoning_effort", obj.at("reasoning_effort")));
    req.reasoning_effort = obj.at("reasoning_effort").get<std::string>();
  }
  return std::nullopt;
}

// Anything that escapes (it should not) still becomes a 400, never a crash.
ApiError unexpected(const char* what) {
  return ApiError::invalid("", std::string("request could not be parsed: ") + what, "invalid_request");
}

}  // namespace

ApiResult<CompletionRequest> parse_completion_request(std::string_view body, const ApiLimits& limits) {
  try {
    ApiResult<Json> doc = parse_json_object(body, limits.max_json_depth, limits.max_body_bytes);
    if (!doc) return doc.error();
    CompletionRequest req;
    OMNIBUS_API_RETURN_IF_ERROR(parse_prompts(doc.value(), req.prompts));
    OMNIBUS_API_RETURN_IF_ERROR(read_bool(doc.value(), "echo", req.echo));
    OMNIBUS_API_RETURN_IF_ERROR(parse_options(doc.value(), limits, /*is_chat=*/false, req.options));
    OMNIBUS_API_RETURN_IF_ERROR(check_choice_count(req.prompts.size(), req.options.n, limits));
    OMNIBUS_API_RETURN_IF_ERROR(check_unsupported_fields(doc.value(), /*is_chat=*/false, req.options.n));
    // Last: the costliest check (a schema converted, a grammar parsed).
    OMNIBUS_API_RETURN_IF_ERROR(parse_output_constraint(body, doc.value(), limits, req.options.grammar));
    return req;
  } catch (const std::exception& ex) {
    return unexpected(ex.what());
  }
}

ApiResult<ChatRequest> parse_chat_request(std::string_view body, const ApiLimits& limits) {
  try {
    ApiResult<Json> doc = parse_json_object(body, limits.max_json_depth, limits.max_body_bytes);
    if (!doc) return doc.error();
    ChatRequest req;
    OMNIBUS_API_RETURN_IF_ERROR(parse_messages(doc.value(), limits, req.messages));
    OMNIBUS_API_RETURN_IF_ERROR(parse_template_kwargs(doc.value(), req));
    OMNIBUS_API_RETURN_IF_ERROR(parse_options(doc.value(), limits, /*is_chat=*/true, req.options));
    OMNIBUS_API_RETURN_IF_ERROR(check_unsupported_fields(doc.value(), /*is_chat=*/true, req.options.n));
    OMNIBUS_API_RETURN_IF_ERROR(parse_tool_request(body, doc.value(), limits, req.tools));
    OMNIBUS_API_RETURN_IF_ERROR(parse_output_constraint(body, doc.value(), limits, req.options.grammar));
    if (req.tools.forced()) {
      if (req.options.grammar) {
        return ApiError::invalid("tool_choice",
                                 "'tool_choice' forces a tool call, which constrains the output, and "
                                 "so does another field (response_format, grammar, ...); send only one");
      }
      OMNIBUS_API_RETURN_IF_ERROR(tool_call_grammar(req.tools, limits, req.options.grammar));
    }
    return req;
  } catch (const std::exception& ex) {
    return unexpected(ex.what());
  }
}

std::optional<ApiError> validate_against_model(const GenerationOptions& options,
                                               std::span<const int32_t> prompt_tokens, const ModelLimits& model) {
  if (prompt_tokens.empty()) return ApiError::invalid("prompt", "the prompt is empty after tokenization", "empty_prompt");
  for (size_t i = 0; i < prompt_tokens.size(); ++i) {
    if (prompt_tokens[i] < 0 || prompt_tokens[i] >= model.vocab_size) {
      return ApiError::invalid(fmt::format("prompt[{}]", i), fmt::format("token id {} is outside the vocabulary "
                                                                         "[0, {})", prompt_tokens[i], model.vocab_size));
    }
  }
  for (const auto& [token, bias] : options.sampling.logit_bias) {
    if (token >= model.vocab_size) {
      return ApiError::invalid("logit_bias", fmt::format("'logit_bias' token id {} is outside the vocabulary [0, {})",
                                                         token, model.vocab_size));
    }
  }
  const int64_t prompt_len = static_cast<int64_t>(prompt_tokens.size());
  const int64_t wanted = prompt_len + options.max_tokens.value_or(0);
  const bool too_long = options.max_tokens ? wanted > model.context_length : prompt_len >= model.context_length;
  if (too_long) {
    ApiError e = ApiError::invalid(
        options.max_tokens ? "max_tokens" : "prompt",
        fmt::format("this model's maximum context length is {} tokens; the prompt has {} and max_tokens asks for {}",
                    model.context_length, prompt_len, options.max_tokens.value_or(0)),
        "context_length_exceeded");
    return e;
  }
  return std::nullopt;
}

std::optional<ApiError> check_text_can_fit(size_t text_bytes, size_t max_bytes_per_token, int64_t context_length,
                                           std::string_view param) {
  const uint64_t at_least = text_bytes / std::max<size_t>(1, max_bytes_per_token);
  if (at_least <= static_cast<uint64_t>(std::max<int64_t>(0, context_length))) return std::nullopt;
  return ApiError::invalid(std::string(param),
                           fmt::format("this model's maximum context length is {} tokens; the text is {} bytes, "
                                       "which is at least {} tokens",
                                       context_length, text_bytes, at_least),
                           "context_length_exceeded");
}

}  // namespace omnibus::server
