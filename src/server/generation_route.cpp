// POST /v1/completions and POST /v1/chat/completions: parse, prepare,
// submit one engine sequence per choice (n per prompt; completions may
// carry a list of prompts), then answer with one JSON body or
// an SSE stream (GenerationSession does the folding and formatting).
#include <ctime>
#include <memory>
#include <utility>

#include "server/generation_request.h"
#include "server/generation_session.h"
#include "server/http_server_impl.h"

namespace omnibus::server {
namespace {

using httplib::Request;
using httplib::Response;
using std::chrono::milliseconds;

// How long the stream provider waits for engine events before checking on
// the server again (stop()).
constexpr milliseconds kStreamPoll{50};

// Counts a request in HttpServer::Impl::open_generations while alive.
class OpenGeneration {
 public:
  explicit OpenGeneration(std::atomic<int>& count) : count_(count) { count_.fetch_add(1); }
  ~OpenGeneration() { count_.fetch_sub(1); }
  OpenGeneration(const OpenGeneration&) = delete;
  OpenGeneration& operator=(const OpenGeneration&) = delete;

 private:
  std::atomic<int>& count_;
};

}  // namespace

ApiResult<PreparedGeneration> parse_and_prepare(const Request& req, bool chat, const InferenceService& service,
                                                const HttpServerOptions& options, uint64_t fallback_seed) {
  const ServiceInfo info = service.info();
  if (chat) {
    ApiResult<ChatRequest> parsed = parse_chat_request(req.body, options.limits);
    if (!parsed) return parsed.error();
    if (auto e = check_model_name(parsed->options.model, info.model_id, options.model_aliases)) return *e;
    return prepare_chat(std::move(parsed).value(), service, fallback_seed);
  }
  ApiResult<CompletionRequest> parsed = parse_completion_request(req.body, options.limits);
  if (!parsed) return parsed.error();
  if (auto e = check_model_name(parsed->options.model, info.model_id, options.model_aliases)) return *e;
  return prepare_completion(std::move(parsed).value(), service, fallback_seed);
}

void HttpServer::Impl::start_stream(std::shared_ptr<RequestLog> log, std::shared_ptr<GenerationSession> session,
                                    std::shared_ptr<void> open_guard, Response& res) {
  Impl& server = *this;
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // tell proxies not to buffer the stream
  res.set_chunked_content_provider(
      "text/event-stream",
      [&server, session, log](size_t, httplib::DataSink& sink) {
        const GenerationSession::Writer write = [&sink](std::string_view bytes) {
          return sink.is_writable() && sink.write(bytes.data(), bytes.size());
        };
        if (server.stopping.load()) {
          session->cancel_all();
          log->outcome = "server stopping";
          write(format_sse_error(service_unavailable("the server is shutting down")));
          write(sse_done());
          sink.done();
          return true;
        }
        if (!session->pump(write, kStreamPoll)) {
          // The client hung up (or stopped reading): free the engine's work.
          log->outcome = "client gone";
          server.metrics.client_disconnected();
          return false;
        }
        if (session->done()) sink.done();
        return true;
      },
      [&server, session, log, open_guard](bool) {
        session->cancel_all();
        log->completion_tokens = session->completion_tokens();
        log->ttft_ms = session->ttft_ms();
        if (log->outcome.empty() && session->failed()) log->outcome = "error event sent";
        if (log->outcome.empty() && !session->done()) log->outcome = "stream cut";
        server.finish(*log);
      });
}

void HttpServer::Impl::handle_generation(RequestLog& log, const Request& req, Response& res, bool chat) {
  // Shared with the stream's callbacks, so a stream counts until it ends.
  auto open = std::make_shared<OpenGeneration>(open_generations);
  log.id = make_response_id(chat ? "chatcmpl" : "cmpl", log.entropy);
  ApiResult<PreparedGeneration> prepared = parse_and_prepare(req, chat, service, options, mix64(log.entropy + 1));
  if (!prepared) return send_error(res, prepared.error());
  const PreparedGeneration& generation = prepared.value();
  log.prompt_tokens = generation.prompt_tokens();

  std::vector<std::shared_ptr<RequestStream>> streams;
  if (generation.options.max_tokens.value_or(0) > 0) {  // 0: echo only, nothing to generate
    auto submitted = submit_choices(service, make_engine_requests(generation, log.id));
    if (!submitted) return send_error(res, submitted.error());
    streams = std::move(submitted).value();
  }
  ResponseMeta meta;
  meta.id = log.id;
  meta.created = static_cast<int64_t>(std::time(nullptr));
  meta.model = service.info().model_id;
  auto session = std::make_shared<GenerationSession>(generation, std::move(meta), std::move(streams),
                                                     service.tokenizer(), log.arrival);

  if (!generation.options.stream) {
    bool gone = false;
    const bool complete = session->wait_all([this, &log, &gone] {
      gone = gone || (log.client_gone && log.client_gone());
      return gone || stopping.load();
    });
    log.completion_tokens = session->completion_tokens();
    log.ttft_ms = session->ttft_ms();
    if (!complete && gone) {
      // Reset by the client: its sequences are cancelled; nobody reads this.
      log.outcome = "client gone";
      metrics.client_disconnected();
      return send_error(res, http_error(400, "invalid_request_error", "the client closed the connection",
                                        "client_closed_request"), false);
    }
    if (!complete) return send_error(res, service_unavailable("the server is shutting down"), false);
    ApiResult<std::string> body = session->response_body();
    // An engine failure is the engine's outcome, not a refused request.
    if (!body) return send_error(res, body.error(), false);
    res.status = 200;
    res.set_content(body.value(), "application/json");
    return;
  }

  log.streaming = true;
  log.status = 200;
  start_stream(std::make_shared<RequestLog>(log), std::move(session), std::move(open), res);
}

}  // namespace omnibus::server
