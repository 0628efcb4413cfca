// HttpServer: the OpenAI-compatible HTTP front of an InferenceService.
//
//   POST /v1/completions, POST /v1/chat/completions   (JSON or SSE streaming)
//   GET  /v1/models, GET /v1/models/{id}               (the one model)
//        (these four also without "/v1": /completions, /chat/completions,
//        /models, /models/{id}, for clients whose base URL lacks it)
//   GET  /health      200 {"status":"ok"} when the service is ready, else 503
//                     (loading or draining; every route but /health and
//                     /metrics is 503 until the service is loaded())
//   GET  /metrics     Prometheus text: the service's metrics + omnibus_http_*
//   POST /tokenize, POST /detokenize                   (llama-server's shapes)
//
// Every error is an OpenAI error body {"error": {message, type, param,
// code}}, including the transport's (unknown route 404, wrong method 405,
// malformed HTTP 400, deadline missed 408, body too large 413, too many
// connections 503). With an API key set, every request but those to
// /health needs "Authorization: Bearer <key>" (401 otherwise, whatever the
// method or path, before anything else is said), compared in constant
// time. 429 and 503 carry Retry-After. With CORS on (`cors`), browsers'
// preflights are answered 204 without the key, and responses carry the
// CORS headers (server/cors.h).
//
// The "model" field of a request may be empty, the model id, one of
// `model_aliases`, or a path ending in one of those (".gguf" optional);
// anything else is 404 model_not_found.
//
// Threads: serve() runs the connection loop on the calling thread: it
// accepts and reads every connection without blocking, under whole-request
// deadlines and a connection cap (server/connection_loop.h), and hands
// whole requests to `http_threads` worker threads; each streaming response
// holds one worker until it ends, so http_threads bounds concurrent
// handlers (not connections: idle and slow ones hold no thread).
// bind(), serve() are called once, in that order, from one thread; stop()
// may be called from any thread (a signal handler must not call it
// directly: it takes locks). The service must outlive the server.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/inference_service.h"
#include "server/cors.h"
#include "server/openai_request.h"

namespace omnibus::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (see port())
  std::string api_key;  // empty: no authentication
  CorsPolicy cors;      // off by default: no CORS headers, OPTIONS as any other method
  ApiLimits limits;
  // Worker threads; must exceed the number of concurrent streams expected.
  int http_threads = 128;
  // Open connections beyond this get 503 and are closed.
  int max_connections = 4096;
  // Request bytes held at once, from arrival until the handler is done
  // (at least two of the largest bodies allowed); a request that would
  // pass it gets 503. Bounds what many large bodies cost together.
  size_t max_buffered_request_bytes = size_t{128} << 20;
  // Whole-request deadlines (408 when missed), the idle keep-alive
  // timeout, and how long a write may wait for a client that reads nothing.
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds idle_timeout{15'000};
  std::chrono::milliseconds write_timeout{30'000};
  int retry_after_seconds = 1;  // the Retry-After of 429 and 503 answers
  // More names a request's "model" may use (e.g. the model file's name).
  std::vector<std::string> model_aliases;
  // POST /v1/kv/import (K/V handed over by a prefill instance;
  // docs/plan-disaggregation.md) is off unless asked for: imported K/V
  // enters the prefix cache as it comes, so it trusts whoever can reach the
  // server. When on, an import with the key may send up to
  // max_kv_import_bytes; larger bodies on other routes (or without the
  // key) are refused from their headers before they are read.
  bool allow_kv_import = false;
  size_t max_kv_import_bytes = size_t{64} << 20;
};

class HttpServer {
 public:
  HttpServer(InferenceService& service, HttpServerOptions options);
  ~HttpServer();  // stops serving (waits for serve() to return)
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Opens the listening socket. Error (naming host:port) if it cannot.
  Status bind();
  // The bound port (the chosen one when options.port was 0); 0 before bind().
  int port() const;
  // Serves until stop(). Returns at once if stop() came first.
  void serve();
  // Stops the accept loop and ends open streams; serve() returns once the
  // worker threads are done. Thread-safe, idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace omnibus::server
