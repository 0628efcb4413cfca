// A client for any OpenAI-compatible server, instrumented for benchmarks:
// sends one completion or chat request (streamed by default) and records
// when each chunk of output arrived. Not thread-safe: one client per thread
// (each holds its own keep-alive connection).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bench/request_record.h"

namespace httplib {
class Client;
}

namespace omnibus::bench {

// "http://host:port" with an optional trailing "/v1" (dropped: routes are
// /v1/... on the server root). https works too.
struct ServerUrl {
  std::string origin;  // "http://127.0.0.1:8080"
};
Result<ServerUrl> parse_server_url(std::string_view url);

enum class Api { kChat, kCompletions };

struct Message {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

struct ClientOptions {
  ServerUrl url;
  std::string api_key;  // empty: no Authorization header
  std::string model;
  Api api = Api::kChat;
  bool stream = true;
  bool ignore_eos = false;  // sent only when true (an extension, not OpenAI's)
  double temperature = 0;
  double timeout_s = 600;
};

class OpenAiClient {
 public:
  explicit OpenAiClient(const ClientOptions& options);
  ~OpenAiClient();
  OpenAiClient(const OpenAiClient&) = delete;
  OpenAiClient& operator=(const OpenAiClient&) = delete;

  // Sends `messages` (chat) or their contents joined by blank lines
  // (completions), asking for `max_tokens`, and fills `r`'s timings (seconds
  // since `epoch`, a now_seconds() reading), token counts, status and text.
  // `r.input_tokens` is kept when the server reports no usage.
  void send(const std::vector<Message>& messages, int64_t max_tokens, double epoch, RequestRecord& r);

  // The ids /v1/models lists.
  Result<std::vector<std::string>> list_models();
  // Token count of `text` from the server's /tokenize (llama-server's
  // {"content"} or vLLM's {"prompt"} shape); an error if it has none.
  Result<int64_t> count_tokens(const std::string& text);

  // The prompt `send` uses on the completions API.
  static std::string completion_prompt(const std::vector<Message>& messages);

 private:
  std::string request_body(const std::vector<Message>& messages, int64_t max_tokens) const;

  ClientOptions options_;
  std::unique_ptr<httplib::Client> http_;
};

}  // namespace omnibus::bench
