// Internals of HttpServer shared by its .cpp files (http_server.cpp: setup,
// routing, errors, the small routes; generation_route.cpp: the completion
// endpoints; kv_routes.cpp: the KV handover). Not part of the server's interface.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/inference_service.h"
#include "server/api_error.h"
#include "server/api_key.h"
#include "server/generation_request.h"
#include "server/http_metrics.h"
#include "server/connection_loop.h"
#include "server/http_server.h"
#include "server/worker_pool.h"
#include "third_party/httplib_include.h"

namespace omnibus::server {

class GenerationSession;

// What the one log line of a request says. Filled by the handler; written
// when the response is complete (at once, or when a stream ends).
struct RequestLog {
  using Clock = std::chrono::steady_clock;
  std::string id;
  std::string method;
  std::string path;
  Clock::time_point arrival = Clock::now();
  uint64_t entropy = 0;  // per request: response id and default seed
  int status = 0;
  int64_t prompt_tokens = -1;
  int64_t completion_tokens = -1;
  double ttft_ms = -1;
  bool streaming = false;    // the stream's end writes the log line
  std::string outcome;       // e.g. "client gone"; empty when nothing to add
  // True once the client's connection is reset or broken (not merely
  // half-closed: such a client is still owed its answer). May be empty.
  std::function<bool()> client_gone;
};

using RouteHandler = std::function<void(RequestLog&, const httplib::Request&, httplib::Response&)>;

struct HttpServer::Impl {
  Impl(InferenceService& service, HttpServerOptions options);

  struct Route {
    std::string method;
    std::string path;     // exact, or a prefix when `prefix`
    bool prefix = false;  // "/v1/models/" + an id
    // Also answers at `path` without its leading "/v1" (OpenAI clients
    // given a base URL without it send "/chat/completions").
    bool unversioned = false;
    RouteHandler handler;
  };
  void install_routes();
  const Route* find_route(const std::string& path) const;
  // A CORS preflight: 204 with the CORS headers; needs no API key.
  void answer_preflight(const httplib::Request& req, httplib::Response& res);
  // The CORS headers of a response to a request from `origin` (none when CORS is off).
  void add_cors_headers(httplib::Response& res, std::string_view origin) const;
  // A whole request from the connection loop, on a worker thread: routed,
  // answered, and the connection handed back for keep-alive or closed.
  void handle_connection(std::unique_ptr<Connection> connection, ParsedHttpRequest parsed);
  // Routes `req` into `res`: the log line, authentication first (every
  // path but /health), 404/405, 503 while loading, exceptions → 500.
  void respond(const httplib::Request& req, httplib::Response& res, std::function<bool()> client_gone = {});
  // The loop's checks and refusals (see ConnectionLoop::Handlers).
  std::optional<std::string> check_head(const ParsedHttpRequest& head);
  std::string refusal(int status, const std::string& message, const ParsedHttpRequest* head);

  // Sets an OpenAI error response. `rejected`: the HTTP layer refused the
  // request (counted by the service); false for engine failures.
  void send_error(httplib::Response& res, const ApiError& error, bool rejected = true);
  // A 500 for an exception that escaped a route.
  void answer_internal_error(httplib::Response& res, RequestLog& log);
  // Metrics and the log line.
  void finish(RequestLog& log);

  void handle_generation(RequestLog& log, const httplib::Request& req, httplib::Response& res, bool chat);
  // Hands `res` to an SSE provider that pumps `session` until [DONE], the
  // client hangs up or the server stops. The callbacks own the session,
  // the log entry and `open_guard`; the releaser (run when httplib drops
  // the response, however the stream ended) cancels what is left and
  // writes the log line.
  void start_stream(std::shared_ptr<RequestLog> log, std::shared_ptr<GenerationSession> session,
                    std::shared_ptr<void> open_guard, httplib::Response& res);
  void handle_models(const httplib::Request& req, httplib::Response& res);
  void handle_model(RequestLog& log, const httplib::Request& req, httplib::Response& res);
  void handle_health(httplib::Response& res);
  void handle_metrics(httplib::Response& res);
  void handle_tokenize(const httplib::Request& req, httplib::Response& res, bool detokenize);
  // kv_routes.cpp: disaggregated prefill and decode.
  void handle_kv_export(RequestLog& log, const httplib::Request& req, httplib::Response& res);
  void handle_kv_import(RequestLog& log, const httplib::Request& req, httplib::Response& res);
  // The most body bytes the HTTP library reads on any route.
  size_t body_limit() const;
  // The log line and metrics of a request answered outside respond().
  void log_unrouted(const std::string& method, const std::string& path, int status);

  InferenceService& service;
  const HttpServerOptions options;
  const ApiKeyCheck api_key;
  HttpMetrics metrics;
  std::vector<Route> routes;
  ConnectionLoop loop;
  std::unique_ptr<WorkerPool> workers;  // while serve() runs
  const int64_t started_unix;
  const uint64_t salt;  // random per server: ids and default seeds differ between runs
  std::atomic<uint64_t> request_counter{0};
  std::atomic<int> bound_port{0};
  std::atomic<bool> stopping{false};
  std::atomic<bool> serving{false};
  std::atomic<int> busy_workers{0};
  // Completion requests being handled (streams included); stop() lets them
  // end themselves (an error event, a 503) before closing the sockets.
  std::atomic<int> open_generations{0};
};

// A well-mixed 64-bit value from `x` (splitmix64's finaliser).
uint64_t mix64(uint64_t x);

ApiError service_unavailable(const std::string& message);
// An OpenAI-shaped error with this HTTP status, type, message and code.
ApiError http_error(int status, std::string type, std::string message, std::string code);

// A completion (chat: a chat completion) body parsed, its model name
// checked and its prompt tokenized against `service` (generation_route.cpp).
ApiResult<PreparedGeneration> parse_and_prepare(const httplib::Request& req, bool chat, const InferenceService& service,
                                                const HttpServerOptions& options, uint64_t fallback_seed);

}  // namespace omnibus::server
