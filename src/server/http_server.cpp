#include "server/http_server.h"

#include <sys/socket.h>

#include <cstdlib>
#include <ctime>
#include <map>
#include <random>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/log.h"
#include "server/generation_request.h"
#include "server/http_server_impl.h"
#include "server/openai_response.h"
#include "server/token_routes.h"

namespace omnibus::server {

ApiError http_error(int status, std::string type, std::string message, std::string code) {
  ApiError e;
  e.http_status = status;
  e.type = std::move(type);
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}

namespace {

using httplib::Request;
using httplib::Response;
using Json = nlohmann::json;

constexpr const char* kJson = "application/json";
constexpr int kListenBacklog = 1024;

// Each route's path and method, for telling "wrong method" (405) from "no
// such route" (404).
const std::map<std::string, std::string>& route_methods() {
  static const std::map<std::string, std::string> routes = {
      {"/v1/completions", "POST"}, {"/v1/chat/completions", "POST"}, {"/v1/models", "GET"}, {"/health", "GET"},
      {"/metrics", "GET"},         {"/tokenize", "POST"},            {"/detokenize", "POST"},
      {"/v1/kv/export", "POST"},   {"/v1/kv/import", "POST"}};
  return routes;
}

uint64_t random_salt() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string format_metric(int64_t v) { return v < 0 ? std::string("-") : std::to_string(v); }
std::string format_ms(double v) { return v < 0 ? std::string("-") : fmt::format("{:.1f}", v); }

ApiError body_too_large(size_t limit, const char* hint = "") {
  return http_error(413, "invalid_request_error",
                    fmt::format("the request body is larger than the limit of {} bytes{}", limit, hint),
                    "request_too_large");
}

ApiError unauthorized() {
  return http_error(401, "invalid_request_error",
                    "missing or invalid API key: send the header 'Authorization: Bearer <key>'", "invalid_api_key");
}

}  // namespace

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool ListeningServer::raise_backlog(int backlog) {
  const socket_t sock = svr_sock_.load();
  return sock != INVALID_SOCKET && ::listen(sock, backlog) == 0;
}

ApiError service_unavailable(const std::string& message) {
  return http_error(503, "service_unavailable_error", message, "service_unavailable");
}

HttpServer::Impl::Impl(InferenceService& service_in, HttpServerOptions options_in)
    : service(service_in),
      options(std::move(options_in)),
      api_key(options.api_key),
      started_unix(static_cast<int64_t>(std::time(nullptr))),
      salt(random_salt()) {
  const size_t threads = static_cast<size_t>(std::max(1, options.http_threads));
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(body_limit());
  if (options.allow_kv_import) {
    // The raised limit is for /v1/kv/import with the key alone: any other
    // large body, and an import without the key, is refused from its
    // headers, before the library reads it (bodies without a length,
    // chunked ones, still get the raised limit).
    http.set_pre_routing_handler([this](const Request& req, Response& res) {
      const std::string length = req.get_header_value("Content-Length");
      if (length.empty() || std::strtoull(length.c_str(), nullptr, 10) <= options.limits.max_body_bytes)
        return httplib::Server::HandlerResponse::Unhandled;
      const bool import = req.path == "/v1/kv/import" && req.method == "POST";
      const bool allowed = api_key.allows(req.get_header_value("Authorization"));
      if (import && allowed) return httplib::Server::HandlerResponse::Unhandled;
      refuse_unread(req, res, !allowed ? unauthorized() : body_too_large(options.limits.max_body_bytes));
      return httplib::Server::HandlerResponse::Handled;
    });
  }
  // SSE chunks are small; Nagle plus delayed ACKs would hold each one back.
  http.set_tcp_nodelay(true);
  // The library's default also sets SO_REUSEPORT, which would let a second
  // server bind the same port and silently share its connections.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http.set_keep_alive_max_count(1000);
  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const Request& req, Response& res) { return on_http_error(req, res); }));
  http.set_exception_handler([this](const Request&, Response& res, std::exception_ptr) {
    send_error(res, http_error(500, "server_error", "internal error while handling the request", "internal_error"));
  });
  install_routes();
}

void HttpServer::Impl::install_routes() {
  http.Post("/v1/completions", route([this](RequestLog& log, const Request& req, Response& res) {
              handle_generation(log, req, res, /*chat=*/false);
            }, true));
  http.Post("/v1/chat/completions", route([this](RequestLog& log, const Request& req, Response& res) {
              handle_generation(log, req, res, /*chat=*/true);
            }, true));
  http.Get("/v1/models", route([this](RequestLog&, const Request& req, Response& res) { handle_models(req, res); },
                               true));
  http.Get("/v1/models/(.+)",
           route([this](RequestLog& log, const Request& req, Response& res) { handle_model(log, req, res); }, true));
  // Load balancers probe /health without credentials.
  http.Get("/health", route([this](RequestLog&, const Request&, Response& res) { handle_health(res); }, false));
  http.Get("/metrics", route([this](RequestLog&, const Request&, Response& res) { handle_metrics(res); }, true));
  http.Post("/tokenize", route([this](RequestLog&, const Request& req, Response& res) {
              handle_tokenize(req, res, /*detokenize=*/false);
            }, true));
  http.Post("/detokenize", route([this](RequestLog&, const Request& req, Response& res) {
              handle_tokenize(req, res, /*detokenize=*/true);
            }, true));
  http.Post("/v1/kv/export", route([this](RequestLog& log, const Request& req, Response& res) {
              handle_kv_export(log, req, res);
            }, true));
  http.Post("/v1/kv/import", route([this](RequestLog& log, const Request& req, Response& res) {
              handle_kv_import(log, req, res);
            }, true));
}

size_t HttpServer::Impl::body_limit() const {
  return options.allow_kv_import ? std::max(options.limits.max_body_bytes, options.max_kv_import_bytes)
                                 : options.limits.max_body_bytes;
}

httplib::Server::Handler HttpServer::Impl::route(RouteHandler handler, bool needs_auth) {
  return [this, handler = std::move(handler), needs_auth](const Request& req, Response& res) {
    RequestLog log;
    log.method = req.method;
    log.path = req.path;
    log.entropy = mix64(salt ^ request_counter.fetch_add(1, std::memory_order_relaxed));
    log.id = make_response_id("req", log.entropy);
    metrics.add_in_flight(1);
    try {
      if (needs_auth && !api_key.allows(req.get_header_value("Authorization"))) {
        send_error(res, unauthorized());
      } else if (!service.loaded() && req.path != "/health" && req.path != "/metrics") {
        // Every other route needs the tokenizer or the model.
        send_error(res, service_unavailable("the model is still loading; retry shortly"));
      } else {
        handler(log, req, res);
      }
    } catch (const std::exception& ex) {
      log_error("{} {} {}: unexpected exception: {}", log.id, log.method, log.path, ex.what());
      answer_internal_error(res, log);
    } catch (...) {
      log_error("{} {} {}: unexpected exception", log.id, log.method, log.path);
      answer_internal_error(res, log);
    }
    res.set_header("X-Request-Id", log.id);
    if (!log.streaming) {
      log.status = res.status < 0 ? 200 : res.status;
      finish(log);
    }
  };
}

void HttpServer::Impl::answer_internal_error(Response& res, RequestLog& log) {
  // A stream half set up must not start: drop its callbacks (the session's
  // destructor cancels its sequences), and log here instead.
  res.content_provider_ = nullptr;
  res.content_provider_resource_releaser_ = nullptr;
  res.is_chunked_content_provider_ = false;
  log.streaming = false;
  send_error(res, http_error(500, "server_error", "internal error while handling the request", "internal_error"));
}

void HttpServer::Impl::send_error(Response& res, const ApiError& error, bool rejected) {
  res.status = error.http_status;
  res.set_content(build_error_body(error), kJson);
  if (error.http_status == 429 || error.http_status == 503) {
    res.set_header("Retry-After", std::to_string(std::max(0, options.retry_after_seconds)));
  }
  if (error.http_status == 401) res.set_header("WWW-Authenticate", "Bearer");
  if (rejected) service.count_rejected_request();
}

void HttpServer::Impl::finish(RequestLog& log) {
  const double ms = std::chrono::duration<double, std::milli>(RequestLog::Clock::now() - log.arrival).count();
  metrics.add_in_flight(-1);
  metrics.response_sent(log.status, ms / 1000.0);
  log_info("{} {} {} {} prompt_tokens={} completion_tokens={} ttft_ms={} duration_ms={:.1f}{}{}", log.id, log.method,
           log.path, log.status, format_metric(log.prompt_tokens), format_metric(log.completion_tokens),
           format_ms(log.ttft_ms), ms, log.outcome.empty() ? "" : " ", log.outcome);
}

void HttpServer::Impl::refuse_unread(const Request& req, Response& res, const ApiError& error) {
  send_error(res, error);
  res.set_header("Connection", "close");  // the unread body must not be taken for the next request
  log_unrouted(req, res);
}

void HttpServer::Impl::log_unrouted(const Request& req, const Response& res) {
  RequestLog log;
  log.method = req.method;
  log.path = req.path;
  log.id = make_response_id("req", mix64(salt ^ request_counter.fetch_add(1, std::memory_order_relaxed)));
  log.status = res.status;
  metrics.add_in_flight(1);  // finish() counts it back down
  finish(log);
}

// Errors the HTTP library answers itself (no route, body too large, a
// request it could not parse) get an OpenAI error body too. A response a
// handler already filled is left alone.
httplib::Server::HandlerResponse HttpServer::Impl::on_http_error(const Request& req, Response& res) {
  if (!res.body.empty() || res.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
  ApiError e;
  const int status = res.status;
  const auto known = route_methods().find(req.path);
  if (status == 404 && known != route_methods().end()) {
    e = http_error(405, "invalid_request_error", fmt::format("{} is not allowed on {}", req.method, req.path),
                   "method_not_allowed");
  } else if (status == 404 && !api_key.allows(req.get_header_value("Authorization"))) {
    e = unauthorized();  // say nothing about which routes exist to a caller without the key
  } else if (status == 404) {
    e = http_error(404, "invalid_request_error", fmt::format("no route for {} {}", req.method, req.path),
                   "not_found");
  } else if (status == 413) {
    const char* hint = req.path != "/v1/kv/import" ? ""
                       : options.allow_kv_import  ? " (raise it with --kv-import-max-mib)"
                                                  : " (KV import is off: start the server with --kv-import)";
    e = body_too_large(body_limit(), hint);
  } else if (status >= 500) {
    e = http_error(status, "server_error", "internal error while handling the request", "internal_error");
  } else {
    e = http_error(status, "invalid_request_error", fmt::format("the HTTP request was refused ({})", status),
                   "bad_request");
  }
  send_error(res, e);
  if (e.http_status == 405) res.set_header("Allow", known->second);
  log_unrouted(req, res);
  return httplib::Server::HandlerResponse::Handled;
}

void HttpServer::Impl::handle_models(const Request&, Response& res) {
  const ServiceInfo info = service.info();
  Json model{{"id", info.model_id}, {"object", "model"}, {"created", started_unix}, {"owned_by", "omnibus"},
             {"max_model_len", info.context_length}};
  res.status = 200;
  res.set_content(dump(Json{{"object", "list"}, {"data", Json::array({model})}}), kJson);
}

void HttpServer::Impl::handle_model(RequestLog&, const Request& req, Response& res) {
  const ServiceInfo info = service.info();
  const std::string requested = req.matches.size() > 1 ? req.matches[1].str() : std::string();
  if (requested.empty()) return handle_models(req, res);
  if (std::optional<ApiError> e = check_model_name(requested, info.model_id, options.model_aliases)) {
    return send_error(res, *e);
  }
  res.status = 200;
  res.set_content(dump(Json{{"id", info.model_id}, {"object", "model"}, {"created", started_unix},
                            {"owned_by", "omnibus"}, {"max_model_len", info.context_length}}),
                  kJson);
}

void HttpServer::Impl::handle_health(Response& res) {
  if (!service.ready()) {
    // Not a refused request but a probe's answer: not counted as rejected.
    return send_error(res,
                      service_unavailable(service.loaded() ? "the server is draining" : "the model is still loading"),
                      false);
  }
  res.status = 200;
  res.set_content(R"({"status":"ok"})", kJson);
}

void HttpServer::Impl::handle_metrics(Response& res) {
  res.status = 200;
  res.set_content(service.metrics_text() + metrics.text(), "text/plain; version=0.0.4; charset=utf-8");
}

void HttpServer::Impl::handle_tokenize(const Request& req, Response& res, bool detokenize) {
  const Tokenizer& tokenizer = service.tokenizer();
  ApiResult<std::string> body = detokenize ? handle_detokenize(req.body, tokenizer, options.limits)
                                           : omnibus::server::handle_tokenize(req.body, tokenizer, options.limits);
  if (!body) return send_error(res, body.error());
  res.status = 200;
  res.set_content(body.value(), kJson);
}

HttpServer::HttpServer(InferenceService& service, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {}

HttpServer::~HttpServer() {
  stop();
  while (impl_->serving.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

Status HttpServer::bind() {
  const std::string& host = impl_->options.host;
  const int port = impl_->options.port;
  if (port < 0 || port > 65535) return Status::invalid_argument(fmt::format("port {} is not in 0..65535", port));
  const int bound = port == 0 ? impl_->http.bind_to_any_port(host) : (impl_->http.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return Status::io_error(fmt::format("cannot listen on {}:{} (the port is in use, or the address is not one of "
                                        "this machine's)", host, port));
  }
  if (!impl_->http.raise_backlog(kListenBacklog)) log_warn("could not raise the listen backlog to {}", kListenBacklog);
  impl_->bound_port.store(bound);
  return Status::ok();
}

int HttpServer::port() const { return impl_->bound_port.load(); }

void HttpServer::serve() {
  impl_->serving.store(true);
  if (!impl_->stopping.load() && impl_->bound_port.load() > 0) {
    log_info("listening on http://{}:{}", impl_->options.host, impl_->bound_port.load());
    impl_->http.listen_after_bind();
  }
  impl_->serving.store(false);
}

void HttpServer::stop() {
  impl_->stopping.store(true);
  // Open completion requests notice `stopping` within one poll and end
  // cleanly (a stream gets an error event and [DONE]); give them a moment.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (impl_->open_generations.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // serve() may be between its check of `stopping` and the library marking
  // itself running, when stop() would do nothing; wait that moment out.
  while (impl_->serving.load() && !impl_->http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->http.stop();
}

}  // namespace omnibus::server
