#include "server/http_server.h"

#include <poll.h>
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
#include "engine/prometheus.h"
#include "server/generation_request.h"
#include "server/http_server_impl.h"
#include "server/openai_response.h"
#include "server/response_writer.h"
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
constexpr const char* kHealthPath = "/health";

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

ApiError service_unavailable(const std::string& message) {
  return http_error(503, "service_unavailable_error", message, "service_unavailable");
}

namespace {

ConnectionLimits connection_limits(const HttpServerOptions& options, size_t body_limit) {
  ConnectionLimits limits;
  limits.max_connections = static_cast<size_t>(std::max(1, options.max_connections));
  limits.header_timeout = options.header_timeout;
  limits.body_timeout = options.body_timeout;
  limits.idle_timeout = options.idle_timeout;
  limits.write_timeout = options.write_timeout;
  // Room for two of the largest bodies a route takes (a KV import blob).
  limits.max_buffered_bytes = std::max(options.max_buffered_request_bytes, 2 * body_limit);
  limits.parse.max_body_bytes = body_limit;
  return limits;
}

size_t body_limit_of(const HttpServerOptions& options) {
  return options.allow_kv_import ? std::max(options.limits.max_body_bytes, options.max_kv_import_bytes)
                                 : options.limits.max_body_bytes;
}

}  // namespace

HttpServer::Impl::Impl(InferenceService& service_in, HttpServerOptions options_in)
    : service(service_in),
      options(std::move(options_in)),
      api_key(options.api_key),
      loop(connection_limits(options, body_limit_of(options)),
           ConnectionLoop::Handlers{
               [this](std::unique_ptr<Connection> c, ParsedHttpRequest r) {
                 // A task must be copyable; the connection moves through a
                 // shared holder. The pool outlives the loop's run().
                 struct Held {
                   std::unique_ptr<Connection> connection;
                   ParsedHttpRequest request;
                 };
                 auto held = std::make_shared<Held>(Held{std::move(c), std::move(r)});
                 workers->post([this, held] { handle_connection(std::move(held->connection), std::move(held->request)); });
               },
               [this](const ParsedHttpRequest& head) { return check_head(head); },
               [this](int status, const std::string& message, const ParsedHttpRequest* head) {
                 return refusal(status, message, head);
               }}),
      started_unix(static_cast<int64_t>(std::time(nullptr))),
      salt(random_salt()) {
  install_routes();
}

void HttpServer::Impl::install_routes() {
  const auto add = [this](const char* method, const char* path, RouteHandler handler, bool prefix = false,
                          bool unversioned = false) {
    routes.push_back(Route{method, path, prefix, unversioned, std::move(handler)});
  };
  // OpenAI's routes, also without "/v1" (as vLLM and llama-server serve them).
  const auto add_openai = [&add](const char* method, const char* path, RouteHandler handler, bool prefix = false) {
    add(method, path, std::move(handler), prefix, /*unversioned=*/true);
  };
  add_openai("POST", "/v1/completions",
             [this](RequestLog& log, const Request& req, Response& res) { handle_generation(log, req, res, false); });
  add_openai("POST", "/v1/chat/completions",
             [this](RequestLog& log, const Request& req, Response& res) { handle_generation(log, req, res, true); });
  add_openai("GET", "/v1/models", [this](RequestLog&, const Request& req, Response& res) { handle_models(req, res); });
  add_openai(
      "GET", "/v1/models/", [this](RequestLog& log, const Request& req, Response& res) { handle_model(log, req, res); },
      true);
  add("GET", kHealthPath, [this](RequestLog&, const Request&, Response& res) { handle_health(res); });
  add("GET", "/metrics", [this](RequestLog&, const Request&, Response& res) { handle_metrics(res); });
  add("POST", "/tokenize", [this](RequestLog&, const Request& req, Response& res) { handle_tokenize(req, res, false); });
  add("POST", "/detokenize",
      [this](RequestLog&, const Request& req, Response& res) { handle_tokenize(req, res, true); });
  add("POST", "/v1/kv/export",
      [this](RequestLog& log, const Request& req, Response& res) { handle_kv_export(log, req, res); });
  add("POST", "/v1/kv/import",
      [this](RequestLog& log, const Request& req, Response& res) { handle_kv_import(log, req, res); });
}

size_t HttpServer::Impl::body_limit() const { return body_limit_of(options); }

namespace {

constexpr std::string_view kVersionPrefix = "/v1";

// `path` is `route` (exactly, or `route` + more when `prefix`).
bool path_matches(std::string_view path, std::string_view route, bool prefix) {
  return prefix ? path.size() > route.size() && path.starts_with(route) : path == route;
}

}  // namespace

const HttpServer::Impl::Route* HttpServer::Impl::find_route(const std::string& path) const {
  for (const Route& r : routes) {
    const std::string_view route_path = r.path;
    if (path_matches(path, route_path, r.prefix)) return &r;
    if (r.unversioned && route_path.starts_with(kVersionPrefix) &&
        path_matches(path, route_path.substr(kVersionPrefix.size()), r.prefix)) {
      return &r;
    }
  }
  return nullptr;
}

void HttpServer::Impl::respond(const Request& req, Response& res, std::function<bool()> client_gone) {
  RequestLog log;
  log.client_gone = std::move(client_gone);
  log.method = req.method;
  log.path = req.path;
  log.entropy = mix64(salt ^ request_counter.fetch_add(1, std::memory_order_relaxed));
  log.id = make_response_id("req", log.entropy);
  metrics.add_in_flight(1);
  const std::string origin = req.get_header_value("Origin");
  const bool preflight =
      options.cors.is_preflight(req.method, origin, req.get_header_value("Access-Control-Request-Method"));
  try {
    const Route* route = find_route(req.path);
    if (preflight) {
      // Before the key: browsers send none on a preflight.
      answer_preflight(req, res);
    } else if (req.path != kHealthPath && !api_key.allows(req.get_header_value("Authorization"))) {
      // First, whatever the method or path: a caller without the key
      // learns nothing about which routes exist. Load balancers probe
      // /health without credentials.
      send_error(res, unauthorized());
    } else if (route == nullptr) {
      send_error(res, http_error(404, "invalid_request_error",
                                 fmt::format("no route for {} {}", req.method, log_safe(req.path, 200)), "not_found"));
    } else if (route->method != req.method && !(req.method == "HEAD" && route->method == "GET")) {
      send_error(res, http_error(405, "invalid_request_error",
                                 fmt::format("{} is not allowed on {}", req.method, log_safe(req.path, 200)),
                                 "method_not_allowed"));
      res.set_header("Allow", route->method);
    } else if (!service.loaded() && req.path != kHealthPath && req.path != "/metrics") {
      // Every other route needs the tokenizer or the model.
      send_error(res, service_unavailable("the model is still loading; retry shortly"));
    } else {
      route->handler(log, req, res);
    }
  } catch (const std::exception& ex) {
    log_error("{} {} {}: unexpected exception: {}", log.id, log_safe(log.method), log_safe(log.path),
              log_safe(ex.what()));
    answer_internal_error(res, log);
  } catch (...) {
    log_error("{} {} {}: unexpected exception", log.id, log_safe(log.method), log_safe(log.path));
    answer_internal_error(res, log);
  }
  res.set_header("X-Request-Id", log.id);
  if (!preflight) add_cors_headers(res, origin);  // a stream's too: its head is written after this
  if (!log.streaming) {
    log.status = res.status < 0 ? 200 : res.status;
    finish(log);
  }
}

void HttpServer::Impl::handle_connection(std::unique_ptr<Connection> connection, ParsedHttpRequest parsed) {
  Request req;
  req.method = std::move(parsed.method);
  req.path = std::move(parsed.path);
  req.target = std::move(parsed.target);
  req.version = std::move(parsed.version);
  req.body = std::move(parsed.body);
  for (auto& [name, value] : parsed.headers) req.headers.emplace(std::move(name), std::move(value));
  req.remote_addr = connection->peer_addr();
  req.remote_port = connection->peer_port();
  Response res;
  busy_workers.fetch_add(1);
  if (stopping.load()) {
    send_error(res, service_unavailable("the server is shutting down"));
    add_cors_headers(res, req.get_header_value("Origin"));
    res.set_header("Connection", "close");
    log_unrouted(req.method, req.path, res.status);
  } else {
    const int fd = connection->fd();
    respond(req, res, [fd] {
      pollfd p{fd, 0, 0};  // POLLERR and POLLHUP are reported whatever is asked
      return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0;
    });
  }
  // A client that shut down its sending side still reads the answer, but
  // sends no next request.
  ResponseFraming framing;
  framing.keep_alive = parsed.keep_alive && !connection->read_closed() && !stopping.load();
  framing.head_only = req.method == "HEAD";
  framing.http10 = req.version == "HTTP/1.0";
  SocketWriter writer(connection->fd(), options.write_timeout);
  if (!is_streaming(res)) {
    // What the socket does not take now the loop writes as the client
    // reads: a client that pipelines requests and reads nothing must not
    // hold this worker for the write timeout.
    bool keep_alive = false;
    std::string bytes = serialize_response(res, framing, keep_alive);
    const std::optional<size_t> sent = writer.write_now(bytes);
    loop.release_request(*connection);
    busy_workers.fetch_sub(1);
    if (!sent) return;  // gone: closed as `connection` goes
    if (*sent < bytes.size()) {
      bytes.erase(0, *sent);
      return loop.finish_writing(std::move(connection), std::move(bytes), keep_alive);
    }
    if (keep_alive) loop.resume(std::move(connection));
    return;
  }
  // A stream is written by this worker as its tokens come: it holds the
  // worker for its generation anyway.
  const bool reusable = write_response(writer, res, framing);
  loop.release_request(*connection);
  busy_workers.fetch_sub(1);
  if (reusable) loop.resume(std::move(connection));
}

std::optional<std::string> HttpServer::Impl::check_head(const ParsedHttpRequest& head) {
  // With --kv-import the body limit is raised for /v1/kv/import alone:
  // any other large body is refused from its headers, before it is read
  // (a chunked body, whose size is unknown up front, gets the raised limit).
  // Without the key, a body is not worth reading (nor a 100 Continue). A
  // CORS preflight needs no key (respond() answers it).
  const bool preflight =
      options.cors.is_preflight(head.method, head.header("Origin"), head.header("Access-Control-Request-Method"));
  if (!preflight && head.path != kHealthPath && !api_key.allows(std::string(head.header("Authorization")))) {
    Response res;
    send_error(res, unauthorized());
    add_cors_headers(res, head.header("Origin"));  // so that a browser's script can read the 401
    log_unrouted(head.method, head.path, res.status);
    return serialize_closing_response(res);
  }
  if (!options.allow_kv_import) return std::nullopt;
  const std::string length(head.header("Content-Length"));
  if (length.empty() || std::strtoull(length.c_str(), nullptr, 10) <= options.limits.max_body_bytes) {
    return std::nullopt;
  }
  if (head.path == "/v1/kv/import" && head.method == "POST") return std::nullopt;
  Response res;
  send_error(res, body_too_large(options.limits.max_body_bytes));
  add_cors_headers(res, head.header("Origin"));
  log_unrouted(head.method, head.path, res.status);
  return serialize_closing_response(res);
}

std::string HttpServer::Impl::refusal(int status, const std::string& message, const ParsedHttpRequest* head) {
  ApiError e;
  if (status == 413) {
    const bool import = head != nullptr && head->path == "/v1/kv/import";
    const char* hint = !import                  ? ""
                       : options.allow_kv_import ? " (raise it with --kv-import-max-mib)"
                                                 : " (KV import is off: start the server with --kv-import)";
    e = body_too_large(body_limit(), hint);
  } else if (status == 503) {
    e = service_unavailable(message);
  } else if (status == 408) {
    e = http_error(408, "invalid_request_error", message, "request_timeout");
  } else {
    e = http_error(status, "invalid_request_error", fmt::format("malformed HTTP request: {}", message), "bad_request");
  }
  Response res;
  send_error(res, e);
  if (head != nullptr) add_cors_headers(res, head->header("Origin"));
  log_unrouted(head != nullptr ? head->method : std::string("-"), head != nullptr ? head->path : std::string("-"),
               res.status);
  return serialize_closing_response(res);
}

void HttpServer::Impl::answer_preflight(const Request& req, Response& res) {
  res.status = 204;
  for (auto& [name, value] : options.cors.preflight_headers(req.get_header_value("Origin"),
                                                            req.get_header_value("Access-Control-Request-Headers"))) {
    res.set_header(name, value);
  }
}

void HttpServer::Impl::add_cors_headers(Response& res, std::string_view origin) const {
  for (auto& [name, value] : options.cors.response_headers(origin)) res.set_header(name, value);
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
  // Method and path come from the client: escaped, so they cannot forge a line.
  log_info("{} {} {} {} prompt_tokens={} completion_tokens={} ttft_ms={} duration_ms={:.1f}{}{}", log.id,
           log_safe(log.method), log_safe(log.path), log.status, format_metric(log.prompt_tokens), format_metric(log.completion_tokens),
           format_ms(log.ttft_ms), ms, log.outcome.empty() ? "" : " ", log.outcome);
}

void HttpServer::Impl::log_unrouted(const std::string& method, const std::string& path, int status) {
  RequestLog log;
  log.method = method;
  log.path = path;
  log.id = make_response_id("req", mix64(salt ^ request_counter.fetch_add(1, std::memory_order_relaxed)));
  log.status = status;
  metrics.add_in_flight(1);  // finish() counts it back down
  finish(log);
}

namespace {

// One entry of /v1/models: OpenAI's fields, and the context length under
// the names other servers use (vLLM's max_model_len; context_length).
Json model_entry(const ServiceInfo& info, int64_t created) {
  return Json{{"id", info.model_id},
              {"object", "model"},
              {"created", created},
              {"owned_by", "omnibus"},
              {"context_length", info.context_length},
              {"max_model_len", info.context_length}};
}

}  // namespace

void HttpServer::Impl::handle_models(const Request&, Response& res) {
  res.status = 200;
  res.set_content(dump(Json{{"object", "list"}, {"data", Json::array({model_entry(service.info(), started_unix)})}}),
                  kJson);
}

void HttpServer::Impl::handle_model(RequestLog&, const Request& req, Response& res) {
  const ServiceInfo info = service.info();
  // The route is "/v1/models/" or "/models/" + the id: the id starts after
  // the first "/models/" (it may hold one itself).
  constexpr std::string_view kModelsPrefix = "/models/";
  const size_t at = req.path.find(kModelsPrefix);
  const std::string requested = at == std::string::npos ? std::string() : req.path.substr(at + kModelsPrefix.size());
  if (requested.empty()) return handle_models(req, res);
  if (std::optional<ApiError> e = check_model_name(requested, info.model_id, options.model_aliases)) {
    return send_error(res, *e);
  }
  res.status = 200;
  res.set_content(dump(model_entry(info, started_unix)), kJson);
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
  const ConnectionLoop::Counters c = loop.counters();
  PrometheusWriter w;
  w.gauge("omnibus_http_open_connections", "Client connections open (reading, handled or idle).",
          static_cast<double>(c.open));
  w.gauge("omnibus_http_max_connections", "Open connections beyond which new ones get 503.",
          static_cast<double>(loop.max_connections()));
  w.counter("omnibus_http_connections_accepted_total", "Client connections accepted.",
            static_cast<double>(c.accepted));
  w.counter("omnibus_http_connections_refused_total", "Connections refused with 503: over the connection limit.",
            static_cast<double>(c.refused_over_cap));
  w.counter("omnibus_http_request_timeouts_total", "Requests whose head or body missed its deadline (408).",
            static_cast<double>(c.timed_out_requests));
  w.counter("omnibus_http_idle_connections_closed_total", "Connections closed after idling past their deadline.",
            static_cast<double>(c.idle_closed));
  w.counter("omnibus_http_buffer_refusals_total",
            "Requests refused with 503: too many request bytes held for all connections at once.",
            static_cast<double>(c.refused_over_buffer));
  w.counter("omnibus_http_responses_finished_by_loop_total",
            "Responses the client did not take at once, written by the connection loop as it read.",
            static_cast<double>(c.finished_by_loop));
  w.counter("omnibus_http_write_timeouts_total",
            "Connections closed because the client did not read its response within the write timeout.",
            static_cast<double>(c.write_timed_out));
  w.gauge("omnibus_http_buffered_request_bytes", "Request bytes held for connections still sending them.",
          static_cast<double>(c.buffered_bytes));
  w.gauge("omnibus_http_workers_busy", "HTTP worker threads handling a request.",
          static_cast<double>(busy_workers.load()));
  w.gauge("omnibus_http_workers", "HTTP worker threads.", static_cast<double>(std::max(1, options.http_threads)));
  res.status = 200;
  res.set_content(service.metrics_text() + metrics.text() + w.text(), "text/plain; version=0.0.4; charset=utf-8");
}

void HttpServer::Impl::handle_tokenize(const Request& req, Response& res, bool detokenize) {
  const Tokenizer& tokenizer = service.tokenizer();
  ApiResult<std::string> body =
      detokenize ? handle_detokenize(req.body, tokenizer, options.limits)
                 : omnibus::server::handle_tokenize(req.body, tokenizer, options.limits, service.info().context_length);
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
  if (Status s = impl_->loop.bind(host, port); !s.is_ok()) return s;
  impl_->bound_port.store(impl_->loop.port());
  return Status::ok();
}

int HttpServer::port() const { return impl_->bound_port.load(); }

void HttpServer::serve() {
  impl_->serving.store(true);
  if (!impl_->stopping.load() && impl_->bound_port.load() > 0) {
    impl_->workers = std::make_unique<WorkerPool>(static_cast<size_t>(std::max(1, impl_->options.http_threads)));
    log_info("listening on http://{}:{} (at most {} connections)", impl_->options.host, impl_->bound_port.load(),
             impl_->loop.max_connections());
    impl_->loop.run();
    // Requests already handed over finish (they see `stopping`: streams
    // end with an error event, waiting requests get 503).
    impl_->workers.reset();
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
  impl_->loop.stop();
}

}  // namespace omnibus::server
