// Every way a request can fail at the HTTP layer comes back as an OpenAI
// error body with the right status: auth, validation, routes, body size,
// engine refusals; and no input brings the server down.
#include <gtest/gtest.h>

#include <random>

#include "server/http_test_support.h"

namespace omnibus::server::testing {
namespace {

// The reply is an OpenAI error of `status`; returns the "error" object.
Json expect_error(const HttpReply& r, int status) {
  EXPECT_EQ(r.status, status) << r.body;
  const Json j = r.json();
  EXPECT_TRUE(j.is_object() && j.contains("error")) << r.body;
  if (!j.is_object() || !j.contains("error")) return Json::object();
  const Json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r.body;
  EXPECT_TRUE(e["type"].is_string()) << r.body;
  EXPECT_TRUE(e.contains("param") && e.contains("code")) << r.body;
  return e;
}

const Json kCompletion{{"prompt", "Hi"}, {"max_tokens", 2}};

TEST(HttpErrorsTest, ApiKeyIsRequiredEverywhereButHealth) {
  HttpServerOptions options;
  options.api_key = "sekret-key";
  ServerHarness h(options);
  const Json none = expect_error(h.post("/v1/completions", kCompletion), 401);
  EXPECT_EQ(none["code"], "invalid_api_key");
  expect_error(h.post("/v1/completions", kCompletion, {{"Authorization", "Bearer sekret-kez"}}), 401);
  expect_error(h.post("/v1/completions", kCompletion, {{"Authorization", "Bearer sekret-key-and-more"}}), 401);
  expect_error(h.post("/v1/completions", kCompletion, {{"Authorization", "sekret-key"}}), 401);
  expect_error(h.post("/v1/completions", kCompletion, {{"Authorization", "Basic sekret-key"}}), 401);
  expect_error(h.get("/v1/models"), 401);
  expect_error(h.get("/metrics"), 401);
  expect_error(h.post("/tokenize", Json{{"content", "x"}}), 401);
  expect_error(h.get("/no/such/route"), 401);  // routes are not revealed without the key
  EXPECT_EQ(h.service().rejected(), 9);
  EXPECT_TRUE(h.service().submitted().empty());

  EXPECT_EQ(h.post("/v1/completions", kCompletion, {{"Authorization", "Bearer sekret-key"}}).status, 200);
  EXPECT_EQ(h.post("/v1/completions", kCompletion, {{"Authorization", "bearer  sekret-key "}}).status, 200);
  EXPECT_EQ(h.get("/v1/models", {{"Authorization", "Bearer sekret-key"}}).status, 200);
  EXPECT_EQ(h.get("/health").status, 200);
  expect_error(h.get("/no/such/route", {{"Authorization", "Bearer sekret-key"}}), 404);
}

TEST(HttpErrorsTest, BadRequestsAre400WithTheField) {
  ServerHarness h;
  expect_error(h.post("/v1/completions", std::string("{\"prompt\": ")), 400);
  expect_error(h.post("/v1/completions", std::string("[1, 2]")), 400);
  EXPECT_EQ(expect_error(h.post("/v1/completions", Json{{"prompt", 5}}), 400)["param"], "prompt");
  EXPECT_EQ(expect_error(h.post("/v1/completions", Json{{"prompt", "Hi"}, {"temperature", 5}}), 400)["param"],
            "temperature");
  EXPECT_EQ(expect_error(h.post("/v1/completions", Json{{"prompt", ""}}), 400)["code"], "empty_prompt");
  EXPECT_EQ(expect_error(h.post("/v1/completions", Json{{"prompt", {5, 99999}}}), 400)["param"], "prompt[1]");
  EXPECT_EQ(expect_error(h.post("/v1/chat/completions", Json{{"messages", {{{"role", "user"}, {"content", "x"}}}},
                                                             {"logprobs", true}, {"top_logprobs", 21}}),
                         400)["param"],
            "top_logprobs");
  EXPECT_EQ(expect_error(h.post("/v1/completions", Json{{"prompt", "Hi"}, {"logprobs", 6}}), 400)["param"],
            "logprobs");
  EXPECT_EQ(expect_error(h.post("/v1/chat/completions", Json{{"messages", Json::array()}}), 400)["param"], "messages");
  const Json echo = expect_error(h.post("/v1/completions", Json{{"prompt", "Hi"}, {"echo", true}, {"logprobs", 1}}),
                                 400);
  EXPECT_NE(echo["message"].get<std::string>().find("not supported"), std::string::npos);

  const Json too_long = expect_error(h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 127}}), 400);
  EXPECT_EQ(too_long["code"], "context_length_exceeded");
  const std::string message = too_long["message"];
  EXPECT_NE(message.find("128"), std::string::npos) << message;
  EXPECT_NE(message.find("127"), std::string::npos) << message;
  EXPECT_EQ(h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 126}}).status, 200);
  EXPECT_TRUE(h.service().submitted().size() == 1u);
  EXPECT_EQ(h.service().rejected(), 11);
}

TEST(HttpErrorsTest, UnknownRoutesAndMethods) {
  ServerHarness h;
  const Json e = expect_error(h.get("/v2/everything"), 404);
  EXPECT_NE(e["message"].get<std::string>().find("/v2/everything"), std::string::npos);
  expect_error(h.post("/v1/embeddings", Json::object()), 404);
  HttpReply wrong = h.get("/v1/completions");
  expect_error(wrong, 405);
  EXPECT_EQ(wrong.header("Allow"), "POST");
  EXPECT_EQ(h.post("/health", Json::object()).status, 405);
}

TEST(HttpErrorsTest, BodyOverTheLimitIs413) {
  HttpServerOptions options;
  options.limits.max_body_bytes = 4097;
  ServerHarness h(options);
  std::string big = "{\"prompt\": \"" + std::string(5000, 'a') + "\"}";
  const Json e = expect_error(h.post("/v1/completions", big), 413);
  EXPECT_NE(e["message"].get<std::string>().find("4097"), std::string::npos);
  EXPECT_EQ(h.post("/v1/completions", kCompletion).status, 200);  // the server is fine
}

TEST(HttpErrorsTest, EngineRefusalsMapToStatusAndRetryAfter) {
  HttpServerOptions options;
  options.retry_after_seconds = 3;
  ServerHarness h(options);
  h.service().refuse_submits(Status::resource_exhausted("the waiting queue is full (7 waiting)"));
  HttpReply full = h.post("/v1/completions", kCompletion);
  const Json e = expect_error(full, 429);
  EXPECT_EQ(full.header("Retry-After"), "3");
  EXPECT_NE(e["message"].get<std::string>().find("queue is full"), std::string::npos);

  h.service().refuse_submits(Status::unsupported("the server is shutting down"));
  HttpReply draining = h.post("/v1/chat/completions", Json{{"messages", {{{"role", "user"}, {"content", "x"}}}},
                                                          {"stream", true}});
  expect_error(draining, 503);
  EXPECT_EQ(draining.header("Retry-After"), "3");

  h.service().refuse_submits(Status::invalid_argument("the prompt does not fit in the KV pool"));
  expect_error(h.post("/v1/completions", kCompletion), 400);
  EXPECT_EQ(h.service().rejected(), 3);
}

TEST(HttpErrorsTest, LaterSubmitFailureCancelsTheEarlierChoices) {
  ServerHarness h;
  h.service().set_tick(std::chrono::milliseconds(50));
  h.service().refuse_submits(Status::resource_exhausted("full"), /*after=*/2);
  expect_error(h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 50}, {"n", 3}}), 429);
  const auto streams = h.service().streams();
  ASSERT_EQ(streams.size(), 2u);
  EXPECT_TRUE(streams[0]->cancelled());
  EXPECT_TRUE(streams[1]->cancelled());
}

TEST(HttpErrorsTest, EngineErrorIs500WhenNotStreaming) {
  ServerHarness h;
  h.service().fail_after(2);
  const Json e = expect_error(h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 5}}), 500);
  EXPECT_EQ(e["type"], "server_error");
  EXPECT_NE(e["message"].get<std::string>().find("scripted failure"), std::string::npos);
  EXPECT_EQ(h.service().rejected(), 0);  // the engine's failure, not a refused request
}

// Bodies a fuzzer would send: broken JSON, invalid UTF-8, deep nesting,
// numbers out of every range, valid requests with bytes flipped.
std::string garbage_body(std::mt19937& rng, int i) {
  static const std::vector<std::string> kSeeds = {
      R"({"prompt": "Hi", "max_tokens": 3})",
      R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3, "stream": true})",
      R"({"prompt": [1, 2, 3], "n": 2, "logprobs": 2, "stop": ["x"], "seed": 7})",
      R"({"content": "Hello", "add_special": false})",
      R"({"tokens": [72, 105]})",
  };
  std::uniform_int_distribution<int> byte(0, 255);
  switch (i % 8) {
    case 0: {
      std::string s(static_cast<size_t>(byte(rng)) + 1, '\0');
      for (char& c : s) c = static_cast<char>(byte(rng));
      return s;
    }
    case 1: return std::string(static_cast<size_t>(1000 + i * 97), '[') + "1";
    case 2: return "{\"prompt\": \"\xff\xfe\xc3\x28 bad utf8\", \"max_tokens\": 1}";
    case 3: return R"({"prompt": "Hi", "max_tokens": 1e999, "temperature": -1e400, "n": 99999999999999999999999})";
    case 4: return R"({"prompt": [)" + std::to_string(byte(rng)) + R"(, -5, 1e300], "seed": -1.5e308})";
    case 5: return std::string(static_cast<size_t>(200 + i), '{') + std::string(static_cast<size_t>(200 + i), '}');
    default: {
      std::string s = kSeeds[static_cast<size_t>(i) % kSeeds.size()];
      const int flips = 1 + byte(rng) % 4;
      for (int f = 0; f < flips; ++f) s[static_cast<size_t>(byte(rng)) % s.size()] = static_cast<char>(byte(rng));
      return s;
    }
  }
}

TEST(HttpErrorsTest, GarbageNeverBringsTheServerDown) {
  ServerHarness h;
  h.service().set_tick(std::chrono::milliseconds(0));
  std::mt19937 rng(1234);
  static const char* kPaths[] = {"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"};
  auto client = h.client();
  for (int i = 0; i < 320; ++i) {
    const std::string body = garbage_body(rng, i);
    const char* path = kPaths[i % 4];
    auto result = client->Post(path, body, "application/json");
    ASSERT_TRUE(result) << "no answer to body #" << i << " on " << path;
    const int status = result->status;
    ASSERT_TRUE(status == 200 || status == 400 || status == 404) << status << " for body #" << i << ": " << result->body;
    if (status != 200) {
      const Json j = Json::parse(result->body, nullptr, false);
      ASSERT_TRUE(j.is_object() && j["error"].is_object()) << result->body;
    }
  }
  HttpReply after = h.post("/v1/completions", kCompletion);
  EXPECT_EQ(after.status, 200);
  EXPECT_EQ(after.json()["choices"][0]["text"], "Hello world");
}

}  // namespace
}  // namespace omnibus::server::testing
