// Internals of HttpServer shared by its .cpp files (http_server.cpp: setup,
// routing, errors, the small routes; generation_route.cpp: the completion
// endpoints; kv_routes.cpp: the KV handover). Not part of the server's interface.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/inference_service.h"
#include "server/api_error.h"
#include "server/api_key.h"
#include "server/generation_request.h"
#include "server/http_metrics.h"
#include "server/http_server.h"
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
};

// httplib::Server with a listen backlog fit for bursts of connections: the
// library build listens with a backlog of 5, and a burst of clients beyond
// that is dropped or reset by the kernel (with SYN cookies, after the
// client thinks it is connected). listen() again on the bound socket only
// changes the backlog.
class ListeningServer : public httplib::Server {
 public:
  bool raise_backlog(int backlog);
};

using RouteHandler = std::function<void(RequestLog&, const httplib::Request&, httplib::Response&)>;

struct HttpServer::Impl {
  Impl(InferenceService& service, HttpServerOptions options);

  void install_routes();
  // Wraps a route: request log, authentication, exceptions → 500.
  httplib::Server::Handler route(RouteHandler handler, bool needs_auth);
  httplib::Server::HandlerResponse on_http_error(const httplib::Request& req, httplib::Response& res);

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
  // Answers `error` from the headers alone, closing the connection (its
  // body is never read), and logs the request.
  void refuse_unread(const httplib::Request& req, httplib::Response& res, const ApiError& error);
  // The log line and metrics of a request answered outside route().
  void log_unrouted(const httplib::Request& req, const httplib::Response& res);

  InferenceService& service;
  const HttpServerOptions options;
  const ApiKeyCheck api_key;
  HttpMetrics metrics;
  ListeningServer http;
  const int64_t started_unix;
  const uint64_t salt;  // random per server: ids and default seeds differ between runs
  std::atomic<uint64_t> request_counter{0};
  std::atomic<int> bound_port{0};
  std::atomic<bool> stopping{false};
  std::atomic<bool> serving{false};
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
