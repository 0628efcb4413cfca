#include "server/openai_response.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace omnibus::server {
namespace {

using Json = nlohmann::json;

double finite_logprob(float logprob) {
  if (std::isnan(logprob) || logprob < kMinLogprob) return kMinLogprob;
  return static_cast<double>(logprob);
}

// Bad UTF-8 (a token cut mid character) becomes U+FFFD instead of a throw.
std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json null_if_empty(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

Json byte_list(const std::string& s) {
  Json bytes = Json::array();
  for (unsigned char c : s) bytes.push_back(static_cast<int>(c));
  return bytes;
}

// Completions shape: parallel arrays plus one {text: logprob} map per token.
Json completion_logprobs(const std::optional<std::vector<GeneratedTokenLogprobs>>& lps) {
  if (!lps) return nullptr;
  Json tokens = Json::array(), token_logprobs = Json::array(), top = Json::array(), offsets = Json::array();
  for (const GeneratedTokenLogprobs& t : *lps) {
    tokens.push_back(t.chosen.token);
    token_logprobs.push_back(finite_logprob(t.chosen.logprob));
    Json alternatives = Json::object();
    for (const TokenLogprobText& alt : t.top) alternatives[alt.token] = finite_logprob(alt.logprob);
    top.push_back(std::move(alternatives));
    offsets.push_back(t.text_offset);
  }
  return Json{{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

Json chat_token(const TokenLogprobText& t) {
  return Json{{"token", t.token}, {"logprob", finite_logprob(t.logprob)}, {"bytes", byte_list(t.token)}};
}

// Chat shape: {"content": [{token, logprob, bytes, top_logprobs: [...]}]}.
Json chat_logprobs(const std::optional<std::vector<GeneratedTokenLogprobs>>& lps) {
  if (!lps) return nullptr;
  Json content = Json::array();
  for (const GeneratedTokenLogprobs& t : *lps) {
    Json entry = chat_token(t.chosen);
    Json top = Json::array();
    for (const TokenLogprobText& alt : t.top) top.push_back(chat_token(alt));
    entry["top_logprobs"] = std::move(top);
    content.push_back(std::move(entry));
  }
  return Json{{"content", content}, {"refusal", nullptr}};
}

Json usage_json(const Usage& u) {
  return Json{{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens},
              {"prompt_tokens_details", Json{{"cached_tokens", u.cached_tokens}}}};
}

Json envelope(const ResponseMeta& meta, const char* object) {
  return Json{{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model},
              {"system_fingerprint", nullptr}};
}

Json completion_choice(const ChoiceOutput& c) {
  return Json{{"index", c.index}, {"text", c.text}, {"logprobs", completion_logprobs(c.logprobs)},
              {"finish_reason", null_if_empty(c.finish_reason)}};
}

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// OpenAI's tool call objects; `first_index` set: with the "index" a
// streamed delta carries.
Json tool_calls_json(const std::vector<ToolCall>& calls, std::optional<int32_t> first_index) {
  Json list = Json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    Json call{{"id", calls[k].id},
              {"type", "function"},
              {"function", {{"name", calls[k].name}, {"arguments", calls[k].arguments}}}};
    if (first_index) call["index"] = *first_index + static_cast<int32_t>(k);
    list.push_back(std::move(call));
  }
  return list;
}

}  // namespace

std::string make_response_id(const std::string& prefix, uint64_t entropy) {
  return fmt::format("{}-{:016x}{:08x}", prefix, mix64(entropy), mix64(entropy ^ 0x5bd1e995ull) >> 32);
}

std::string build_completion_response(const ResponseMeta& meta, std::span<const ChoiceOutput> choices,
                                      const Usage& usage) {
  Json j = envelope(meta, "text_completion");
  Json list = Json::array();
  for (const ChoiceOutput& c : choices) list.push_back(completion_choice(c));
  j["choices"] = std::move(list);
  j["usage"] = usage_json(usage);
  return dump(j);
}

std::string build_chat_response(const ResponseMeta& meta, std::span<const ChoiceOutput> choices, const Usage& usage) {
  Json j = envelope(meta, "chat.completion");
  Json list = Json::array();
  for (const ChoiceOutput& c : choices) {
    Json message{{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
    if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;
    if (!c.tool_calls.empty()) {
      if (c.text.empty()) message["content"] = nullptr;
      message["tool_calls"] = tool_calls_json(c.tool_calls, std::nullopt);
    }
    list.push_back(Json{{"index", c.index},
                        {"message", std::move(message)},
                        {"logprobs", chat_logprobs(c.logprobs)},
                        {"finish_reason", null_if_empty(c.finish_reason)}});
  }
  j["choices"] = std::move(list);
  j["usage"] = usage_json(usage);
  return dump(j);
}

std::string build_completion_chunk(const ResponseMeta& meta, const ChoiceOutput& delta) {
  Json j = envelope(meta, "text_completion");
  j["choices"] = Json::array({completion_choice(delta)});
  if (meta.include_usage) j["usage"] = nullptr;
  return dump(j);
}

std::string build_chat_chunk(const ResponseMeta& meta, const ChoiceOutput& delta, bool role_chunk) {
  Json j = envelope(meta, "chat.completion.chunk");
  Json d = Json::object();
  if (role_chunk) {
    d["role"] = "assistant";
    d["content"] = "";
  }
  if (!delta.reasoning.empty()) d["reasoning_content"] = delta.reasoning;
  if (!delta.text.empty()) d["content"] = delta.text;
  if (!delta.tool_calls.empty()) d["tool_calls"] = tool_calls_json(delta.tool_calls, delta.first_tool_call);
  j["choices"] = Json::array({Json{{"index", delta.index},
                                   {"delta", std::move(d)},
                                   {"logprobs", chat_logprobs(delta.logprobs)},
                                   {"finish_reason", null_if_empty(delta.finish_reason)}}});
  if (meta.include_usage) j["usage"] = nullptr;
  return dump(j);
}

std::string build_usage_chunk(const ResponseMeta& meta, const Usage& usage, bool chat) {
  Json j = envelope(meta, chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = Json::array();
  j["usage"] = usage_json(usage);
  return dump(j);
}

std::string build_error_body(const ApiError& error) {
  Json e{{"message", error.message},
         {"type", error.type},
         {"param", null_if_empty(error.param)},
         {"code", null_if_empty(error.code)}};
  return dump(Json{{"error", std::move(e)}});
}

std::string format_sse(const std::string& json) { return "data: " + json + "\n\n"; }

std::string sse_done() { return "data: [DONE]\n\n"; }

std::string format_sse_error(const ApiError& error) { return format_sse(build_error_body(error)); }

}  // namespace omnibus::server
