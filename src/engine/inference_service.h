// InferenceService: what the HTTP server needs from an engine, and nothing
// more. ServingEngine implements it over a real model; the server's unit
// tests implement it with a scripted fake, so HTTP behaviour is tested
// without a model.
//
// Thread-safe: every method may be called from any HTTP thread at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/request_stream.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace omnibus {

struct ServiceInfo {
  std::string model_id;        // what /v1/models lists and requests may name
  int64_t context_length = 0;  // most tokens (prompt + generated) per sequence
  int32_t vocab_size = 0;
};

// Why submit() refused, mapped to HTTP by the server.
//   invalid_argument:   the request can never run (e.g. larger than the KV pool) → 400
//   resource_exhausted: the waiting queue is full → 429 with Retry-After
//   unsupported:        the service is not ready or is draining → 503
class InferenceService {
 public:
  virtual ~InferenceService() = default;

  // Queues one sequence. On success the stream delivers its output and ends
  // with exactly one finished event.
  virtual Result<std::shared_ptr<RequestStream>> submit(EngineRequest request) = 0;

  virtual const Tokenizer& tokenizer() const = 0;
  virtual const ChatFormat& chat_format() const = 0;
  virtual ServiceInfo info() const = 0;

  // False until the model is loaded. Until then only ready(),
  // metrics_text() and count_rejected_request() may be called; the server
  // answers every other route with 503.
  virtual bool loaded() const { return true; }

  // False while loading or draining (GET /health answers 503).
  virtual bool ready() const = 0;

  // Prometheus text exposition of every engine metric (GET /metrics).
  virtual std::string metrics_text() const = 0;

  // KV handover between instances (disaggregated prefill and decode;
  // docs/plan-disaggregation.md, engine/kv_transfer.h). export_kv: the
  // whole blocks of `prompt`'s longest cached prefix as a blob (not_found
  // when none is cached). import_kv: a blob's blocks into this instance's
  // prefix cache; returns the tokens it now holds. A bad blob is
  // invalid_argument, a full pool resource_exhausted.
  virtual Result<std::string> export_kv(std::vector<int32_t> prompt) {
    (void)prompt;
    return Status::unsupported("this server does not hand over KV caches");
  }
  virtual Result<int64_t> import_kv(std::string_view blob) {
    (void)blob;
    return Status::unsupported("this server does not hand over KV caches");
  }

  // Outcomes the engine cannot see, reported by the server for /metrics:
  // a request refused before it reached the engine (bad request, bad key,
  // queue full).
  virtual void count_rejected_request() = 0;
};

}  // namespace omnibus
