// HttpServer: the OpenAI-compatible HTTP front of an InferenceService.
//
//   POST /v1/completions, POST /v1/chat/completions   (JSON or SSE streaming)
//   GET  /v1/models, GET /v1/models/{id}               (the one model)
//   GET  /health      200 {"status":"ok"} when the service is ready, else 503
//                     (loading or draining; every route but /health and
//                     /metrics is 503 until the service is loaded())
//   GET  /metrics     Prometheus text: the service's metrics + omnibus_http_*
//   POST /tokenize, POST /detokenize                   (llama-server's shapes)
//
// Every error is an OpenAI error body {"error": {message, type, param,
// code}}, including the ones the HTTP library produces itself (unknown
// route 404, wrong method 405, body too large 413). With an API key set,
// every route but /health needs "Authorization: Bearer <key>" (401
// otherwise), compared in constant time. 429 and 503 carry Retry-After.
//
// The "model" field of a request may be empty, the model id, one of
// `model_aliases`, or a path ending in one of those (".gguf" optional);
// anything else is 404 model_not_found.
//
// Threads: serve() runs the accept loop on the calling thread and handles
// requests on `http_threads` worker threads; each streaming response holds
// one worker until it ends, so http_threads bounds concurrent streams.
// bind(), serve() are called once, in that order, from one thread; stop()
// may be called from any thread (a signal handler must not call it
// directly: it takes locks). The service must outlive the server.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/inference_service.h"
#include "server/openai_request.h"

namespace omnibus::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (see port())
  std::string api_key;  // empty: no authentication
  ApiLimits limits;
  // Worker threads; must exceed the number of concurrent streams expected.
  int http_threads = 128;
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
