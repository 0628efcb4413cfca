// Tool calling over HTTP with the fake engine, which answers every request
// with a scripted text: the tools reach the prompt, the calls in the answer
// come back as message.tool_calls (and as tool_calls deltas when
// streaming), and a model whose template has no tool format is refused.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "server/http_test_support.h"

namespace omnibus::server::testing {
namespace {

const Json kTools =
    Json::parse(R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":)"
                R"({"city":{"type":"string"}},"required":["city"]}}},{"type":"function","function":{"name":"now"}}])");

const std::string kTwoCalls =
    "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n"
    "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";

Json chat_body(bool stream) {
  return Json{{"messages", {{{"role", "user"}, {"content", "Weather in Oslo, and the time?"}}}},
              {"tools", kTools},
              {"max_tokens", 200},
              {"stream", stream}};
}

void prepare(ServerHarness& h) {
  h.service().set_context_length(4096);
  h.service().set_reply(kTwoCalls);
  // The fake repeats its reply until max_tokens: end after one.
  h.service().end_after(static_cast<int>(h.service().tokenizer().encode(kTwoCalls, false, false).size()));
}

TEST(HttpToolCallsTest, CallsComeBackAsToolCalls) {
  ServerHarness h;
  prepare(h);
  HttpReply r = h.post("/v1/chat/completions", chat_body(false));
  ASSERT_EQ(r.status, 200) << r.body;
  const Json choice = r.json()["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["content"], "Checking.");
  const Json calls = choice["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 2u) << r.body;
  EXPECT_EQ(calls[0]["type"], "function");
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(calls[0]["function"]["arguments"], R"({"city":"Oslo"})");
  EXPECT_EQ(calls[1]["function"]["name"], "now");
  EXPECT_EQ(calls[1]["function"]["arguments"], "{}");
  EXPECT_NE(calls[0]["id"], calls[1]["id"]);
  EXPECT_EQ(calls[0]["id"].get<std::string>().rfind("call_", 0), 0u);
  // The tools went into the system message, as Qwen2.5's template writes them.
  const std::string prompt = h.service().tokenizer().decode(h.service().submitted()[0].prompt, true);
  // (The test's Json sorts keys, so "function" comes before "type" here.)
  EXPECT_NE(prompt.find("<tools>\n{\"function\": {\"name\": \"get_weather\", \"parameters\": {"), std::string::npos)
      << prompt;
  EXPECT_NE(prompt.find("<|im_start|>user\nWeather in Oslo, and the time?"), std::string::npos) << prompt;
}

TEST(HttpToolCallsTest, StreamingSendsToolCallDeltas) {
  ServerHarness h;
  prepare(h);
  HttpReply r = h.post("/v1/chat/completions", chat_body(true));
  ASSERT_EQ(r.status, 200) << r.body;
  std::string content;
  std::string finish;
  std::vector<Json> calls;
  for (const std::string& d : sse_data(r.body)) {
    if (d == "[DONE]") continue;
    const Json chunk = Json::parse(d);
    const Json& c = chunk["choices"][0];
    if (c["delta"].contains("content")) content += c["delta"]["content"].get<std::string>();
    if (c["delta"].contains("tool_calls")) {
      for (const Json& call : c["delta"]["tool_calls"]) calls.push_back(call);
    }
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  EXPECT_EQ(content, "Checking.");
  EXPECT_EQ(finish, "tool_calls");
  ASSERT_EQ(calls.size(), 2u) << r.body;
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[1]["index"], 1);
  EXPECT_EQ(calls[1]["function"]["name"], "now");
  EXPECT_EQ(calls[0]["function"]["arguments"], R"({"city":"Oslo"})");
}

TEST(HttpToolCallsTest, NoToolsNoParsingAndToolChoiceNone) {
  ServerHarness h;
  prepare(h);
  Json body = chat_body(false);
  body["tool_choice"] = "none";
  HttpReply r = h.post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["choices"][0]["message"]["content"], kTwoCalls);
  EXPECT_FALSE(r.json()["choices"][0]["message"].contains("tool_calls"));
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
}

TEST(HttpToolCallsTest, ATemplateWithoutToolFormatIsRefused) {
  ServerHarness h;
  prepare(h);
  ChatFormat llama3;
  llama3.kind = ChatTemplateKind::kLlama3;
  h.service().set_chat_format(llama3);
  HttpReply r = h.post("/v1/chat/completions", chat_body(false));
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["param"], "tools");
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("no tool format"), std::string::npos);
  // Completions have no tools at all.
  HttpReply c = h.post("/v1/completions", Json{{"prompt", "Hi"}, {"tools", kTools}});
  ASSERT_EQ(c.status, 400) << c.body;
  EXPECT_EQ(c.json()["error"]["param"], "tools");
  EXPECT_TRUE(h.service().submitted().empty());
}

}  // namespace
}  // namespace omnibus::server::testing
