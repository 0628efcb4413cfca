// The HTTP layer end to end against a scripted fake engine: completions and
// chat, streaming and not, n choices, usage, logprobs, echo, models,
// health, metrics, tokenize.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "engine/deferred_service.h"
#include "server/http_test_support.h"

namespace omnibus::server::testing {
namespace {

// The fake replies "Hello", " world", "!", " " over and over.
std::string reply_text(int tokens) {
  static const char* kPieces[] = {"Hello", " world", "!", " "};
  std::string out;
  for (int i = 0; i < tokens; ++i) out += kPieces[i % 4];
  return out;
}

// Concatenated text per choice index of a stream's chunks (chat: delta.content).
std::map<int, std::string> stream_texts(const std::vector<std::string>& data, bool chat) {
  std::map<int, std::string> out;
  for (const std::string& d : data) {
    if (d == "[DONE]") continue;
    const Json j = Json::parse(d);
    for (const Json& c : j["choices"]) {
      const Json& text = chat ? c["delta"].value("content", Json("")) : c["text"];
      out[c["index"].get<int>()] += text.get<std::string>();
    }
  }
  return out;
}

// A chat stream's choice 0: its delta.reasoning_content and delta.content
// pieces, each concatenated.
struct StreamedAnswer {
  std::string reasoning, content;
};
StreamedAnswer streamed_answer(const std::string& body) {
  StreamedAnswer out;
  for (const std::string& d : sse_data(body)) {
    if (d == "[DONE]") continue;
    const Json chunk = Json::parse(d);
    if (chunk["choices"].empty()) continue;
    const Json& delta = chunk["choices"][0]["delta"];
    out.reasoning += delta.value("reasoning_content", "");
    out.content += delta.value("content", "");
  }
  return out;
}

TEST(HttpServerTest, CompletionReturnsTheGeneratedTextAndUsage) {
  ServerHarness h;
  HttpReply r = h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 5}, {"model", "test-model"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "test-model");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["text"], reply_text(5));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 2);  // "H", "i": no BOS in this vocabulary
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_EQ(j["usage"]["total_tokens"], 7);
  EXPECT_FALSE(r.header("X-Request-Id").empty());

  const auto submitted = h.service().submitted();
  ASSERT_EQ(submitted.size(), 1u);
  EXPECT_EQ(submitted[0].prompt, h.service().tokenizer().encode("Hi", false, true));
  EXPECT_EQ(submitted[0].max_tokens, 5);
}

TEST(HttpServerTest, ChatRendersTheTemplateAndAnswersAsAssistant) {
  ServerHarness h;
  const Json body{{"messages", {{{"role", "developer"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}}},
                  {"max_tokens", 3}};
  HttpReply r = h.post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], reply_text(3));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");

  // "developer" is rendered as the template's system turn.
  const std::string prompt = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                             "<|im_start|>assistant\n";
  const auto submitted = h.service().submitted();
  ASSERT_EQ(submitted.size(), 1u);
  EXPECT_EQ(submitted[0].prompt, h.service().tokenizer().encode(prompt, false, true));
  EXPECT_EQ(j["usage"]["prompt_tokens"], static_cast<int64_t>(submitted[0].prompt.size()));
}

// A reasoning model (Qwen3's chat format): its <think> block comes back as
// reasoning_content, in whole responses and in stream deltas; with
// enable_thinking false the prompt closes the block and nothing is split.
TEST(HttpServerTest, ReasoningModelsThoughtsComeAsReasoningContent) {
  ServerHarness h;
  ChatFormat qwen3;
  qwen3.kind = ChatTemplateKind::kQwen3;
  qwen3.extract_reasoning = true;
  h.service().set_chat_format(qwen3);
  const std::string reply = "<think>\nHe said Hi\n</think>\n\nHello world!";
  h.service().set_reply(reply);
  const int tokens = static_cast<int>(h.service().tokenizer().encode(reply, false, false).size());
  const Json messages = {{{"role", "user"}, {"content", "Hi"}}};

  HttpReply r = h.post("/v1/chat/completions", Json{{"messages", messages}, {"max_tokens", tokens}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json message = r.json()["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "He said Hi");
  EXPECT_EQ(message["content"], "Hello world!");

  r = h.post("/v1/chat/completions", Json{{"messages", messages}, {"max_tokens", tokens}, {"stream", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  const StreamedAnswer streamed = streamed_answer(r.body);
  EXPECT_EQ(streamed.reasoning, "He said Hi");
  EXPECT_EQ(streamed.content, "Hello world!");

  r = h.post(
      "/v1/chat/completions",
      Json{{"messages", messages}, {"max_tokens", tokens}, {"chat_template_kwargs", {{"enable_thinking", false}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json unsplit = r.json()["choices"][0]["message"];
  EXPECT_EQ(unsplit["content"], reply);
  EXPECT_FALSE(unsplit.contains("reasoning_content"));
  const std::string prompt = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
  EXPECT_EQ(h.service().submitted().back().prompt, h.service().tokenizer().encode(prompt, false, true));
}

// gpt-oss (the harmony format): the analysis channel comes back as
// reasoning_content and the final channel as content, whole and streamed;
// the engine is asked to render the channel markers as text;
// reasoning_effort reaches the prompt. (The fake tokenizer spells the
// markers as bytes; a real harmony vocabulary has them as control tokens.)
TEST(HttpServerTest, HarmonyChannelsComeApartAndReasoningEffortReachesThePrompt) {
  ServerHarness h;
  ChatFormat harmony;
  harmony.kind = ChatTemplateKind::kHarmony;
  harmony.extract_reasoning = true;
  h.service().set_chat_format(harmony);
  h.service().set_context_length(1024);
  const std::string reply =
      "<|channel|>analysis<|message|>They said Hi<|end|><|start|>assistant<|channel|>final<|message|>Hello world!";
  h.service().set_reply(reply);
  const int tokens = static_cast<int>(h.service().tokenizer().encode(reply, false, false).size());
  const Json messages = {{{"role", "user"}, {"content", "Hi"}}};

  HttpReply r =
      h.post("/v1/chat/completions", Json{{"messages", messages}, {"max_tokens", tokens}, {"reasoning_effort", "low"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json message = r.json()["choices"][0]["message"];
  EXPECT_EQ(message["reasoning_content"], "They said Hi");
  EXPECT_EQ(message["content"], "Hello world!");
  const EngineRequest submitted = h.service().submitted().back();
  EXPECT_TRUE(submitted.render_special_text);
  const std::string prompt = h.service().tokenizer().decode(submitted.prompt);
  EXPECT_NE(prompt.find("\nReasoning: low\n"), std::string::npos) << prompt;
  EXPECT_TRUE(prompt.ends_with("<|start|>user<|message|>Hi<|end|><|start|>assistant")) << prompt;

  r = h.post("/v1/chat/completions", Json{{"messages", messages}, {"max_tokens", tokens}, {"stream", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  const StreamedAnswer streamed = streamed_answer(r.body);
  EXPECT_EQ(streamed.reasoning, "They said Hi");
  EXPECT_EQ(streamed.content, "Hello world!");

  // gpt-oss thinks whatever enable_thinking says: still split, no markup
  // in the content.
  r = h.post(
      "/v1/chat/completions",
      Json{{"messages", messages}, {"max_tokens", tokens}, {"chat_template_kwargs", {{"enable_thinking", false}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], "Hello world!");
  EXPECT_EQ(r.json()["choices"][0]["message"]["reasoning_content"], "They said Hi");
}

// reasoning_effort on a model whose template has none: a 400 naming it.
TEST(HttpServerTest, ReasoningEffortIsRefusedWithoutHarmony) {
  ServerHarness h;
  HttpReply r = h.post("/v1/chat/completions",
                       Json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"reasoning_effort", "high"}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["param"], "reasoning_effort");
  EXPECT_NE(r.body.find("gpt-oss"), std::string::npos) << r.body;
}

TEST(HttpServerTest, UnsetMaxTokensFillsTheContext) {
  ServerHarness h;
  HttpReply r = h.post("/v1/chat/completions", Json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const auto submitted = h.service().submitted();
  ASSERT_EQ(submitted.size(), 1u);
  const int64_t room = FakeInferenceService::kContextLength - static_cast<int64_t>(submitted[0].prompt.size());
  EXPECT_EQ(submitted[0].max_tokens, room);
  EXPECT_EQ(r.json()["usage"]["completion_tokens"], room);
}

TEST(HttpServerTest, CompletionStreamsChunksThenDone) {
  ServerHarness h;
  HttpReply r = h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 6}, {"stream", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Content-Type").rfind("text/event-stream", 0), 0u);
  const auto data = sse_data(r.body);
  ASSERT_GE(data.size(), 3u);
  EXPECT_EQ(data.back(), "[DONE]");
  EXPECT_EQ(stream_texts(data, false)[0], reply_text(6));
  const Json last = Json::parse(data[data.size() - 2]);
  EXPECT_EQ(last["object"], "text_completion");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(last.contains("usage"));  // only with include_usage
  for (size_t i = 0; i + 2 < data.size(); ++i) EXPECT_TRUE(Json::parse(data[i])["choices"][0]["finish_reason"].is_null());
}

TEST(HttpServerTest, ChatStreamStartsWithRoleAndEndsWithUsage) {
  ServerHarness h;
  const Json body{{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                  {"max_tokens", 7},
                  {"stream", true},
                  {"stream_options", {{"include_usage", true}}}};
  HttpReply r = h.post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto data = sse_data(r.body);
  ASSERT_GE(data.size(), 4u);
  EXPECT_EQ(data.back(), "[DONE]");
  const Json first = Json::parse(data[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(stream_texts(data, true)[0], reply_text(7));
  const Json usage = Json::parse(data[data.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 7);
  EXPECT_EQ(usage["usage"]["prompt_tokens"], static_cast<int64_t>(h.service().submitted()[0].prompt.size()));
  const Json finish = Json::parse(data[data.size() - 3]);
  EXPECT_EQ(finish["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(finish["usage"].is_null());  // include_usage: every other chunk has "usage": null
}

TEST(HttpServerTest, TwoChoicesGetConsecutiveSeedsAndTheirOwnIndex) {
  ServerHarness h;
  HttpReply r = h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 4}, {"n", 2}, {"seed", 42}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  ASSERT_EQ(j["choices"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][i]["text"], reply_text(4));
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], 2);      // once, not per choice
  EXPECT_EQ(j["usage"]["completion_tokens"], 8);  // summed over choices
  const auto submitted = h.service().submitted();
  ASSERT_EQ(submitted.size(), 2u);
  EXPECT_EQ(submitted[0].sampling.seed, 42u);
  EXPECT_EQ(submitted[1].sampling.seed, 43u);
}

TEST(HttpServerTest, TwoChoicesStreamInterleavedByIndex) {
  ServerHarness h;
  const Json body{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 5}, {"n", 2},
                  {"stream", true}, {"stream_options", {{"include_usage", true}}}};
  HttpReply r = h.post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const auto data = sse_data(r.body);
  EXPECT_EQ(data.back(), "[DONE]");
  const auto texts = stream_texts(data, true);
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_EQ(texts.at(0), reply_text(5));
  EXPECT_EQ(texts.at(1), reply_text(5));
  std::set<int> role_chunks, finishes;
  for (const std::string& d : data) {
    if (d == "[DONE]") continue;
    const Json j = Json::parse(d);
    for (const Json& c : j["choices"]) {
      if (c["delta"].contains("role")) role_chunks.insert(c["index"].get<int>());
      if (c["finish_reason"] == "length") finishes.insert(c["index"].get<int>());
    }
  }
  EXPECT_EQ(role_chunks, (std::set<int>{0, 1}));
  EXPECT_EQ(finishes, (std::set<int>{0, 1}));
  EXPECT_EQ(Json::parse(data[data.size() - 2])["usage"]["completion_tokens"], 10);
}

TEST(HttpServerTest, SeedIsPickedPerRequestWhenNotGiven) {
  ServerHarness h;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 1}}).status, 200);
  }
  const auto submitted = h.service().submitted();
  ASSERT_EQ(submitted.size(), 2u);
  EXPECT_NE(submitted[0].sampling.seed, submitted[1].sampling.seed);
}

TEST(HttpServerTest, CompletionLogprobsHaveTheLegacyShape) {
  ServerHarness h;
  HttpReply r = h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 3}, {"logprobs", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json lp = r.json()["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 3u);
  EXPECT_EQ(lp["tokens"][0], "Hello");
  EXPECT_EQ(lp["tokens"][1], " world");
  EXPECT_EQ(lp["token_logprobs"][0].get<double>(), -0.25);
  ASSERT_EQ(lp["top_logprobs"].size(), 3u);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(lp["top_logprobs"][0]["Hello"].get<double>(), -0.25);
  EXPECT_EQ(lp["text_offset"], (Json{0, 5, 11}));
}

TEST(HttpServerTest, ChatLogprobsHaveContentEntries) {
  ServerHarness h;
  const Json body{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 2}, {"logprobs", true},
                  {"top_logprobs", 3}};
  HttpReply r = h.post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const Json content = r.json()["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[1]["token"], " world");
  EXPECT_EQ(content[1]["bytes"], (Json{32, 119, 111, 114, 108, 100}));
  EXPECT_EQ(content[1]["logprob"].get<double>(), -0.25);
  ASSERT_EQ(content[1]["top_logprobs"].size(), 3u);
  EXPECT_EQ(content[1]["top_logprobs"][2]["logprob"].get<double>(), -2.25);

  // Streaming: each chunk carries its own tokens' entries.
  Json stream_body = body;
  stream_body["stream"] = true;
  HttpReply s = h.post("/v1/chat/completions", stream_body);
  size_t entries = 0;
  for (const std::string& d : sse_data(s.body)) {
    if (d == "[DONE]") continue;
    const Json chunk = Json::parse(d);
    const Json& lp = chunk["choices"][0]["logprobs"];
    if (!lp.is_null()) entries += lp["content"].size();
  }
  EXPECT_EQ(entries, 2u);
}

TEST(HttpServerTest, EchoPrependsThePrompt) {
  ServerHarness h;
  HttpReply r = h.post("/v1/completions", Json{{"prompt", "Say: "}, {"max_tokens", 2}, {"echo", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["text"], "Say: " + reply_text(2));

  HttpReply s = h.post("/v1/completions", Json{{"prompt", "Say: "}, {"max_tokens", 2}, {"echo", true}, {"stream", true}});
  const auto data = sse_data(s.body);
  ASSERT_GE(data.size(), 2u);
  EXPECT_EQ(Json::parse(data[0])["choices"][0]["text"], "Say: ");
  EXPECT_EQ(stream_texts(data, false)[0], "Say: " + reply_text(2));

  // max_tokens 0 scores nothing and generates nothing: the prompt comes back.
  const size_t before = h.service().submitted().size();
  HttpReply zero = h.post("/v1/completions", Json{{"prompt", "Say: "}, {"max_tokens", 0}, {"echo", true}});
  ASSERT_EQ(zero.status, 200) << zero.body;
  EXPECT_EQ(zero.json()["choices"][0]["text"], "Say: ");
  EXPECT_EQ(zero.json()["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(zero.json()["usage"]["completion_tokens"], 0);
  EXPECT_EQ(h.service().submitted().size(), before);
  HttpReply zero_stream =
      h.post("/v1/completions", Json{{"prompt", "Say: "}, {"max_tokens", 0}, {"echo", true}, {"stream", true}});
  EXPECT_EQ(sse_data(zero_stream.body).back(), "[DONE]");
  EXPECT_EQ(stream_texts(sse_data(zero_stream.body), false)[0], "Say: ");

  // Token prompts echo their decoded text.
  const auto ids = h.service().tokenizer().encode("Hello world", false, false);
  HttpReply tokens = h.post("/v1/completions", Json{{"prompt", ids}, {"max_tokens", 1}, {"echo", true}});
  EXPECT_EQ(tokens.json()["choices"][0]["text"], "Hello world" + reply_text(1));
}

TEST(HttpServerTest, StopStringsEndTheChoice) {
  ServerHarness h;
  HttpReply r = h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 20}, {"stop", {"!"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["text"], "Hello world");
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(h.service().submitted()[0].stop, (std::vector<std::string>{"!"}));
}

TEST(HttpServerTest, ModelsListsTheOneModel) {
  HttpServerOptions options;
  options.model_aliases = {"SmolLM2-135M-Instruct.Q4_1"};
  ServerHarness h(options);
  HttpReply r = h.get("/v1/models");
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "test-model");
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["owned_by"], "omnibus");
  EXPECT_EQ(h.get("/v1/models/test-model").json()["id"], "test-model");
  EXPECT_EQ(h.get("/v1/models/gpt-4").status, 404);

  // Names a request's "model" may use.
  for (const char* name : {"test-model", "", "/models/test-model.gguf", "SmolLM2-135M-Instruct.Q4_1",
                           "/work/models/SmolLM2-135M-Instruct.Q4_1.gguf"}) {
    EXPECT_EQ(h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 1}, {"model", name}}).status, 200)
        << name;
  }
  HttpReply unknown = h.post("/v1/completions", Json{{"prompt", "Hi"}, {"model", "gpt-4"}});
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.json()["error"]["code"], "model_not_found");
  EXPECT_EQ(unknown.json()["error"]["param"], "model");
}

TEST(HttpServerTest, HealthFollowsReadiness) {
  ServerHarness h;
  HttpReply ok = h.get("/health");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.json()["status"], "ok");
  h.service().set_ready(false);
  HttpReply down = h.get("/health");
  EXPECT_EQ(down.status, 503);
  EXPECT_TRUE(down.json()["error"].is_object());
  EXPECT_EQ(down.header("Retry-After"), "1");
}

TEST(HttpServerTest, WhileLoadingEveryRouteButHealthAndMetricsIs503) {
  DeferredService deferred;
  ServerHarness h(&deferred);
  HttpReply health = h.get("/health");
  EXPECT_EQ(health.status, 503);
  EXPECT_NE(health.json()["error"]["message"].get<std::string>().find("loading"), std::string::npos) << health.body;
  EXPECT_EQ(health.header("Retry-After"), "1");
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"POST", "/v1/completions"}, {"POST", "/v1/chat/completions"}, {"GET", "/v1/models"},
           {"GET", "/v1/models/fake-model"}, {"POST", "/tokenize"}, {"POST", "/detokenize"}}) {
    HttpReply r = method == "GET" ? h.get(path) : h.post(path, Json{{"prompt", "Hi"}});
    EXPECT_EQ(r.status, 503) << method << " " << path << ": " << r.body;
    EXPECT_TRUE(r.json()["error"].is_object()) << path;
    EXPECT_EQ(r.header("Retry-After"), "1") << path;
  }
  HttpReply metrics = h.get("/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("omnibus_http_responses_total"), std::string::npos);

  deferred.set(&h.service());
  EXPECT_EQ(h.get("/health").status, 200);
  HttpReply done = h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 1}});
  EXPECT_EQ(done.status, 200) << done.body;
}

TEST(HttpServerTest, MetricsJoinEngineAndHttpCounters) {
  ServerHarness h;
  ASSERT_EQ(h.post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 1}}).status, 200);
  HttpReply r = h.get("/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
  EXPECT_NE(r.body.find("fake_engine_metric 7"), std::string::npos);
  EXPECT_NE(r.body.find("omnibus_http_responses_total{code=\"200\"} 1"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("omnibus_http_request_duration_seconds_count 1"), std::string::npos);
  EXPECT_NE(r.body.find("omnibus_http_requests_in_flight 1"), std::string::npos);  // this request
}

TEST(HttpServerTest, TokenizeAndDetokenizeRoundTrip) {
  ServerHarness h;
  const Tokenizer& tok = h.service().tokenizer();
  HttpReply t = h.post("/tokenize", Json{{"content", "Hello world<|im_end|>"}});
  ASSERT_EQ(t.status, 200) << t.body;
  const std::vector<int32_t> expected = {tok.token_id("Hello"), tok.token_id("\xC4\xA0world"), tok.token_id("<|im_end|>")};
  EXPECT_EQ(t.json()["tokens"].get<std::vector<int32_t>>(), expected);
  // parse_special false: the control token's text is plain bytes.
  HttpReply plain = h.post("/tokenize", Json{{"content", "<|im_end|>"}, {"parse_special", false}});
  EXPECT_EQ(plain.json()["tokens"].size(), 10u);

  HttpReply d = h.post("/detokenize", Json{{"tokens", {expected[0], expected[1]}}});
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(d.json()["content"], "Hello world");

  HttpReply bad = h.post("/detokenize", Json{{"tokens", {expected[0], 100000}}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json()["error"]["param"], "tokens[1]");
  EXPECT_EQ(h.post("/detokenize", Json{{"tokens", {-1}}}).status, 400);
  EXPECT_EQ(h.post("/detokenize", Json{{"tokens", "12"}}).status, 400);
  EXPECT_EQ(h.post("/tokenize", Json{{"text", "x"}}).json()["error"]["param"], "content");
  EXPECT_EQ(h.post("/tokenize", Json{{"content", 5}}).status, 400);
  EXPECT_EQ(h.post("/tokenize", Json{{"content", "x"}, {"add_special", "yes"}}).status, 400);
}

}  // namespace
}  // namespace omnibus::server::testing
