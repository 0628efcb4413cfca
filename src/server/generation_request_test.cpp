// From parsed requests to engine requests: model names, prompts, seeds,
// and how engine refusals map to HTTP errors.
#include <gtest/gtest.h>

#include "server/fake_inference_service.h"
#include "server/generation_request.h"
#include "server/json_fields.h"

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
  g.prompts = {{{5, 6, 7}, ""}};
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
  EXPECT_EQ(requests[2].prompt, g.prompts[0].tokens);
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
  ASSERT_EQ(g->prompts.size(), 1u);
  EXPECT_EQ(g->prompts[0].tokens, service.tokenizer().encode("Hello", false, true));

  auto seeded = parse_completion_request(R"({"prompt": [72, 105], "seed": 5, "echo": true})", ApiLimits{});
  auto g2 = prepare_completion(std::move(seeded).value(), service, 777);
  ASSERT_TRUE(g2.is_ok());
  EXPECT_EQ(g2->options.sampling.seed, 5u);
  EXPECT_EQ(g2->prompts[0].echo_text, "Hi");

  auto bad_ids = parse_completion_request(R"({"prompt": [72, 100000], "echo": true})", ApiLimits{});
  auto g3 = prepare_completion(std::move(bad_ids).value(), service, 1);
  ASSERT_FALSE(g3.is_ok());
  EXPECT_EQ(g3.error().param, "prompt[1]");
}

// A list of prompts: n choices each, numbered prompt by prompt (OpenAI's
// index = prompt * n + choice); choice i of every prompt samples with seed + i,
// as that prompt alone would.
TEST(GenerationRequestTest, SeveralPromptsGiveNChoicesEach) {
  testing::FakeInferenceService service;
  auto parsed = parse_completion_request(R"({"prompt": ["Hello", [72, 105], "Hi"], "n": 2, "seed": 10, "echo": true})",
                                         ApiLimits{});
  ASSERT_TRUE(parsed.is_ok()) << parsed.error().message;
  auto g = prepare_completion(std::move(parsed).value(), service, 1);
  ASSERT_TRUE(g.is_ok()) << g.error().message;
  ASSERT_EQ(g->prompts.size(), 3u);
  EXPECT_EQ(g->num_choices(), 6u);
  EXPECT_EQ(g->prompts[1].echo_text, "Hi");
  EXPECT_EQ(g->prompts[2].echo_text, "Hi");
  EXPECT_EQ(g->prompt_tokens(), static_cast<int64_t>(g->prompts[0].tokens.size() + 2 + g->prompts[2].tokens.size()));
  const auto requests = make_engine_requests(g.value(), "cmpl-9");
  ASSERT_EQ(requests.size(), 6u);
  for (size_t c = 0; c < requests.size(); ++c) {
    EXPECT_EQ(requests[c].prompt, g->prompts[c / 2].tokens) << c;
    EXPECT_EQ(requests[c].sampling.seed, 10u + c % 2) << c;
    EXPECT_EQ(requests[c].request_id, "cmpl-9/" + std::to_string(c));
  }
}

// Which prompt of several is wrong is in the param and the message.
TEST(GenerationRequestTest, AnErrorInOneOfSeveralPromptsNamesIt) {
  testing::FakeInferenceService service;
  auto bad_id = parse_completion_request(R"({"prompt": [[72], [72, 100000]]})", ApiLimits{});
  ASSERT_TRUE(bad_id.is_ok());
  auto g = prepare_completion(std::move(bad_id).value(), service, 1);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.error().param, "prompt[1][1]");
  EXPECT_NE(g.error().message.find("prompt[1]"), std::string::npos) << g.error().message;

  const std::string long_prompt(testing::FakeInferenceService::kContextLength, 'x');
  auto too_long = parse_completion_request(R"({"prompt": ["Hi", ")" + long_prompt + R"("]})", ApiLimits{});
  ASSERT_TRUE(too_long.is_ok());
  auto g2 = prepare_completion(std::move(too_long).value(), service, 1);
  ASSERT_FALSE(g2.is_ok());
  EXPECT_EQ(g2.error().code, "context_length_exceeded");
  EXPECT_NE(g2.error().message.find("prompt[1]"), std::string::npos) << g2.error().message;
}

TEST(GenerationRequestTest, SubmitStatusesBecomeHttpErrors) {
  EXPECT_EQ(error_from_submit_status(Status::invalid_argument("x")).http_status, 400);
  EXPECT_EQ(error_from_submit_status(Status::resource_exhausted("x")).http_status, 429);
  EXPECT_EQ(error_from_submit_status(Status::unsupported("x")).http_status, 503);
  EXPECT_EQ(error_from_submit_status(Status::internal("x")).http_status, 500);
  EXPECT_EQ(error_from_submit_status(Status::resource_exhausted("queue full")).message, "queue full");
}

TEST(GenerationRequestTest, TextsTooLongForTheContextAreRefusedUnread) {
  EXPECT_FALSE(check_text_can_fit(400, 4, 100, "prompt").has_value());  // might be 100 tokens
  const auto e = check_text_can_fit(404, 4, 100, "prompt");             // at least 101
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, "context_length_exceeded");
  EXPECT_NE(e->message.find("at least 101 tokens"), std::string::npos) << e->message;
  EXPECT_FALSE(check_text_can_fit(0, 0, 0, "prompt").has_value());  // no division by zero

  testing::FakeInferenceService service;
  const size_t too_long =
      static_cast<size_t>(service.info().context_length + 1) * service.tokenizer().max_bytes_per_token();
  const std::string text(too_long, 'a');
  auto completion = parse_completion_request(Json{{"prompt", Json::array({"Hi", text})}}.dump(), ApiLimits{});
  ASSERT_TRUE(completion.is_ok());
  auto refused = prepare_completion(std::move(completion).value(), service, 1);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.error().code, "context_length_exceeded");
  EXPECT_EQ(refused.error().param, "prompt[1]");
  EXPECT_NE(refused.error().message.find("bytes"), std::string::npos) << refused.error().message;

  auto chat = parse_chat_request(Json{{"messages", Json::array({Json{{"role", "user"}, {"content", text}}})}}.dump(),
                                 ApiLimits{});
  ASSERT_TRUE(chat.is_ok());
  auto refused_chat = prepare_chat(std::move(chat).value(), service, 1);
  ASSERT_FALSE(refused_chat.is_ok());
  EXPECT_EQ(refused_chat.error().code, "context_length_exceeded");
  EXPECT_EQ(refused_chat.error().param, "messages");
}

}  // namespace
}  // namespace omnibus::server
