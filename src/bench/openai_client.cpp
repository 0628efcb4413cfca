#include "bench/openai_client.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/timer.h"
#include "bench/sse_parser.h"
#include "third_party/httplib_include.h"

namespace omnibus::bench {
namespace {

using Json = nlohmann::json;

// The message of an OpenAI-shaped error body, else the body itself (cut short).
std::string error_message(const std::string& body) {
  Json doc = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_object() && doc.contains("error")) {
    const Json& e = doc["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
    if (e.is_string()) return e.get<std::string>();
  }
  return body.size() > 200 ? body.substr(0, 200) + "..." : body;
}

// Output text of the first choice of a chunk or a whole response.
std::string choice_text(const Json& doc) {
  if (!doc.contains("choices") || !doc["choices"].is_array() || doc["choices"].empty()) return {};
  const Json& c = doc["choices"][0];
  for (const char* key : {"delta", "message"}) {
    if (c.contains(key) && c[key].is_object() && c[key].contains("content") && c[key]["content"].is_string()) {
      return c[key]["content"].get<std::string>();
    }
  }
  if (c.contains("text") && c["text"].is_string()) return c["text"].get<std::string>();
  return {};
}

void read_usage(const Json& doc, RequestRecord& r) {
  if (!doc.contains("usage") || !doc["usage"].is_object()) return;
  const Json& u = doc["usage"];
  if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer()) {
    r.input_tokens = u["prompt_tokens"].get<int64_t>();
  }
  if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
    r.output_tokens = u["completion_tokens"].get<int64_t>();
    r.usage_from_server = true;
  }
}

}  // namespace

Result<ServerUrl> parse_server_url(std::string_view url) {
  std::string s(url);
  while (!s.empty() && s.back() == '/') s.pop_back();
  if (s.ends_with("/v1")) s.resize(s.size() - 3);
  if (!(s.starts_with("http://") || s.starts_with("https://"))) {
    return Status::invalid_argument(fmt::format("--url '{}' must start with http:// or https://", url));
  }
  const size_t host_start = s.find("://") + 3;
  if (s.find('/', host_start) != std::string::npos) {
    return Status::invalid_argument(fmt::format("--url '{}': give the server's root (optionally ending in /v1)", url));
  }
  if (host_start == s.size()) return Status::invalid_argument(fmt::format("--url '{}' has no host", url));
  return ServerUrl{s};
}

OpenAiClient::OpenAiClient(const ClientOptions& options)
    : options_(options), http_(std::make_unique<httplib::Client>(options.url.origin)) {
  http_->set_keep_alive(true);
  const auto seconds = static_cast<time_t>(options.timeout_s);
  http_->set_read_timeout(seconds, 0);
  http_->set_write_timeout(seconds, 0);
  http_->set_connection_timeout(10, 0);
  if (!options.api_key.empty()) http_->set_bearer_token_auth(options.api_key.c_str());
}

OpenAiClient::~OpenAiClient() = default;

std::string OpenAiClient::completion_prompt(const std::vector<Message>& messages) {
  std::string prompt;
  for (const Message& m : messages) {
    if (!prompt.empty()) prompt += "\n\n";
    prompt += m.content;
  }
  return prompt;
}

std::string OpenAiClient::request_body(const std::vector<Message>& messages, int64_t max_tokens) const {
  Json body = {{"model", options_.model}, {"max_tokens", max_tokens}, {"temperature", options_.temperature},
               {"stream", options_.stream}};
  if (options_.stream) body["stream_options"] = {{"include_usage", true}};
  if (options_.ignore_eos) body["ignore_eos"] = true;
  if (options_.api == Api::kChat) {
    Json list = Json::array();
    for (const Message& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
    body["messages"] = std::move(list);
  } else {
    body["prompt"] = completion_prompt(messages);
  }
  return body.dump();
}

void OpenAiClient::send(const std::vector<Message>& messages, int64_t max_tokens, double epoch, RequestRecord& r) {
  const std::string path = options_.api == Api::kChat ? "/v1/chat/completions" : "/v1/completions";
  const std::string body = request_body(messages, max_tokens);
  std::string error_body;  // a non-200 response's body, or a mid-stream error event
  int chunks_with_text = 0;
  bool stream_error = false;
  SseParser sse([&](const std::string& data) {
    const double t = now_seconds() - epoch;
    if (data == "[DONE]") return;
    Json doc = Json::parse(data, nullptr, false);
    if (!doc.is_object()) return;
    if (doc.contains("error")) {
      stream_error = true;
      error_body = data;
      return;
    }
    std::string text = choice_text(doc);
    if (!text.empty()) {
      if (r.first_token_s < 0) r.first_token_s = t;
      r.chunk_s.push_back(t);
      r.output_text += text;
      ++chunks_with_text;
    }
    read_usage(doc, r);
  });

  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  if (options_.stream) req.set_header("Accept", "text/event-stream");
  std::string plain_body;
  int status = 0;
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status == 200 && options_.stream) {
      sse.feed(std::string_view(data, n));
    } else {
      plain_body.append(data, n);
    }
    return true;
  };
  r.sent_s = now_seconds() - epoch;
  httplib::Result res = http_->send(req);
  r.done_s = now_seconds() - epoch;
  if (!res) {
    r.ok = false;
    r.error = fmt::format("request failed: {}", httplib::to_string(res.error()));
    return;
  }
  r.http_status = res->status;
  if (res->status != 200) {
    r.ok = false;
    r.error = fmt::format("HTTP {}: {}", res->status, error_message(plain_body));
    return;
  }
  if (options_.stream) {
    sse.finish();
    if (stream_error) {
      r.ok = false;
      r.error = fmt::format("error event mid-stream: {}", error_message(error_body));
      return;
    }
    if (!r.usage_from_server) r.output_tokens = chunks_with_text;
  } else {
    Json doc = Json::parse(plain_body, nullptr, false);
    if (!doc.is_object()) {
      r.ok = false;
      r.error = "response is not a JSON object";
      return;
    }
    r.output_text = choice_text(doc);
    read_usage(doc, r);
    r.first_token_s = r.done_s;  // no stream: the first token arrives with the last
    r.chunk_s = {r.done_s};
  }
  r.ok = true;
}

Result<std::vector<std::string>> OpenAiClient::list_models() {
  httplib::Result res = http_->Get("/v1/models");
  if (!res) return Status::io_error(fmt::format("GET {}/v1/models: {}", options_.url.origin, httplib::to_string(res.error())));
  if (res->status != 200) {
    return Status::invalid_argument(fmt::format("GET /v1/models: HTTP {}: {}", res->status, error_message(res->body)));
  }
  Json doc = Json::parse(res->body, nullptr, false);
  std::vector<std::string> ids;
  if (doc.is_object() && doc.contains("data") && doc["data"].is_array()) {
    for (const Json& m : doc["data"])
      if (m.is_object() && m.contains("id") && m["id"].is_string()) ids.push_back(m["id"].get<std::string>());
  }
  if (ids.empty()) return Status::not_found("the server lists no models at /v1/models");
  return ids;
}

Result<int64_t> OpenAiClient::count_tokens(const std::string& text) {
  // llama-server and omnibus take {"content"}; vLLM takes {"prompt"} (and a model).
  const Json bodies[] = {{{"content", text}, {"add_special", false}},
                         {{"prompt", text}, {"model", options_.model}, {"add_special_tokens", false}}};
  for (const Json& body : bodies) {
    httplib::Result res = http_->Post("/tokenize", body.dump(), "application/json");
    if (!res) return Status::io_error(fmt::format("POST /tokenize: {}", httplib::to_string(res.error())));
    if (res->status != 200) continue;
    Json doc = Json::parse(res->body, nullptr, false);
    if (doc.is_object() && doc.contains("count") && doc["count"].is_number_integer()) return doc["count"].get<int64_t>();
    if (doc.is_object() && doc.contains("tokens") && doc["tokens"].is_array()) {
      return static_cast<int64_t>(doc["tokens"].size());
    }
  }
  return Status::unsupported("the server has no usable /tokenize route");
}

}  // namespace omnibus::bench
