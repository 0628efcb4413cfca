// libFuzzer target for everything the server does with a request body
// before the engine sees it: JSON parsing and validation of both generation
// routes (parse_*_request), preparation against a service (chat template,
// tokenization, vocabulary and context checks: prepare_*), the engine
// requests it would submit, and /tokenize and /detokenize. The first byte
// picks the route. Any input must give a value or an ApiError, never a
// crash, a sanitizer report or a hang. Run: scripts/fuzz_server.sh [seconds].
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/fake_inference_service.h"
#include "server/generation_request.h"
#include "server/openai_request.h"
#include "server/token_routes.h"

using namespace omnibus;
using namespace omnibus::server;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static testing::FakeInferenceService* service = new testing::FakeInferenceService();  // one for the process
  static const ApiLimits limits;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      ApiResult<CompletionRequest> r = parse_completion_request(body, limits);
      if (!r) break;
      ApiResult<PreparedGeneration> g = prepare_completion(std::move(r.value()), *service, 42);
      if (g) (void)make_engine_requests(g.value(), "fuzz");
      break;
    }
    case 1: {
      ApiResult<ChatRequest> r = parse_chat_request(body, limits);
      if (!r) break;
      ApiResult<PreparedGeneration> g = prepare_chat(std::move(r.value()), *service, 42);
      if (g) (void)make_engine_requests(g.value(), "fuzz");
      break;
    }
    case 2: (void)handle_tokenize(body, service->tokenizer(), limits, service->info().context_length); break;
    default: (void)handle_detokenize(body, service->tokenizer(), limits); break;
  }
  return 0;
}
