// POST /v1/kv/export and /v1/kv/import: a prompt's K/V handed from a prefill
// instance to a decode instance (docs/plan-disaggregation.md).
//
// Export takes a /v1/completions body (or a /v1/chat/completions one: it has
// "messages"), runs its prompt for one token so its whole blocks are in the
// prefix cache, and answers with the blob (application/octet-stream; the
// X-KV-Tokens header says how many prompt tokens it carries). Import takes
// that blob as its body and puts the blocks into this server's prefix cache
// (off unless the server was started with --kv-import); the same completion
// sent here afterwards finds them cached.
#include <chrono>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "engine/kv_transfer.h"
#include "server/generation_request.h"
#include "server/http_server_impl.h"
#include "server/json_fields.h"

namespace omnibus::server {
namespace {

using httplib::Request;
using httplib::Response;

constexpr std::chrono::milliseconds kPoll{50};

// not_found from the engine means the prompt has no whole block to send.
ApiError error_from_kv_status(const Status& status) {
  if (status.code() == StatusCode::kNotFound)
    return ApiError::invalid("prompt", status.message(), "prompt_too_short");
  return error_from_submit_status(status);
}

}  // namespace

void HttpServer::Impl::handle_kv_export(RequestLog& log, const Request& req, Response& res) {
  ApiResult<Json> doc = parse_json_object(req.body, options.limits.max_json_depth, options.limits.max_body_bytes);
  if (!doc) return send_error(res, doc.error());
  const bool chat = has_field(doc.value(), "messages");
  ApiResult<PreparedGeneration> prepared = parse_and_prepare(req, chat, service, options, mix64(log.entropy + 1));
  if (!prepared) return send_error(res, prepared.error());
  const PreparedGeneration& generation = prepared.value();
  if (generation.prompts.size() != 1) {
    return send_error(res, ApiError::invalid("prompt", fmt::format("a KV export takes one prompt; this request has {}",
                                                                   generation.prompts.size())));
  }
  const std::vector<int32_t>& prompt = generation.prompts.front().tokens;
  log.prompt_tokens = static_cast<int64_t>(prompt.size());

  // Prefill: the prompt and one token, greedy (the token is thrown away);
  // its whole blocks stay in the prefix cache after it finishes, unless a
  // busy pool evicts them before the copy: then once more.
  for (int attempt = 0;; ++attempt) {
    std::vector<EngineRequest> requests = make_engine_requests(generation, log.id);
    EngineRequest prefill = std::move(requests.front());
    prefill.max_tokens = 1;
    prefill.sampling.temperature = 0;
    prefill.stop.clear();
    Result<std::shared_ptr<RequestStream>> stream = service.submit(std::move(prefill));
    if (!stream.is_ok()) return send_error(res, error_from_submit_status(stream.status()));
    std::vector<StreamEvent> events;
    for (;;) {
      if (stopping.load()) {
        (*stream)->cancel();
        return send_error(res, service_unavailable("the server is shutting down"), false);
      }
      (*stream)->wait(events, kPoll);
      if (!events.empty() && events.back().finished) break;
    }
    const StreamEvent& last = events.back();
    if (last.finish_reason == "error" || last.finish_reason == "cancelled")
      return send_error(res, http_error(500, "server_error", "the prefill failed: " + last.error, "internal_error"),
                        false);
    Result<std::string> blob = service.export_kv(prompt);
    if (!blob.is_ok() && blob.status().code() == StatusCode::kResourceExhausted && attempt == 0) continue;
    if (!blob.is_ok()) return send_error(res, error_from_kv_status(blob.status()));
    res.status = 200;
    res.set_header("X-KV-Tokens", std::to_string(kv_transfer_token_count(blob.value())));
    res.set_content(std::move(blob).value(), "application/octet-stream");
    return;
  }
}

void HttpServer::Impl::handle_kv_import(RequestLog& log, const Request& req, Response& res) {
  if (!options.allow_kv_import)
    return send_error(res, http_error(403, "permission_error",
                                      "KV import is off on this server; start it with --kv-import to accept K/V "
                                      "handed over by a prefill instance (it trusts whoever can reach it)",
                                      "kv_import_disabled"));
  Result<int64_t> imported = service.import_kv(req.body);
  if (!imported.is_ok()) return send_error(res, error_from_kv_status(imported.status()));
  log.prompt_tokens = imported.value();
  res.status = 200;
  res.set_content(Json{{"imported_tokens", imported.value()}}.dump(), "application/json");
}

}  // namespace omnibus::server
