// What OpenAI clients expect beyond the basics: the routes without "/v1",
// CORS for browser clients, usage.prompt_tokens_details.cached_tokens, a
// stream's finish_reason in a chunk of its own, the context length in
// /v1/models.
#include <gtest/gtest.h>

#include "server/http_test_support.h"

namespace omnibus::server::testing {
namespace {

const Json kChat{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 4}};
const Json kCompletion{{"prompt", "Hi"}, {"max_tokens", 4}};
constexpr const char* kOrigin = "http://localhost:3000";
constexpr const char* kKey = "sekret-key";

HttpServerOptions with_cors(std::vector<std::string> origins, std::string api_key = "") {
  HttpServerOptions options;
  Result<CorsPolicy> cors = CorsPolicy::parse(origins);
  EXPECT_TRUE(cors.is_ok()) << cors.status().to_string();
  if (cors.is_ok()) options.cors = std::move(cors).value();
  options.api_key = std::move(api_key);
  return options;
}

HttpReply options_request(const ServerHarness& h, const std::string& path, const httplib::Headers& headers) {
  return ServerHarness::to_reply(h.client()->Options(path.c_str(), headers));
}

Json with(Json body, const std::string& key, Json value) {
  body[key] = std::move(value);
  return body;
}

TEST(HttpApiParityTest, OpenAiRoutesAnswerWithoutV1) {
  ServerHarness h;
  for (const char* path : {"/completions", "/v1/completions"}) {
    HttpReply r = h.post(path, kCompletion);
    ASSERT_EQ(r.status, 200) << path << ": " << r.body;
    EXPECT_EQ(r.json()["object"], "text_completion");
  }
  for (const char* path : {"/chat/completions", "/v1/chat/completions"}) {
    HttpReply r = h.post(path, kChat);
    ASSERT_EQ(r.status, 200) << path << ": " << r.body;
    EXPECT_EQ(r.json()["object"], "chat.completion");
  }
  EXPECT_EQ(h.get("/models").body, h.get("/v1/models").body);
  EXPECT_EQ(h.get("/models/test-model").json()["id"], "test-model");
  EXPECT_EQ(h.get("/models/gpt-4").json()["error"]["code"], "model_not_found");
  EXPECT_EQ(h.get("/v1/models/gpt-4").json()["error"]["code"], "model_not_found");

  HttpReply wrong = h.get("/chat/completions");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.header("Allow"), "POST");
  EXPECT_NE(wrong.json()["error"]["message"].get<std::string>().find("/chat/completions"), std::string::npos);
  // Only OpenAI's routes: the rest keep their one path.
  EXPECT_EQ(h.post("/kv/export", kCompletion).status, 404);
  EXPECT_EQ(h.get("/v1/health").status, 404);
  EXPECT_EQ(h.get("/models/").status, 404);
  EXPECT_EQ(h.post("/v1/v1/completions", kCompletion).status, 404);
}

TEST(HttpApiParityTest, ModelsCarryTheContextLength) {
  ServerHarness h;
  for (const Json& model : {h.get("/v1/models").json()["data"][0], h.get("/v1/models/test-model").json()}) {
    EXPECT_EQ(model["context_length"], FakeInferenceService::kContextLength) << model.dump();
    EXPECT_EQ(model["max_model_len"], FakeInferenceService::kContextLength) << model.dump();
    EXPECT_EQ(model["object"], "model");
    EXPECT_EQ(model["owned_by"], "omnibus");
    EXPECT_TRUE(model["created"].is_number_integer());
  }
}

TEST(HttpApiParityTest, WithoutCorsThereAreNoCorsHeadersAndOptionsIsRefused) {
  ServerHarness h;
  HttpReply r = h.post("/v1/chat/completions", kChat, {{"Origin", kOrigin}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "");
  EXPECT_EQ(r.header("Vary"), "");
  HttpReply preflight =
      options_request(h, "/v1/chat/completions", {{"Origin", kOrigin}, {"Access-Control-Request-Method", "POST"}});
  EXPECT_EQ(preflight.status, 405);  // as any other method a route does not take
  EXPECT_EQ(preflight.header("Access-Control-Allow-Origin"), "");
}

TEST(HttpApiParityTest, PreflightNeedsNoKeyButTheRequestDoes) {
  ServerHarness h(with_cors({kOrigin}, kKey));
  HttpReply preflight =
      options_request(h, "/v1/chat/completions",
                      {{"Origin", kOrigin},
                       {"Access-Control-Request-Method", "POST"},
                       {"Access-Control-Request-Headers", "authorization,content-type,x-stainless-os"}});
  ASSERT_EQ(preflight.status, 204) << preflight.body;
  EXPECT_TRUE(preflight.body.empty());
  EXPECT_EQ(preflight.header("Access-Control-Allow-Origin"), kOrigin);
  EXPECT_NE(preflight.header("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  EXPECT_EQ(preflight.header("Access-Control-Allow-Headers"), "authorization, content-type, x-stainless-os");
  EXPECT_EQ(preflight.header("Access-Control-Max-Age"), std::to_string(CorsPolicy::kPreflightMaxAgeSeconds));
  EXPECT_EQ(preflight.header("Content-Length"), "");
  // Any route, including the ones without "/v1".
  EXPECT_EQ(options_request(h, "/models", {{"Origin", kOrigin}, {"Access-Control-Request-Method", "GET"}}).status, 204);

  HttpReply no_key = h.post("/v1/chat/completions", kChat, {{"Origin", kOrigin}});
  EXPECT_EQ(no_key.status, 401);
  EXPECT_EQ(no_key.header("Access-Control-Allow-Origin"), kOrigin);  // the page can read why
  HttpReply ok = h.post("/v1/chat/completions", kChat, {{"Origin", kOrigin}, {"Authorization", "Bearer sekret-key"}});
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.header("Access-Control-Allow-Origin"), kOrigin);
  EXPECT_EQ(ok.header("Vary"), "Origin");

  // Not a preflight this policy answers: the key is still needed.
  EXPECT_EQ(
      options_request(h, "/v1/models", {{"Origin", "http://evil.example"}, {"Access-Control-Request-Method", "GET"}})
          .status,
      401);
  EXPECT_EQ(options_request(h, "/v1/models", {{"Origin", kOrigin}}).status, 401);
  // After a 204 with no length, the connection still serves the next request.
  auto client = h.client();
  client->set_keep_alive(true);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(client->Options("/v1/models", {{"Origin", kOrigin}, {"Access-Control-Request-Method", "GET"}})->status,
              204);
    EXPECT_EQ(client->Get("/v1/models", {{"Authorization", "Bearer sekret-key"}})->status, 200);
  }
}

TEST(HttpApiParityTest, OnlyAllowedOriginsGetTheHeader) {
  ServerHarness h(with_cors({"http://a.example, http://b.example"}));
  EXPECT_EQ(h.get("/v1/models", {{"Origin", "http://b.example"}}).header("Access-Control-Allow-Origin"),
            "http://b.example");
  HttpReply other = h.get("/v1/models", {{"Origin", "http://c.example"}});
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.header("Access-Control-Allow-Origin"), "");
  EXPECT_EQ(other.header("Vary"), "Origin");
  EXPECT_EQ(h.get("/v1/models").header("Access-Control-Allow-Origin"), "");  // not a browser

  ServerHarness any(with_cors({"*"}));
  EXPECT_EQ(any.get("/health", {{"Origin", "http://c.example"}}).header("Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(any.get("/nowhere", {{"Origin", "http://c.example"}}).header("Access-Control-Allow-Origin"), "*");
}

TEST(HttpApiParityTest, StreamsCarryTheCorsHeader) {
  ServerHarness h(with_cors({kOrigin}));
  HttpReply r = h.post("/chat/completions", with(kChat, "stream", true), {{"Origin", kOrigin}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Content-Type").rfind("text/event-stream", 0), 0u);
  EXPECT_EQ(r.header("Access-Control-Allow-Origin"), kOrigin);
  EXPECT_EQ(sse_data(r.body).back(), "[DONE]");
}

TEST(HttpApiParityTest, UsageCountsCachedPromptTokens) {
  ServerHarness h;
  HttpReply cold = h.post("/v1/chat/completions", kChat);
  ASSERT_EQ(cold.status, 200) << cold.body;
  EXPECT_EQ(cold.json()["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

  h.service().set_cached_tokens(3);
  for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
    const Json& body = std::string(path) == "/v1/completions" ? kCompletion : kChat;
    const Json usage = h.post(path, body).json()["usage"];
    EXPECT_EQ(usage["prompt_tokens_details"]["cached_tokens"], std::min<int64_t>(3, usage["prompt_tokens"])) << path;

    const Json streamed = with(with(body, "stream", true), "stream_options", {{"include_usage", true}});
    const auto data = sse_data(h.post(path, streamed).body);
    ASSERT_GE(data.size(), 2u);
    const Json last = Json::parse(data[data.size() - 2]);
    EXPECT_EQ(last["usage"]["prompt_tokens_details"]["cached_tokens"], usage["prompt_tokens_details"]["cached_tokens"])
        << path;
  }
  // Two prompts of two choices each: each prompt counts once ("Hi" is two tokens).
  const Json two{{"prompt", {"Hi", "Hello there"}}, {"max_tokens", 2}, {"n", 2}};
  EXPECT_EQ(h.post("/v1/completions", two).json()["usage"]["prompt_tokens_details"]["cached_tokens"], 2 + 3);
}

TEST(HttpApiParityTest, ChatStreamEndsEachChoiceWithAnEmptyDelta) {
  ServerHarness h;  // the fake's last token comes on the event that ends the choice
  for (int n : {1, 2}) {
    const auto data = sse_data(h.post("/v1/chat/completions", with(with(kChat, "stream", true), "n", n)).body);
    ASSERT_EQ(data.back(), "[DONE]");
    std::vector<int> finishes(static_cast<size_t>(n), 0);
    std::vector<bool> ended(static_cast<size_t>(n), false);
    for (size_t i = 0; i + 1 < data.size(); ++i) {
      const Json choice = Json::parse(data[i])["choices"][0];
      const auto index = choice["index"].get<size_t>();
      EXPECT_FALSE(ended[index]) << "a chunk after choice " << index << "'s finish: " << data[i];
      if (choice["finish_reason"].is_null()) continue;
      EXPECT_EQ(choice["finish_reason"], "length");
      EXPECT_EQ(choice["delta"], Json::object()) << data[i];
      EXPECT_TRUE(choice["logprobs"].is_null());
      ++finishes[index];
      ended[index] = true;
    }
    EXPECT_EQ(finishes, std::vector<int>(static_cast<size_t>(n), 1));
    EXPECT_EQ(Json::parse(data[data.size() - 2])["choices"][0]["delta"], Json::object());
  }
}

TEST(HttpApiParityTest, CompletionStreamEndsWithAnEmptyTextChunk) {
  ServerHarness h;
  const std::string whole = h.post("/v1/completions", kCompletion).json()["choices"][0]["text"];
  ASSERT_FALSE(whole.empty());
  for (bool logprobs : {false, true}) {
    Json body = with(kCompletion, "stream", true);
    if (logprobs) body["logprobs"] = 1;
    const auto data = sse_data(h.post("/v1/completions", body).body);
    ASSERT_GE(data.size(), 3u);
    const Json last = Json::parse(data[data.size() - 2])["choices"][0];
    EXPECT_EQ(last["finish_reason"], "length");
    EXPECT_EQ(last["text"], "");
    if (logprobs) {
      EXPECT_EQ(last["logprobs"]["tokens"], Json::array());
    }
    std::string text;
    for (size_t i = 0; i + 2 < data.size(); ++i) {
      const Json choice = Json::parse(data[i])["choices"][0];
      EXPECT_TRUE(choice["finish_reason"].is_null()) << data[i];
      text += choice["text"].get<std::string>();
    }
    EXPECT_EQ(text, whole);
  }
}

}  // namespace
}  // namespace omnibus::server::testing
