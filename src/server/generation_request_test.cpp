// From parsed requests to engine requests: model names, prompts, seeds,
// and how engine refusals map to HTTP errors.
#include <gtest/gtest.h>

#include "server/fake_inference_service.h"
#include "server/generation_request.h"

namespace omnibus::server {
namespace {

TEST(GenerationRequestTest, ModelNames) {
  const std::vector<std::string> aliases = {"SmolLM2-135M-Instruct.Q4_1"};
  for (const char* ok : {"", "smol", "/a/b/smol", "smol.gguf", "/m/SmolLM2-135M-Instruct.Q4_1.gguf",
                         "SmolLM2-135M-Instruct.Q4_1"}) {
    EXPECT_FALSE(check_model_name(ok, "smol", aliases).has_value()) << ok;
  }
  for (const char* bad : {"gpt-4", "smol2", "SMOL", "smol.gguf.bak", "/smol/other"}) {
    const auto e = check_model_name(bad, "smol", aliases);
    ASSERT_TRUE(e.has_value()) << bad;
    EXPECT_EQ(e->http_status, 404);
    EXPECT_EQ(e->code, "model_not_found");
  }
}

TEST(GenerationRequestTest, EngineRequestsPerChoice) {
  PreparedGeneration g;
  g.prompt = {5, 6, 7};
  g.options.n = 3;
  g.options.max_tokens = 11;
  g.options.stop = {"x"};
  g.options.sampling.seed = ~uint64_t{0};  // wraps
  const auto requests = make_engine_requests(g, "cmpl-1");
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].sampling.seed, ~uint64_t{0});
  EXPECT_EQ(requests[1].sampling.seed, 0u);
  EXPECT_EQ(requests[2].sampling.seed, 1u);
  EXPECT_EQ(requests[2].max_tokens, 11);
  EXPECT_EQ(requests[2].prompt, g.prompt);
  EXPECT_EQ(requests[2].stop, g.options.stop);
  EXPECT_EQ(requests[1].request_id, "cmpl-1/1");
}

TEST(GenerationRequestTest, PrepareResolvesSeedAndMaxTokens) {
  testing::FakeInferenceService service;
  auto parsed = parse_completion_request(R"({"prompt": "Hello", "max_tokens": null})", ApiLimits{});
  ASSERT_TRUE(parsed.is_ok());
  auto g = prepare_completion(std::move(parsed).value(), service, 777);
  ASSERT_TRUE(g.is_ok()) << g.error().message;
  EXPECT_EQ(g->options.sampling.seed, 777u);
  EXPECT_EQ(g->options.max_tokens, 16);  // OpenAI's completions default
  EXPECT_EQ(g->prompt, service.tokenizer().encode("Hello", false, true));

  auto seeded = parse_completion_request(R"({"prompt": [72, 105], "seed": 5, "echo": true})", ApiLimits{});
  auto g2 = prepare_completion(std::move(seeded).value(), service, 777);
  ASSERT_TRUE(g2.is_ok());
  EXPECT_EQ(g2->options.sampling.seed, 5u);
  EXPECT_EQ(g2->echo_text, "Hi");

  auto bad_ids = parse_completion_request(R"({"prompt": [72, 100000], "echo": true})", ApiLimits{});
  auto g3 = prepare_completion(std::move(bad_ids).value(), service, 1);
  ASSERT_FALSE(g3.is_ok());
  EXPECT_EQ(g3.error().param, "prompt[1]");
}

TEST(GenerationRequestTest, SubmitStatusesBecomeHttpErrors) {
  EXPECT_EQ(error_from_submit_status(Status::invalid_argument("x")).http_status, 400);
  EXPECT_EQ(error_from_submit_status(Status::resource_exhausted("x")).http_status, 429);
  EXPECT_EQ(error_from_submit_status(Status::unsupported("x")).http_status, 503);
  EXPECT_EQ(error_from_submit_status(Status::internal("x")).http_status, 500);
  EXPECT_EQ(error_from_submit_status(Status::resource_exhausted("queue full")).message, "queue full");
}

}  // namespace
}  // namespace omnibus::server
