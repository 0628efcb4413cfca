// DeferredService: an InferenceService whose real service arrives later, so
// `omnibus serve` can listen (and answer /health with 503 "loading") while
// the model loads. Before set(): loaded() and ready() are false,
// metrics_text() is empty, submit() fails; tokenizer(), chat_format() and
// info() must not be called (the HTTP layer checks loaded() first). After
// set(), every call forwards.
#pragma once

#include <atomic>

#include "engine/inference_service.h"

namespace omnibus {

class DeferredService final : public InferenceService {
 public:
  // Publishes the loaded service; once only. It must outlive this object's
  // users (the HTTP server).
  void set(InferenceService* service) { inner_.store(service, std::memory_order_release); }

  Result<std::shared_ptr<RequestStream>> submit(EngineRequest request) override;
  const Tokenizer& tokenizer() const override { return inner()->tokenizer(); }
  const ChatFormat& chat_format() const override { return inner()->chat_format(); }
  ServiceInfo info() const override { return inner()->info(); }
  bool loaded() const override { return inner() != nullptr; }
  bool ready() const override;
  std::string metrics_text() const override;
  void count_rejected_request() override;
  Result<std::string> export_kv(std::vector<int32_t> prompt) override;
  Result<int64_t> import_kv(std::string_view blob) override;

 private:
  InferenceService* inner() const { return inner_.load(std::memory_order_acquire); }
  std::atomic<InferenceService*> inner_{nullptr};
};

}  // namespace omnibus
