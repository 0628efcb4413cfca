#include "engine/deferred_service.h"

#include <utility>

namespace omnibus {

Result<std::shared_ptr<RequestStream>> DeferredService::submit(EngineRequest request) {
  InferenceService* service = inner();
  if (service == nullptr) return Status::unsupported("the model is still loading");  // 503
  return service->submit(std::move(request));
}

bool DeferredService::ready() const {
  const InferenceService* service = inner();
  return service != nullptr && service->ready();
}

std::string DeferredService::metrics_text() const {
  const InferenceService* service = inner();
  return service == nullptr ? std::string() : service->metrics_text();
}

void DeferredService::count_rejected_request() {
  // Refusals while loading are not the engine's to count: it has no
  // metrics yet. The HTTP layer's own counters still see them.
  if (InferenceService* service = inner()) service->count_rejected_request();
}

Result<std::string> DeferredService::export_kv(std::vector<int32_t> prompt) {
  InferenceService* service = inner();
  if (service == nullptr) return Status::unsupported("the model is still loading");
  return service->export_kv(std::move(prompt));
}

Result<int64_t> DeferredService::import_kv(std::string_view blob) {
  InferenceService* service = inner();
  if (service == nullptr) return Status::unsupported("the model is still loading");
  return service->import_kv(blob);
}

}  // namespace omnibus
