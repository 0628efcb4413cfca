#include "server/unsupported_fields.h"

#include <fmt/format.h>

namespace omnibus::server {
namespace {

// Values that ask for nothing (null is always neutral: has_field skips it).
bool is_false(const Json& v) { return v.is_boolean() && !v.get<bool>(); }
bool is_true(const Json& v) { return v.is_boolean() && v.get<bool>(); }
bool is_empty(const Json& v) { return (v.is_array() || v.is_object() || v.is_string()) && v.empty(); }
bool is_empty_string(const Json& v) { return v.is_string() && v.get<std::string>().empty(); }
bool is_none(const Json& v) { return v.is_string() && v.get<std::string>() == "none"; }
bool is_zero(const Json& v) { return v.is_number() && v.get<double>() == 0.0; }
bool is_one(const Json& v) { return v.is_number() && v.get<double>() == 1.0; }
bool never(const Json&) { return false; }
bool text_modality(const Json& v) { return v.is_array() && v.size() == 1 && v[0] == "text"; }

struct RefusedField {
  const char* name;
  bool (*neutral)(const Json&);  // a value that changes nothing
  const char* what;              // what the server would have to do and does not
};

// Both endpoints: a field meant for the other one is as ignored as an
// unknown one would be, and no less misleading.
constexpr RefusedField kRefused[] = {
    // OpenAI.
    {"functions", is_empty, "function calling is not implemented"},
    {"function_call", is_none, "function calling is not implemented; only \"none\" is accepted"},
    {"suffix", is_empty_string, "insertion (text after the completion) is not implemented"},
    {"audio", never, "audio output is not implemented"},
    {"modalities", text_modality, "only text output is implemented; only [\"text\"] is accepted"},
    {"verbosity", never, "answer verbosity control is not implemented"},
    {"web_search_options", never, "web search is not implemented"},
    // Extensions of other servers that change the answer.
    {"min_tokens", is_zero, "a minimum output length is not implemented"},
    {"stop_token_ids", is_empty, "stopping on token ids is not implemented; use 'stop' strings"},
    {"include_stop_str_in_output", is_false, "stop strings are always left out of the text"},
    {"skip_special_tokens", is_true, "special tokens are always left out of the text"},
    {"use_beam_search", is_false, "beam search is not implemented"},
    // Structured output's other forms (structured_output.h takes
    // response_format, grammar, json_schema, guided_json, guided_grammar
    // and guided_choice).
    {"guided_regex", never, "regular-expression guided decoding is not implemented"},
    {"structured_outputs", never,
     "vLLM's structured_outputs object is not implemented; use response_format, guided_json, guided_choice or "
     "grammar"},
    {"allowed_token_ids", never, "restricting the vocabulary is not implemented; use 'logit_bias'"},
    {"bad_words", is_empty, "banned words are not implemented; use 'logit_bias'"},
    {"prompt_logprobs", never, "the prompt's logprobs are not computed"},
    {"typical_p", is_one, "typical sampling is not implemented"},
    {"mirostat", is_zero, "mirostat sampling is not implemented"},
    {"n_predict", never, "use 'max_tokens'"},
    {"n_probs", is_zero, "use 'logprobs'"},
    {"truncate_prompt_tokens", never, "prompts are never truncated (a prompt over the context is a 400)"},
    {"chat_template", never, "the chat template is chosen at start (--chat-template)"},
    {"add_generation_prompt", is_true, "the assistant turn is always opened"},
    {"continue_final_message", is_false, "the assistant turn is always opened"},
};

}  // namespace

ApiError unsupported_field(const std::string& param, const std::string& what) {
  return ApiError::invalid(param,
                           fmt::format("'{}' is not supported by this server: {}. It would change the answer, "
                                       "so the request is refused rather than answered without it",
                                       param, what),
                           "unsupported_parameter");
}

std::optional<ApiError> check_unsupported_fields(const Json& body, bool is_chat, int32_t n) {
  for (const RefusedField& f : kRefused) {
    if (has_field(body, f.name) && !f.neutral(body.at(f.name))) return unsupported_field(f.name, f.what);
  }
  if (!is_chat && has_field(body, "chat_template_kwargs") && !is_empty(body.at("chat_template_kwargs"))) {
    return unsupported_field("chat_template_kwargs", "a completion's prompt goes through no chat template");
  }
  if (!is_chat && has_field(body, "tools") && !is_empty(body.at("tools"))) {
    return unsupported_field("tools", "tool calling is for /v1/chat/completions");
  }
  if (!is_chat && has_field(body, "tool_choice") && !is_none(body.at("tool_choice"))) {
    return unsupported_field("tool_choice", "tool calling is for /v1/chat/completions; only \"none\" is accepted");
  }
  if (!is_chat && has_field(body, "reasoning_effort")) {
    return unsupported_field("reasoning_effort", "a completion's prompt goes through no chat template");
  }
  if (is_chat && has_field(body, "echo") && !is_false(body.at("echo"))) {
    return unsupported_field("echo", "echoing the prompt is for /v1/completions");
  }
  if (has_field(body, "best_of")) {
    int64_t best_of = 1;
    if (auto e = read_int(body, "best_of", 1, 1 << 20, best_of)) return e;
    if (best_of < n) {
      return ApiError::invalid("best_of", fmt::format("'best_of' ({}) must be at least 'n' ({})", best_of, n));
    }
    if (best_of > n) {
      return unsupported_field("best_of",
                               fmt::format("generating {} candidates to return the best {} is not implemented; "
                                           "'best_of' equal to 'n' is accepted",
                                           best_of, n));
    }
  }
  return std::nullopt;
}

std::optional<ApiError> check_unsupported_message_fields(const Json& message, const std::string& param) {
  if (has_field(message, "function_call")) {
    return unsupported_field(param + ".function_call", "function calling is not implemented");
  }
  if (has_field(message, "audio")) return unsupported_field(param + ".audio", "audio is not implemented");
  return std::nullopt;
}

}  // namespace omnibus::server
